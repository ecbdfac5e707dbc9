"""jitterscope import TURBOSTAT --onto DATASET: the timeline travels inside a copy of the dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.io import SimulationSpec, write_simulation

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
HEADER = "Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\tSMI"


def _turbostat(first_end_s: float, blocks: int, step_at: int) -> str:
    """turbostat --interval 1 --show Time_Of_Day_Seconds,CPU,Busy%,Bzy_MHz,SMI for CPUs 0 and 1."""
    lines = ["turbostat version 2024.05.10 - Len Brown <lenb@kernel.org>"]
    for k in range(blocks):
        mhz = 2400 if k < step_at else 1200
        end = f"{first_end_s + k:.6f}"
        lines += [HEADER, f"{end}\t-\t3.00\t{mhz}\t0", f"{end}\t0\t4.00\t{mhz}\t0", f"{end}\t1\t2.00\t{mhz}\t0"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> tuple[Path, float]:
    """A 4 s simulated capture (2 threads, 1 kHz) and the wall-clock second of its first wake-up."""
    path = tmp_path_factory.mktemp("timeline") / "sim.parquet"
    write_simulation(SimulationSpec(threads=2, duration_ns=4_000_000_000), path, seed=3)
    clock = open_dataset(path).metadata.clock
    first = (clock["realtime_ns"] + SimulationSpec().start_ns - clock["monotonic_ns"]) / 1e9
    return path, first


def test_attach_and_info(capture, tmp_path, capsys):
    dataset, first = capture
    (tmp_path / "ts.txt").write_text(_turbostat(first + 0.5, 5, step_at=2))
    out = tmp_path / "with.parquet"
    assert main(["import", str(tmp_path / "ts.txt"), "--onto", str(dataset), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "turbostat timeline of ts.txt attached (5 interval(s) of 1 s, CPUs [0, 1]" in text
    assert "8000 of 8000 wake-ups inside" in text and "note:" not in text
    attached = open_dataset(out)
    assert attached.num_rows == open_dataset(dataset).num_rows == 8000
    assert attached.metadata.timeline["values"]["0"]["Bzy_MHz"] == [2400, 2400, 1200, 1200, 1200]
    assert attached.metadata.timeline["start_s"][0] == pytest.approx(first - 0.5, abs=1e-6)
    assert main(["info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "timeline: turbostat ts.txt, 5 interval(s) of 1.0 s" in info and "columns Busy%, Bzy_MHz, SMI" in info
    assert main(["info", "--json", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["jitterscope.timeline"]["cpus"] == [0, 1]


def test_partial_overlap_is_noted(capture, tmp_path, capsys):
    dataset, first = capture
    (tmp_path / "ts.txt").write_text(_turbostat(first + 2.0, 3, step_at=1))  # covers (first+1, first+4]
    assert main(["import", str(tmp_path / "ts.txt"), "--onto", str(dataset), "-o", str(tmp_path / "o.parquet")]) == 0
    text = capsys.readouterr().out
    assert "note: the turbostat timeline covers" in text and "of 8000 wake-ups" in text


def test_start_given_for_a_file_without_time_column(capture, tmp_path, capsys):
    dataset, first = capture
    out = tmp_path / "o.parquet"
    args = ["import", str(DATA / "turbostat" / "interval.txt"), "--onto", str(dataset), "-o", str(out)]
    assert main([*args, "--turbostat-start", f"{first - 0.1:.6f}", "--turbostat-interval", "2"]) == 0
    assert "times from --turbostat-start" in capsys.readouterr().out
    timeline = open_dataset(out).metadata.timeline
    assert timeline["end_s"][1] - timeline["start_s"][0] == pytest.approx(4.0)


@pytest.mark.parametrize("case, message", [
    ("no-time", "no Time_Of_Day_Seconds column, so its intervals cannot be put on the capture's clock; "
                "run turbostat with --show Time_Of_Day_Seconds or give --turbostat-start"),
    ("no-overlap", "do not overlap"),
    ("corrupt", "is not a number"),
    ("histogram", "a histogram dataset has no wake-up times"),
    ("no-clock", "records no clock realtime_ns/monotonic_ns pair"),
])
def test_bad_input_is_one_line(capture, tmp_path, capsys, case, message):
    dataset, first = capture
    turbostat = tmp_path / "ts.txt"
    turbostat.write_text(_turbostat(first + 3600.0 if case == "no-overlap" else first + 1, 2, step_at=1))
    if case == "no-time":
        turbostat = DATA / "turbostat" / "interval.txt"
    if case == "corrupt":
        turbostat.write_text(turbostat.read_text().replace("\t2400\t", "\t24!0\t", 1))
    if case in ("histogram", "no-clock"):
        dataset = tmp_path / "other.parquet"
        source = [DATA / "ct-hist.txt"] if case == "histogram" else [DATA / "ct-verbose.txt"]
        assert main(["import", *map(str, source), "-o", str(dataset)]) == 0
        capsys.readouterr()
    out = tmp_path / "o.parquet"
    assert main(["import", str(turbostat), "--onto", str(dataset), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err and not out.exists()
