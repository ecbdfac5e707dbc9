"""Time and peak RSS of event detection against the read floor and the summary pass, on simulated data.

Usage: python benchmarks/events_memory.py [--sizes 1e6 1e7] [--threads 2] [--keep DIR]

For each size it simulates that many wake-ups (once, cached in --keep) and measures, each in a fresh
subprocess so peak RSS is the step's own:
  floor    pyarrow reading thread/expected_ns/actual_ns + one numpy pass
  summary  jitterscope.summary.summarize (the pass the report makes anyway; it gives the default threshold)
  events   jitterscope.events.find_events with the summary given (what the report adds for events)
and prints seconds, the ratio to the floor and peak RSS (the events step's RSS includes the summary its untimed
setup computes).  Target: events stay within a few times the floor and flat in RSS as the size grows (one
small record per episode, never the wake-ups).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import floor_step, run_step, simulated, work_dir

SUMMARY = """
from jitterscope.dataset import open_dataset
from jitterscope.summary import summarize
summarize(open_dataset(PATH))
"""
STEPS = {
    "floor": floor_step(["thread", "expected_ns", "actual_ns"]),
    "summary": SUMMARY,
    "events": """
from jitterscope.dataset import open_dataset
from jitterscope.events import find_events
e = find_events(DATASET, summary=SUMMARY_RESULT)
print(f"# {len(e.events):,} events above {e.threshold_ns / 1000:.1f} us", file=sys.stderr)
""",
}
EVENTS_SETUP = """
import numpy, pyarrow.parquet, jitterscope.events
from jitterscope.dataset import open_dataset
from jitterscope.summary import summarize
DATASET = open_dataset(PATH)
SUMMARY_RESULT = summarize(DATASET)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="directory to keep (and reuse) the simulated datasets in")
    args = parser.parse_args()
    work = work_dir(args.keep)
    print(f"{'rows':>12} {'step':>9} {'seconds':>9} {'x floor':>8} {'peak RSS MB':>12}")
    for size in args.sizes:
        rows = int(size)
        path = simulated(work, rows, args.threads)
        floor = run_step("floor", STEPS["floor"], path, setup="import numpy, pyarrow.parquet\n")
        for step in STEPS:
            setup = EVENTS_SETUP if step == "events" else "import numpy, pyarrow.parquet, jitterscope.summary\n"
            result = floor if step == "floor" else run_step(step, STEPS[step], path, setup=setup)
            ratio = result["seconds"] / floor["seconds"]
            print(f"{rows:>12,} {step:>9} {result['seconds']:>9.2f} {ratio:>8.2f} {result['rss_mb']:>12.0f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
