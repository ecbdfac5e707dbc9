"""capture/parquet.c: the C Parquet writer, checked by two independent readers.

The C test program (capture/tests/test_parquet.c) runs its own unit tests, then writes
file cases and a manifest of what each file must contain; every file is read
back with pyarrow and with DuckDB and compared exactly. Hypothesis feeds random
int32/int64 arrays (extremes included) through the program's ``encode`` mode.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CAPTURE = Path(__file__).resolve().parents[2] / "capture"
SOURCES = ["tests/test_parquet.c", "parquet.c", "snappy.c", "thrift.c"]
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-O2"]
ENCODING = {"plain": "PLAIN", "delta": "DELTA_BINARY_PACKED"}
DTYPE = {"int32": np.dtype("<i4"), "int64": np.dtype("<i8")}

# Every file the program must write (a file it forgot fails the test).
EXPECTED_FILES = [
    "one_row.parquet",
    "rows129.parquet",
    *[f"multi.step{k}.parquet" for k in range(6)],
    "multi.parquet",
    "int64_extremes.parquet",
    "int32_extremes.parquet",
    "kv.parquet",
    "kv_final.parquet",
    "failed_write.parquet",
    "failed_write.after_error.parquet",
    "empty.parquet",
]

# The metadata test_parquet.c writes (test_kv_running / test_kv_complete).
ENVIRONMENT = r'{"hostname": "büro-π", "cpu_model": "Intel® Core™ \"K\"\n", "hz": null}'
KV_RUNNING = {
    "jitterscope.schema_version": "1",
    "jitterscope.kind": '"capture"',
    "jitterscope.environment": ENVIRONMENT,
    "jitterscope.status": '{"state": "running", "reason": "", "flushes": 1}',
}
KV_COMPLETE = {**KV_RUNNING, "jitterscope.status": '{"state": "complete", "reason": "duration reached", "flushes": 2}'}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    encoding: str
    values: np.ndarray


@dataclass(frozen=True)
class Case:
    path: Path
    rows: int
    groups: list[int]
    columns: list[Column]


def _compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.fail("no C compiler (gcc/cc) found: install gcc, it also builds jitterscope-capture")
    return cc


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = tmp_path_factory.mktemp("parquet_bin") / "test_parquet"
    cmd = [_compiler(), *CFLAGS, f"-I{CAPTURE}", "-o", str(exe), *(str(CAPTURE / s) for s in SOURCES)]
    build = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert build.returncode == 0, f"compile failed:\n{build.stderr}"
    return exe


@pytest.fixture(scope="module")
def written(program: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Case]]:
    outdir = tmp_path_factory.mktemp("parquet_files")
    run = subprocess.run([str(program), str(outdir)], capture_output=True, text=True, check=False, timeout=120)
    cases = {}
    for line in (outdir / "manifest.tsv").read_text().splitlines():
        file, rows, groups, columns = line.split("\t")
        cols = []
        for spec in columns.split(";"):
            name, typ, enc, binfile = spec.split(":")
            values = np.fromfile(outdir / binfile, dtype=DTYPE[typ])
            cols.append(Column(name, typ, enc, values[: int(rows)]))
        sizes = [int(g) for g in groups.split(",")] if groups else []
        cases[file] = Case(outdir / file, int(rows), sizes, cols)
    return run.stdout + run.stderr, cases


def test_c_unit_tests_pass(written: tuple[str, dict[str, Case]]) -> None:
    output, _ = written
    match = re.search(r"(\d+) passed, (\d+) failed", output)
    assert match, output
    assert match.group(2) == "0", output
    assert int(match.group(1)) >= 200, output  # the program really ran its checks


def _check_metadata(case: Case) -> None:
    md = pq.ParquetFile(case.path).metadata
    assert md.created_by == f"jitterscope-capture {version('jitterscope')}"  # config.h agrees with pyproject
    assert md.num_rows == case.rows
    assert [md.row_group(g).num_rows for g in range(md.num_row_groups)] == case.groups
    end_of_previous = 4  # after the leading magic
    first = 0
    for g, size in enumerate(case.groups):
        rg = md.row_group(g)
        for c, col in enumerate(case.columns):
            chunk = rg.column(c)
            assert chunk.path_in_schema == col.name
            assert chunk.physical_type == col.type.upper()
            assert chunk.encodings == (ENCODING[col.encoding],)
            assert chunk.compression == "UNCOMPRESSED"
            assert chunk.num_values == size
            # chunks lie in file order, never overlapping (old footers sit between row groups)
            assert chunk.data_page_offset >= end_of_previous
            end_of_previous = chunk.data_page_offset + chunk.total_compressed_size
            group = col.values[first : first + size]
            stats = chunk.statistics
            assert stats.null_count == 0
            assert (stats.min, stats.max) == (int(group.min()), int(group.max()))
        first += size
    assert end_of_previous <= case.path.stat().st_size - 8


def _check_pyarrow(case: Case) -> None:
    table = pq.read_table(case.path)
    assert table.column_names == [c.name for c in case.columns]
    for col in case.columns:
        field = table.schema.field(col.name)
        assert field.type == getattr(pa, col.type)()
        assert not field.nullable
        got = table.column(col.name).to_numpy()
        assert got.dtype == col.values.dtype
        np.testing.assert_array_equal(got, col.values, strict=True)


def _check_duckdb(case: Case) -> None:
    con = duckdb.connect()
    result = con.execute("SELECT * FROM read_parquet(?)", [str(case.path)]).fetchnumpy()
    assert list(result) == [c.name for c in case.columns]
    for col in case.columns:
        got = np.asarray(result[col.name])
        assert got.dtype == col.values.dtype
        np.testing.assert_array_equal(got, col.values, strict=True)
    # DuckDB's own view of the row-group statistics
    stats = con.execute(
        "SELECT row_group_id, path_in_schema, stats_min_value, stats_max_value FROM parquet_metadata(?)",
        [str(case.path)],
    ).fetchall()
    starts = np.cumsum([0, *case.groups])
    by_name = {c.name: c for c in case.columns}
    for group, name, lo, hi in stats:
        values = by_name[name].values[starts[group] : starts[group + 1]]
        assert (int(lo), int(hi)) == (int(values.min()), int(values.max()))
    con.close()


@pytest.mark.parametrize("file", EXPECTED_FILES)
def test_file_reads_back_exactly(written: tuple[str, dict[str, Case]], file: str) -> None:
    _, cases = written
    assert file in cases, f"{file} missing from the manifest"
    case = cases[file]
    _check_metadata(case)
    _check_pyarrow(case)
    _check_duckdb(case)


def test_extreme_cases_really_contain_extremes(written: tuple[str, dict[str, Case]]) -> None:
    _, cases = written
    for file, info in (("int64_extremes.parquet", np.iinfo(np.int64)), ("int32_extremes.parquet", np.iinfo(np.int32))):
        values = cases[file].columns[0].values
        assert values.min() == info.min and values.max() == info.max
        wrapped = np.diff(values.astype(object))  # exact deltas, no wrap
        assert max(wrapped) > info.max and min(wrapped) < info.min  # deltas that overflow the type


def test_snapshots_grow_and_multi_page_chunk(written: tuple[str, dict[str, Case]]) -> None:
    _, cases = written
    sizes = [cases[f"multi.step{k}.parquet"].path.stat().st_size for k in range(6)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 6  # the footer-only flush (step 2) grows it too
    md = pq.ParquetFile(cases["multi.parquet"].path).metadata
    mperf = md.row_group(1).column(9)  # 140000 int64 PLAIN values: pages of 131072 + 8928
    assert mperf.path_in_schema == "mperf" and mperf.num_values == 140000
    # PageHeader bytes: 2 (type) + 5 + 5 (sizes 1048576 zigzag-varint) + 1 + 4 (n=131072) + 3x2 (enc) + 2 stops = 25,
    # then 2 + 4 + 4 (71424) + 1 + 4 (8928) + 6 + 2 = 23; one single page would have a 25-byte header.
    assert mperf.total_compressed_size == 140000 * 8 + 25 + 23


def test_key_value_metadata_json_and_utf8(written: tuple[str, dict[str, Case]]) -> None:
    _, cases = written
    expectations = {"kv.parquet": KV_RUNNING, "kv_final.parquet": KV_COMPLETE, "empty.parquet": KV_RUNNING}
    for file, expected in expectations.items():
        raw = pq.ParquetFile(cases[file].path).metadata.metadata
        assert {k.decode(): v.decode() for k, v in raw.items()} == expected
        con = duckdb.connect()
        rows = con.execute("SELECT key, value FROM parquet_kv_metadata(?)", [str(cases[file].path)]).fetchall()
        con.close()
        assert {bytes(k).decode(): bytes(v).decode() for k, v in rows} == expected
    env = json.loads(KV_RUNNING["jitterscope.environment"])
    assert env["cpu_model"] == 'Intel® Core™ "K"\n' and env["hostname"] == "büro-π"


def test_failed_write_keeps_last_valid_file(written: tuple[str, dict[str, Case]]) -> None:
    _, cases = written
    after = cases["failed_write.after_error.parquet"]
    final = cases["failed_write.parquet"]
    assert after.groups == [1000] and final.groups == [1000, 500]
    assert pq.read_table(after.path).num_rows == 1000
    assert after.path.stat().st_size < final.path.stat().st_size


# ---- hypothesis: random arrays through the `encode` mode ------------------------------------------

INT64 = np.iinfo(np.int64)
INT32 = np.iinfo(np.int32)


def _values(info: np.iinfo) -> st.SearchStrategy[list[int]]:
    lo, hi = int(info.min), int(info.max)
    extremes = st.sampled_from([lo, lo + 1, -1, 0, 1, hi - 1, hi])
    return st.lists(st.one_of(extremes, st.integers(lo, hi), st.integers(-1000, 1000)), max_size=700)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values64=_values(INT64),
    values32=st.data(),
    encoding=st.sampled_from(["plain", "delta"]),
    per_group=st.integers(1, 400),
)
def test_random_arrays_round_trip(
    program: Path, tmp_path: Path, values64: list[int], values32: st.DataObject, encoding: str, per_group: int
) -> None:
    a = np.array(values64, dtype="<i8")
    b = np.array(values32.draw(st.lists(st.integers(INT32.min, INT32.max), min_size=len(a), max_size=len(a))), "<i4")
    if len(b) > 3:  # put 32-bit extremes next to each other
        b[:4] = [INT32.max, INT32.min, INT32.max, -1]
    a.tofile(tmp_path / "a.bin")
    b.tofile(tmp_path / "b.bin")
    out = tmp_path / "out.parquet"
    other = "plain" if encoding == "delta" else "delta"
    run = subprocess.run(
        [str(program), "encode", str(out), str(per_group),
         f"a:int64:{encoding}:{tmp_path / 'a.bin'}", f"b:int32:{other}:{tmp_path / 'b.bin'}",
         f"c:int32:{encoding}:{tmp_path / 'b.bin'}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    table = pq.read_table(out)
    np.testing.assert_array_equal(table.column("a").to_numpy(), a, strict=True)
    np.testing.assert_array_equal(table.column("b").to_numpy(), b, strict=True)
    np.testing.assert_array_equal(table.column("c").to_numpy(), b, strict=True)
    assert pq.ParquetFile(out).metadata.num_row_groups == -(-len(a) // per_group)


# ---- byte-exact against Arrow's own DELTA_BINARY_PACKED encoder ---------------------------------------


def _arrow_file_bytes(values: np.ndarray, path: Path) -> bytes:
    schema = pa.schema([pa.field("v", pa.from_numpy_dtype(values.dtype), nullable=False)])
    pq.write_table(
        pa.table({"v": values}, schema=schema), path, use_dictionary=False, compression="NONE",
        column_encoding={"v": "DELTA_BINARY_PACKED"}, data_page_version="1.0", write_statistics=False,
    )  # fmt: skip
    return path.read_bytes()


def _int32_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(20261130)
    return [
        np.array([7], "<i4"),
        np.array([INT32.min, INT32.max], "<i4"),
        np.array([INT32.max, INT32.min, 0, -1] * 40, "<i4"),
        rng.integers(INT32.min, INT32.max, 1000, endpoint=True, dtype=np.int32),
        np.cumsum(rng.integers(-50, 5000, 1000)).astype("<i4"),
        *[np.arange(n, dtype="<i4") * 3 + (np.arange(n) % 7 == 0) for n in (31, 32, 33, 127, 128, 129, 130, 257)],
    ]


@pytest.mark.parametrize("index", range(len(_int32_cases())))
def test_int32_delta_stream_identical_to_arrow(program: Path, tmp_path: Path, index: int) -> None:
    """Arrow uses our block layout (128 values, 4 miniblocks) for INT32, so the page data must match byte for byte.

    For INT64 Arrow uses 256-value blocks, so there only the decoded values are compared (tests above).
    """
    values = _int32_cases()[index].astype("<i4")
    values.tofile(tmp_path / "in.bin")
    run = subprocess.run(
        [str(program), "delta", str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), "int32"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    ours = (tmp_path / "out.bin").read_bytes()
    assert len(ours) >= 5
    assert ours in _arrow_file_bytes(values, tmp_path / "arrow.parquet")


def _width_sequence(width: int, bits: int, rng: np.random.Generator) -> np.ndarray:
    """129 values (one delta block) whose every miniblock needs exactly `width` bits (as in test_parquet.c)."""
    udtype = np.uint64 if bits == 64 else np.uint32
    mask = (1 << width) - 1
    if width == bits:  # the type's MIN and MAX as deltas: a range of 2**bits - 1
        low, high, deltas = 1 << (bits - 1), (1 << (bits - 1)) - 1, rng.integers(0, 1 << bits, 128, dtype=np.uint64)
    else:
        low, high, deltas = 0, mask, rng.integers(0, mask, 128, dtype=np.uint64, endpoint=True)
    deltas[0::32], deltas[1::32] = low, high
    values = np.cumsum(np.concatenate([[12345], deltas]).astype(udtype), dtype=udtype)  # wraps like the C side
    return values.view(np.int64 if bits == 64 else np.int32)


@pytest.mark.parametrize("bits", [32, 64])
def test_every_bit_width_decodes_in_pyarrow_and_duckdb(program: Path, tmp_path: Path, bits: int) -> None:
    rng = np.random.default_rng(bits)
    widths = range(33) if bits == 32 else range(1, 65)  # 64 columns at most per file; width 0 is in the 32-bit run
    columns = {f"w{w}": _width_sequence(w, bits, rng) for w in widths}
    specs = []
    for name, values in columns.items():
        values.tofile(tmp_path / f"{name}.bin")
        specs.append(f"{name}:int{bits}:delta:{tmp_path / name}.bin")
    out = tmp_path / "widths.parquet"
    run = subprocess.run([str(program), "encode", str(out), "129", *specs], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    table = pq.read_table(out)
    con = duckdb.connect()
    result = con.execute("SELECT * FROM read_parquet(?)", [str(out)]).fetchnumpy()
    con.close()
    for name, values in columns.items():
        np.testing.assert_array_equal(table.column(name).to_numpy(), values, strict=True)
        np.testing.assert_array_equal(np.asarray(result[name]), values, strict=True)


# ---- SNAPPY pages (capture/snappy.c: the events table's codec) ------------------------------------------


def _snappy_cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20261202)
    period = np.tile(np.array([9, 6, 12, 10, 15, 7, 9, 9, -1, 236], "<i8"), 3000)  # a trace's repeating rows
    return {
        "repeating": period,
        "run": np.full(70_000, -1, "<i8"),  # one byte pattern over several 64 KiB blocks: overlapping copies
        "random": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 20_000, dtype=np.int64),
        "mixed": np.where(rng.random(50_000) < 0.5, period[:50_000] if len(period) >= 50_000 else 0,
                          rng.integers(0, 1 << 40, 50_000)).astype("<i8"),
        "tiny": np.array([5, 5, 5], "<i8"),
    }


@pytest.mark.parametrize("case", list(_snappy_cases()))
@pytest.mark.parametrize("encoding", ["plain", "delta"])
def test_snappy_pages_decode_in_pyarrow_and_duckdb(program: Path, tmp_path: Path, case: str, encoding: str) -> None:
    a = _snappy_cases()[case]
    b = (a & 0x7FFFFFFF).astype("<i4")
    a.tofile(tmp_path / "a.bin")
    b.tofile(tmp_path / "b.bin")
    out = tmp_path / "z.parquet"
    run = subprocess.run(
        [str(program), "encode", str(out), "40000", f"a:int64:{encoding}+snappy:{tmp_path / 'a.bin'}",
         f"b:int32:{encoding}+snappy:{tmp_path / 'b.bin'}", f"c:int64:{encoding}:{tmp_path / 'a.bin'}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    table = pq.read_table(out)
    con = duckdb.connect()
    result = con.execute("SELECT * FROM read_parquet(?)", [str(out)]).fetchnumpy()
    con.close()
    for name, values in (("a", a), ("b", b), ("c", a)):
        np.testing.assert_array_equal(table.column(name).to_numpy(), values, strict=True)
        np.testing.assert_array_equal(np.asarray(result[name]), values, strict=True)
    md = pq.ParquetFile(out).metadata
    for g in range(md.num_row_groups):
        z, plain = md.row_group(g).column(0), md.row_group(g).column(2)
        assert (z.compression, plain.compression) == ("SNAPPY", "UNCOMPRESSED")
        # the footer's sizes: uncompressed as the uncompressed column's (one page: its header's compressed size
        # may be a shorter varint), compressed as the pages lie
        assert abs(z.total_uncompressed_size - plain.total_uncompressed_size) <= 4
        if case in ("repeating", "run"):
            assert z.total_compressed_size < plain.total_compressed_size / 4
        elif case == "random":
            assert z.total_compressed_size <= plain.total_compressed_size * 1.01 + 64
