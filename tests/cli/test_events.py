"""jitterscope events: text and JSON agree with the library, bad input is one line."""

from __future__ import annotations

import json

import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.events import find_events
from jitterscope.io import SharedStalls, SimulationSpec, SMIs, write_simulation


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    spec = SimulationSpec(threads=2, samples=8_000, effects=(
        SMIs(rate_hz=0.5, duration_ns=1_500_000), SharedStalls(times_ns=(3_000_000_000,), duration_ns=2_500_000)))
    return write_simulation(spec, tmp_path_factory.mktemp("ev") / "e.parquet", 4)


def test_json_is_the_library_result(dataset, capsys) -> None:
    assert main(["events", str(dataset), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = find_events(open_dataset(dataset))
    assert len(out["events"]) == len(expected.events) >= 3
    stall = next(e for e in out["events"] if e["cause_kinds"] == ["unexplained"])
    assert stall["cpus"] == [0, 1] and stall["missed_periods"] == 4 and stall["start_s"] == pytest.approx(3.0)
    assert all(e["cpus"] == [0, 1] for e in out["events"] if "smi" in e["cause_kinds"])


def test_text_lists_rates_catalogue_and_evidence(dataset, capsys) -> None:
    assert main(["events", str(dataset), "--threshold", "500", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "late: above 500 µs, given" in out and "above 1 ms" in out and "top 2 of" in out
    assert "Evidence:" in out and "ΔSMI = 1" in out
    assert "events above 100 µs are not counted" in out  # the given threshold is above 100 µs


@pytest.mark.parametrize(("args", "message"), [
    (["--threshold", "0"], "argument --threshold: '0' is out of range"),
    (["--top", "0"], "argument --top: '0' is out of range"),
])
def test_bad_values_are_one_line(dataset, capsys, args, message) -> None:
    assert main(["events", str(dataset), *args]) == 2  # usage errors, from the one number parser
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_histogram_and_missing_files_are_one_line(tmp_path, capsys) -> None:
    hist = tmp_path / "h.parquet"
    assert main(["import", "tests/data/formats/ct-hist.txt", "-o", str(hist)]) == 0
    capsys.readouterr()
    assert main(["events", str(hist)]) == 1
    assert "histogram-only data has no wake-up times" in capsys.readouterr().err
    assert main(["events", str(tmp_path / "missing.parquet")]) == 1
    assert "Traceback" not in capsys.readouterr().err
