"""Speed and size of the capture binary's Parquet encoder (capture/parquet.c) against pyarrow.

Usage: python benchmarks/parquet_encode.py [--rows N] [--per-group N] [--threads N] [--dir DIR] [--repeat 3]

Synthetic capture-like columns (--threads interleaved 10 kHz threads: cpu, thread,
seq, expected_ns, actual_ns, overruns, tsc, run_cpu, read_cycles, aperf, mperf,
smi) are encoded by the C encoder (through capture/test_parquet.c's `encode`
mode, which times only encoding + writing, inputs already in memory) and by
pyarrow (`write_table`, uncompressed, no dictionary, the same row groups; the
table already in memory), once all-PLAIN and once all-DELTA_BINARY_PACKED.
Prints MB/s of raw column data and bytes/row for each, the C/pyarrow ratios
measured in the same run, and the headroom over 16 CPUs x 10 kHz. Both files
are read back and compared so a fast wrong encoder cannot look good. Files go
to /dev/shm when it exists (--dir to change), so the disk does not hide the
encoders' speed; about 4 x the raw size of space is needed there. Each timing
is the best of --repeat runs (the machine may be shared).
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
import pyarrow as pa
import pyarrow.parquet as pq

CAPTURE = Path(__file__).resolve().parents[1] / "capture"
CAPTURE_RATE_ROWS_S = 16 * 10_000  # 16 CPUs at 10 kHz


def capture_like(rows: int, threads: int, seed: int = 1) -> dict[str, np.ndarray]:
    """Columns shaped like a capture: interleaved threads, 100 µs period, jittery wake-ups, counters."""
    rng = np.random.default_rng(seed)
    index = np.arange(rows, dtype=np.int64)
    thread = (index % threads).astype(np.int32)
    seq = index // threads
    expected = 1_000_000_000 + seq * 100_000 + thread.astype(np.int64) * 7
    latency = 1_500 + rng.gamma(2.0, 800.0, rows).astype(np.int64)
    tsc_hz = 2.4
    aperf_step = rng.integers(100_000, 240_000, rows)
    return {
        "cpu": thread + 2,
        "thread": thread,
        "seq": seq,
        "expected_ns": expected,
        "actual_ns": expected + latency,
        "overruns": (rng.random(rows) < 1e-4).astype(np.int32),
        "tsc": ((expected + latency) * tsc_hz).astype(np.int64),
        "run_cpu": thread + 2,
        "read_cycles": rng.integers(200, 3_000, rows).astype(np.int32),
        "aperf": np.cumsum(aperf_step),
        "mperf": np.cumsum(np.full(rows, 240_000, dtype=np.int64)),
        "smi": np.cumsum(rng.random(rows) < 1e-6).astype(np.int64),
    }


def build(directory: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        sys.exit("no C compiler found: install gcc")
    exe = directory / "test_parquet"
    sources = [str(CAPTURE / name) for name in ("tests/test_parquet.c", "parquet.c", "snappy.c", "thrift.c")]
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-O2"]
    subprocess.run([cc, *flags, f"-I{CAPTURE}", "-o", str(exe), *sources], check=True)
    return exe


def encode_c(
    exe: Path, directory: Path, columns: dict[str, np.ndarray], encoding: str, per_group: int
) -> tuple[float, Path]:
    specs = []
    for name, values in columns.items():
        path = directory / f"{name}.bin"
        if not path.exists():
            values.tofile(path)
        kind = "int32" if values.dtype == np.int32 else "int64"
        specs.append(f"{name}:{kind}:{encoding}:{path}")
    out = directory / f"c-{encoding}.parquet"
    command = [str(exe), "encode", str(out), str(per_group), *specs]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    fields = dict(item.split("=") for item in run.stdout.split())
    return float(fields["seconds"]), out


def encode_pyarrow(table: pa.Table, directory: Path, encoding: str, per_group: int) -> tuple[float, Path]:
    out = directory / f"pyarrow-{encoding}.parquet"
    name = "PLAIN" if encoding == "plain" else "DELTA_BINARY_PACKED"
    start = time.perf_counter()
    pq.write_table(
        table, out, row_group_size=per_group, compression="NONE", use_dictionary=False,
        column_encoding=dict.fromkeys(table.column_names, name), data_page_version="1.0",
    )  # fmt: skip
    return time.perf_counter() - start, out


def same_content(path: Path, table: pa.Table) -> bool:
    return pq.read_table(path).equals(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--per-group", type=int, default=800_000, help="rows per row group (16 CPUs x 10 kHz x 5 s)")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="runs per encoder; the fastest counts")
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None, help="scratch directory")
    args = parser.parse_args()

    columns = capture_like(args.rows, args.threads)
    schema = pa.schema([pa.field(n, pa.from_numpy_dtype(v.dtype), nullable=False) for n, v in columns.items()])
    table = pa.table(columns, schema=schema)
    raw_mb = sum(v.nbytes for v in columns.values()) / 1e6
    print(f"{args.rows} rows x {len(columns)} columns = {raw_mb:.0f} MB raw, {args.per_group} rows per row group")
    with tempfile.TemporaryDirectory(prefix="jitterscope-bench-", dir=args.dir) as tmp:
        directory = Path(tmp)
        exe = build(directory)
        for encoding in ("plain", "delta"):
            c_s, c_path = min(encode_c(exe, directory, columns, encoding, args.per_group) for _ in range(args.repeat))
            pa_s, pa_path = min(encode_pyarrow(table, directory, encoding, args.per_group) for _ in range(args.repeat))
            ok = same_content(c_path, table) and same_content(pa_path, table)
            c_size, pa_size = c_path.stat().st_size, pa_path.stat().st_size
            print(
                f"{encoding:5s}  C: {raw_mb / c_s:7.0f} MB/s {c_size / args.rows:6.2f} B/row   "
                f"pyarrow: {raw_mb / pa_s:7.0f} MB/s {pa_size / args.rows:6.2f} B/row   "
                f"C/pyarrow speed x{pa_s / c_s:.2f} size x{c_size / pa_size:.3f}   "
                f"headroom over 16 CPUs x 10 kHz: x{args.rows / c_s / CAPTURE_RATE_ROWS_S:.0f}   "
                f"read back equal: {ok}"
            )
            if not ok:
                print("ERROR: a file does not read back as the input table", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
