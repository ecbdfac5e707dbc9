"""One rule for paths, strict gates, and the rest of issue 26's inconsistencies.

* an empty path is a usage error (``summary ''`` read every Parquet file of the current directory);
* the folder of an output must exist, in every command (``demo --out /nonexistent/x`` created the parents);
* write errors name the user's path, never the temporary (``Failed to open local file 'ro/.x.csv.22887.tmp'``);
* ``--fail-if 'p101>5us'`` was accepted and "held" (exit 3): now a usage error; ``--junit ''`` was ignored;
* a cyclictest ``-v`` log imported alone says that its ``--json`` lies beside it;
* ``python -m jitterscope`` is the CLI.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import write_atomically
from jitterscope.errors import DatasetError

DATA = Path(__file__).parents[1] / "data" / "formats"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("d") / "d.parquet"
    assert main(["simulate", "-o", str(path), "--samples", "300"]) == 0
    return path


READERS = [["summary"], ["events"], ["info"], ["validate"], ["spectrum"], ["power"], ["tails"], ["report"],
           ["export", "--format", "csv", "-o", "x.csv"], ["pack", "-o", "p.parquet"], ["compare", "{d}"],
           ["fleet"]]


@pytest.mark.parametrize("command", READERS, ids=lambda c: c[0])
def test_an_empty_input_path_is_a_usage_error(tmp_path, monkeypatch, dataset, command) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "other.parquet").write_bytes(dataset.read_bytes())  # what '' used to read
    code, out, err = _run([command[0], "", *(a.format(d=dataset) for a in command[1:])])
    assert code == 2 and not out, err
    assert err.count("\n") == 1 and "an empty path names no file" in err, err


@pytest.mark.parametrize("argv", [["import", "{t}", "-o", ""], ["simulate", "-o", ""], ["simulate", "--spec", "",
                                  "-o", "x.parquet"], ["summary", "{d}", "--junit", ""], ["report", "{d}",
                                  "--figures", ""], ["import", "", "-o", "x.parquet"]], ids=" ".join)
def test_other_empty_paths(tmp_path, monkeypatch, dataset, argv) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run([a.format(d=dataset, t=DATA / "ct-verbose.txt") for a in argv])
    assert code == 2 and err.count("\n") == 1 and "an empty path names no file" in err, err
    assert not list(tmp_path.iterdir())


WRITERS = [["simulate", "--samples", "10", "-o"], ["export", "{d}", "--format", "csv", "-o"],
           ["pack", "{d}", "-o"], ["report", "{d}", "-o"], ["report", "{d}", "-o", "r.pdf", "--figures"],
           ["compare", "{d}", "{d}", "-o"], ["fleet", "{d}", "-o"], ["import", "{t}", "-o"],
           ["summary", "{d}", "--junit"], ["demo", "--out"]]


@pytest.mark.parametrize("argv", WRITERS, ids=" ".join)
def test_the_folder_of_an_output_must_exist(tmp_path, monkeypatch, dataset, argv) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "no" / "such" / "out"
    code, _, err = _run([*(a.format(d=dataset, t=DATA / "ct-verbose.txt") for a in argv), str(target)])
    assert code == 2 and err.count("\n") == 1, err
    assert f"the folder '{target.parent}' does not exist; jitterscope creates no parent folders" in err
    assert not (tmp_path / "no").exists()


def test_the_rule_is_in_every_help() -> None:
    for command in ("summary", "report", "import", "demo", "simulate"):
        done = subprocess.run([sys.executable, "-m", "jitterscope", command, "--help"], capture_output=True,
                              text=True)
        assert done.returncode == 0
        assert "the folder an output goes into must exist" in " ".join(done.stdout.split()), done.stdout


def test_write_errors_name_the_users_path_not_the_temporary(tmp_path) -> None:
    out = tmp_path / "x.csv"
    with pytest.raises(DatasetError) as info, write_atomically(out, what="the CSV") as tmp:
        raise OSError(f"Failed to open local file '{tmp}'. Detail: [errno 13] Permission denied")
    assert ".tmp" not in str(info.value) and f"'{out}'" in str(info.value), info.value


@pytest.mark.parametrize("condition", ["p101>5us", "p0>5us", "p100>1ms", "p1e3>5us", "nosuch>5us"])
def test_fail_if_is_parsed_strictly(dataset, condition) -> None:
    code, _, err = _run(["summary", str(dataset), "-q", "--fail-if", condition])
    assert code == 2 and err.count("\n") == 1, err
    if condition.startswith("nosuch"):
        assert "unknown statistic 'nosuch' (known: max, min, mean, pNN, overruns, drops, events)" in err
    elif condition != "p1e3>5us":
        assert "pNN takes 0 < NN < 100" in err


def test_a_verbose_log_says_its_json_lies_beside_it(tmp_path) -> None:
    for name in ("ct-verbose.txt", "ct-verbose.json"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    code, out, err = _run(["import", str(tmp_path / "ct-verbose.txt"), "-o", str(tmp_path / "x.parquet")])
    assert code == 0, err
    assert (f"note: {tmp_path / 'ct-verbose.json'} beside it looks like cyclictest --json output, not imported"
            in out), out
    code, out, err = _run(["import", str(tmp_path / "ct-verbose.txt"), str(tmp_path / "ct-verbose.json"), "-o",
                           str(tmp_path / "y.parquet")])
    assert code == 0 and "beside it" not in out, err


def test_python_m_jitterscope_is_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "jitterscope", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("jitterscope "), done.stderr
