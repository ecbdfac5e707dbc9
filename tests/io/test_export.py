"""export: csv, rt-tests-json (cyclictest --json shape) and hgrm (HdrHistogram percentile text)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, write_dataset
from jitterscope.errors import DatasetError
from jitterscope.io import export_dataset, import_files

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture()
def imported(tmp_path) -> Path:
    table, metadata = import_files([DATA / "ct-verbose.txt", DATA / "ct-verbose.json"])
    return write_dataset(table, metadata, tmp_path / "ct.parquet")


def _known(tmp_path: Path, latencies_us: np.ndarray) -> Path:
    """One thread whose latencies are exactly ``latencies_us`` µs."""
    n = len(latencies_us)
    expected = np.arange(n, dtype=np.int64) * 1_000_000
    table = pa.table({"cpu": np.zeros(n, np.int32), "thread": np.zeros(n, np.int32),
                      "seq": np.arange(n, dtype=np.int64), "expected_ns": expected,
                      "actual_ns": expected + latencies_us.astype(np.int64) * 1000})
    meta = Metadata(kind="simulation", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000, samples=n),))
    return write_dataset(table, meta, tmp_path / "known.parquet")


def test_csv_has_every_row_and_latency(tmp_path, imported):
    result = export_dataset(imported, "csv", tmp_path / "out.csv")
    frame = pd.read_csv(tmp_path / "out.csv")
    original = pd.read_parquet(imported)
    assert result.rows == len(frame) == len(original) == 1671
    pd.testing.assert_frame_equal(frame.drop(columns="latency_ns"), original, check_dtype=False)
    assert (frame.latency_ns == frame.actual_ns - frame.expected_ns).all()
    export_dataset(imported, "csv", tmp_path / "t1.csv", thread=1)
    assert set(pd.read_csv(tmp_path / "t1.csv").thread) == {1}


def test_rt_tests_json_reproduces_cyclictest(tmp_path, imported):
    export_dataset(imported, "rt-tests-json", tmp_path / "out.json")
    mine = json.loads((tmp_path / "out.json").read_text())
    theirs = json.loads((DATA / "ct-verbose.json").read_text())
    assert mine["file_version"] == 1 and "cmdline:" in mine and mine["num_threads"] == 2
    ours, reported = mine["thread"]["0"], theirs["thread"]["0"]  # thread 0 is complete in the -v output
    assert {k: ours[k] for k in ("cycles", "min", "max", "avg", "cpu")} == {
        k: reported[k] for k in ("cycles", "min", "max", "avg", "cpu")}
    printed = [int(line.split(":")[2]) for line in (DATA / "ct-verbose.txt").read_text().splitlines()
               if line.count(":") == 2 and line.split(":")[0].strip() == "0"]
    assert {int(k): v for k, v in ours["histogram"].items()} == dict(Counter(printed))
    # and it reads back as cyclictest JSON
    _table, metadata = import_files([tmp_path / "out.json"])
    assert metadata.source["format"] == "cyclictest-json" and metadata.threads[0].samples == 1000


def test_rt_tests_json_from_a_histogram_dataset(tmp_path):
    table, metadata = import_files([DATA / "ct-hist.txt", DATA / "ct-hist.json"])
    write_dataset(table, metadata, tmp_path / "h.parquet")
    export_dataset(tmp_path / "h.parquet", "rt-tests-json", tmp_path / "out.json")
    mine = json.loads((tmp_path / "out.json").read_text())["thread"]
    theirs = json.loads((DATA / "ct-hist.json").read_text())["thread"]
    for t in ("0", "1"):
        assert mine[t]["histogram"] == theirs[t]["histogram"]
        assert (mine[t]["cycles"], mine[t]["min"], mine[t]["max"], mine[t]["avg"]) == (
            theirs[t]["cycles"], theirs[t]["min"], theirs[t]["max"], theirs[t]["avg"])


def _hgrm_rows(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()[2:] if line and not line.startswith("#")]


def test_hgrm_percentiles_of_known_data(tmp_path):
    values = np.arange(1, 1001)  # 1..1000 µs, one each
    export_dataset(_known(tmp_path, values), "hgrm", tmp_path / "out.hgrm")
    rows = _hgrm_rows(tmp_path / "out.hgrm")
    percentiles = [float(r[1]) for r in rows]
    assert percentiles[:8] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6]  # HdrHistogram's 5 ticks per half distance
    assert all(b > a for a, b in itertools.pairwise(percentiles))
    for value, percentile, total, *_ in rows[1:-1]:
        rank = int(np.ceil(float(percentile) * 1000))
        assert int(total) >= rank  # count of values at or below the reported value
        assert abs(float(value) - rank) <= rank * 1e-3 + 1e-3  # the rank-th value is rank µs, to 0.1 %
    assert rows[0][0] == "1.000" and rows[-1][:3] == ["1000.000", "1.000000000000", "1000"]
    text = (tmp_path / "out.hgrm").read_text()
    assert "Total count    =         1000]" in text
    mean = float(text.split("Mean    =")[1].split(",")[0])
    assert abs(mean - 500.5) < 0.5


def test_errors(tmp_path, imported):
    with pytest.raises(DatasetError, match="unknown export format"):
        export_dataset(imported, "xml", tmp_path / "x")
    with pytest.raises(DatasetError, match="has no thread 7"):
        export_dataset(imported, "csv", tmp_path / "x", thread=7)
    (tmp_path / "exists.csv").write_text("")
    with pytest.raises(DatasetError, match="already exists"):
        export_dataset(imported, "csv", tmp_path / "exists.csv")


def test_csv_writes_the_kernel_trace_beside_and_the_other_formats_say_they_do_not(tmp_path) -> None:
    from jitterscope.dataset import events_from_rows, write_trace_events
    n = 4
    expected = np.arange(1, n + 1, dtype=np.int64) * 1_000_000
    table = pa.table({"cpu": pa.array([1] * n, pa.int32()), "thread": pa.array([0] * n, pa.int32()),
                      "seq": pa.array(range(n), pa.int64()), "expected_ns": pa.array(expected),
                      "actual_ns": pa.array(expected + 7_000)})
    root = tmp_path / "traced"
    root.mkdir()
    write_dataset(table, Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=1, interval_ns=1_000_000,
                                                                      samples=n),)), root / "part-00000.parquet")
    rows = [[1_000_100, 1, 9, 0, 0, -1, -1, 500, 19, 1, 120, 0],   # switch swapper/1 -> js-cpu1
            [1_000_200, 1, 1, 500, 1, 24, 2, -1, -1, -1, -1, 0],   # irq 24 eth0
            [1_000_300, 1, 99, 500, 1, -1, 9, -1, -1, -1, -1, 0]]  # an unknown code and string index
    write_trace_events(events_from_rows(rows, ["swapper/1", "js-cpu1", "eth0"], {"clock": "as recorded"}), root)
    result = export_dataset(root, "csv", tmp_path / "out.csv")
    assert result.rows == n and (tmp_path / "out.trace.csv").is_file()
    assert any("3 event(s) of 1 part(s) written to" in note for note in result.notes)
    events = pd.read_csv(tmp_path / "out.trace.csv", keep_default_na=False)
    assert events["ts_ns"].tolist() == [1_000_100, 1_000_200, 1_000_300]
    assert events["event"].tolist() == ["switch", "irq_entry", "unknown"]
    assert events["comm"].tolist() == ["swapper/1", "js-cpu1", "js-cpu1"]
    assert events["name"].tolist() == ["", "eth0", ""] and events["other_comm"].tolist() == ["js-cpu1", "", ""]
    assert events["number"].tolist() == [-1, 24, -1]
    with pytest.raises(DatasetError, match="already exists"):  # neither file is replaced without --force
        export_dataset(root, "csv", tmp_path / "out.csv")
    for fmt, name in (("hgrm", "out.hgrm"), ("rt-tests-json", "out.json")):
        result = export_dataset(root, fmt, tmp_path / name)
        assert any(f"the kernel trace (3 events in {root}/_trace) is not exported: {fmt}" in note
                   for note in result.notes), result.notes
