"""What --trace costs the measurement (issue 13, must-show 2): interleaved capture pairs with and without it.

Settings (both runs of a pair): 1 kHz, SCHED_FIFO 80, one thread on the last CPU (the writer and the trace
reader on the others), ``--seconds`` each (default 30, what a user runs for a short look), writing the dataset
as a real capture does; the traced run adds ``--trace`` (the default events, or ``--events``) with
``--trace-keep`` ``--keep`` (default spikes, the capture's default since issue 22; ``all`` keeps every event).
``--pairs`` (default 5) pairs alternate which run goes first so a drift of the machine affects both alike.  Needs root
(tracefs instance, SCHED_FIFO).

Printed, each with its n, three costs measured separately:

* p50 latency of every wake-up of the runs (pooled per arm);
* steady state: the run time of every thread of the capture from the scheduler's own ns accounting
  (``/proc/PID/task/*/schedstat``) between 1 s after the start and 0.5 s before the end, divided by the
  wake-ups in that stretch; split per thread (the measuring thread, the writer, the trace reader);
* the fixed cost of a capture: ``--setup-runs`` (default 10) alternating one-wake-up captures (``-l 1``) with
  and without ``--trace``: the difference of their process CPU time (``os.wait4``: user + system, whose sum
  the kernel keeps exact) is what making, configuring and removing the tracefs instance costs (enabling and
  disabling each event patches its tracepoint on every CPU), mean ± standard error;
* whole process: user + system of each pair's captures divided by their wake-ups (the steady state plus the
  fixed cost spread over ``--seconds``), and the same projected to an hour from the two measured parts.

Kernel time spent recording events in other tasks' contexts (an IRQ on the measured CPU) is in none of the CPU
figures; it shows in the latency.  Targets: p50 ratio <= 1.10, CPU time per wake-up ratio <= 1.20 (each way
printed).  The p50 verdict is the pooled ratio's 95 % bootstrap interval over pairs (a pair resampled whole, so
the host's run-to-run drift is in it): met when all of it is within the target, NOT met when none is, else
"cannot tell"; the median of the per-pair ratios is printed beside it.  Exits 0 either way (a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.dataset as pads
from _common import interval_said, interval_verdict, ratio_interval  # noqa: F401  (ratio_interval: tests check it here)
from jitterscope.io import capture_binary

THREAD_NAMES = {"js-cpu": "measuring", "js-writer": "writer", "js-trace": "trace reader"}


def _threads_ns(pid: int) -> dict[str, int]:
    """Run time of each thread of pid so far (ns, schedstat's first field), by role."""
    total: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            ns = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just ended
        role = next((r for prefix, r in THREAD_NAMES.items() if comm.startswith(prefix)), "main")
        total[role] = total.get(role, 0) + ns
    return total


EVENTS: str | None = None  # --events: the traced arm's --trace=EVENTS (None: the default events)
KEEP = "spikes"  # --keep: the traced arm's --trace-keep (issue 22: spikes, the default, keeps only windows)


def _argv(out: Path, cpu: int, trace: bool, *limit: str) -> list[str]:
    argv = [str(capture_binary()), "-a", str(cpu), "-p", "80", "-i", "1000", *limit, "-q", "-o", str(out)]
    if not trace:
        return argv
    return [*argv, f"--trace={EVENTS}" if EVENTS else "--trace", "--trace-keep", KEEP]


def run_once(out: Path, seconds: float, cpu: int, trace: bool) -> tuple[np.ndarray, float, dict[str, float]]:
    """One capture: (latencies ns, CPU seconds of the process, steady-state CPU ns per wake-up by thread role)."""
    proc = subprocess.Popen(_argv(out, cpu, trace, "-D", str(seconds)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    time.sleep(1.0)
    t0, cpu0 = time.monotonic_ns(), _threads_ns(proc.pid)
    time.sleep(max(seconds - 1.5, 0.5))
    t1, cpu1 = time.monotonic_ns(), _threads_ns(proc.pid)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"capture failed: {err.strip()}")
    table = pads.dataset(str(out), format="parquet").to_table(columns=["expected_ns", "actual_ns"])
    actual = table.column("actual_ns").to_numpy()
    latency = actual - table.column("expected_ns").to_numpy()
    inside = max(int(((actual >= t0) & (actual <= t1)).sum()), 1)
    steady = {role: (cpu1.get(role, 0) - cpu0.get(role, 0)) / inside for role in cpu1}
    return latency, usage.ru_utime + usage.ru_stime, steady


def setup_cost(work: Path, cpu: int, runs: int) -> tuple[float, float, float, float]:
    """(plain ms, traced ms, difference ms, its standard error): process CPU of one-wake-up captures."""
    cost: dict[bool, list[float]] = {False: [], True: []}
    for k in range(runs):
        for trace in ((False, True) if k % 2 == 0 else (True, False)):
            out = work / f"setup-{k}-{int(trace)}"
            proc = subprocess.Popen(_argv(out, cpu, trace, "-l", "1"), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit("a one-wake-up capture failed (run it by hand to see why)")
            cost[trace].append((usage.ru_utime + usage.ru_stime) * 1e3)
            shutil.rmtree(out)
    plain, traced = np.asarray(cost[False]), np.asarray(cost[True])
    se = float(np.sqrt(plain.var(ddof=1) / plain.size + traced.var(ddof=1) / traced.size)) if runs > 1 else float("nan")
    return float(plain.mean()), float(traced.mean()), float(traced.mean() - plain.mean()), se


def _verdict(ratio: float, target: float) -> str:
    return f"{ratio:.3f} (target <= {target:.2f}: {'met' if ratio <= target else 'NOT met'})"


BIN_NS = 10  # the pooled-median histograms' bin: 10 ns, 0.05 % of a 20 µs p50


def _pair_histograms(runs: list[np.ndarray]) -> tuple[np.ndarray, float]:
    """(counts, origin ns): one row per run, its latencies in BIN_NS bins spanning the runs' own medians, with an
    under- and an overflow bin.  A pooled median of any weighting of the runs lies between the smallest and the
    largest median of a run (below the smallest every run has at most half its mass), so no other bin is needed."""
    medians = [float(np.median(r)) for r in runs]
    origin = np.floor(min(medians) / BIN_NS) * BIN_NS
    inner = np.arange(origin, max(medians) + 2 * BIN_NS, BIN_NS, dtype=np.float64)
    edges = np.concatenate(([-np.inf], inner, [np.inf]))
    return np.stack([np.histogram(r, bins=edges)[0] for r in runs]).astype(np.float64), float(origin)


def _weighted_medians(weights: np.ndarray, histograms: tuple[np.ndarray, float]) -> np.ndarray:
    """The pooled median (ns, to BIN_NS) of each resample: weights (resamples x runs) of the runs' histograms."""
    counts, origin = histograms
    cumulative = np.cumsum(weights @ counts, axis=1)
    at = np.argmax(cumulative >= cumulative[:, -1:] / 2.0, axis=1)  # bin 0 is the underflow
    return origin + (np.clip(at, 1, counts.shape[1] - 2) - 0.5) * BIN_NS


def pooled_ratio_interval(plain_runs: list[np.ndarray], traced_runs: list[np.ndarray], *, level: float = 0.95,
                          n_boot: int = 4_000, seed: int = 0) -> tuple[float, float, float]:
    """(ratio, low, high): the pooled p50 traced / pooled p50 plain, and its bootstrap interval over pairs.

    The quantity the target names (the p50 of every wake-up of each arm), with the pair as the resampled unit
    (a cluster bootstrap): a pair's two runs share the machine's minute, pairs do not, so resampling pairs
    carries the run-to-run variation into the interval, which resampling wake-ups would hide.  The median of
    per-pair ratios (ratio_interval) answers a different question and is skewed by the noisiest pairs.
    """
    plain_h, traced_h = _pair_histograms(plain_runs), _pair_histograms(traced_runs)
    pairs = len(plain_runs)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, pairs, (n_boot, pairs))
    weights = np.zeros((n_boot, pairs))
    np.add.at(weights, (np.arange(n_boot)[:, None], picks), 1.0)
    ratios = _weighted_medians(weights, traced_h) / _weighted_medians(weights, plain_h)
    point = float(np.median(np.concatenate(traced_runs)) / np.median(np.concatenate(plain_runs)))
    alpha = (1.0 - level) / 2.0
    return point, float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1.0 - alpha))


