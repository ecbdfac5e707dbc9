"""Issue 11: `jitterscope power` on a capture joined with a turbostat timeline, at 1e7 and 1e8 wake-ups: time and
peak RSS, streamed, against the read floor (and, where it fits, the in-memory join it replaced).

Usage: python benchmarks/timeline_memory.py [--sizes 1e7 1e8] [--keep DIR] [--repeat N] [--in-memory]

Each dataset is streaming_memory's simulated capture (2 threads at 100 µs) with its counter columns dropped
and a synthetic turbostat timeline attached (1 s intervals, Bzy_MHz stepping 2400/1200 MHz every 20 s, an
SMI every 7 s on both CPUs), written once, row group by row group, into --keep.  Steps, each in a fresh
interpreter:

  floor      pyarrow reading thread/cpu/seq/expected_ns/actual_ns row group by row group + one numpy pass
  timeline   jitterscope.power.correlate_dataset (the streamed join)
  in-memory  timeline_counters + correlate, the whole join in memory (--in-memory; 1e7 only: at 1e8 it needs
             tens of GB)

Targets (issue 11): peak RSS <= 1.5 GB at 1e8 and within 10 % of 1e7's; the streamed join within a few
times its floor.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import floor_step, run_best, work_dir
from streaming_memory import rss_checks, simulate_with_counters

COLUMNS = ["cpu", "thread", "seq", "expected_ns", "actual_ns", "overruns", "run_cpu"]
SETUP = "import sys, numpy, pyarrow.parquet\nfrom jitterscope.dataset import open_dataset\n"
STEPS = {
    "floor": ("", floor_step(["thread", "cpu", "seq", "expected_ns", "actual_ns"])),
    "timeline": ("from jitterscope.power import correlate_dataset\n", """
result, _ = correlate_dataset(open_dataset(PATH))
print("# attributed:", dict(result.attributed), "| first verdict:", result.verdicts[0][:60], file=sys.stderr)
"""),
    "in-memory": ("from jitterscope.power import correlate, timeline_counters\n", """
dataset = open_dataset(PATH)
counted = timeline_counters(dataset, relative_threshold=0.05)
result = correlate(counted.counters, dataset.metadata.environment, timeline=counted)
print("# attributed:", dict(result.attributed), file=sys.stderr)
"""),
}


def with_timeline(work: Path, rows: int) -> Path:
    """``work/timeline-ROWS.parquet``: the counter-less copy of power-ROWS with a timeline, written once."""
    import pyarrow.parquet as pq
    from jitterscope.dataset import open_dataset, stream_dataset

    path = work / f"timeline-{rows}.parquet"
    if path.exists():
        return path
    source = simulate_with_counters(work, rows)
    dataset = open_dataset(source)
    meta = dataset.metadata
    offset = meta.clock["realtime_ns"] - meta.clock["monotonic_ns"]
    parquet = pq.ParquetFile(source)
    first = min(parquet.metadata.row_group(g).column(4).statistics.min for g in range(parquet.num_row_groups))
    last = max(parquet.metadata.row_group(g).column(4).statistics.max for g in range(parquet.num_row_groups))
    t0 = (first + offset) / 1e9 - 0.5
    blocks = int((last - first) / 1e9) + 2
    ends = [round(t0 + k + 1, 6) for k in range(blocks)]
    mhz = [2400.0 if (k // 20) % 2 == 0 else 1200.0 for k in range(blocks)]
    smi = [1 if k % 7 == 3 else 0 for k in range(blocks)]
    values = {str(cpu): {"Bzy_MHz": mhz, "Busy%": [1.0] * blocks, "SMI": smi} for cpu in (0, 1)}
    timeline = {"source": "turbostat", "file": "bench-turbostat.txt", "interval_s": 1.0, "clock": "realtime",
                "time_from": "Time_Of_Day_Seconds", "columns": ["Busy%", "Bzy_MHz", "SMI"], "cpus": [0, 1],
                "start_s": [round(t0, 6), *ends[:-1]], "end_s": ends, "values": values,
                "package": {"SMI": [2 * v for v in smi]}}
    with stream_dataset(path) as stream:
        for group in range(parquet.num_row_groups):
            stream.write(parquet.read_row_group(group, columns=COLUMNS), meta.kind)
        stream.finish(meta.with_changes(timeline=timeline, counters=None))
    print(f"# wrote {path} ({blocks} turbostat intervals)", file=sys.stderr)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e7])
    parser.add_argument("--keep", type=Path, help="directory to cache the datasets in")
    parser.add_argument("--repeat", type=int, default=1, help="runs per step; the fastest counts")
    parser.add_argument("--in-memory", action="store_true", help="also the in-memory join (1e7 only)")
    args = parser.parse_args()
    work = work_dir(args.keep)
    print(f"{'rows':>12} {'step':>10} {'seconds':>9} {'x floor':>8} {'peak RSS':>10} {'RSS vs first':>13}  target")
    first: dict[str, float] = {}
    for size in args.sizes:
        rows = int(size)
        path = with_timeline(work, rows)
        steps = ["floor", "timeline", *(["in-memory"] if args.in_memory and rows <= 10**7 else [])]
        results = {}
        for name in steps:
            setup, code = STEPS[name]
            results[name] = run_best(name, code, path, work, setup=SETUP + setup, repeat=args.repeat)
        for name, result in results.items():
            ratio = result["seconds"] / results["floor"]["seconds"]
            growth = f"{result['rss_mb'] / first[name]:12.2f}x" if name in first else f"{'':>13}"
            checks = []
            if name == "timeline":
                checks += rss_checks(result["rss_mb"], first.get(name))
            print(f"{rows:>12,} {name:>10} {result['seconds']:9.2f} {ratio:8.2f} {result['rss_mb']:6.0f} MiB "
                  f"{growth}  " + "; ".join(checks), flush=True)
            first.setdefault(name, result["rss_mb"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
