"""Writer benchmark (issue 2, must-show 3): footer overhead of a day-long capture.

Runs ``jitterscope-bench-writer HOURS,CPUS,HZ`` (installed next to
``jitterscope-capture``, not on PATH; ``$JITTERSCOPE_BENCH_WRITER`` overrides) (default 24 h at
1 kHz on 16 CPUs, one flush a simulated second): synthetic samples go at full
speed through the real writer and Parquet encoder, parts to /dev/null unless
``--keep DIR``.  Prints the binary's byte counts and the ratios:

* old (superseded) footer bytes / data bytes -- target <= 5 %;
* all footer bytes (old + each part's live one) / data bytes;
* encoding speed against real time (rows per second written / rows per second
  the capture produces), the baseline being the capture's own rate.

With ``--keep DIR`` the parts are also checked from outside with pyarrow (the
dead bytes of each part = size - magic - column chunks - live footer).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from jitterscope.capture import capture_binary


def bench_writer_binary() -> Path:
    """The writer benchmark: $JITTERSCOPE_BENCH_WRITER, or next to the capture binary."""
    override = os.environ.get("JITTERSCOPE_BENCH_WRITER")
    path = Path(override) if override else capture_binary().with_name("jitterscope-bench-writer")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} is not an executable file: reinstall (make install) or set JITTERSCOPE_BENCH_WRITER")
    return path


def bench(hours: float, cpus: int, hz: int, keep: Path | None = None) -> dict[str, float]:
    """Run the binary's writer benchmark and return its ``name value`` lines as numbers."""
    argv = [str(bench_writer_binary()), f"{hours:g},{cpus},{hz}"]
    if keep is not None:
        argv += ["-o", str(keep)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench-writer failed: {done.stderr.strip()}")
    values = {}
    for line in done.stdout.splitlines()[1:]:
        name, value = line.split()
        values[name] = float(value)
    return values


def measured_from_files(directory: Path) -> tuple[int, int]:
    """(data bytes, superseded-footer bytes) of the parts, measured with pyarrow."""
    data = dead = 0
    for part in sorted(directory.glob("part-*.parquet")):
        meta = pq.ParquetFile(part).metadata
        chunks = sum(meta.row_group(g).column(c).total_compressed_size
                     for g in range(meta.num_row_groups) for c in range(meta.num_columns))
        live = meta.serialized_size + 8  # footer + its length + "PAR1"
        data += chunks
        dead += os.path.getsize(part) - 4 - chunks - live
    return data, dead


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--cpus", type=int, default=16)
    parser.add_argument("--hz", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="write the parts into this new directory and check them")
    args = parser.parse_args(argv)
    v = bench(args.hours, args.cpus, args.hz, args.keep)
    realtime_rows_per_s = args.cpus * args.hz
    print(f"{args.hours:g} h at {args.hz} Hz on {args.cpus} CPUs: {v['rows']:.0f} rows in {v['parts']:.0f} parts, "
          f"{v['flushes']:.0f} flushes, {v['bytes_per_row']:.2f} bytes/row")
    print(f"old footers / data:  {v['dead_footer_ratio'] * 100:.2f} %  (target <= 5 %: "
          f"{'met' if v['dead_footer_ratio'] <= 0.05 else 'NOT met'})")
    print(f"all footers / data:  {v['all_footer_ratio'] * 100:.2f} %")
    print(f"speed: {v['rows_per_s']:.0f} rows/s = {v['rows_per_s'] / realtime_rows_per_s:.0f} x real time "
          f"({v['wall_s']:.1f} s)")
    if args.keep:
        data, dead = measured_from_files(args.keep)
        print(f"checked with pyarrow: data {data} B (binary says {v['data_bytes']:.0f}), "
              f"old footers {dead} B (binary says {v['dead_footer_bytes']:.0f})")
    return 0 if v["dead_footer_ratio"] <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
