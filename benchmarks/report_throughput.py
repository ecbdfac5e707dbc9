"""Time of `jitterscope report` against the read floor, and its peak RSS, on simulated datasets.

Usage: python benchmarks/report_throughput.py [--sizes 1e7 1e8] [--threads 2] [--keep DIR] [--sections a,b]

For each size it simulates that many wake-ups (once, cached in --keep), then
measures in fresh subprocesses, so peak RSS is each step's own:
  floor   pyarrow reading the columns the report reads + one numpy pass over them
  timeline  the report's own streaming pass (timeline.compute_timeline)
  report  the whole `write_report` (summary pass + timeline pass + figures + PDF)
and prints seconds, the ratio to the floor, and peak RSS.  Targets (issue 3):
report on 1e8 <= 60 s on 2 cores, peak RSS <= 2 GB and not growing with size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import floor_step, run_step, simulated, work_dir

STEPS = {
    "floor": floor_step(["thread", "cpu", "seq", "expected_ns", "actual_ns"]),
    "timeline": """
from jitterscope.dataset import open_dataset
from jitterscope.summary import compute_timeline
compute_timeline(open_dataset(PATH))
""",
    "report": """
from jitterscope.report import write_report
info = write_report(PATH, OUT, sections=SECTIONS)
print("# sections:", ", ".join(f"{name} {secs:.1f} s" for name, secs in info.seconds), file=sys.stderr)
""",
}

SETUP = "import numpy, pyarrow.parquet, jitterscope.report, jitterscope.summary\n"


def measure(step: str, path: Path, out: Path, sections: str = "") -> dict[str, float]:
    chosen = tuple(sections.split(",")) if sections else None
    return run_step(step, STEPS[step], path, out, setup=SETUP + f"SECTIONS = {chosen!r}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="directory to keep (and reuse) the simulated datasets in")
    parser.add_argument("--sections", default="", help="comma-separated report sections to time (default: all)")
    args = parser.parse_args()
    work = work_dir(args.keep)
    print(f"{'rows':>12} {'step':>9} {'seconds':>9} {'x floor':>8} {'peak RSS MB':>12}")
    for size in args.sizes:
        rows = int(size)
        path = simulated(work, rows, args.threads)
        floor = measure("floor", path, work / "unused.pdf")
        for step in STEPS:
            result = floor if step == "floor" else measure(step, path, work / f"report-{rows}.pdf", args.sections)
            ratio = result["seconds"] / floor["seconds"]
            print(f"{rows:>12,} {step:>9} {result['seconds']:>9.2f} {ratio:>8.2f} {result['rss_mb']:>12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
