"""What --trace costs the measurement (issue 13, must-show 2): interleaved capture pairs with and without it.

Settings (both runs of a pair): 1 kHz, SCHED_FIFO 80, one thread on the last CPU (the writer and the trace
reader on the others), ``--seconds`` each (default 5), writing the dataset as a real capture does; the traced
run adds ``--trace`` (the default events).  ``--pairs`` (default 5) pairs alternate which run goes first so a
drift of the machine affects both alike.  Needs root (tracefs instance, SCHED_FIFO).

Printed per pair and pooled: p50 latency (over every wake-up of the runs) and CPU time per wake-up, two ways:

* whole process: user + system of the capture (``os.wait4`` rusage, every thread: measuring thread, writer,
  trace reader, and main with its setup and teardown, which for --trace includes making and removing the
  tracefs instance and its buffers), divided by the wake-ups recorded;
* steady state: the run time of every thread of the capture from the scheduler's own ns accounting
  (``/proc/PID/task/*/schedstat``, exact, where rusage is sampled by the tick on this kernel) between 1 s
  after the start and 0.5 s before the end, divided by the wake-ups in that stretch.

Kernel time spent recording events in other tasks' contexts (an IRQ on the measured CPU) is in neither; it
shows in the latency.  Targets: p50 ratio <= 1.10, CPU time per wake-up ratio <= 1.20 (each way printed).
Exits 0 either way (a benchmark, not a test).
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
from jitterscope.io import capture_binary


def _threads_ns(pid: int) -> int:
    """Run time of every thread of pid so far (ns, schedstat's first field)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just ended
    return total


def run_once(out: Path, seconds: float, cpu: int, trace: bool) -> tuple[np.ndarray, float, float]:
    """One capture: (latencies ns, CPU seconds of the process, steady-state CPU ns per wake-up)."""
    argv = [str(capture_binary()), "-a", str(cpu), "-p", "80", "-i", "1000", "-D", str(seconds), "-q", "-o", str(out)]
    if trace:
        argv.append("--trace")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
    steady = (cpu1 - cpu0) / max(int(((actual >= t0) & (actual <= t1)).sum()), 1)
    return latency, usage.ru_utime + usage.ru_stime, steady


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("trace_cost needs root (a tracefs instance and SCHED_FIFO)")
    cpu = max(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="trace-cost-"))
    pooled: dict[bool, list[np.ndarray]] = {False: [], True: []}
    cpu_s: dict[bool, float] = {False: 0.0, True: 0.0}
    steady: dict[bool, list[float]] = {False: [], True: []}
    try:
        print(f"trace cost: {args.pairs} pairs x {args.seconds:g} s at 1 kHz on CPU {cpu}, SCHED_FIFO 80")
        print(f"{'pair':>4} {'plain p50 µs':>12} {'traced p50 µs':>13} {'plain CPU µs/wake':>17} "
              f"{'traced CPU µs/wake':>18} {'plain steady':>12} {'traced steady':>13}")
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            row: dict[bool, tuple[float, float, float]] = {}
            for trace in order:
                out = work / f"{pair}-{int(trace)}"
                latency, seconds, per_wake_ns = run_once(out, args.seconds, cpu, trace)
                shutil.rmtree(out)
                pooled[trace].append(latency)
                cpu_s[trace] += seconds
                steady[trace].append(per_wake_ns)
                row[trace] = (float(np.median(latency)) / 1e3, seconds / latency.size * 1e6, per_wake_ns / 1e3)
            print(f"{pair:>4} {row[False][0]:>12.1f} {row[True][0]:>13.1f} {row[False][1]:>17.2f} "
                  f"{row[True][1]:>18.2f} {row[False][2]:>12.2f} {row[True][2]:>13.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain, traced = np.concatenate(pooled[False]), np.concatenate(pooled[True])
    p50 = (float(np.median(plain)), float(np.median(traced)))
    per_wake = (cpu_s[False] / plain.size, cpu_s[True] / traced.size)
    p50_ratio, cpu_ratio = p50[1] / p50[0], per_wake[1] / per_wake[0]
    steady_mean = (float(np.mean(steady[False])), float(np.mean(steady[True])))
    steady_ratio = steady_mean[1] / steady_mean[0]
    print(f"pooled: p50 plain {p50[0] / 1e3:.2f} µs, traced {p50[1] / 1e3:.2f} µs (n = {plain.size}, {traced.size})")
    print(f"pooled: CPU time per wake-up plain {per_wake[0] * 1e6:.2f} µs, traced {per_wake[1] * 1e6:.2f} µs")
    print(f"p50 ratio traced/plain: {p50_ratio:.3f} (target <= 1.10: {'met' if p50_ratio <= 1.10 else 'NOT met'})")
    print(f"pooled: steady-state CPU time per wake-up plain {steady_mean[0] / 1e3:.2f} µs, "
          f"traced {steady_mean[1] / 1e3:.2f} µs")
    print(f"CPU time per wake-up ratio traced/plain, whole process: {cpu_ratio:.3f} "
          f"(target <= 1.20: {'met' if cpu_ratio <= 1.20 else 'NOT met'})")
    print(f"CPU time per wake-up ratio traced/plain, steady state: {steady_ratio:.3f} "
          f"(target <= 1.20: {'met' if steady_ratio <= 1.20 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
