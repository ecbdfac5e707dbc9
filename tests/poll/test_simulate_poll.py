"""simulate_poll and write_poll_dataset follow the poll contract: rows, the per-second table, metadata."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, open_trace, poll_histogram_edges, read_poll_table
from jitterscope.io import PollSpec, PollSpecError, simulate_poll
from jitterscope.poll import read_poll


def test_simulations_use_the_capture_histogram_edges(traced_poll):
    """One schema source: the simulation's buckets are the capture's (tests/test_contract.py checks those against
    the binary's), 4 per octave up to 2^36 ns and the last one open."""
    edges = open_dataset(traced_poll).metadata.poll["histogram_edges_ns"]
    assert edges == poll_histogram_edges()
    assert edges[:8] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert edges[8:13] == [8, 10, 12, 14, 16]
    assert edges[-1] == 2**63 - 1 and edges[-2] == 2**36 and edges[-3] == 2**35 + 3 * 2**33
    assert all(b > a for a, b in itertools.pairwise(edges))


def test_rows_and_per_second_table_follow_the_contract(traced_poll):
    dataset = open_dataset(traced_poll)
    assert dataset.metadata.kind == "poll"
    schema = pq.read_schema(next(traced_poll.glob("part-*.parquet")))
    assert [(f.name, f.type) for f in schema] == [("cpu", pa.int32()), ("thread", pa.int32()), ("seq", pa.int64()),
                                                  ("start_ns", pa.int64()), ("duration_ns", pa.int64())]
    seconds = read_poll_table(traced_poll)
    edges = dataset.metadata.poll["histogram_edges_ns"]
    assert sum(name.startswith("h") for name in seconds.column_names) == len(edges) - 1
    assert seconds.num_rows == 20 and set(seconds.column("window_ns").to_pylist()) == {10**9}
    rows = dataset.read()
    start = rows.column("start_ns").to_numpy()
    assert np.all(np.diff(start) > 0) and rows.column("seq").to_pylist() == list(range(rows.num_rows))
    assert rows.column("duration_ns").to_numpy().min() >= dataset.metadata.poll["threshold_ns"]
    # nothing lost between the rows and the per-second table: counts and noise agree
    assert sum(seconds.column("interruptions").to_pylist()) == rows.num_rows
    assert sum(seconds.column("noise_ns").to_pylist()) == int(rows.column("duration_ns").to_numpy().sum())
    info = dataset.metadata.threads[0]
    assert info.interval_ns == 0 and info.samples == rows.num_rows
    assert info.extra["iterations"] == sum(seconds.column("iterations").to_pylist())
    # every gap is in the histogram, those below the threshold too (the sub-µs hiccups)
    hist = np.vstack([seconds.column(f"h{k:02d}").to_numpy() for k in range(len(edges) - 1)]).T
    below = np.asarray(edges[:-1]) < dataset.metadata.poll["threshold_ns"]
    assert hist[:, ~below].sum() == rows.num_rows and hist[:, below].sum() > 0
    assert open_trace(traced_poll) is not None


def test_planted_truth_is_recorded_and_reproducible(tmp_path):
    spec = PollSpec(cpus=(0, 1), duration_s=3, hardware_rate_hz=5)
    first = simulate_poll(spec, tmp_path / "a", seed=3)
    second = simulate_poll(spec, tmp_path / "b", seed=3)
    a, b = read_poll(first), read_poll(second)
    for ta, tb in zip(a.threads, b.threads, strict=True):
        assert np.array_equal(ta.start_ns, tb.start_ns) and np.array_equal(ta.duration_ns, tb.duration_ns)
    truth = a.dataset.metadata.ground_truth["cpus"]["1"]
    assert truth["rt_throttling"]["count"] == len(truth["rt_throttling"]["start_ns"]) in (2, 3)
    assert a.dataset.metadata.environment["hz"] == 250
    assert a.dataset.metadata.poll["rt_throttling"] == {"runtime_us": 950000, "period_us": 1000000}


def test_force_replaces_an_earlier_dataset_and_bad_specs_say_which_field(tmp_path):
    spec = PollSpec(cpus=(1,), duration_s=1, trace=True)
    simulate_poll(spec, tmp_path / "d", seed=1)
    simulate_poll(PollSpec(cpus=(1,), duration_s=2), tmp_path / "d", seed=1, overwrite=True)
    assert read_poll_table(tmp_path / "d").num_rows == 2
    assert open_trace(tmp_path / "d") is None  # the old trace went with the old dataset
    with pytest.raises(PollSpecError, match="tick_ns"):
        PollSpec(tick_ns=10)
    with pytest.raises(PollSpecError, match="rt_runtime_us"):
        PollSpec(rt_runtime_us=2_000_000)


def test_a_per_second_table_that_does_not_match_its_edges_is_refused(tmp_path, traced_poll):
    import shutil

    from jitterscope.errors import SchemaError
    copy = tmp_path / "c"
    shutil.copytree(traced_poll, copy)
    part = copy / "_poll" / "part-00000.parquet"
    table = pq.read_table(part)
    pq.write_table(table.drop_columns(["h05"]), part)
    with pytest.raises(SchemaError, match=r"lacks column.*h05"):
        read_poll(copy)
