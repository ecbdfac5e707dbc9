"""validate: valid datasets pass; every broken one lists its problems, one line each."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from jitterscope.dataset import open_dataset
from jitterscope.simeffects import Drops, Stalls
from jitterscope.simulate import SimulationSpec, simulate, write_simulation
from jitterscope.validate import validate_dataset

SPEC = SimulationSpec(threads=2, samples=1000, effects=(Stalls(probability=0.01), Drops(probability=0.01)))


def _write(table, meta, path):
    pq.write_table(table.replace_schema_metadata(meta.to_kv()), path)
    return path


def test_valid_simulation(tmp_path):
    path = write_simulation(SPEC, tmp_path / "ok.parquet", 1)
    result = validate_dataset(path)
    samples = sum(t.samples for t in open_dataset(path).metadata.threads)
    assert result.valid and result.problems == () and result.rows == samples and result.threads == 2
    assert result.to_json()["valid"] is True


def test_collects_several_problems(tmp_path):
    table, meta = simulate(SPEC, 1)
    seq = table.column("seq").to_numpy().copy()
    seq[5] = seq[4]  # thread 0: seq repeats
    actual = table.column("actual_ns").to_numpy().copy()
    capture = dataclasses.replace(meta, kind="capture",
                                  threads=(meta.threads[0], dataclasses.replace(meta.threads[1], samples=5)))
    last_of_1 = int(np.flatnonzero(table.column("thread").to_numpy() == 1)[-1])
    actual[last_of_1] -= 10_000_000  # thread 1 wakes before it was due
    table = table.set_column(2, table.schema.field(2), pa.array(seq))
    table = table.set_column(4, table.schema.field(4), pa.array(actual))
    result = validate_dataset(_write(table, capture, tmp_path / "bad.parquet"))
    assert not result.valid
    text = "\n".join(result.problems)
    assert "thread 0: seq goes from" in text
    assert "thread 1: actual_ns < expected_ns" in text
    assert "thread 1: metadata says 5 samples" in text
    assert all("\n" not in p for p in result.problems)


def test_unreadable_file_is_one_problem(tmp_path):
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"PAR1" + bytes(100))
    result = validate_dataset(path)
    assert not result.valid and len(result.problems) == 1 and "Parquet" in result.problems[0]


def test_interrupted_capture_is_a_note_not_a_problem(tmp_path):
    table, meta = simulate(SPEC, 2)
    meta = dataclasses.replace(meta, status={"state": "interrupted", "reason": "SIGINT", "flushes": 3})
    result = validate_dataset(_write(table, meta, tmp_path / "i.parquet"))
    assert result.valid and result.notes == ("status is 'interrupted' (SIGINT)",)
