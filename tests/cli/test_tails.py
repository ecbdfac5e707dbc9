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
    assert main(["tails", str(dataset), "--json", "--level-us", "10", "--level-us", "50", "--confidence", "80"]) == 0
    data = json.loads(capsys.readouterr().out)
    fit = data["threads"][0]
    assert fit["confidence"] == 0.8 and data["levels_ns"] == [10_000.0, 50_000.0]
    levels = [level for level, _ in fit["exceedance_probabilities"]]
    # 50 µs on a ~4 µs tail: even the interval's upper end is rarer than once per day, beyond what is asked
    assert 10_000.0 in levels and 50_000.0 not in levels
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


def _table(out: str, title: str) -> list[str]:
    """The data rows of one text table (between its second and third rule)."""
    lines = out[out.index(title):].splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("─")]
    return lines[rules[1] + 1:rules[2]]


def test_level_us_is_answered_in_the_text(dataset, capsys) -> None:
    """--level-us was only in --json (issue 15): the text has P(> level) per wake-up and per hour, the recorded
    fraction within the data (hand-counted here), withheld rarer than once per day."""
    from jitterscope.dataset import open_dataset

    assert main(["tails", str(dataset), "--level-us", "2", "--level-us", "1e4"]) == 0
    rows = [line.split() for line in _table(capsys.readouterr().out, "Asked levels: how often latency exceeds them")]
    assert [(r[0], r[2]) for r in rows] == [("0", "2"), ("0", "10000"), ("1", "2"), ("1", "10000")]
    table = open_dataset(dataset).read(["thread", "expected_ns", "actual_ns"])
    latency = table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()
    thread = table.column("thread").to_numpy()
    for row in rows[0], rows[2]:  # 2 µs lies below the fit's threshold: the fraction recorded
        mask = thread == int(row[0])
        fraction = (latency[mask] > 2000).sum() / mask.sum()
        assert float(row[3]) == pytest.approx(fraction, rel=1e-3) and float(row[4]) < fraction < float(row[5])
        assert float(row[6]) == pytest.approx(fraction * 3600 * 1000, rel=1e-3)  # 1 kHz: wake-ups per hour
        assert " ".join(row[9:]) == "recorded fraction"
    for row in rows[1], rows[3]:  # 10 ms on 4 s of a ~4 µs tail: not a number, a reason
        assert row[3:9] == ["n/a"] * 6 and " ".join(row[9:]).startswith("withheld: ")


def test_level_us_beyond_the_maximum_of_a_mixed_tail_is_withheld(tmp_path, capsys) -> None:
    """A tail that mixes mechanisms (rare stalls) is not extrapolated: a level beyond its maximum gets no number."""
    mixed = tmp_path / "m.parquet"
    assert main(["simulate", "-o", str(mixed), "--threads", "1", "--samples", "20000", "--stalls", "0.002",
                 "--seed", "2"]) == 0
    capsys.readouterr()
    assert main(["tails", str(mixed), "--level-us", "1e5"]) == 0
    out = capsys.readouterr().out
    (row,) = _table(out, "Asked levels")
    assert row.split()[3:9] == ["n/a"] * 6 and "withheld: beyond the max" in row
    assert "the fit does not extrapolate" in out
