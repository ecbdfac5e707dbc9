"""Damaged datasets never give a traceback: one line and exit 1 (or a correct run), whatever the damage.

Hypothesis mutates a valid file (truncation, byte flips, dropped columns,
changed types, rewritten metadata) and runs ``summary``, ``validate`` and
``info`` in-process through ``jitterscope.cli.main``; a few real subprocess
runs check the same from the outside.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitterscope.cli import main
from jitterscope.io import Drops, SimulationSpec, Stalls, simulate

SPEC = SimulationSpec(threads=2, samples=150, effects=(Stalls(probability=0.02), Drops(probability=0.02)))
TABLE, METADATA = simulate(SPEC, 4)
COLUMNS = TABLE.column_names
TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint64(), pa.float32(), pa.float64(), pa.string()]
CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _write(table: pa.Table, path: Path, compression: str = "none", kv: dict | None = None) -> Path:
    metadata = METADATA.to_kv() if kv is None else kv
    pq.write_table(table.replace_schema_metadata(metadata), path, compression=compression, row_group_size=100)
    return path


def _valid_bytes(compression: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return _write(TABLE, Path(tmp) / "v.parquet", compression).read_bytes()


VALID = {c: _valid_bytes(c) for c in ("none", "zstd")}


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def _assert_clean(path: Path) -> None:
    """Every command either works or says what is wrong in one line per reason, with exit 1."""
    for command in (["summary", "-q"], ["info"], ["validate"], ["summary", "--json", "--interval-stats", "10"]):
        code, err = _run([command[0], str(path), *command[1:]])
        assert code in (0, 1), (command, code, err)
        if code == 0:
            continue
        lines = err.splitlines()
        assert lines and err.endswith("\n"), (command, err)
        if command[0] == "validate":
            assert all(line.startswith("jitterscope validate: invalid: ") for line in lines), err
        else:
            assert len(lines) == 1 and lines[0].startswith(f"jitterscope {command[0]}: error: "), err
        assert "Traceback" not in err


@FUZZ
@given(compression=st.sampled_from(["none", "zstd"]), fraction=st.floats(0, 1, exclude_max=True))
def test_truncated(compression, fraction):
    data = VALID[compression]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.parquet"
        path.write_bytes(data[: int(len(data) * fraction)])
        _assert_clean(path)


@FUZZ
@given(compression=st.sampled_from(["none", "zstd"]),
       flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=6))
def test_flipped_bytes(compression, flips):
    data = bytearray(VALID[compression])
    for where, mask in flips:
        data[int(where * len(data))] ^= mask
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.parquet"
        path.write_bytes(bytes(data))
        _assert_clean(path)


@FUZZ
@given(dropped=st.sets(st.sampled_from(COLUMNS), min_size=1, max_size=4))
def test_dropped_columns(dropped):
    with tempfile.TemporaryDirectory() as tmp:
        _assert_clean(_write(TABLE.drop_columns(sorted(dropped)), Path(tmp) / "d.parquet"))


@FUZZ
@given(column=st.sampled_from(COLUMNS), new_type=st.sampled_from(TYPES))
def test_changed_types(column, new_type):
    index = TABLE.schema.get_field_index(column)
    try:
        changed = TABLE.column(index).cast(new_type, safe=False)
    except pa.ArrowException:
        return  # not castable at all: nothing to write
    table = TABLE.set_column(index, pa.field(column, new_type), changed)
    with tempfile.TemporaryDirectory() as tmp:
        _assert_clean(_write(table, Path(tmp) / "c.parquet"))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
THREAD_FIELDS = ["thread", "cpu", "tid", "interval_ns", "samples", "drops", "overruns"]


@FUZZ
@given(key=st.sampled_from(list(METADATA.to_kv())), value=JSON, raw=st.booleans())
def test_rewritten_metadata(key, value, raw):
    kv = dict(METADATA.to_kv())
    kv[key] = b"{not json" if raw else json.dumps(value).encode()
    with tempfile.TemporaryDirectory() as tmp:
        _assert_clean(_write(TABLE, Path(tmp) / "m.parquet", kv=kv))


@FUZZ
@given(thread=st.integers(0, 1), field=st.sampled_from(THREAD_FIELDS), value=JSON)
def test_rewritten_thread_entries(thread, field, value):
    threads = [t.to_json() for t in METADATA.threads]
    threads[thread][field] = value
    kv = dict(METADATA.to_kv())
    kv[b"jitterscope.threads"] = json.dumps(threads).encode()
    with tempfile.TemporaryDirectory() as tmp:
        _assert_clean(_write(TABLE, Path(tmp) / "m.parquet", kv=kv))


@pytest.mark.parametrize("damage", ["truncate", "flip", "text"])
def test_subprocess_one_line_exit_1(tmp_path, damage):
    data = bytearray(VALID["zstd"])
    if damage == "truncate":
        data = data[: len(data) - 7]
    elif damage == "flip":
        data[-2] ^= 0xFF  # the closing magic: no longer a Parquet file
    else:
        data = bytearray(b"# /dev/cpu_dma_latency set to 0us\n")
    path = tmp_path / "bad.parquet"
    path.write_bytes(bytes(data))
    run = subprocess.run([sys.executable, "-c", CLI, "summary", str(path)],
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("jitterscope summary: error: ")
    assert "Traceback" not in run.stderr


@FUZZ
@given(part=st.sampled_from(["asked", "granted"]), field=st.sampled_from(["policy", "priority", "interval_ns"]),
       value=JSON)
def test_rewritten_settings(part, field, value):
    settings = json.loads(METADATA.to_kv()[b"jitterscope.settings"])
    settings[part][field] = value
    kv = dict(METADATA.to_kv())
    kv[b"jitterscope.settings"] = json.dumps(settings).encode()
    with tempfile.TemporaryDirectory() as tmp:
        _assert_clean(_write(TABLE, Path(tmp) / "s.parquet", kv=kv))


# ---- hostile metadata against every command (issue 15) ------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.sampled_from(["a $\\frac{1}{$", "$$", "$x$", "\\input{/etc/passwd}", "}{\\", "%&#_^~", "<script>x</script>",
                     "]]></svg>", "&amp;&", "\x1b[2J\x1b]0;title\x07", "\rINJECTED LINE", "\x00\x07\x08\x7f\x9b",
                     "host\ud800name", "\udfff", "\u202e\u2066rtl", "x" * 200_000]),
    st.text(st.characters(codec=None, categories=None), max_size=30),  # every code point, surrogates included
)
HOSTILE_VALUE = st.one_of(HOSTILE_TEXT, JSON, st.sampled_from([10**30, -(10**30), 1e308, -1, 2**63, 0, [], {}]))
COMMANDS = [["info"], ["validate"], ["summary", "-q"], ["spectrum"], ["tails"], ["power", "--surrogates", "0"],
            ["compare", "{path}", "--resamples", "20"], ["export", "--format", "hgrm", "-o", "{tmp}/e.hgrm"],
            ["pack", "--anonymize", "-o", "{tmp}/p.parquet"], ["info", "--json"],
            ["report", "-o", "{tmp}/r.pdf", "-q", "--sections", "provenance,distributions"]]
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _leaf_paths(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaf_paths(item, (*path, key))
    elif isinstance(value, list) and value:
        for i, item in enumerate(value[:2]):
            yield from _leaf_paths(item, (*path, i))
    else:
        yield path


DECODED = {key.decode().removeprefix("jitterscope."): json.loads(value) for key, value in METADATA.to_kv().items()}
LEAVES = [(key, path) for key, value in DECODED.items() for path in _leaf_paths(value)]


def _set(document, path, value):
    if not path:
        return value
    document = json.loads(json.dumps(document))
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


@settings(max_examples=int(os.environ.get("JITTERSCOPE_METADATA_FUZZ_EXAMPLES", "25")), deadline=None,
          suppress_health_check=list(HealthCheck))  # benchmarks/fuzz_cli.py runs the long profile
@given(leaf=st.sampled_from(LEAVES), value=HOSTILE_VALUE, command=st.sampled_from(COMMANDS))
def test_hostile_metadata_against_every_command(leaf, value, command):
    """Any value at any metadata key: exit 0 with clean terminal text, or exit 1 with one line; never a traceback."""
    key, path = leaf
    kv = dict(METADATA.to_kv())
    kv[f"jitterscope.{key}".encode()] = json.dumps(_set(DECODED[key], path, value)).encode()
    with tempfile.TemporaryDirectory() as tmp:
        dataset = _write(TABLE, Path(tmp) / "hostile.parquet", kv=kv)
        argv = [command[0], str(dataset), *(a.format(path=dataset, tmp=tmp) for a in command[1:])]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert "Traceback" not in err.getvalue()
        assert code in (0, 1), (argv, code, err.getvalue())
        assert not _CONTROL.search(out.getvalue()), argv  # nothing but newline and tab reaches the terminal
        assert not _CONTROL.search(err.getvalue())
        if code == 1 and command[0] != "validate":
            assert err.getvalue().count("\n") == 1, err.getvalue()
