"""jitterscope-capture against Debian's cyclictest, same settings, interleaved pairs.

Settings (both tools): 1 kHz, SCHED_FIFO 99, one thread per online CPU,
mlockall, ``--seconds`` each (default 10); cyclictest gets ``-d0`` so every
thread runs at 1 kHz (its default distance of 500 µs would slow thread N to
1000 + 500 N µs).  ``--pairs`` (default 5) pairs run
alternately (ours first in even pairs, cyclictest first in odd ones) so a
slow drift of the machine affects both alike.

Latency percentiles of both come from 1 µs bins (cyclictest's histogram
resolution; our nanoseconds are floored to µs the same way), pooled over
threads and pairs.  CPU time per wake-up is the child's user+system time
(``os.wait4`` rusage) divided by the wake-ups it recorded.  Our capture runs
with counters on (``--counters auto``: whatever this machine offers) and
writes its dataset, as a real capture does.

Targets (issue 2): our p50 <= cyclictest's x 1.05; our CPU time per wake-up
<= cyclictest's.  Prints both and the ratios; exits 0 either way (a benchmark,
not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from jitterscope.dataset import open_dataset
from jitterscope.io import capture_binary

HIST_US = 20_000  # cyclictest histogram size; beyond it only max is known


@dataclass(frozen=True)
class Run:
    tool: str
    counts: np.ndarray  # latency histogram, 1 µs bins, 0 .. HIST_US-1
    overflow: int       # wake-ups at or beyond HIST_US µs
    max_us: int
    wakeups: int
    cpu_s: float


def _wait_rusage(argv: list[str], timeout_s: float) -> float:
    """Run argv, return its user+system CPU seconds; raise on failure."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {stderr.strip()}")
    return usage.ru_utime + usage.ru_stime


def run_ours(binary: Path, seconds: int, workdir: Path, index: int) -> Run:
    out = workdir / f"ours-{index}"
    cpu_s = _wait_rusage([str(binary), "-i", "1000", "-p", "99", "--policy", "fifo", "-D", str(seconds), "-q",
                          "-o", str(out)], seconds + 60)
    table = open_dataset(out).read(["actual_ns", "expected_ns"])
    latency_us = (table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()) // 1000
    counts = np.bincount(np.minimum(latency_us, HIST_US), minlength=HIST_US + 1)
    shutil.rmtree(out)
    return Run("jitterscope-capture", counts[:HIST_US], int(counts[HIST_US]), int(latency_us.max()),
               len(latency_us), cpu_s)


def run_cyclictest(cyclictest: str, seconds: int, workdir: Path, index: int) -> Run:
    summary = workdir / f"cyclictest-{index}.json"
    # -d0: cyclictest's default distance (500 us) would run thread N at 1000 + 500 N us
    cpu_s = _wait_rusage([cyclictest, "-m", "-p99", "-i1000", "-d0", "-a", "-t", f"-D{seconds}", "-q",
                          f"--histogram={HIST_US}", f"--histfile={workdir / 'hist.txt'}", f"--json={summary}"],
                         seconds + 60)
    data = json.loads(summary.read_text())
    counts = np.zeros(HIST_US, dtype=np.int64)
    cycles = max_us = 0
    for thread in data["thread"].values():
        for bin_us, n in thread["histogram"].items():
            counts[int(bin_us)] += int(n)
        cycles += int(thread["cycles"])
        max_us = max(max_us, int(thread["max"]))
    return Run("cyclictest", counts, cycles - int(counts.sum()), max_us, cycles, cpu_s)


def percentile_us(counts: np.ndarray, overflow: int, q: float) -> float:
    """The q-th percentile (0..100) of 1 µs bins (lower edge, as cyclictest reports)."""
    total = int(counts.sum()) + overflow
    rank = q / 100 * (total - 1)
    index = int(np.searchsorted(np.cumsum(counts), rank, side="right"))
    return float(index) if index < len(counts) else float("inf")


def pooled(runs: list[Run]) -> dict[str, float]:
    counts = sum(r.counts for r in runs)
    overflow = sum(r.overflow for r in runs)
    wakeups = sum(r.wakeups for r in runs)
    return {
        "p50_us": percentile_us(counts, overflow, 50), "p99_us": percentile_us(counts, overflow, 99),
        "max_us": float(max(r.max_us for r in runs)), "wakeups": float(wakeups),
        "cpu_ns_per_wakeup": 1e9 * sum(r.cpu_s for r in runs) / wakeups,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args(argv)
    cyclictest = shutil.which("cyclictest")
    if cyclictest is None or os.geteuid() != 0:
        print("needs root and Debian's rt-tests (cyclictest)", file=sys.stderr)
        return 1
    binary = capture_binary()
    ours: list[Run] = []
    theirs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            order = ("ours", "cyclictest") if pair % 2 == 0 else ("cyclictest", "ours")
            for tool in order:
                if tool == "ours":
                    ours.append(run_ours(binary, args.seconds, Path(tmp), pair))
                else:
                    theirs.append(run_cyclictest(cyclictest, args.seconds, Path(tmp), pair))
            a, b = ours[-1], theirs[-1]
            print(f"pair {pair}: ours p50 {percentile_us(a.counts, a.overflow, 50):.0f} us "
                  f"cpu {1e9 * a.cpu_s / a.wakeups:.0f} ns/wake | cyclictest p50 "
                  f"{percentile_us(b.counts, b.overflow, 50):.0f} us cpu {1e9 * b.cpu_s / b.wakeups:.0f} ns/wake")
    mine, base = pooled(ours), pooled(theirs)
    print(f"\n{args.pairs} interleaved pairs x {args.seconds} s, 1 kHz, FIFO 99, all CPUs")
    print(f"{'':24}{'jitterscope':>14}{'cyclictest':>14}{'ratio':>9}")
    for key in ("p50_us", "p99_us", "max_us", "cpu_ns_per_wakeup", "wakeups"):
        ratio = mine[key] / base[key] if base[key] else float("nan")
        print(f"{key:24}{mine[key]:14.1f}{base[key]:14.1f}{ratio:9.3f}")
    print(f"target p50 ratio <= 1.05: {'met' if mine['p50_us'] <= 1.05 * base['p50_us'] else 'NOT met'}; "
          f"CPU per wake-up ratio <= 1: "
          f"{'met' if mine['cpu_ns_per_wakeup'] <= base['cpu_ns_per_wakeup'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
