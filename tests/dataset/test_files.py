"""dataset: opening files and directories, one-line errors for every broken input, per-thread iteration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import iter_thread_batches, open_dataset, stream_dataset
from jitterscope.errors import DatasetError, SchemaError, UnsupportedVersionError
from jitterscope.io import Drops, SimulationSpec, Stalls, simulate

SPEC = SimulationSpec(threads=2, samples=500, effects=(Stalls(probability=0.01), Drops(probability=0.01)))


def _raw_write(table: pa.Table, metadata, path):
    pq.write_table(table.replace_schema_metadata(metadata.to_kv()), path)
    return path


@pytest.fixture
def sim():
    return simulate(SPEC, 3)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text
    return text


def test_open_file_and_directory_of_parts(tmp_path, sim):
    table, meta = sim
    single = _raw_write(table, meta, tmp_path / "one.parquet")
    parts = tmp_path / "parts"
    parts.mkdir()
    half = table.num_rows // 2
    early = dataclasses.replace(meta, status={"state": "running", "reason": "", "flushes": 1})
    _raw_write(table.slice(0, half), early, parts / "part-00000.parquet")
    _raw_write(table.slice(half), meta, parts / "part-00001.parquet")
    a, b = open_dataset(single), open_dataset(parts)
    assert a.num_rows == b.num_rows == table.num_rows
    assert b.metadata == meta  # the last part's metadata wins
    assert b.read().equals(a.read())
    assert len(b.files) == 2


@pytest.mark.parametrize("damage, error, words", [
    ("text", DatasetError, "not a readable Parquet file"),
    ("empty", DatasetError, "empty"),
    ("truncated", DatasetError, "Parquet"),
    ("missing", DatasetError, "no such file"),
    ("no_parts", DatasetError, "no Parquet files"),
])
def test_unreadable_inputs_are_one_line_errors(tmp_path, sim, damage, error, words):
    table, meta = sim
    path = tmp_path / "d.parquet"
    if damage == "text":
        path.write_text("T: 0 ( 1234) P:99 I:1000 C:  10000 Min: 9 Act: 27 Avg: 22 Max: 595\n")
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        _raw_write(table, meta, path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif damage == "missing":
        path = tmp_path / "nothing-here"
    else:
        path = tmp_path / "emptydir"
        path.mkdir()
    with pytest.raises(error) as info:
        open_dataset(path)
    assert words in _one_line(info.value)


def test_missing_and_mistyped_columns(tmp_path, sim):
    table, meta = sim
    with pytest.raises(SchemaError) as info:
        open_dataset(_raw_write(table.drop_columns(["seq"]), meta, tmp_path / "a.parquet"))
    assert "required column 'seq' is missing" in _one_line(info.value)
    mistyped = table.set_column(table.schema.get_field_index("expected_ns"), "expected_ns",
                                table.column("expected_ns").cast(pa.float64()))
    with pytest.raises(SchemaError) as info:
        open_dataset(_raw_write(mistyped, meta, tmp_path / "b.parquet"))
    assert "'expected_ns' has type double" in _one_line(info.value)


def test_newer_version_and_foreign_parquet(tmp_path, sim):
    table, meta = sim
    with pytest.raises(UnsupportedVersionError) as info:
        open_dataset(_raw_write(table, dataclasses.replace(meta, schema_version=99), tmp_path / "v.parquet"))
    assert "upgrade jitterscope" in _one_line(info.value)
    pq.write_table(table, tmp_path / "plain.parquet")
    with pytest.raises(SchemaError) as info:
        open_dataset(tmp_path / "plain.parquet")
    assert "not a jitterscope dataset" in _one_line(info.value)


def _consume(path):
    for _ in iter_thread_batches(open_dataset(path), ["actual_ns"]):
        pass


def _with_column(table: pa.Table, name: str, values: np.ndarray) -> pa.Table:
    index = table.schema.get_field_index(name)
    return table.set_column(index, table.schema.field(index), pa.array(values, type=table.schema.field(index).type))


def test_non_monotonic_expected_ns(tmp_path, sim):
    table, meta = sim
    expected = table.column("expected_ns").to_numpy().copy()
    expected[[10, 11]] = expected[[11, 10]]
    path = _raw_write(_with_column(table, "expected_ns", expected), meta, tmp_path / "m.parquet")
    with pytest.raises(SchemaError) as info:
        _consume(path)
    assert "expected_ns not increasing" in _one_line(info.value)


def test_mixed_intervals_within_a_thread(tmp_path):
    spec = SimulationSpec(threads=1, samples=200)
    table, meta = simulate(spec, 0)
    expected = table.column("expected_ns").to_numpy().copy()
    # the second half runs at 1.5 ms: steps no longer multiples of the 1 ms interval
    expected[100:] = expected[100] + np.arange(100) * 1_500_000
    actual = expected + 2000
    table = _with_column(_with_column(table, "expected_ns", expected), "actual_ns", actual)
    with pytest.raises(SchemaError) as info:
        _consume(_raw_write(table, meta, tmp_path / "i.parquet"))
    assert "mixed intervals" in _one_line(info.value)


def test_unknown_thread_and_wrong_drops(tmp_path, sim):
    table, meta = sim
    threads = table.column("thread").to_numpy().copy()
    threads[threads == 1] = 7
    with pytest.raises(SchemaError) as info:
        _consume(_raw_write(_with_column(table, "thread", threads), meta, tmp_path / "t.parquet"))
    assert "thread 7" in _one_line(info.value)
    wrong = dataclasses.replace(meta, threads=(dataclasses.replace(meta.threads[0], drops=0), meta.threads[1]))
    assert meta.threads[0].drops > 0
    with pytest.raises(SchemaError) as info:
        _consume(_raw_write(table, wrong, tmp_path / "w.parquet"))
    assert "drops" in _one_line(info.value)


def test_iter_thread_batches_splits_interleaved_rows_in_order(tmp_path, sim):
    table, meta = sim
    # interleave the two threads row by row, as a capture's writer may
    order = np.argsort(table.column("expected_ns").to_numpy(), kind="stable")
    shuffled = table.take(pa.array(order))
    pq.write_table(shuffled.replace_schema_metadata(meta.to_kv()), tmp_path / "x.parquet", row_group_size=97)
    dataset = open_dataset(tmp_path / "x.parquet")
    seen: dict[int, list[np.ndarray]] = {0: [], 1: []}
    for info, batch in iter_thread_batches(dataset, ["seq", "actual_ns"]):
        assert batch.schema.names == ["seq", "actual_ns"]
        seen[info.thread].append(batch.column("seq").to_numpy())
        assert batch.num_rows <= 97
    for thread in (0, 1):
        seq = np.concatenate(seen[thread])
        original = table.filter(pa.compute.equal(table.column("thread"), thread)).column("seq").to_numpy()
        assert np.array_equal(seq, original)


def test_interleaved_threads_are_split_without_importing_pandas(tmp_path, sim):
    # pa.array(ndarray) imports pandas (0.3 s quiet, 1.5 s on a busy machine) on every summary of a capture
    import subprocess
    import sys

    table, meta = sim
    order = np.argsort(table.column("expected_ns").to_numpy(), kind="stable")
    pq.write_table(table.take(pa.array(order)).replace_schema_metadata(meta.to_kv()), tmp_path / "x.parquet",
                   row_group_size=97)
    code = ("import sys; from jitterscope.dataset import open_dataset, iter_thread_batches; "
            f"d = open_dataset({str(tmp_path / 'x.parquet')!r}); "
            "n = sum(b.num_rows for _, b in iter_thread_batches(d, ['seq'])); print(n, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(table.num_rows), "False"]


@pytest.mark.parametrize("threads", [True, False])
def test_iter_thread_batches_without_threads_reads_on_the_calling_thread(tmp_path, sim, monkeypatch, threads):
    """threads=False (a fleet's Dask tasks): no read-ahead thread, no pyarrow pool; the same rows either way."""
    import threading

    table, meta = sim
    pq.write_table(table.replace_schema_metadata(meta.to_kv()), tmp_path / "x.parquet", row_group_size=500)
    asked: list[bool] = []
    read_row_group = pq.ParquetFile.read_row_group

    def recording(self, *args, use_threads=True, **kwargs):
        asked.append(use_threads)
        return read_row_group(self, *args, use_threads=use_threads, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", recording)
    readers, seq = set(), []
    for _, batch in iter_thread_batches(open_dataset(tmp_path / "x.parquet"), ["seq"], threads=threads):
        readers |= {t.name for t in threading.enumerate() if t.name.startswith("jitterscope-read")}
        seq.append(batch.column("seq").to_numpy())
    assert len(asked) == -(-table.num_rows // 500) and set(asked) == {threads}
    assert bool(readers) is threads  # the read-ahead thread exists exactly when asked for
    assert np.array_equal(np.concatenate(seq), table.column("seq").to_numpy())


def test_empty_dataset_rows(tmp_path, sim):
    table, meta = sim
    path = _raw_write(table.slice(0, 0), meta, tmp_path / "e.parquet")
    with pytest.raises(SchemaError) as info:  # the gate: samples claimed, none present, refused on opening
        open_dataset(path)
    assert f"counts {sum(t.samples for t in meta.threads)} samples, the files hold 0 rows" in _one_line(info.value)
    empty = meta.with_changes(threads=tuple(t.__class__(thread=t.thread, cpu=t.cpu, interval_ns=t.interval_ns)
                                            for t in meta.threads))
    path = _raw_write(table.slice(0, 0), empty, tmp_path / "e0.parquet")
    assert open_dataset(path).num_rows == 0
    with pytest.raises(SchemaError) as info:
        _consume(path)
    assert "no rows" in _one_line(info.value)


def test_stream_dataset_writes_row_groups_and_the_metadata_given_at_the_end(tmp_path) -> None:
    table, meta = simulate(SimulationSpec(threads=2, samples=5000), 3)
    out = tmp_path / "s.parquet"
    with stream_dataset(out, row_group_size=3000) as stream:
        for start in range(0, table.num_rows, 777):  # pieces smaller than a row group: buffered, then cut
            stream.write(table.slice(start, 777), meta.kind)
        assert not out.exists()  # only when complete
        stream.finish(meta)
    parquet = pq.ParquetFile(out)
    assert [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)] == [3000, 3000, 3000, 1000]
    assert pq.read_table(out).replace_schema_metadata().equals(table.select(pq.read_schema(out).names))
    assert open_dataset(out).metadata.to_kv() == meta.to_kv()
    assert stream.rows == 10_000


def test_stream_dataset_left_unfinished_or_failing_leaves_nothing(tmp_path) -> None:
    table, meta = simulate(SimulationSpec(threads=1, samples=100), 3)
    out = tmp_path / "s.parquet"
    with pytest.raises(SchemaError, match="not finished"), stream_dataset(out) as stream:
        stream.write(table, meta.kind)
    with pytest.raises(SchemaError, match="one set of columns"), stream_dataset(out) as stream:
        stream.write(table, meta.kind)
        stream.write(table.drop_columns(["tsc"]), meta.kind)
    with pytest.raises(KeyboardInterrupt), stream_dataset(out) as stream:
        stream.write(table, meta.kind)
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with stream_dataset(out) as stream:  # discard: start over (an importer's second pass)
        stream.write(table, meta.kind)
        stream.discard()
        stream.write(table.slice(0, 10), meta.kind)
        stream.finish(dataclasses.replace(meta, threads=(dataclasses.replace(meta.threads[0], samples=10),)))
    assert pq.read_metadata(out).num_rows == 10


def _checker_states(path, regular: bool):
    """Feed one InvariantChecker every thread's rows, batch by batch; its per-thread state afterwards."""
    from jitterscope.dataset.invariants import InvariantChecker

    dataset = open_dataset(path)
    checker = InvariantChecker(dataset.metadata, where=str(path))
    if not regular:
        checker._regular = lambda *args: False  # every batch through the full numpy check
    columns = ["thread", "cpu", "seq", "expected_ns", "actual_ns", "overruns"]
    for batch in dataset.iter_batches(columns):
        frame = batch.to_pandas()
        for thread, rows in frame.groupby("thread", sort=False):
            checker.check(int(thread), *(rows[c].to_numpy() for c in columns[1:]))
    checker.finish(True)
    return {t: dataclasses.replace(s, info=None) for t, s in checker._threads.items()}


def test_regular_batch_check_equals_full_check(tmp_path):
    # row groups of 13 rows over 2 threads with drops and stalls (overruns): some batches are regular (the
    # quick check), some not (the full one); the states, and finish()'s totals, agree
    table, meta = simulate(SimulationSpec(threads=2, samples=3000, effects=(Stalls(probability=0.003),
                                                                             Drops(probability=0.003))), 5)
    path = tmp_path / "r.parquet"
    pq.write_table(table.replace_schema_metadata(meta.to_kv()), path, row_group_size=13)
    quick, full = _checker_states(path, True), _checker_states(path, False)
    assert quick == full
    assert all(s.gaps > 0 and s.overruns > 0 for s in quick.values())


@pytest.mark.parametrize("damage, words", [
    ("swap_seq", "seq goes from"), ("cpu", "rows with cpu"), ("early", "a capture never wakes early"),
    ("step", "expected_ns steps by"),
])
def test_regular_looking_batches_still_fail_the_check(tmp_path, damage, words):
    # damage that keeps a batch's first/last seq and expected_ns as a regular batch has them: the quick check
    # must send it to the full check, which names the problem
    table, meta = simulate(SimulationSpec(threads=1, samples=400), 2)
    if damage == "early":
        meta = dataclasses.replace(meta, kind="capture")
    seq = table.column("seq").to_numpy().copy()
    expected = table.column("expected_ns").to_numpy().copy()
    actual = table.column("actual_ns").to_numpy().copy()
    cpu = table.column("cpu").to_numpy().copy()
    if damage == "swap_seq":
        seq[[200, 201]] = seq[[201, 200]]
    elif damage == "cpu":
        cpu[300] += 1
    elif damage == "early":
        actual = np.maximum(actual, expected)
        actual[250] = expected[250] - 1
    else:
        expected[200] += 1  # steps of interval + 1 and interval - 1: the sum is still regular
    for name, values in (("seq", seq), ("expected_ns", expected), ("actual_ns", actual), ("cpu", cpu)):
        table = _with_column(table, name, values)
    with pytest.raises(SchemaError) as info:
        _consume(_raw_write(table, meta, tmp_path / "d.parquet"))
    assert words in _one_line(info.value)


def test_column_values_equal_to_numpy():
    from jitterscope.dataset import column_values

    rng = np.random.default_rng(0)
    batch = pa.record_batch({
        "i64": rng.integers(-2**62, 2**62, 1000), "i32": rng.integers(-2**31, 2**31, 1000).astype(np.int32),
        "u64": rng.integers(0, 2**63, 1000).astype(np.uint64), "f64": rng.normal(size=1000),
        "nulls": pa.array([1, None] * 500, type=pa.int64()),
    })
    for view in (batch, batch.slice(123, 456), pa.Table.from_batches([batch, batch.slice(7)])):
        for name in batch.schema.names:
            expected = view.column(name).to_numpy(zero_copy_only=False)
            got = column_values(view, name)
            assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True), name
    assert column_values(batch.slice(10, 5), 0).base is not None  # a view of Arrow's buffer, not a copy


@pytest.mark.parametrize("where", [0, 6, 7, 8, 99, 198])
def test_min_step_is_the_smallest_difference_across_blocks(monkeypatch, where):
    # the quick check's smallest step, found block by block: the smallest one at a block's first or last row
    # or between two blocks (rows 6|7 with blocks of 7) is found as np.diff finds it
    from jitterscope.dataset import invariants

    monkeypatch.setattr(invariants, "_STEP_BLOCK", 7)
    values = np.cumsum(np.full(200, 5, dtype=np.int64))
    values[where + 1:] -= 4  # one step of 1 at row where -> where + 1
    assert invariants._min_step(values) == int(np.diff(values).min()) == 1
    assert invariants._min_step(values.astype(np.int32)) == 1  # other dtypes: numpy's diff


def test_split_by_thread_takes_the_rows_arrow_takes():
    # row groups of a real capture hold every thread interleaved: each thread's rows, in order, every column
    # (numbers by numpy's gather; a column with nulls sends the batch through Arrow's take)
    from jitterscope.dataset.files import _split_by_thread

    rng = np.random.default_rng(5)
    threads = rng.integers(0, 3, 1000).astype(np.int32)
    batch = pa.record_batch({"thread": threads, "seq": np.arange(1000), "x": rng.normal(size=1000),
                             "u": rng.integers(0, 2**40, 1000).astype(np.uint64)}).slice(7, 900)
    with_nulls = pa.record_batch({"thread": threads, "n": pa.array([None, *range(999)], pa.int64())})
    for data in (batch, with_nulls):
        split = dict(_split_by_thread(data.column("thread").to_numpy(), data))
        assert sorted(split) == [0, 1, 2]
        for thread, rows in split.items():
            assert rows.schema == data.schema
            assert rows.equals(data.filter(pa.array(data.column("thread").to_numpy() == thread)))


def test_summary_of_a_real_capture_does_not_load_pyarrow_compute():
    # Arrow's take (RecordBatch.take) imports pyarrow.compute: 0.1-0.2 s of CPU in every command on a capture whose
    # row groups hold both threads (issue 25)
    import subprocess
    import sys
    from pathlib import Path

    capture = Path(__file__).parents[1] / "data" / "capture" / "traced-2s"
    assert pq.ParquetFile(capture / "part-00000.parquet").metadata.row_group(0).column(1).statistics.min != \
        pq.ParquetFile(capture / "part-00000.parquet").metadata.row_group(0).column(1).statistics.max
    probe = (f"import sys\nfrom jitterscope.dataset import open_dataset\nfrom jitterscope.summary import summarize\n"
             f"assert len(summarize(open_dataset({str(capture)!r})).threads) == 2\n"
             "print('pyarrow.compute' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
