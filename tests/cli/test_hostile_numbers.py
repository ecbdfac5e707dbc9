"""Numbers hidden in option values and spec files (issue 26): NaN, ±inf and garbage refused in one line.

Before the fix ``simulate --smi nan:5`` gave ``ValueError: lam < 0 or lam is NaN``, ``simulate --periodic nan:5``
exited 0 and wrote ``"frequency_hz": NaN`` (not JSON) into the ground truth, ``simulate --spec BINARYFILE`` gave
a ``UnicodeDecodeError`` and ``fleet --scheduler ''`` a ``ValueError`` of Dask's address parser.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest
from jitterscope.cli import main


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


EFFECTS = [("--periodic", "nan:5"), ("--periodic", "inf:5"), ("--periodic", "60:nan"), ("--periodic", "60:5:inf"),
           ("--smi", "nan:5"), ("--smi", "1:inf"), ("--idle", "0.1:nan"), ("--idle", "nan:5"),
           ("--pstates", "nan,800"), ("--pstates", "800,inf"), ("--coupling", "0.5:nan:1"),
           ("--periodic", "1e999:5")]


@pytest.mark.parametrize(("option", "value"), EFFECTS)
def test_effect_options_refuse_non_finite_numbers(tmp_path, option, value) -> None:
    out = tmp_path / "s.parquet"
    extra = ["--pstates", "800,900"] if option == "--coupling" else []
    code, err = _run(["simulate", "-o", str(out), "--samples", "100", option, value, *extra])
    assert code == 2, err
    count = {"--pstates": "1 to 10000", "--coupling": "3", "--smi": "2", "--idle": "2"}.get(option, "2 to 3")
    separator = "," if option == "--pstates" else ":"
    assert err == (f"jitterscope simulate: error: argument {option}: {value!r}: expected {count} finite numbers "
                   f"separated by {separator!r} (see 'jitterscope simulate --help')\n")
    assert not out.exists()


def test_an_out_of_range_effect_is_a_usage_error_naming_it(tmp_path) -> None:
    code, err = _run(["simulate", "-o", str(tmp_path / "s.parquet"), "--samples", "100", "--smi=-1:5"])
    assert code == 2 and err.count("\n") == 1 and "smi: rate_hz must be >= 0" in err, err


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_json_spec_with_a_non_finite_number_is_refused(tmp_path, number) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"threads": 1, "samples": 100, "effects": [{"type": "periodic", "frequency_hz": ' + number + "}]}")
    code, err = _run(["simulate", "--spec", str(spec), "-o", str(tmp_path / "s.parquet")])
    assert code == 1 and err.count("\n") == 1, err
    if number == "1e999":  # valid JSON that Python reads as inf: caught by the spec's own check
        assert "effects[0] (periodic).frequency_hz is inf: every number of a spec must be finite" in err
    else:
        assert f"spec is not valid JSON: {number} is not a JSON number" in err


def test_a_spec_of_nested_overrides_deeper_than_the_limit(tmp_path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"threads": 1, "environment": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, err = _run(["simulate", "--spec", str(spec), "-o", str(tmp_path / "s.parquet")])
    assert code == 1 and "nested more than the 64 levels" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("kind", ["binary", "fifo", "device", "directory"])
def test_spec_files_that_are_not_json_files(tmp_path, kind) -> None:
    path = tmp_path / "spec"
    if kind == "binary":
        path.write_bytes(bytes(range(256)) * 8)
    elif kind == "fifo":
        os.mkfifo(path)  # nobody writes: opening it would wait forever
    elif kind == "directory":
        path.mkdir()
    else:
        path = "/dev/zero"  # never ends
    code, err = _run(["simulate", "--spec", str(path), "-o", str(tmp_path / "s.parquet")])
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert ("not valid JSON" if kind == "binary" else "not a regular file") in err


def test_ground_truth_is_json(tmp_path) -> None:
    """What simulate writes parses as strict JSON (no NaN token anywhere)."""
    import pyarrow.parquet as pq
    out = tmp_path / "s.parquet"
    assert _run(["simulate", "-o", str(out), "--samples", "500", "--periodic", "60:5", "--smi", "1:5"])[0] == 0
    for value in pq.read_schema(out).metadata.values():
        json.loads(value, parse_constant=lambda name: pytest.fail(f"{name} in metadata"))


@pytest.mark.parametrize("address", ["", " ", "tcp://", "nohost:notaport", "tcp://host:99999", "tcp://:8786"])
def test_fleet_scheduler_addresses_are_checked_before_dask(address) -> None:
    code, err = _run(["fleet", "--scheduler", address, "x.parquet"])
    assert code == 2 and err.count("\n") == 1, err
    assert f"argument --scheduler: {address!r} is not a scheduler address" in err
