"""Time and peak RSS of the streaming tail analysis against the read floor (and the in-memory path) on simulated data.

Usage: python benchmarks/tails_memory.py [--sizes 1e7 1e8] [--threads 2] [--keep DIR] [--memory-up-to 1e7]

For each size it simulates that many wake-ups (once, cached in --keep) and measures,
each in a fresh subprocess so peak RSS is the step's own:
  floor    pyarrow reading thread/expected_ns/actual_ns + one numpy pass
  tails    jitterscope.tails.analyze_tails (streaming, what `jitterscope tails` and the report run)
  memory   the whole-series path (read_thread_series + fit_tail per thread), only up to --memory-up-to rows
and prints seconds, the ratio to the floor and peak RSS.  Target (issue 3): the report on 1e8 within
60 s on 2 cores and 2 GB peak RSS, not growing with size; the tails step must stay flat in RSS.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import floor_step, run_step, simulated, work_dir

STEPS = {
    "floor": floor_step(["thread", "expected_ns", "actual_ns"]),
    "tails": """
from jitterscope.dataset import open_dataset
from jitterscope.tails import analyze_tails
r = analyze_tails(open_dataset(PATH))
print("# xi per thread:", ", ".join(f"{f.xi:.3f}" for f in r.threads), file=sys.stderr)
""",
    "memory": """
from jitterscope.dataset import open_dataset
from jitterscope.derive import read_thread_series
from jitterscope.tails import fit_tail
for s in read_thread_series(open_dataset(PATH)):
    fit_tail(s.latency_ns, interval_ns=s.info.interval_ns)
""",
}

SETUP = "import numpy, pyarrow.parquet, jitterscope.tails, jitterscope.derive\n"


def measure(step: str, path: Path) -> dict[str, float]:
    return run_step(step, STEPS[step], path, setup=SETUP)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="directory to keep (and reuse) the simulated datasets in")
    parser.add_argument("--memory-up-to", type=float, default=1e7,
                        help="run the whole-series baseline only on sizes up to this (it needs ~90 bytes per row)")
    args = parser.parse_args()
    work = work_dir(args.keep)
    print(f"{'rows':>12} {'step':>9} {'seconds':>9} {'x floor':>8} {'peak RSS MB':>12}")
    for size in args.sizes:
        rows = int(size)
        path = simulated(work, rows, args.threads)
        floor = measure("floor", path)
        for step in STEPS:
            if step == "memory" and rows > args.memory_up_to:
                continue
            result = floor if step == "floor" else measure(step, path)
            ratio = result["seconds"] / floor["seconds"]
            print(f"{rows:>12,} {step:>9} {result['seconds']:>9.2f} {ratio:>8.2f} {result['rss_mb']:>12.0f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
