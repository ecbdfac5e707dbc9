"""jitterscope spectrum: the peak table, --json, and one-line errors."""

from __future__ import annotations

import json

import pytest
from jitterscope.cli import main
from jitterscope.io import BaseLatency, PeriodicDisturbance, SimulationSpec, write_simulation


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    spec = SimulationSpec(threads=1, samples=40_000, base=BaseLatency(median_ns=3_000, spread=0.3),
                          effects=(PeriodicDisturbance(frequency_hz=250.0, amplitude_ns=1_500, shape="sine"),))
    return write_simulation(spec, tmp_path_factory.mktemp("spectrum") / "s.parquet", 5)


def test_table_names_the_peak_and_the_user_source(dataset, capsys):
    assert main(["spectrum", str(dataset), "--sources", "tick=250"]) == 0
    out = capsys.readouterr().out
    assert "CPU 0 (thread 0): fs 1000 Hz, n=40000, Welch, mean of 38 Hann segments of 2.05 s" in out
    assert "span 40 s" in out
    assert "freq Hz" in out and "likely source" in out
    row = [line for line in out.splitlines() if line.strip().startswith("250.0")]
    assert len(row) == 1 and row[0].rstrip().endswith("tick") and "4 ms" in row[0]


def test_json_holds_peaks_and_spectra(dataset, capsys):
    assert main(["spectrum", str(dataset), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    peak = data["threads"][0]["peaks"][0]
    assert abs(peak["frequency_hz"] - 250.0) < 1000 / 4096 * 1.01 and peak["fap"] < 0.01
    assert peak["likely_source"] == "every 4 timer intervals"
    assert len(data["threads"][0]["psd"]["psd"]) == len(data["threads"][0]["psd"]["frequencies_hz"])


def test_errors_are_one_line(dataset, tmp_path, capsys):
    spec = SimulationSpec(threads=1, samples=30)
    tiny = write_simulation(spec, tmp_path / "tiny.parquet", 1)
    assert main(["spectrum", str(tiny)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "too short for spectral analysis (n=30, need ≥ 64" in err
    assert main(["spectrum", str(dataset), "--sources", "nic=fast"]) == 1
    assert "NAME=HZ" in capsys.readouterr().err
    assert main(["spectrum", str(dataset), "--alpha", "2"]) == 2
    assert "'2' is out of range: expected a number > 0 and < 1" in capsys.readouterr().err
