"""jitterscope simulate: options and spec files give the datasets the library gives."""

from __future__ import annotations

import json

import numpy as np
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.simeffects import Drops, IdleStates, PeriodicDisturbance, PStates, SMIs, Stalls
from jitterscope.simulate import BaseLatency, SimulationSpec, simulate


def test_options_build_the_expected_spec(tmp_path, capsys):
    out = tmp_path / "s.parquet"
    args = ["simulate", "-o", str(out), "--threads", "3", "--samples", "2000", "--interval-us", "500",
            "--median-us", "4", "--spread", "0.2", "--periodic", "10:20", "--pstates", "1200,2400",
            "--dwell-ms", "100", "--coupling", "0.5:30:1", "--smi", "1:100", "--stalls", "1e-3",
            "--drops", "1e-3", "--idle", "0.1:20", "--seed", "5", "--governor", "powersave"]
    assert main(args) == 0
    assert "3 thread(s) x 2000 wake-ups, seed 5" in capsys.readouterr().out
    spec = SimulationSpec(
        threads=3, samples=2000, interval_ns=500_000, governor="powersave",
        base=BaseLatency(median_ns=4000, spread=0.2),
        effects=(PeriodicDisturbance(frequency_hz=10, amplitude_ns=20_000, width_ns=500_000),
                 PStates(levels_mhz=(1200, 2400), dwell_ns=(100_000_000, 100_000_000), coupling_probability=0.5,
                         coupling_amplitude_ns=30_000, coupling_window=1),
                 SMIs(rate_hz=1, duration_ns=100_000), IdleStates(deep_probability=0.1, exit_latency_ns=20_000),
                 Stalls(probability=1e-3), Drops(probability=1e-3)),
    )
    dataset = open_dataset(out)
    table, _ = simulate(spec, 5)
    assert dataset.metadata.ground_truth["spec"] == spec.to_json()
    assert dataset.read().equals(table)


def test_spec_file_and_print_spec(tmp_path, capsys):
    spec = {"threads": 1, "duration_ns": 500_000_000, "interval_ns": 100_000,
            "effects": [{"type": "periodic", "frequency_hz": 50, "amplitude_ns": 9000, "shape": "sine"}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert main(["simulate", "-o", str(tmp_path / "a.parquet"), "--spec", str(tmp_path / "spec.json")]) == 0
    table = open_dataset(tmp_path / "a.parquet").read()
    assert table.num_rows == 5000
    latency = table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()
    assert np.ptp(latency) > 8000
    capsys.readouterr()
    assert main(["simulate", "-o", "unused", "--spec", str(tmp_path / "spec.json"), "--print-spec"]) == 0
    assert json.loads(capsys.readouterr().out)["effects"][0]["shape"] == "sine"


def test_refuses_to_overwrite_and_bad_options(tmp_path, capsys):
    out = tmp_path / "s.parquet"
    assert main(["simulate", "-o", str(out), "--samples", "10"]) == 0
    assert main(["simulate", "-o", str(out), "--samples", "10"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["simulate", "-o", str(out), "--samples", "10", "--force"]) == 0
    for bad in (["--periodic", "ten:20"], ["--coupling", "1:2:3"], ["--smi", "1"], ["--threads", "0"],
                ["--pstates", "fast,slow"]):
        capsys.readouterr()
        assert main(["simulate", "-o", str(tmp_path / "x.parquet"), *bad]) == 1
        assert capsys.readouterr().err.count("\n") == 1
