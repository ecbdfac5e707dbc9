"""Hostile metadata (issue 26): too deep, NaN/Infinity, interval 0; every command says so in one line.

Before the fix a part whose ``jitterscope.environment`` was 100,000 nested ``[`` gave a ``RecursionError`` in
every command that opens a dataset, ``spectrum`` divided by an ``interval_ns`` of 0, and ``NaN`` passed every
range check of the contract (all comparisons with NaN are false).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jitterscope.cli import main
from jitterscope.dataset import MAX_JSON_DEPTH, Metadata, json_depth, load_json
from jitterscope.errors import SchemaError
from jitterscope.io import SimulationSpec, simulate

TABLE, METADATA = simulate(SimulationSpec(threads=2, samples=400), 3)
KV = METADATA.to_kv()
THREADS = json.loads(KV[b"jitterscope.threads"])
COMMANDS = [["summary"], ["events"], ["info"], ["spectrum"], ["power", "--surrogates", "0"], ["tails"],
            ["export", "--format", "csv", "-o", "{out}/x.csv"], ["pack", "-o", "{out}/p.parquet"],
            ["compare", "{path}", "--resamples", "20"], ["report", "-o", "{out}/r.pdf"]]


def _part(tmp_path: Path, changes: dict[bytes, bytes]) -> Path:
    path = tmp_path / "hostile.parquet"
    pq.write_table(TABLE.replace_schema_metadata({**KV, **changes}), path)
    return path


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


HOSTILE = {
    "deep-environment": ({b"jitterscope.environment": b"[" * 100_000}, "metadata jitterscope.environment is "
                         f"nested more than the {MAX_JSON_DEPTH} levels"),
    "deep-settings": ({b"jitterscope.settings": b'{"a": ' * 5_000 + b"1" + b"}" * 5_000},
                      "metadata jitterscope.settings is nested more"),
    "nan-clock": ({b"jitterscope.clock": b'{"tsc_hz": NaN}'}, "metadata jitterscope.clock is not valid JSON: "
                  "NaN is not a JSON number"),
    "infinity-threads": ({b"jitterscope.threads": json.dumps([{**t, "max_ns": math.inf} for t in THREADS]).encode()},
                         "metadata jitterscope.threads is not valid JSON: Infinity is not a JSON number"),
    "interval-zero": ({b"jitterscope.threads": json.dumps([{**t, "interval_ns": 0} for t in THREADS]).encode()},
                      "metadata jitterscope.threads[0].interval_ns: 0, but a dataset of simulation rows needs an "
                      "interval > 0"),
}


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_refuses_hostile_metadata_in_one_line(tmp_path, name, command) -> None:
    changes, message = HOSTILE[name]
    path = _part(tmp_path, changes)
    argv = [command[0], str(path), *(a.format(out=tmp_path, path=path) for a in command[1:])]
    code, err = _run(argv)
    assert code == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"jitterscope {command[0]}: error: {path}: {message}"), err


@pytest.mark.parametrize("name", HOSTILE)
def test_validate_says_invalid(tmp_path, name) -> None:
    changes, message = HOSTILE[name]
    path = _part(tmp_path, changes)
    code, err = _run(["validate", str(path)])
    assert code == 1 and err.startswith(f"jitterscope validate: invalid: {path}: {message}"), err


def test_depth_is_checked_before_parsing(monkeypatch) -> None:
    """The limit holds without the parser: json.loads is never reached for a too-deep value."""
    def never(*args, **kwargs):
        raise AssertionError("parsed")
    monkeypatch.setattr(json, "loads", never)
    with pytest.raises(SchemaError, match="nested more than the 64 levels"):
        load_json(b"[" * 65 + b"]" * 65, "x")


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert json_depth(b'{"a": [[1]]}') == 3
    assert json_depth(json.dumps({"cmdline": "[" * 1000 + '"\\\\' + "{" * 1000}).encode()) == 1
    assert json_depth(b"[" * 64 + b"]" * 64) == 64
    assert json_depth(b"[" * 65 + b"]" * 65) > MAX_JSON_DEPTH
    assert json_depth(b"[" * (30 << 20)) > MAX_JSON_DEPTH  # 30 MiB of '[': counted in bounded memory


def test_writing_nan_into_metadata_is_refused() -> None:
    """Nothing writes NaN or Infinity into JSON: a producer's bug stops at the write, in one line."""
    with pytest.raises(SchemaError, match=r"jitterscope\.ground_truth holds NaN or Infinity"):
        METADATA.with_changes(ground_truth={"periodic": {"frequency_hz": math.nan}}).to_kv()


def test_every_shipped_dataset_still_opens() -> None:
    for path in sorted(Path(__file__).parents[2].joinpath("data").glob("*.parquet")):
        Metadata.from_kv(pq.read_schema(path).metadata, where=str(path))
