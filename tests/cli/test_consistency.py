"""The same options for the same things: --json and -q on the commands that print, --force on every writer,
and options that would be silently ignored refused in one line (issue 15)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from jitterscope.cli import build_parser, main
from jitterscope.io import SimulationSpec, write_simulation

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
WRITERS = ("report", "compare", "export", "pack", "import", "simulate")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_simulation(SimulationSpec(threads=1, samples=500), tmp_path_factory.mktemp("c") / "d.parquet", 2)


def _options(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)).choices[command]
    return {o for action in sub._actions for o in action.option_strings}


@pytest.mark.parametrize("command", WRITERS)
def test_every_writer_has_force(command) -> None:
    assert "--force" in _options(command)


@pytest.mark.parametrize("command", ["validate", "pack", "export", "import", "summary", "info", "spectrum", "tails",
                                     "compare", "power"])
def test_json_wherever_results_are_printed(command) -> None:
    assert "--json" in _options(command)


@pytest.mark.parametrize("argv", [
    ["validate", "{d}", "--json"],
    ["pack", "{d}", "-o", "{tmp}/p.parquet", "--json"],
    ["export", "{d}", "--format", "hgrm", "-o", "{tmp}/e.hgrm", "--json"],
    ["import", str(FORMATS / "ct-verbose.txt"), "-o", "{tmp}/i.parquet", "--json"],
])
def test_json_output_parses_and_quiet_prints_nothing(dataset, tmp_path, argv) -> None:
    args = [a.format(d=dataset, tmp=tmp_path) for a in argv]
    code, out, err = _run(*args)
    assert code == 0, err
    document = json.loads(out)
    assert document.get("path") or document.get("valid") is not None
    quiet = [a for a in args if a != "--json"] + ["-q", "--force"]
    if argv[0] == "validate":
        quiet.remove("--force")
    code, out, err = _run(*quiet)
    assert code == 0 and out == "" and err == "", (out, err)


@pytest.mark.parametrize(("argv", "message"), [
    (["summary", "{d}", "--tolerance", "2"], "--tolerance applies to --interval-stats N"),
    (["import", str(FORMATS / "ct-verbose.txt"), "-o", "{tmp}/i.parquet", "--turbostat-start", "5"],
     "--turbostat-start and --turbostat-interval need --onto"),
])
def test_options_that_would_be_ignored_are_refused(dataset, tmp_path, argv, message) -> None:
    code, _, err = _run(*(a.format(d=dataset, tmp=tmp_path) for a in argv))
    assert code == 2 and err.count("\n") == 1 and message in err
    assert not (tmp_path / "i.parquet").exists()
