"""Kind ``poll`` in the dataset layer: opening, the per-second table, and what ``validate`` checks.

A real 1.5 s poll capture (tests/data/capture/poll-1s5) is valid; copies of it with one thing changed each are
not, and the problem names what changed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import (
    POLL_WINDOW_COLUMNS,
    open_dataset,
    poll_bucket_column,
    poll_edges,
    read_poll_windows,
    validate_dataset,
)
from jitterscope.errors import SchemaError

DATA = Path(__file__).resolve().parents[1] / "data" / "capture" / "poll-1s5"
ROWS = DATA / "part-00000.parquet"
WINDOWS = DATA / "_poll" / "part-00000.parquet"


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "poll"
    shutil.copytree(DATA, out)
    return out


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    table = pq.read_table(path)
    changed = change(table).replace_schema_metadata(table.schema.metadata)
    pq.write_table(changed, path, use_dictionary=False)


def _set(column: str, values: Callable[[np.ndarray], np.ndarray]) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        index = table.column_names.index(column)
        new = values(table.column(column).to_numpy().copy())
        return table.set_column(index, table.schema.field(index), pa.array(new, type=table.schema.field(index).type))
    return change


def test_the_real_capture_is_valid_and_reads() -> None:
    verdict = validate_dataset(DATA)
    assert verdict.valid and verdict.kind == "poll", verdict.problems
    dataset = open_dataset(DATA)
    assert dataset.metadata.threads[0].interval_ns == 0  # allowed for kind poll (refused for the others)
    windows = read_poll_windows(DATA)
    edges = poll_edges(dataset.metadata)
    assert list(windows.columns) == [c.name for c in POLL_WINDOW_COLUMNS] + [
        poll_bucket_column(k) for k in range(edges.size - 1)]
    assert int(windows["interruptions"].sum()) == dataset.num_rows
    assert (np.diff(edges) > 0).all() and edges[0] == 0


@pytest.mark.parametrize(("path", "change", "says"), [
    (WINDOWS, _set("interruptions", lambda v: v + np.eye(1, v.size, 0, dtype=v.dtype)[0]),
     "interruptions, the rows"),
    (WINDOWS, _set("noise_ns", lambda v: v - 1), "noise_ns"),
    (WINDOWS, _set("h40", lambda v: v + 1), "histogram does not add up"),
    (WINDOWS, _set("max_gap_ns", lambda v: v // 2), "exceeds its window's max_gap_ns"),
    (WINDOWS, _set("window_start_ns", lambda v: v[::-1].copy()), "not in time order"),
    (WINDOWS, _set("max_gap_ns", lambda v: v * 2), "not in the highest non-empty histogram bucket"),
    (ROWS, _set("duration_ns", lambda v: np.where(np.arange(v.size) == 3, 999, v)), "shorter than the threshold"),
    (ROWS, _set("start_ns", lambda v: np.where(np.arange(v.size) == 5, v[4], v)), "start_ns not strictly"),
])
def test_a_damaged_copy_is_invalid(tmp_path: Path, path: Path, change: Callable[[pa.Table], pa.Table],
                                   says: str) -> None:
    out = _copy(tmp_path)
    _rewrite(out / path.relative_to(DATA), change)
    verdict = validate_dataset(out)
    assert not verdict.valid
    assert any(says in problem for problem in verdict.problems), verdict.problems


def test_a_poll_dataset_without_its_table_is_invalid(tmp_path: Path) -> None:
    out = _copy(tmp_path)
    shutil.rmtree(out / "_poll")
    verdict = validate_dataset(out)
    assert not verdict.valid and "_poll/part-*.parquet" in verdict.problems[-1]


def _metadata_change(tmp_path: Path, key: bytes, value: bytes | None) -> Path:
    out = _copy(tmp_path)
    table = pq.read_table(out / "part-00000.parquet")
    kv = dict(table.schema.metadata)
    if value is None:
        del kv[key]
    else:
        kv[key] = value
    pq.write_table(table.replace_schema_metadata(kv), out / "part-00000.parquet", use_dictionary=False)
    return out


def test_kind_poll_needs_its_poll_key(tmp_path: Path) -> None:
    out = _metadata_change(tmp_path, b"jitterscope.poll", None)
    with pytest.raises(SchemaError, match=r"jitterscope\.poll is missing"):
        open_dataset(out)


def test_histogram_edges_must_increase(tmp_path: Path) -> None:
    poll = json.loads(pq.read_schema(ROWS).metadata[b"jitterscope.poll"])
    poll["histogram_edges_ns"][5] = poll["histogram_edges_ns"][4]
    out = _metadata_change(tmp_path, b"jitterscope.poll", json.dumps(poll).encode())
    with pytest.raises(SchemaError, match="not strictly increasing"):
        open_dataset(out)


def test_interval_zero_is_still_refused_for_a_capture(tmp_path: Path) -> None:
    """The issue-26 rule keeps holding for every kind but histogram and poll."""
    out = _metadata_change(tmp_path, b"jitterscope.kind", b'"capture"')
    with pytest.raises(SchemaError, match="interval_ns: 0"):
        open_dataset(out)
