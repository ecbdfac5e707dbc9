"""Time of `summary` against the read floor, and peak RSS, on simulated datasets of 1e7 and 1e8 wake-ups.

Usage: python benchmarks/analysis_throughput.py [--sizes 1e7 1e8] [--threads 4] [--keep DIR] [--repeat 2]

Each dataset is simulated once with `write_simulation`, which streams chunks
to the file (1e8 rows never sit in RAM), and cached in --keep.  Every step
then runs in a fresh subprocess so its peak RSS is its own:

  floor    pyarrow reading the columns summary reads + one numpy pass over them
  summary  jitterscope.summary.summarize (one streaming pass, invariants checked)

and the script prints seconds (best of --repeat), the ratio to the floor
measured in the same run, and peak RSS.  Target (issue 3): summary <= 3x the
floor.  More steps (the report's) go in STEPS: each is Python code run with
PATH (the dataset) and OUT (a scratch directory) defined; the report's own
timing lives in benchmarks/report_throughput.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import floor_step, run_best, work_dir

SUMMARY_COLUMNS = ["thread", "cpu", "seq", "expected_ns", "actual_ns", "overruns"]

STEPS: dict[str, str] = {
    "floor": floor_step(SUMMARY_COLUMNS),
    "summary": """
from jitterscope.dataset import open_dataset
from jitterscope.summary import summarize
summarize(open_dataset(PATH))
""",
}
TARGETS = {"summary": 3.0}


def simulate_to(path: Path, rows: int, threads: int) -> float:
    """Write a simulated dataset of ``rows`` wake-ups (if not cached); returns seconds spent."""
    if path.exists():
        return 0.0
    from jitterscope.io import Drops, PeriodicDisturbance, SimulationSpec, SMIs, Stalls, write_simulation

    spec = SimulationSpec(
        threads=threads, samples=rows // threads,
        effects=(PeriodicDisturbance(frequency_hz=10, amplitude_ns=20_000), SMIs(rate_hz=0.2),
                 Stalls(probability=1e-6), Drops(probability=1e-6)),
    )
    start = time.perf_counter()
    write_simulation(spec, path, seed=1)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e7])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="directory to cache the simulated datasets in")
    parser.add_argument("--repeat", type=int, default=2, help="runs per step; the best time counts")
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=list(STEPS))
    args = parser.parse_args()
    workdir = work_dir(args.keep)
    print(f"{'rows':>12} {'step':>9} {'seconds':>9} {'x floor':>8} {'peak RSS':>10}  target")
    for size in args.sizes:
        rows = int(size)
        path = workdir / f"sim-{rows}.parquet"
        made = simulate_to(path, rows, args.threads)
        if made:
            print(f"{rows:>12} {'simulate':>9} {made:9.2f} {'':>8} {'':>10}  ({path.stat().st_size / 2**20:.0f} MiB)")
        results = {}
        for name in ["floor", *[s for s in args.steps if s != "floor"]]:
            results[name] = run_best(f"step {name}", STEPS[name], path, workdir, repeat=args.repeat)
        floor = results["floor"]["seconds"]
        for name, result in results.items():
            ratio = result["seconds"] / floor
            target = TARGETS.get(name)
            verdict = "" if target is None else f"<= {target:g}x: {'met' if ratio <= target else 'MISSED'}"
            print(f"{rows:>12} {name:>9} {result['seconds']:9.2f} {ratio:8.2f} {result['rss_mb']:8.0f} MB  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
