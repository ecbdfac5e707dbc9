"""The CLI on poll datasets: simulate --mode poll, summary/spectrum/events/report, refusals, import --as poll."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jitterscope.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture(scope="module")
def poll_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "p"
    assert main(["simulate", "--mode", "poll", "-o", str(out), "-D", "12s", "--irq", "10:8:eth0",
                 "--bursts", "2:30:spinner", "--hardware", "1:5", "--trace", "--seed", "2"]) == 0
    return out


def test_summary_spectrum_events_of_a_poll_dataset(poll_dir, capsys):
    capsys.readouterr()
    assert main(["summary", str(poll_dir)]) == 0
    out = capsys.readouterr().out
    assert re.match(r"CPU 1 lost 5\.0[5-7] % to interruptions", out) and "caused by RT throttling" in out
    assert "spinner (SCHED_FIFO/RR 90)" in out
    assert main(["summary", str(poll_dir), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "poll" and document["summary"]["threads"][0]["cpu"] == 1
    assert main(["spectrum", str(poll_dir)]) == 0
    out = capsys.readouterr().out
    assert "scheduler tick (CONFIG_HZ=250)" in out and "RT throttling (950000 of 1000000 µs)" in out
    assert main(["events", str(poll_dir), "--top", "2"]) == 0
    assert "RT throttling" in capsys.readouterr().out


def test_power_refuses_a_poll_dataset_in_one_line_saying_why(poll_dir, capsys):
    capsys.readouterr()
    assert main(["power", str(poll_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "busy-poll dataset (kind poll) has no timer wake-ups" in err
    assert "a busy loop neither sleeps nor wakes" in err and "'compare', 'tails', 'fleet'" in err


def test_timer_options_on_a_poll_dataset_and_poll_options_without_poll_mode_are_usage_errors(poll_dir, capsys,
                                                                                           tmp_path):
    for argv in (["summary", str(poll_dir), "--trace"], ["spectrum", str(poll_dir), "--nperseg", "64"],
                 ["simulate", "-o", str(tmp_path / "x.parquet"), "--tick", "100:2"],
                 ["simulate", "--mode", "poll", "-o", str(tmp_path / "y"), "--cpus", "a"],
                 ["simulate", "--mode", "poll", "-o", str(tmp_path / "y"), "--tick", "250:0.5"],
                 ["simulate", "--mode", "poll", "-o", str(tmp_path / "y"), "--irq", "ten:2"]):
        capsys.readouterr()
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.count("\n") == 1


def test_import_oslat_as_poll_then_summary(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["import", str(DATA / "oslat-fifo.txt"), "--as", "poll", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("CPU 1 lost about ") and "its time is not recorded" in text
    assert "keeps no per-interruption rows" in text
    assert main(["import", str(DATA / "ct-hist.txt"), "--as", "poll", "-o", str(tmp_path / "z")]) == 1
    assert "not oslat output" in capsys.readouterr().err


def test_methods_paragraph_of_a_poll_dataset(poll_dir, capsys):
    capsys.readouterr()
    assert main(["report", str(poll_dir), "--methods"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Busy-poll interruptions were recorded by jitterscope simulate")
    assert "Timer wake-up" not in text and "RT throttling was on (950000 of 1000000 µs)" in text


def test_export_of_a_poll_dataset(poll_dir, capsys, tmp_path):
    out = tmp_path / "p.csv"
    assert main(["export", str(poll_dir), "--format", "csv", "-o", str(out)]) == 0
    assert out.read_text().splitlines()[0] == '"cpu","thread","seq","start_ns","duration_ns"'
    capsys.readouterr()
    assert main(["export", str(poll_dir), "--format", "hgrm", "-o", str(tmp_path / "p.hgrm")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "export it with --format csv" in err
