"""Crash safety of jitterscope-capture: kill it at random moments or at chosen steps, check what is on disk.

Each trial starts a capture (1 kHz on every CPU, ``--flush-interval 0.2``,
with small container limits so that kills land on row-group seals and part
rotations too: a row group every 0.5 s, a part every 1 s), ends it, and
checks the dataset as a stock reader and jitterscope see it:

* ``pyarrow.dataset.dataset(DIR)`` and DuckDB's ``read_parquet('DIR/*.parquet')``
  read it, and agree on the rows;
* no (thread, seq) appears twice;
* per thread, the wake-ups missing from disk (due by the kill time, minus rows,
  overruns and drops written) amount to at most one flush interval (plus the
  writer's 10 ms drain tick and ``--slack``);
* ``jitterscope validate`` (``validate_dataset``) passes (unless the kill came
  before the first rows were flushed: it refuses an empty capture).

Random trials end with SIGKILL after a random delay; fault trials set
``JITTERSCOPE_FAULT=KIND:STEP:N`` so the writer kills itself at exactly that
step (see the README's hidden knobs).

Usage: ``python benchmarks/capture_crash.py [--trials 100] [--seed 1]``.  Prints
one line per trial and a summary; exits 1 if any trial failed.
``tests/capture/test_crash.py`` runs 20 random trials and every fault step.
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

import duckdb
import numpy as np
import pyarrow.dataset as pads
from jitterscope.dataset import open_dataset, validate_dataset
from jitterscope.io import capture_binary

INTERVAL_NS = 1_000_000
CONTAINER = ("--group-seconds", "0.5", "--part-seconds", "1")


@dataclass(frozen=True)
class CrashTrial:
    """What one kill left behind."""

    delay_s: float
    parts: int
    rows: int
    missing_s: float | None  # worst thread; None when the kill came before any part existed
    ok: bool
    problem: str


def capture_argv(binary: Path, out: Path, flush_s: float, seconds: int = 60) -> list[str]:
    argv = [str(binary), "-i", str(INTERVAL_NS // 1000), "-D", str(seconds), "-q", "--flush-interval", str(flush_s),
            *CONTAINER, "-o", str(out)]
    return argv + (["--policy", "other"] if os.geteuid() != 0 else [])


def crash_trial(binary: Path, out: Path, delay_s: float, flush_s: float = 0.2, slack_s: float = 0.05) -> CrashTrial:
    """Start a capture into ``out``, SIGKILL it after ``delay_s``, check the files."""
    proc = subprocess.Popen(capture_argv(binary, out, flush_s), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay_s)
    kill_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    proc.send_signal(signal.SIGKILL)
    _, stderr = proc.communicate()
    return check_dataset(out, kill_ns, delay_s, flush_s + 0.010 + slack_s, setup_ok=delay_s < 0.5, stderr=stderr)


def fault_trial(binary: Path, out: Path, spec: str, flush_s: float = 0.2, slack_s: float = 0.05) -> CrashTrial:
    """Run a capture that kills itself at the step ``spec`` names (``KIND:STEP:N``), check the files."""
    env = dict(os.environ, JITTERSCOPE_FAULT=spec)
    start = time.monotonic()
    done = subprocess.run(capture_argv(binary, out, flush_s, seconds=20), capture_output=True, env=env,
                          timeout=60, check=False)
    kill_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if done.returncode != -signal.SIGKILL:
        return CrashTrial(0, 0, 0, None, False, f"{spec}: not killed at that step (exit {done.returncode}): "
                          f"{done.stderr!r}")
    return check_dataset(out, kill_ns, time.monotonic() - start, flush_s + 0.010 + slack_s, setup_ok=False,
                         stderr=done.stderr)


def check_dataset(out: Path, kill_ns: int, delay_s: float, allowed_s: float, setup_ok: bool,
                  stderr: bytes) -> CrashTrial:
    parts = sorted(out.glob("part-*.parquet")) if out.exists() else []
    if not parts:
        # killed during setup: nothing may exist yet, which is fine only that early
        return CrashTrial(delay_s, 0, 0, None, setup_ok, "" if setup_ok else f"no part file: {stderr!r}")
    try:
        table = pads.dataset(str(out), format="parquet").to_table()
        duck = duckdb.sql(f"select count(*), count(distinct (thread, seq)) from read_parquet('{out}/*.parquet')")
        [(duck_rows, duck_distinct)] = duck.fetchall()
        dataset = open_dataset(out)
        validation = validate_dataset(out)
    except Exception as exc:  # any failure to read is the finding
        return CrashTrial(delay_s, len(parts), 0, None, False, f"unreadable: {exc}")
    keys = table.column("thread").to_numpy().astype(np.int64) << 40 | table.column("seq").to_numpy()
    problems = []
    if len(np.unique(keys)) != table.num_rows:
        problems.append(f"{table.num_rows - len(np.unique(keys))} duplicate (thread, seq)")
    if (duck_rows, duck_distinct) != (table.num_rows, table.num_rows):
        problems.append(f"DuckDB reads {duck_rows} rows ({duck_distinct} distinct), pyarrow {table.num_rows}")
    if not validation.valid and table.num_rows > 0:  # killed before the first rows: validate says "no rows"
        problems.append(f"validate: {'; '.join(validation.problems)}")
    trial = _check_missing(dataset, table, kill_ns, delay_s, len(parts), allowed_s)
    if problems:
        return CrashTrial(delay_s, len(parts), table.num_rows, trial.missing_s, False,
                          "; ".join([*problems, trial.problem]).strip("; "))
    return trial


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
