"""The dataset contract is stated three times and they must agree.

docs/dataset-format.md (the column table between the contract markers),
analysis/jitterscope/schema.py (SAMPLE_COLUMNS), capture/schema.h (the C mirror)
and the columns of a file the capture binary actually writes.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import SAMPLE_COLUMNS
from jitterscope.io import capture_binary

ROOT = Path(__file__).resolve().parents[1]
ARROW = {"int32": pa.int32(), "int64": pa.int64()}
C_TYPES = {"PQ_INT32": pa.int32(), "PQ_INT64": pa.int64()}


def doc_sample_columns() -> list[tuple[str, pa.DataType, bool]]:
    text = (ROOT / "docs" / "dataset-format.md").read_text()
    block = text.split("<!-- contract:sample-columns -->")[1].split("<!-- /contract:sample-columns -->")[0]
    rows = []
    for line in block.strip().splitlines()[2:]:  # skip header and |---|
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append((cells[0].strip("`"), ARROW[cells[1]], {"yes": True, "no": False}[cells[2]]))
    return rows


def c_sample_columns() -> list[tuple[str, pa.DataType, bool]]:
    text = (ROOT / "capture" / "schema.h").read_text()
    block = text.split("/* contract:sample-columns")[1].split("/* /contract:sample-columns */")[0]
    entries = re.findall(r'\{"(\w+)",\s*(PQ_INT\d+),\s*(PQ_\w+),\s*([01])\}', block)
    return [(name, C_TYPES[ctype], required == "1") for name, ctype, _enc, required in entries]


def python_sample_columns() -> list[tuple[str, pa.DataType, bool]]:
    return [(c.name, c.arrow_type, c.required) for c in SAMPLE_COLUMNS]


def test_document_table_parses() -> None:
    assert len(doc_sample_columns()) >= 5


def test_schema_py_equals_document() -> None:
    assert python_sample_columns() == doc_sample_columns()


def test_schema_h_equals_document() -> None:
    assert c_sample_columns() == doc_sample_columns()


def test_file_written_by_the_binary_has_contract_columns(tmp_path: Path) -> None:
    """With MSR files for every counter the binary writes every column, in contract order."""
    cpus = sorted(os.sched_getaffinity(0))
    for cpu in cpus:
        path = tmp_path / "msr" / str(cpu) / "msr"
        path.parent.mkdir(parents=True)
        with open(path, "wb") as f:
            f.seek(0x1A0)
            f.write(struct.pack("<Q", 0))  # zeros at every MSR offset up to 0x1A8
    argv = [str(capture_binary()), "-l", "20", "-q", "--msr-dir", str(tmp_path / "msr"), "-o", str(tmp_path / "out")]
    if os.geteuid() != 0:
        argv += ["--policy", "other"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    parts = sorted((tmp_path / "out").glob("part-*.parquet"))
    assert parts
    for part in parts:
        schema = pq.read_schema(part)
        written = [(f.name, f.type, not f.nullable) for f in schema]
        # required in the file means "non-nullable"; every contract column is non-nullable
        assert [(n, t) for n, t, _ in written] == [(n, t) for n, t, _ in doc_sample_columns()]
        assert all(non_null for _, _, non_null in written)


@pytest.mark.skipif(not (ROOT / "capture" / "schema.h").exists(), reason="no C schema")
def test_schema_h_encodings_are_valid() -> None:
    text = (ROOT / "capture" / "schema.h").read_text()
    encodings = re.findall(r'\{"\w+",\s*PQ_INT\d+,\s*(PQ_\w+),', text)
    assert encodings and set(encodings) <= {"PQ_PLAIN", "PQ_DELTA_BINARY_PACKED"}


# ---- the events table (docs "Trace events", capture/trace.h, jitterscope.dataset.trace) ----

def _doc_block(name: str) -> list[list[str]]:
    text = (ROOT / "docs" / "dataset-format.md").read_text()
    block = text.split(f"<!-- contract:{name} -->")[1].split(f"<!-- /contract:{name} -->")[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.strip().splitlines()[2:]]


def test_trace_columns_agree_in_document_python_and_c() -> None:
    from jitterscope.dataset import TRACE_COLUMNS
    doc = [(cells[0].strip("`"), ARROW[cells[1]]) for cells in _doc_block("trace-columns")]
    header = (ROOT / "capture" / "trace.h").read_text()
    block = header.split("contract:trace-columns")[1].split("/contract:trace-columns")[0]
    c_side = [(name, C_TYPES[ctype]) for name, ctype in re.findall(r'\{"(\w+)",\s*(PQ_INT\d+),', block)]
    python = [(c.name, c.arrow_type) for c in TRACE_COLUMNS]
    assert len(doc) == 12
    assert python == doc
    assert c_side == doc


def test_trace_event_codes_agree_in_document_python_and_c() -> None:
    from jitterscope.dataset import TRACE_EVENTS
    doc = {cells[1].strip("`"): int(cells[0]) for cells in _doc_block("trace-events")}
    header = (ROOT / "capture" / "trace.h").read_text()
    block = header.split("contract:trace-events")[1].split("/contract:trace-events")[0]
    c_side = {name.lower(): int(code) for name, code in re.findall(r"TRACE_EV_(\w+)\s*=\s*(\d+)", block)}
    assert dict(TRACE_EVENTS) == doc
    assert c_side == doc


# ---- kind poll (docs "Poll columns", capture/schema.h, jitterscope.dataset.schema) ----

def _c_block(name: str) -> list[tuple[str, pa.DataType, bool]]:
    text = (ROOT / "capture" / "schema.h").read_text()
    block = text.split(f"/* contract:{name}")[1].split(f"/* /contract:{name} */")[0]
    entries = re.findall(r'\{"(\w+)",\s*(PQ_INT\d+),\s*(PQ_\w+),\s*([01])\}', block)
    return [(name, C_TYPES[ctype], required == "1") for name, ctype, _enc, required in entries]


def _doc_columns(name: str) -> list[tuple[str, pa.DataType, bool]]:
    return [(cells[0].strip("`"), ARROW[cells[1]], {"yes": True, "no": False}[cells[2]]) for cells in _doc_block(name)]


def test_poll_columns_agree_in_document_python_and_c() -> None:
    from jitterscope.dataset import POLL_COLUMNS
    doc = _doc_columns("poll-columns")
    assert [n for n, _, required in doc if required] == ["cpu", "thread", "seq", "start_ns", "duration_ns"]
    assert [(c.name, c.arrow_type, c.required) for c in POLL_COLUMNS] == doc
    assert _c_block("poll-columns") == doc


def test_poll_window_columns_agree_in_document_python_and_c() -> None:
    from jitterscope.dataset import POLL_WINDOW_COLUMNS
    doc = _doc_columns("poll-window-columns")
    assert len(doc) == 8
    assert [(c.name, c.arrow_type, c.required) for c in POLL_WINDOW_COLUMNS] == doc
    assert _c_block("poll-window-columns") == doc


def _documented_edges() -> list[int]:
    """The edges docs/dataset-format.md states: 0..8 one by one, 4 per octave up to 2^36, the last open."""
    edges = list(range(8))
    for octave in range(3, 36):
        edges += [2**octave + sub * 2 ** (octave - 2) for sub in range(4)]
    return [*edges, 2**36, 2**63 - 1]


def test_poll_file_written_by_the_binary_has_contract_columns(tmp_path: Path) -> None:
    """A poll capture's rows and per-second table have the contract's columns in order, and its edges are the
    documented ones (141 buckets, h00..h140)."""
    from jitterscope.dataset import POLL_WINDOW_COLUMNS, poll_bucket_column
    cpu = max(os.sched_getaffinity(0))
    argv = [str(capture_binary()), "--mode", "poll", "-a", str(cpu), "-D", "0.3", "-q", "-o", str(tmp_path / "out")]
    if os.geteuid() != 0:
        argv += ["--policy", "other"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rows = pq.read_schema(tmp_path / "out" / "part-00000.parquet")
    contract = [n for n, _, _ in _doc_columns("poll-columns")]
    written = [f.name for f in rows]
    assert written == [n for n in contract if n in written] and written[:5] == contract[:5]
    assert rows.metadata[b"jitterscope.kind"] == b'"poll"'
    import json
    edges = json.loads(rows.metadata[b"jitterscope.poll"])["histogram_edges_ns"]
    assert edges == _documented_edges()
    windows = pq.read_schema(tmp_path / "out" / "_poll" / "part-00000.parquet")
    assert windows.names == [c.name for c in POLL_WINDOW_COLUMNS] + [poll_bucket_column(k) for k in range(140 + 1)]
    assert all(not f.nullable for f in windows)


def test_poll_histogram_edges_agree_in_document_and_python() -> None:
    """The Python writers (simulate, imports of the capture's buckets) take the edges from one place."""
    from jitterscope.dataset import poll_histogram_edges
    assert poll_histogram_edges() == _documented_edges()


def test_the_gate_loads_jsonschema_without_its_format_checkers() -> None:
    # a dataset that fails the gate's own check imports jsonschema; its format checkers' modules (arrow through
    # isoduration, an IRI grammar) took most of that time, for formats the gate never checks
    import sys

    from jitterscope.dataset.contract import FORMAT_MODULES

    code = ("import importlib.util, sys; import jitterscope.dataset.contract as c; c._import_jsonschema(); "
            f"names = {(*FORMAT_MODULES, 'arrow')!r}; "
            "print(sum(importlib.util.find_spec(n) is not None for n in names), "
            "sorted(n for n in names if sys.modules.get(n) is not None))")
    installed, loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout.split(" ", 1)
    assert int(installed) > 0, "no format-checker module installed: nothing to check"
    assert loaded.strip() == "[]"
