"""validate: valid datasets pass; every broken one lists its problems, one line each."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from jitterscope.dataset import open_dataset, validate_dataset, write_dataset
from jitterscope.io import Drops, SimulationSpec, Stalls, import_files, simulate, write_simulation

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


FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
SUMMARY_ONLY_SOURCES = {
    "cyclictest-json+quiet": ["ct-quiet.json", "ct-quiet.txt"],
    "cyclictest-quiet": ["ct-quiet.txt"],
    "jitterdebugger-stdout": ["shared/jitterdebugger-stdout.json"],
    "jitterdebugger-stdout-jd-fresh": ["jd-fresh/stdout.txt"],
    "periodic-timer": ["periodic-timer/issue-example.log"],
}


def _summary_only(files):
    return import_files([FORMATS / f for f in files])


def test_summary_only_imports_are_valid(tmp_path):
    for name, files in SUMMARY_ONLY_SOURCES.items():
        table, meta = _summary_only(files)
        assert table.num_rows == 0 and all(t.extra["summary_only"] for t in meta.threads), name
        result = validate_dataset(write_dataset(table, meta, tmp_path / f"{name}.parquet"))
        assert result.valid, (name, result.problems)
        assert result.kind == "histogram" and any("summary-only" in n for n in result.notes)


def test_broken_summary_only_datasets_are_invalid(tmp_path):
    table, meta = _summary_only(SUMMARY_ONLY_SOURCES["cyclictest-json+quiet"])
    first = meta.threads[0]

    def broken(**extra):
        thread = dataclasses.replace(first, extra={**first.extra, **extra})
        return dataclasses.replace(meta, threads=(thread, *meta.threads[1:]))

    cases = {
        "overflows": (broken(overflows=3), "overflows 3 differ from samples 1000"),
        "order": (broken(min_ns=300_000), "are not ordered min <= avg <= max"),
        "missing": (broken(avg_ns=None), "no number for avg_ns"),
        "not-flagged": (broken(summary_only=False), "the histogram holds no counts"),
    }
    for name, (bad, message) in cases.items():
        result = validate_dataset(write_dataset(table, bad, tmp_path / f"{name}.parquet"))
        assert not result.valid and len(result.problems) == 1 and message in result.problems[0], (name, result)
    # a thread with no count must not claim latencies
    timer, timer_meta = _summary_only(SUMMARY_ONLY_SOURCES["periodic-timer"])
    only = timer_meta.threads[0]
    claimed = dataclasses.replace(timer_meta, threads=(dataclasses.replace(only, extra={**only.extra, "max_ns": 5}),))
    result = validate_dataset(write_dataset(timer, claimed, tmp_path / "timer.parquet"))
    assert not result.valid and "no wake-ups counted but min/avg/max given" in result.problems[0]


# ---- the kernel trace of a dataset directory -------------------------------------------------------------

def _traced(tmp_path: Path) -> Path:
    """Three wake-ups on CPU 1 and a trace of 6 events in two parts (strings growing from 2 to 3)."""
    from jitterscope.dataset import Metadata, ThreadInfo, events_from_rows
    n = 3
    table = pa.table({"cpu": pa.array([1] * n, pa.int32()), "thread": pa.array([0] * n, pa.int32()),
                      "seq": pa.array(range(n), pa.int64()),
                      "expected_ns": pa.array([k * 1_000_000 for k in range(1, n + 1)], pa.int64()),
                      "actual_ns": pa.array([k * 1_000_000 + 5_000 for k in range(1, n + 1)], pa.int64())})
    root = tmp_path / "traced"
    root.mkdir()
    write_dataset(table, Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=1, interval_ns=1_000_000,
                                                                      samples=n),)), root / "part-00000.parquet")
    info = {"version": 1, "instance": "jitterscope-1", "clock": "mono", "resolution_ns": 1, "cpus": [1], "rows": 6}
    rows = [[t, 1, 9, 0, 0, -1, -1, 500, 19, 1, 120, 0] for t in (900_000, 1_004_000, 1_900_000, 2_004_000,
                                                                  2_900_000, 3_004_000)]
    rows[5][6] = 2  # a name only the second part's dictionary has
    strings = ["swapper/1", "js-cpu1", "x"]
    first, second = (events_from_rows(rows[:3], strings[:2], info).to_table(),
                     events_from_rows(rows[3:], strings, info).to_table())
    (root / "_trace").mkdir()
    pq.write_table(first, root / "_trace" / "part-00000.parquet")
    pq.write_table(second, root / "_trace" / "part-00001.parquet")
    return root


def test_a_valid_trace_is_checked_and_noted(tmp_path):
    result = validate_dataset(_traced(tmp_path))
    assert result.valid, result.problems
    assert any(n.startswith("kernel trace: 6 events in 2 part(s), CPUs [1], clock mono") for n in result.notes)


def _rewrite(path: Path, change) -> None:
    table = pq.read_table(path)
    meta = table.schema.metadata
    columns = {name: table.column(name).to_numpy().copy() for name in table.column_names}
    change(columns)
    out = pa.table({n: pa.array(v, table.schema.field(n).type) for n, v in columns.items()})
    pq.write_table(out.replace_schema_metadata(meta), path)


def test_trace_problems_are_found(tmp_path):
    import json
    root = _traced(tmp_path)
    second = root / "_trace" / "part-00001.parquet"
    _rewrite(second, lambda c: c["ts_ns"].__setitem__(0, 100))  # before the first part's last event
    _rewrite(root / "_trace" / "part-00000.parquet", lambda c: c["comm"].__setitem__(1, 7))  # no string 7
    problems = validate_dataset(root).problems
    assert any("CPU 1's event times go backwards" in p and "part-00001" in p for p in problems), problems
    assert any("column comm has 1 string index(es) outside -1-2 (first 7)" in p for p in problems), problems
    # the clock and the row count of the metadata
    table = pq.read_table(second)
    info = json.loads(table.schema.metadata[b"jitterscope.trace"])
    info.update(clock="x86-tsc", rows=99)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata,
                                                  b"jitterscope.trace": json.dumps(info).encode()}), second)
    problems = validate_dataset(root).problems
    assert any("clock 'x86-tsc'" in p for p in problems) and any("says 99 events, the parts hold 6" in p
                                                                   for p in problems), problems
    # a part out of its name order, and an earlier dictionary that is not the start of the last
    second.rename(root / "_trace" / "part-00003.parquet")
    assert any("are not part-00000.parquet, part-00001.parquet" in p for p in validate_dataset(root).problems)


def test_an_earlier_dictionary_must_be_the_start_of_the_last(tmp_path):
    import json
    root = _traced(tmp_path)
    first = root / "_trace" / "part-00000.parquet"
    table = pq.read_table(first)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"jitterscope.trace_strings":
                                                  json.dumps(["js-cpu1", "swapper/1"]).encode()}), first)
    problems = validate_dataset(root).problems
    assert any("part-00000.parquet's string list is not the start of the last part's" in p for p in problems)
