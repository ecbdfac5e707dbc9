"""Crash safety of jitterscope-capture: SIGKILL at random moments, then check what is on disk.

Each trial starts a capture (1 kHz on every CPU, ``--flush-interval 0.2``),
kills it with SIGKILL after a random delay, and checks that

* every ``part-*.parquet`` opens and reads completely with stock pyarrow,
* ``jitterscope.open_dataset`` opens the directory, and
* per thread, the wake-ups missing from disk (due by the kill time, minus
  rows and overruns written) amount to at most one flush interval (plus the
  writer's 10 ms drain tick and ``--slack``).

Usage: ``python benchmarks/capture_crash.py [--trials 100] [--seed 1]``.  Prints
one line per trial and a summary; exits 1 if any trial failed.
``tests/capture/test_crash.py`` runs 20 trials of the same function.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from jitterscope.dataset import open_dataset
from jitterscope.io import capture_binary

INTERVAL_NS = 1_000_000


@dataclass(frozen=True)
class CrashTrial:
    """What one kill left behind."""

    delay_s: float
    parts: int
    rows: int
    missing_s: float | None  # worst thread; None when the kill came before any part existed
    ok: bool
    problem: str


def crash_trial(binary: Path, out: Path, delay_s: float, flush_s: float = 0.2, slack_s: float = 0.05) -> CrashTrial:
    """Start a capture into ``out``, SIGKILL it after ``delay_s``, check the files."""
    argv = [str(binary), "-i", str(INTERVAL_NS // 1000), "-D", "60", "-q", "--flush-interval", str(flush_s),
            "-o", str(out)]
    if os.geteuid() != 0:
        argv += ["--policy", "other"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay_s)
    kill_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    proc.send_signal(signal.SIGKILL)
    _, stderr = proc.communicate()
    parts = sorted(out.glob("part-*.parquet")) if out.exists() else []
    if not parts:
        # killed during setup: nothing may exist yet, which is fine only that early
        ok = delay_s < 0.5
        return CrashTrial(delay_s, 0, 0, None, ok, "" if ok else f"no part file after {delay_s:.2f} s: {stderr!r}")
    try:
        for part in parts:
            pq.read_table(part)
        dataset = open_dataset(out)
        table = dataset.read()
    except Exception as exc:  # any failure to read is the finding
        return CrashTrial(delay_s, len(parts), 0, None, False, f"unreadable: {exc}")
    return _check_missing(dataset, table, kill_ns, delay_s, len(parts), flush_s + 0.010 + slack_s)


def _check_missing(dataset, table, kill_ns: int, delay_s: float, nparts: int, allowed_s: float) -> CrashTrial:
    threads = table.column("thread").to_numpy()
    seq = table.column("seq").to_numpy()
    expected = table.column("expected_ns").to_numpy()
    overruns = table.column("overruns").to_numpy()
    first = expected[seq == 0]
    # first target = start + interval; before any row, the clock pair is an earlier bound
    start_ns = int(first.min()) - INTERVAL_NS if len(first) else int(dataset.metadata.clock["monotonic_ns"])
    due = (kill_ns - start_ns) // INTERVAL_NS
    worst = 0.0
    for info in dataset.metadata.threads:
        mask = threads == info.thread
        accounted = int(mask.sum()) + int(overruns[mask].sum()) + info.drops
        worst = max(worst, (due - accounted) * INTERVAL_NS / 1e9)
    ok = worst <= allowed_s
    problem = "" if ok else f"{worst:.3f} s of samples missing (allowed {allowed_s:.3f} s)"
    return CrashTrial(delay_s, nparts, len(table), worst, ok, problem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--flush", type=float, default=0.2, help="--flush-interval of the captures (s)")
    parser.add_argument("--max-delay", type=float, default=3.0, help="kill within this many seconds")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    binary = capture_binary()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            result = crash_trial(binary, Path(tmp) / f"t{trial}", rng.uniform(0.05, args.max_delay), args.flush)
            results.append(result)
            missing = "-" if result.missing_s is None else f"{result.missing_s * 1000:.0f} ms"
            print(f"trial {trial:3d} delay {result.delay_s:5.2f} s parts {result.parts:3d} rows {result.rows:6d} "
                  f"missing {missing:>7} {'ok' if result.ok else 'FAIL ' + result.problem}")
    measured = [r.missing_s for r in results if r.missing_s is not None]
    failed = sum(not r.ok for r in results)
    print(f"trials {len(results)} failed {failed} with-data {len(measured)} flush_interval {args.flush} s")
    if measured:
        print(f"missing per kill: median {np.median(measured) * 1000:.0f} ms, max {max(measured) * 1000:.0f} ms "
              f"(ratio to the flush interval: max {max(measured) / args.flush:.2f})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
