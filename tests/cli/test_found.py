"""Every case listed under "Found" in issue 15, as a regression test, run through the real command line.

Each ends in exit 0 with a correct answer, or exit 1/2 with exactly one line on stderr: never a traceback, never
"valid" for a dataset that lies, never an input replaced by an output. (Clobbering, the capture wrapper and
pack --anonymize have their own files: tests/dataset/test_atomic.py, tests/io/test_capture_wrapper.py,
tests/io/test_pack.py.)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.cli import main
from jitterscope.io import SimulationSpec, simulate

TABLE, METADATA = simulate(SimulationSpec(threads=2, samples=600), 7)
CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _one_line(code: int, err: str, expected: int = 1) -> str:
    assert code == expected, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _kv(**changes) -> dict[bytes, bytes]:
    kv = dict(METADATA.to_kv())
    for key, change in changes.items():
        value = json.loads(kv[f"jitterscope.{key}".encode()])
        value = change(value) if callable(change) else change
        kv[f"jitterscope.{key}".encode()] = json.dumps(value).encode()
    return kv


def _write(path: Path, kv: dict[bytes, bytes] | None = None, table: pa.Table = TABLE, **options) -> Path:
    pq.write_table(table.replace_schema_metadata(kv or METADATA.to_kv()), path, **options)
    return path


def _environment(**fields):
    return lambda env: {**env, **fields}


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("found") / "good.parquet")


# ---- 21 inputs that ended in a traceback --------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["summary", "{good}", "--interval-stats", "10", "--tolerance", "nan"],
    ["summary", "{good}", "--interval-stats", "10", "--tolerance", "inf"],
    ["spectrum", "{good}", "--nperseg", "1e20"],
    ["power", "{good}", "--seed", "-1"],
    ["correlate", "{good}", "--seed", "-1"],
    ["compare", "{good}", "{good}", "--seed", "-1"],
    ["simulate", "-o", "{tmp}/s.parquet", "--seed", "-1"],
    ["simulate", "-o", "{tmp}/s.parquet", "--duration", "nan"],
    ["simulate", "-o", "{tmp}/s.parquet", "--median-us", "nan"],
], ids=lambda argv: " ".join(argv[2:]) if isinstance(argv, list) else None)
def test_bad_numbers_are_usage_errors(good, tmp_path, argv) -> None:
    code, _, err = _run(*(a.format(good=good, tmp=tmp_path) for a in argv))
    assert _one_line(code, err, 2).startswith("jitterscope ") and "argument -" in err
    assert not (tmp_path / "s.parquet").exists()  # simulate --median-us nan wrote -9.2e18 ns latencies before


def test_nperseg_beyond_the_data_is_refused_before_allocating(good) -> None:
    # 10^9 is a valid segment length in general; on 600 wake-ups it is checked against the data, not allocated
    code, _, err = _run("spectrum", str(good), "--nperseg", "1000000000")
    assert "too short for spectral analysis (n=600, need ≥ 1000000000" in _one_line(code, err)


@pytest.mark.parametrize("command", [["info"], ["compare", "{good}"], ["report", "-o", "{tmp}/r.pdf"],
                                     ["pack", "--anonymize", "-o", "{tmp}/p.parquet"]])
def test_lone_surrogate_in_the_hostname(good, tmp_path, command) -> None:
    bad = _write(tmp_path / "surrogate.parquet", _kv(environment=_environment(hostname="host\ud800name")))
    args = [a.format(good=good, tmp=tmp_path) for a in command]
    code, out, err = _run(args[0], str(bad), *args[1:])
    assert code == 0, err
    if args[0] in ("info", "compare"):
        assert "host\\ud800name" in out  # shown, escaped
    out.encode("utf-8")  # what reaches the terminal is valid UTF-8


@pytest.mark.parametrize("where", ["hostname", "degraded"])
def test_two_dollars_in_metadata_do_not_start_mathtext(tmp_path, where) -> None:
    if where == "hostname":
        kv = _kv(environment=_environment(hostname="a $\\frac{1}{$"))
    else:
        kv = _kv(settings=lambda s: {**s, "granted": {**s.get("granted", {}), "degraded": ["$$", "a $\\frac{1}{$"]}})
    bad = _write(tmp_path / "dollar.parquet", kv)
    code, _, err = _run("report", str(bad), "-o", str(tmp_path / "r.pdf"), "-q", "--sections", "provenance,appendix")
    assert code == 0, err
    done = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True, check=True)
    assert "$\\frac{1}{$" in done.stdout  # drawn literally


def test_a_character_the_font_lacks_is_drawn_as_its_escape(tmp_path) -> None:
    """Found by the long fuzz (benchmarks/fuzz_cli.py): a private-use code point in a hostname became an empty box
    in the PDF and a matplotlib 'Glyph 960622 missing from font(s)' warning on the user's terminal."""
    bad = _write(tmp_path / "glyph.parquet", _kv(environment=_environment(hostname="rt-\U000ea86e-01")))
    done = subprocess.run([sys.executable, "-W", "default", "-c", CLI, "report", str(bad), "-o",
                           str(tmp_path / "r.pdf"), "-q", "--sections", "provenance,appendix"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True, check=True)
    assert "rt-\\U000ea86e-01" in text.stdout and "\U000ea86e" not in text.stdout


@pytest.mark.parametrize(("key", "change", "named"), [
    ("environment", _environment(cpuidle={"driver": "intel_idle", "states": "C1,C6"}),
     "jitterscope.environment.cpuidle.states: 'C1,C6' is a string, the contract says array"),
    ("threads", lambda threads: [{**threads[0], "interval_ns": 1e30}, threads[1]],
     "jitterscope.threads[0].interval_ns"),
    ("threads", lambda threads: threads + [{"thread": i, "cpu": 0, "interval_ns": 10**6} for i in range(2, 100_002)],
     "lists 100002 threads, more than the 65536 the format allows"),
])
@pytest.mark.parametrize("command", ["validate", "info", "spectrum", "report", "summary"])
def test_metadata_the_gate_refuses_naming_the_key(tmp_path, key, change, named, command) -> None:
    bad = _write(tmp_path / "bad.parquet", _kv(**{key: change}))
    extra = ["-o", str(tmp_path / "r.pdf")] if command == "report" else []
    code, _, err = _run(command, str(bad), *extra)
    assert named in _one_line(code, err)
    assert not (tmp_path / "r.pdf").exists()


def test_compare_against_a_million_bin_histogram_is_bounded(tmp_path) -> None:
    # the 3-million-bin case asked for 22.4 GiB: the bootstrap now draws in chunks (peak RSS in
    # benchmarks/untrusted_memory.py); here a histogram with many bins still compares, correctly shaped
    bins = 200_000
    table = pa.table({"thread": pa.array([0] * bins, pa.int32()), "cpu": pa.array([0] * bins, pa.int32()),
                      "bin_start_ns": pa.array(range(0, bins * 1000, 1000), pa.int64()),
                      "bin_width_ns": pa.array([1000] * bins, pa.int64()), "count": pa.array([1] * bins, pa.int64())})
    meta = {"schema_version": 1, "kind": "histogram", "tool": {"name": "test", "version": "0"},
            "threads": [{"thread": 0, "cpu": 0, "interval_ns": 1_000_000, "samples": bins, "overflows": 0,
                         "min_ns": 0, "max_ns": bins * 1000 - 1}]}
    kv = {f"jitterscope.{k}".encode(): json.dumps(v).encode() for k, v in meta.items()}
    hist = tmp_path / "h.parquet"
    pq.write_table(table.replace_schema_metadata(kv), hist)
    code, out, err = _run("compare", str(hist), str(hist), "--resamples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["pairs"][0]["metrics"]


def test_an_unwritable_home_does_not_stop_any_command(good, tmp_path) -> None:
    # /proc/self/fdinfo cannot be written, not even by root: astropy, matplotlib and tqdm find no config dir there
    env = {**os.environ, "HOME": "/proc/self/fdinfo", "MPLCONFIGDIR": "", "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": ""}
    for argv in (["--version"], ["spectrum", str(good), "--method", "lombscargle"]):
        done = subprocess.run([sys.executable, "-c", CLI, *argv], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


# ---- trusting what a file says --------------------------------------------------------------------------------

def _patch_footer_rows(path: Path, rows: int) -> None:
    """Rewrite FileMetaData.num_rows (field 3, i64, compact thrift) in the footer, leaving the row groups alone."""
    data = path.read_bytes()
    length = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - length:-8]

    def varint(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 63), bytearray()
        while True:
            byte, z = z & 0x7F, z >> 7
            out.append(byte | (0x80 if z else 0))
            if not z:
                return bytes(out)

    real = pq.ParquetFile(path).metadata.num_rows
    old = b"\x16" + varint(real)  # field-id delta 1 (after the schema list), type i64
    assert old in footer
    patched = footer.replace(old, b"\x16" + varint(rows), 1)
    path.write_bytes(data[:-8 - length] + patched + len(patched).to_bytes(4, "little") + b"PAR1")
    assert pq.ParquetFile(path).metadata.num_rows == rows


def test_a_footer_that_lies_about_its_row_count(tmp_path) -> None:
    path = _write(tmp_path / "lying.parquet", row_group_size=500)
    _patch_footer_rows(path, 10**9)
    for command in ("validate", "summary", "spectrum", "pack"):
        extra = ["-o", str(tmp_path / "p.parquet")] if command == "pack" else []
        code, out, err = _run(command, str(path), *extra)
        assert "the footer says 1000000000 rows, its row groups hold 1200" in _one_line(code, err), command
        assert "valid" not in out


def _parts(tmp_path: Path, name: str, tables: list[pa.Table], kvs: list[dict[bytes, bytes]]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for i, (table, kv) in enumerate(zip(tables, kvs, strict=True)):
        _write(folder / f"part-{i:05d}.parquet", kv, table)
    return folder


@pytest.mark.parametrize("case", ["other-run", "missing-part", "empty-threads"])
@pytest.mark.parametrize("command", ["spectrum", "tails", "correlate", "compare", "pack", "export", "summary",
                                     "validate"])
def test_every_command_refuses_what_summary_and_validate_refuse(tmp_path, case, command) -> None:
    first, second = TABLE.slice(0, 600), TABLE.slice(600)
    if case == "other-run":
        other_table, other_meta = simulate(SimulationSpec(threads=2, samples=600), 8)
        kv_other = dict(other_meta.to_kv())
        clock = json.loads(kv_other[b"jitterscope.clock"])
        kv_other[b"jitterscope.clock"] = json.dumps({**clock, "realtime_ns": clock["realtime_ns"] + 10**12}).encode()
        dataset = _parts(tmp_path, "mixed", [other_table.slice(0, 600), second], [kv_other, METADATA.to_kv()])
    elif case == "missing-part":
        dataset = _parts(tmp_path, "missing", [second], [METADATA.to_kv()])
    else:
        dataset = _parts(tmp_path, "empty", [first, second], [_kv(threads=[]), _kv(threads=[])])
    extra = {"compare": [str(dataset)], "pack": ["-o", str(tmp_path / "p.parquet")],
             "export": ["--format", "csv", "-o", str(tmp_path / "e.csv")]}.get(command, [])
    code, out, err = _run(command, str(dataset), *extra)
    assert code == 1 and "Traceback" not in err, err
    if command != "validate":
        assert err.count("\n") == 1, err
    assert not out.startswith("valid")
    assert not (tmp_path / "p.parquet").exists() and not (tmp_path / "e.csv").exists()


def test_simulate_refuses_a_size_it_cannot_mean(tmp_path) -> None:
    code, _, err = _run("simulate", "-o", str(tmp_path / "big.parquet"), "--samples", "1e12")
    assert "argument --samples: '1e12' is out of range" in _one_line(code, err, 2)
    code, _, err = _run("simulate", "-o", str(tmp_path / "big.parquet"), "--samples", "1e9", "--threads", "4")
    assert "is 4,000,000,000 wake-ups (about 140 GB), more than the 2,000,000,000" in _one_line(code, err)
    assert not list(tmp_path.iterdir())  # refused before a byte was written

