"""``jitterscope tails``: text with the assumptions and what EVT can promise, --json; bad input is one line."""

from __future__ import annotations

import json

import pytest
from jitterscope.cli import main
from jitterscope.io import spec_from_options, write_simulation


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_simulation(spec_from_options(threads=2, samples=4000), tmp_path_factory.mktemp("d") / "d.parquet",
                            seed=4)


def test_text_states_fit_assumptions_and_limits(dataset, capsys) -> None:
    assert main(["tails", str(dataset), "--level-us", "50"]) == 0
    out = capsys.readouterr().out
    assert "Tail fits (generalised Pareto above a threshold)" in out
    assert "CPU 0 (thread 0): assumptions" in out and "CPU 1 (thread 1): assumptions" in out
    assert "Ljung-Box" in out and "extremal index" in out and "first vs second half" in out
    assert "once per hour" in out and "once per day" in out
    assert "cannot promise: a worst case" in out


def test_json(dataset, capsys) -> None:
    assert main(["tails", str(dataset), "--json", "--level-us", "50", "--confidence", "80"]) == 0
    data = json.loads(capsys.readouterr().out)
    fit = data["threads"][0]
    assert fit["confidence"] == 0.8
    levels = [level for level, _ in fit["exceedance_probabilities"]]
    assert 50_000.0 in levels
    assert {r["period"] for r in fit["return_levels"]} == {"hour", "day"}
    assert "promise" in data


@pytest.mark.parametrize(("args", "message"), [
    (["{tmp}/missing.parquet"], "no such file or directory"),
    (["{short}"], "no thread can be tail-fitted"),
])
def test_bad_input_is_one_line_and_exit_1(dataset, tmp_path, capsys, args, message) -> None:
    short = write_simulation(spec_from_options(threads=1, samples=200), tmp_path / "short.parquet", seed=1)
    assert main(["tails", *(a.format(dataset=dataset, short=short, tmp=tmp_path) for a in args)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("jitterscope tails: error:")


def test_bad_confidence_is_a_usage_error(dataset, capsys) -> None:
    assert main(["tails", str(dataset), "--confidence", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jitterscope tails: error: argument --confidence: '0'")