def pooled_verdict(plain_runs: list[np.ndarray], traced_runs: list[np.ndarray], target: float) -> str:
    """The pooled p50 ratio's 95 % interval over pairs judged by interval_said."""
    ratio, low, high = pooled_ratio_interval(plain_runs, traced_runs)
    said = interval_said(low, high, target)
    return (f"pooled {ratio:.3f}, 95 % bootstrap interval over the {len(plain_runs)} pairs {low:.3f}-{high:.3f} "
            f"(target <= {target:.2f}: {said})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--setup-runs", type=int, default=10)
    parser.add_argument("--events", help="the traced arm's --trace=EVENTS (default: the capture's default events)")
    parser.add_argument("--keep", choices=("spikes", "all"), default="spikes",
                        help="the traced arm's --trace-keep (default spikes, the capture's default)")
    args = parser.parse_args()
    global EVENTS, KEEP
    EVENTS, KEEP = args.events, args.keep
    if os.geteuid() != 0:
        raise SystemExit("trace_cost needs root (a tracefs instance and SCHED_FIFO)")
    cpu = max(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="trace-cost-"))
    pooled: dict[bool, list[np.ndarray]] = {False: [], True: []}
    pair_ratios: list[tuple[float, float]] = []  # (p50, steady CPU) traced/plain of each pair
    cpu_s: dict[bool, float] = {False: 0.0, True: 0.0}
    steady: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    try:
        print(f"trace cost: {args.pairs} pairs x {args.seconds:g} s at 1 kHz on CPU {cpu}, SCHED_FIFO 80, "
              f"events {EVENTS or 'default'}, --trace-keep {KEEP} "
              f"(timings on whatever else this machine runs: the pairs interleave so both arms share it)")
        print(f"{'pair':>4} {'plain p50 µs':>12} {'traced p50 µs':>13} {'plain CPU µs/wake':>17} "
              f"{'traced CPU µs/wake':>18} {'plain steady':>12} {'traced steady':>13}")
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            row: dict[bool, tuple[float, float, float]] = {}
            for trace in order:
                out = work / f"{pair}-{int(trace)}"
                latency, seconds, per_wake = run_once(out, args.seconds, cpu, trace)
                shutil.rmtree(out)
                pooled[trace].append(latency)
                cpu_s[trace] += seconds
                steady[trace].append(per_wake)
                row[trace] = (float(np.median(latency)) / 1e3, seconds / latency.size * 1e6,
                              sum(per_wake.values()) / 1e3)
            pair_ratios.append((row[True][0] / row[False][0], row[True][2] / row[False][2]))
            print(f"{pair:>4} {row[False][0]:>12.1f} {row[True][0]:>13.1f} {row[False][1]:>17.2f} "
                  f"{row[True][1]:>18.2f} {row[False][2]:>12.2f} {row[True][2]:>13.2f}")
        fixed = setup_cost(work, cpu, args.setup_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain, traced = np.concatenate(pooled[False]), np.concatenate(pooled[True])
    p50 = (float(np.median(plain)), float(np.median(traced)))
    print(f"p50 latency: plain {p50[0] / 1e3:.2f} µs, traced {p50[1] / 1e3:.2f} µs (n = {plain.size}, "
          f"{traced.size} wake-ups); ratio traced/plain {p50[1] / p50[0]:.3f} (its verdict, with the pairs' "
          f"interval, below)")
    roles = sorted({r for arm in steady.values() for s in arm for r in s})
    mean = {arm: {r: float(np.mean([s.get(r, 0.0) for s in steady[arm]])) / 1e3 for r in roles} for arm in steady}
    total = {arm: sum(mean[arm].values()) for arm in mean}
    spread = {arm: float(np.std([sum(s.values()) for s in steady[arm]], ddof=1)) / 1e3 / np.sqrt(args.pairs)
              if args.pairs > 1 else float("nan") for arm in steady}
    print(f"steady-state CPU time per wake-up (schedstat, n = {args.pairs} runs each): plain {total[False]:.2f} "
          f"± {spread[False]:.2f} µs, traced {total[True]:.2f} ± {spread[True]:.2f} µs (mean ± SE); by thread: "
          + ", ".join(f"{r} {mean[False][r]:.2f} -> {mean[True][r]:.2f}" for r in roles))
    print(f"CPU time per wake-up ratio traced/plain, steady state: {_verdict(total[True] / total[False], 1.20)}")
    print(f"fixed cost of a capture (process CPU of {args.setup_runs} one-wake-up captures each): plain "
          f"{fixed[0]:.1f} ms, traced {fixed[1]:.1f} ms: --trace adds {fixed[2]:.1f} ± {fixed[3]:.1f} ms "
          f"(instance, buffers, enabling and disabling the events)")
    whole = (cpu_s[False] / plain.size * 1e6, cpu_s[True] / traced.size * 1e6)
    print(f"whole process over {args.seconds:g} s: plain {whole[0]:.2f} µs, traced {whole[1]:.2f} µs per wake-up; "
          f"ratio {_verdict(whole[1] / whole[0], 1.20)}")
    ratios = np.asarray(pair_ratios)
    print(f"per pair (the two runs of a pair share the machine's load of that minute): p50 ratio median "
          f"{np.median(ratios[:, 0]):.3f} (range {ratios[:, 0].min():.3f}-{ratios[:, 0].max():.3f}), steady CPU "
          f"ratio median {np.median(ratios[:, 1]):.3f} (range {ratios[:, 1].min():.3f}-{ratios[:, 1].max():.3f}), "
          f"n = {len(ratios)} pairs")
    if len(ratios) >= 3:  # the verdicts the pairs can support, their run-to-run variation included
        print(f"p50 latency ratio (the target's quantity): {pooled_verdict(pooled[False], pooled[True], 1.10)}")
        print(f"p50 latency ratio per pair: {interval_verdict(ratios[:, 0], 1.10)}")
        print(f"steady CPU ratio: {interval_verdict(ratios[:, 1], 1.20)}")
    hour = 3_600_000  # wake-ups in an hour at 1 kHz
    projected = ((total[False] * hour + fixed[0] * 1e3) / hour, (total[True] * hour + fixed[1] * 1e3) / hour)
    print(f"whole process projected to 1 h (steady state + fixed cost / 3.6e6 wake-ups): plain "
          f"{projected[0]:.2f} µs, traced {projected[1]:.2f} µs; ratio {_verdict(projected[1] / projected[0], 1.20)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
