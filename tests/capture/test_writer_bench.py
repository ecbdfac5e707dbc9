"""The writer benchmark and the container it drives, checked from outside with pyarrow on short synthetic runs.

The 24 h runs are benchmarks/capture_writer.py; here 0.02 h (1.15 M rows, 72
flushes) with parts of 20 simulated seconds is enough for several rotations.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from jitterscope.dataset import open_dataset


def _bench(binary: Path, spec: str, out: Path, *extra: str) -> dict[str, float]:
    done = subprocess.run([str(binary), spec, "-o", str(out), *extra],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: float(line.split()[1]) for line in done.stdout.splitlines()[1:]}


def test_parts_have_no_dead_bytes_and_small_footers(bench_writer_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    v = _bench(bench_writer_bin, "0.02,16,1000", out, "--part-seconds", "20", "--group-seconds", "5")
    assert v["rows"] == 0.02 * 3600 * 16 * 1000 and v["flushes"] == 73  # the first, empty one writes part-00000
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == v["parts"] == 4  # 72 s of flushes in parts of 20 s
    assert not list(out.glob(".*"))
    total_data = total_footer = 0
    for part in parts:
        meta = pq.ParquetFile(part).metadata
        assert meta.num_row_groups == (4 if part != parts[-1] else 3)  # 5 s row groups
        data = sum(meta.row_group(g).column(c).total_compressed_size
                   for g in range(meta.num_row_groups) for c in range(meta.num_columns))
        footer = meta.serialized_size + 8
        assert os.path.getsize(part) == 4 + data + footer, part.name  # no dead bytes
        total_data += data
        total_footer += footer
    assert (total_data, total_footer) == (v["data_bytes"], v["footer_bytes"])
    assert v["overhead_ratio"] <= 0.02 and v["writer_cpu_percent"] < 10


def test_bench_parts_read_back_exactly(bench_writer_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    _bench(bench_writer_bin, "0.0025,3,1000", out)  # 9 simulated seconds, one flush each
    table = pads.dataset(str(out), format="parquet").to_table()
    assert table.num_rows == 9 * 3 * 1000
    dataset = open_dataset(out)
    assert dataset.metadata.status["state"] == "complete"
    for info in dataset.metadata.threads:
        mask = table.column("thread").to_numpy() == info.thread
        seq = table.column("seq").to_numpy()[mask]
        assert np.array_equal(seq, np.arange(9000)) and info.samples == 9000
        expected = table.column("expected_ns").to_numpy()[mask]
        assert np.all(np.diff(expected) == 1_000_000)
