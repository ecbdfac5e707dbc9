"""jitterscope simulate: options and spec files give the datasets the library gives."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.io import (
    BaseLatency,
    Drops,
    IdleStates,
    PeriodicDisturbance,
    PStates,
    SimulationSpec,
    SMIs,
    Stalls,
    simulate,
)


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
    # every option that takes numbers is a usage error (exit 2) when they are not (issue 26), effect specs too
    for bad, status in ((["--periodic", "ten:20"], 2), (["--coupling", "1:2:3"], 2), (["--smi", "1"], 2),
                        (["--threads", "0"], 2), (["--pstates", "fast,slow"], 2)):
        capsys.readouterr()
        assert main(["simulate", "-o", str(tmp_path / "x.parquet"), *bad]) == status
        assert capsys.readouterr().err.count("\n") == 1


CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"
CLAIM_2400 = {"driver": "acpi-cpufreq", "governor": "performance", "cur_khz": 2_400_000,
              "min_khz": 2_400_000, "max_khz": 2_400_000}


def _write_spec(tmp_path, name, **fields):
    spec = {"threads": 1, "samples": 3000, **fields}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


def test_spec_environment_and_settings_overrides_reach_the_metadata(tmp_path):
    environment = {"no_hz": "idle", "hz": 250, "cmdline": "BOOT_IMAGE=/vmlinuz ro quiet",
                   "cpufreq": {"*": {"governor": "performance", "cur_khz": 2_400_000}, "1": {"cur_khz": 1_600_000}}}
    spec = _write_spec(tmp_path, "env", threads=2, environment=environment,
                       settings={"granted": {"mlockall": False}})
    out = tmp_path / "env.parquet"
    assert main(["simulate", "-o", str(out), "--spec", str(spec)]) == 0
    metadata = open_dataset(out).metadata
    env = metadata.environment
    assert (env["no_hz"], env["hz"], env["cmdline"]) == ("idle", 250, "BOOT_IMAGE=/vmlinuz ro quiet")
    assert env["cpufreq"]["0"] == {"driver": "simulated", "governor": "performance", "cur_khz": 2_400_000,
                                   "min_khz": 2_400_000, "max_khz": 2_400_000}
    assert env["cpufreq"]["1"]["cur_khz"] == 1_600_000 and env["cpufreq"]["1"]["governor"] == "performance"
    assert env["clocksource"] == "simulated"  # defaults not overridden stay
    assert metadata.settings["granted"]["mlockall"] is False and metadata.settings["granted"]["simulated"] is True
    assert metadata.ground_truth["spec"]["environment"] == environment


def test_unknown_environment_key_is_one_line_error(tmp_path, capsys):
    spec = _write_spec(tmp_path, "typo", environment={"nohz": "idle"})
    assert main(["simulate", "-o", str(tmp_path / "x.parquet"), "--spec", str(spec)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "environment: unknown key(s) nohz" in err and "no_hz" in err


def test_compare_names_no_hz_when_only_it_differs(tmp_path, capsys):
    paths = []
    for name, no_hz, cmdline in (("on", "idle", "ro quiet"), ("off", "off", "ro quiet nohz=off")):
        spec = _write_spec(tmp_path, name, environment={"no_hz": no_hz, "cmdline": cmdline})
        paths.append(tmp_path / f"{name}.parquet")
        assert main(["simulate", "-o", str(paths[-1]), "--spec", str(spec), "--seed", "3"]) == 0
    capsys.readouterr()
    assert main(["compare", *map(str, paths), "--resamples", "50", "--json"]) == 0
    text = capsys.readouterr().out
    assert '"environment.no_hz"' in text and '"environment.cmdline"' in text
    assert main(["compare", *map(str, paths), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "environment.no_hz" in out and "idle" in out
    assert "environment.cpufreq" not in out  # nothing else differs


def test_correlate_flags_a_claimed_fixed_frequency_that_the_counters_contradict(tmp_path, capsys):
    bouncing = {"type": "pstates", "levels_mhz": [1600, 2400, 3400], "process": "random",
                "mean_dwell_ns": 200_000_000}
    results = {}
    steady = {"type": "pstates", "levels_mhz": [2400], "process": "steps", "dwell_ns": [10**15]}
    for name, levels in (("bouncing", bouncing), ("fixed", steady)):
        spec = _write_spec(tmp_path, name, samples=5000, effects=[levels], environment={"cpufreq": {"*": CLAIM_2400}})
        out = tmp_path / f"{name}.parquet"
        assert main(["simulate", "-o", str(out), "--spec", str(spec), "--seed", "2"]) == 0
        capsys.readouterr()
        assert main(["correlate", str(out), "--json", "--surrogates", "10"]) == 0
        results[name] = json.loads(capsys.readouterr().out)
    claims = results["bouncing"]["frequency"]["claims"]
    assert claims[0]["claimed_mhz"] == 2400 and claims[0]["disagree"] is True
    assert results["fixed"]["frequency"]["claims"][0]["disagree"] is False


def test_transition_smis_spec_works_in_a_fresh_interpreter(tmp_path):
    # a new process: nothing imported jitterscope.simpower before the spec is read
    spec = _write_spec(tmp_path, "tsmi", effects=[
        {"type": "pstates", "levels_mhz": [1600, 3400], "dwell_ns": [100_000_000, 100_000_000]},
        {"type": "transition_smis", "probability": 1.0}])
    out = tmp_path / "tsmi.parquet"
    run = subprocess.run([sys.executable, "-c", CLI, "simulate", "-o", str(out), "--spec", str(spec)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    truth = open_dataset(out).metadata.ground_truth
    transitions = truth["pstates"]["cpus"]["0"]["transition_ns"]
    assert truth["transition_smis"]["times_ns"]["values"] == transitions["values"] and transitions["count"] > 10
