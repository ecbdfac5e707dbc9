"""The container of issue 16 from outside: few parts, no dead bytes, stock readers, the old format still reads."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, validate_dataset

OLD = Path(__file__).resolve().parents[1] / "data" / "capture" / "appended-footers-v0.1"


def _capture(binary: Path, out: Path, *args: str, env=None) -> subprocess.CompletedProcess:
    argv = [str(binary), "-q", "-o", str(out), *args] + ([] if os.geteuid() == 0 else ["--policy", "other"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return done


def _dead_bytes(part: Path) -> int:
    meta = pq.ParquetFile(part).metadata
    chunks = sum(meta.row_group(g).column(c).total_compressed_size
                 for g in range(meta.num_row_groups) for c in range(meta.num_columns))
    return os.path.getsize(part) - 4 - chunks - (meta.serialized_size + 8)


def test_dataset_of_the_previous_writer_still_reads() -> None:
    dataset = open_dataset(OLD)
    assert len(dataset.files) == 4 and dataset.num_rows == 150
    assert dataset.metadata.status["state"] == "complete"
    assert validate_dataset(OLD).valid
    assert pads.dataset(str(OLD)).to_table().num_rows == 150
    assert _dead_bytes(OLD / "part-00000.parquet") > 0  # it really has a superseded footer


def test_parts_rotate_and_row_groups_seal_without_dead_bytes(capture_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _capture(capture_bin, out, "-D", "2.5", "--flush-interval", "0.1", "--group-seconds", "0.3",
             "--part-seconds", "1")
    parts = sorted(out.glob("part-*.parquet"))
    assert [p.name for p in parts] == [f"part-{k:05d}.parquet" for k in range(len(parts))]
    assert 3 <= len(parts) <= 4  # 2.5 s in parts of 1 s
    assert not list(out.glob(".*"))  # the twins' hidden names are gone after a clean end
    for part in parts:
        assert _dead_bytes(part) == 0, part.name
    assert pq.ParquetFile(parts[0]).metadata.num_row_groups >= 3  # 0.3 s row groups in a 1 s part
    table = pads.dataset(str(out)).to_table()
    [(rows, distinct)] = duckdb.sql(
        f"select count(*), count(distinct (thread, seq)) from read_parquet('{out}/*.parquet')").fetchall()
    assert rows == distinct == table.num_rows
    dataset = open_dataset(out)
    assert dataset.metadata.status["state"] == "complete"
    assert sum(t.samples for t in dataset.metadata.threads) == table.num_rows
    assert validate_dataset(out).valid


def test_readers_see_a_complete_dataset_while_it_is_written(capture_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "live"
    argv = [str(capture_bin), "-q", "-D", "3", "--flush-interval", "0.05", "--group-seconds", "0.2",
            "--part-seconds", "0.7", "-o", str(out)] + ([] if os.geteuid() == 0 else ["--policy", "other"])
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    reads = []
    try:
        while proc.poll() is None:
            if list(out.glob("part-*.parquet")):
                table = pads.dataset(str(out)).to_table(columns=["thread", "seq"])
                keys = table.column("thread").to_numpy().astype(np.int64) << 40 | table.column("seq").to_numpy()
                assert len(np.unique(keys)) == len(keys)
                reads.append(len(keys))
            time.sleep(0.01)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert len(reads) >= 20 and reads == sorted(reads)  # never a row twice, never fewer rows than before


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for SCHED_FIFO")
def test_a_minute_at_1khz_on_every_cpu_is_at_most_two_parts(capture_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "minute"
    _capture(capture_bin, out, "-D", "60")
    parts = sorted(out.glob("part-*.parquet"))
    assert 1 <= len(parts) <= 2
    # every period of the minute is a row or a skipped period (a busy FIFO 99 test beside this one, e.g. a
    # poll loop on the same CPU under pytest -n 2, makes the thread skip periods), and no row was dropped
    dataset = open_dataset(out)
    assert len(dataset.metadata.threads) == len(os.sched_getaffinity(0))
    for thread in dataset.metadata.threads:
        assert thread.drops == 0
        assert thread.samples + thread.overruns >= 0.99 * 60_000, thread
