"""The writer's part rotation, checked from outside with pyarrow on a short synthetic run.

The 24 h x 16 CPU x 1 kHz run is benchmarks/capture_writer.py; here 0.02 h
(1.15 M rows, 72 flushes) is enough for several rotations.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from jitterscope.dataset import open_dataset


def _bench(binary: Path, spec: str, out: Path) -> dict[str, float]:
    done = subprocess.run([str(binary), spec, "-o", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: float(line.split()[1]) for line in done.stdout.splitlines()[1:]}


def test_rotation_keeps_old_footers_under_the_threshold(bench_writer_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    v = _bench(bench_writer_bin, "0.02,16,1000", out)
    assert v["rows"] == 0.02 * 3600 * 16 * 1000 and v["flushes"] == 72
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == v["parts"] > 1
    total_data = total_dead = 0
    for part in parts:
        meta = pq.ParquetFile(part).metadata
        data = sum(meta.row_group(g).column(c).total_compressed_size
                   for g in range(meta.num_row_groups) for c in range(meta.num_columns))
        dead = os.path.getsize(part) - 4 - data - (meta.serialized_size + 8)
        # the rule: a part is rotated before its superseded footers pass 4 % of its data
        # (judged with the next row group at the part's average size, hence the margin of one group)
        assert dead <= 0.04 * data * (1 + 1 / meta.num_row_groups), part.name
        total_data += data
        total_dead += dead
    assert (total_data, total_dead) == (v["data_bytes"], v["dead_footer_bytes"])
    assert total_dead / total_data <= 0.05


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
