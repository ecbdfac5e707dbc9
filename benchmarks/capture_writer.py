"""Writer benchmark (issue 16, must-show 1): the container over a day-long capture.

Runs ``jitterscope-bench-writer HOURS,CPUS,HZ`` (installed next to
``jitterscope-capture``, not on PATH; ``$JITTERSCOPE_BENCH_WRITER`` overrides)
for each configuration: synthetic samples go at full speed through the real
writer, encoder and container logic, nothing written unless ``--keep DIR``.
Default: 24 h at 2 CPUs x 1 kHz, 16 CPUs x 1 kHz and 16 CPUs x 10 kHz, one
flush a simulated second.  Prints per run and checks the targets:

* part files per day <= 25;
* footer and dead bytes / data <= 2 % (dead bytes are 0 by construction: a
  visible part is never appended to; ``--keep`` measures it from the files);
* bytes per wake-up (file bytes / rows);
* writer thread CPU time per simulated second <= 10 % of one core at
  16 CPUs x 10 kHz (the baseline: one core, the share the capture may take
  from the machine it measures);
* bytes written / bytes kept (the cost of rewriting the open row group each flush).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from jitterscope.io import capture_binary

DEFAULT_RUNS = ["24,2,1000", "24,16,1000", "24,16,10000"]


def bench_writer_binary() -> Path:
    """The writer benchmark: $JITTERSCOPE_BENCH_WRITER, or next to the capture binary."""
    override = os.environ.get("JITTERSCOPE_BENCH_WRITER")
    path = Path(override) if override else capture_binary().with_name("jitterscope-bench-writer")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} is not an executable file: reinstall (make install) or set JITTERSCOPE_BENCH_WRITER")
    return path


def bench(spec: str, keep: Path | None = None, extra: tuple[str, ...] = ()) -> dict[str, float]:
    """Run the writer benchmark for ``HOURS,CPUS,HZ`` and return its ``name value`` lines as numbers."""
    argv = [str(bench_writer_binary()), spec, *extra]
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


def measured_from_files(directory: Path) -> tuple[int, int, int]:
    """(data, footer, dead) bytes of the parts, measured with pyarrow: dead = size - magic - chunks - footer."""
    data = footer = dead = 0
    for part in sorted(directory.glob("part-*.parquet")):
        meta = pq.ParquetFile(part).metadata
        chunks = sum(meta.row_group(g).column(c).total_compressed_size
                     for g in range(meta.num_row_groups) for c in range(meta.num_columns))
        live = meta.serialized_size + 8  # footer + its length + "PAR1"
        data += chunks
        footer += live
        dead += os.path.getsize(part) - 4 - chunks - live
    return data, footer, dead


def report(spec: str, v: dict[str, float]) -> bool:
    hours, cpus, hz = (float(x) for x in spec.split(","))
    cpu_target = cpus >= 16 and hz >= 10000
    ok = v["parts_per_day"] <= 25 and v["overhead_ratio"] <= 0.02
    ok = ok and (not cpu_target or v["writer_cpu_percent"] <= 10)
    print(f"{hours:g} h, {cpus:.0f} CPUs x {hz:.0f} Hz: {v['rows']:.0f} rows, {v['parts']:.0f} parts "
          f"({v['parts_per_day']:.1f}/day), {v['row_groups']:.0f} row groups, {v['bytes_per_row']:.3f} B/wake-up, "
          f"footers+dead {v['overhead_ratio'] * 100:.3f} % of data, writer CPU {v['writer_cpu_percent']:.3f} % "
          f"of one core ({v['writer_cpu_s']:.1f} s), written/kept {v['write_amplification']:.1f} x, "
          f"wall {v['wall_s']:.1f} s -> {'ok' if ok else 'TARGET NOT MET'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", default=DEFAULT_RUNS, help="HOURS,CPUS,HZ (default: the three of issue 16)")
    parser.add_argument("--keep", type=Path, help="write the parts into this new directory and check them")
    args = parser.parse_args(argv)
    ok = True
    for spec in args.runs:
        v = bench(spec, args.keep)
        ok &= report(spec, v)
        if args.keep:
            data, footer, dead = measured_from_files(args.keep)
            print(f"  checked with pyarrow: data {data} B (binary says {v['data_bytes']:.0f}), footers {footer} B "
                  f"(binary says {v['footer_bytes']:.0f}), dead {dead} B")
            ok &= dead == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
