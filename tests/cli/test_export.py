"""jitterscope export: the three formats from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from jitterscope.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


def test_export_formats(tmp_path, capsys):
    dataset = tmp_path / "ct.parquet"
    assert main(["import", str(DATA / "ct-verbose.txt"), str(DATA / "ct-verbose.json"), "-o", str(dataset)]) == 0
    capsys.readouterr()
    assert main(["export", str(dataset), "--format", "rt-tests-json", "-o", str(tmp_path / "o.json")]) == 0
    assert "rt-tests-json, 1671 rows/wake-ups, threads 0, 1" in capsys.readouterr().out
    assert json.loads((tmp_path / "o.json").read_text())["thread"]["0"]["max"] == 46
    assert main(["export", str(dataset), "--format", "hgrm", "--thread", "0", "-o", str(tmp_path / "o.hgrm")]) == 0
    assert "Total count    =         1000]" in (tmp_path / "o.hgrm").read_text()
    assert main(["export", str(dataset), "--format", "csv", "-o", str(tmp_path / "o.csv")]) == 0
    assert (tmp_path / "o.csv").read_text().count("\n") == 1672


def test_export_error_is_one_line(tmp_path, capsys):
    assert main(["export", str(tmp_path / "none.parquet"), "--format", "csv", "-o", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jitterscope export: error:")
