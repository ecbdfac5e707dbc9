"""jitterscope info: metadata, environment, counters and row counts."""

from __future__ import annotations

import json

from jitterscope.cli import main
from jitterscope.io import SimulationSpec, write_simulation


def test_info_text_and_json(tmp_path, capsys):
    path = write_simulation(SimulationSpec(threads=2, samples=321, governor="schedutil"), tmp_path / "s.parquet", 1)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"dataset: {path} (1 file(s), 642 rows)" in out
    assert "kind: simulation, schema version 1" in out
    assert "cpufreq: 0 (cur_khz=2400000, driver=simulated, governor=schedutil" in out
    assert "thread 1: cpu 1, tid 20001, interval 1,000,000 ns, samples 321, drops 0, overruns 0" in out
    assert "{'" not in out and "None" not in out and "True" not in out  # words, not Python reprs
    assert "counters: " in out and "ground truth (simulation): seed" in out
    assert main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 642 and doc["jitterscope.kind"] == "simulation"
    assert doc["jitterscope.environment"]["cpufreq"]["0"]["governor"] == "schedutil"


def test_info_on_bad_file_is_one_line(tmp_path, capsys):
    (tmp_path / "x.parquet").write_text("hello")
    assert main(["info", str(tmp_path / "x.parquet")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jitterscope info: error:")
