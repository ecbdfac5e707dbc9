"""turbostat interval output: read as a timeline table; refused (clearly) as a latency import."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jitterscope.errors import ImportFormatError
from jitterscope.importers import detect, import_files
from jitterscope.importers.turbostat import read_turbostat

DATA = Path(__file__).resolve().parents[2] / "data" / "formats" / "turbostat"


def test_read_interval_output():
    table = read_turbostat(DATA / "interval.txt")
    frame = table.to_pandas()
    assert table.num_rows == 18 and sorted(set(frame.interval)) == [0, 1]
    summary = frame[(frame.cpu == -1) & (frame.interval == 1)].iloc[0]
    assert (summary["Avg_MHz"], summary["Busy%"], summary["CPU%c7"]) == (491, 12.59, 74.99)
    sibling = frame[(frame.cpu == 4) & (frame.interval == 0)].iloc[0]
    assert sibling["Avg_MHz"] == 3897 and np.isnan(sibling["CPU%c3"])  # core columns left out on the sibling
    assert frame[frame.interval == 0].cpu.tolist() == [-1, 0, 4, 1, 5, 2, 6, 3, 7]
    assert frame.time_s.isna().all()  # Time_Of_Day_Seconds was not shown


def test_time_of_day_column(tmp_path):
    text = ("CPU\tTime_Of_Day_Seconds\tAvg_MHz\tBusy%\tSMI\n"
            "-\t1700000000.250000\t12\t0.5\t3\n0\t1700000000.250000\t13\t0.6\t3\n")
    (tmp_path / "t.txt").write_text("turbostat version 2024.01.01 - Len Brown\n" + text)
    frame = read_turbostat(tmp_path / "t.txt").to_pandas()
    assert frame.time_s.tolist() == [1700000000.25, 1700000000.25] and frame.SMI.tolist() == [3, 3]


def test_import_refuses_with_a_pointer():
    assert detect(DATA / "interval.txt") == "turbostat"
    with pytest.raises(ImportFormatError, match=r"timeline, not wake-up latencies.*read_turbostat"):
        import_files([DATA / "interval.txt"])


def test_damaged_row(tmp_path):
    lines = (DATA / "interval.txt").read_text().splitlines()
    lines[3] += "\t1\t2\t3\t4\t5"
    (tmp_path / "t.txt").write_text("\n".join(lines))
    with pytest.raises(ImportFormatError, match=r"line 4: 12 values for 10 columns"):
        read_turbostat(tmp_path / "t.txt")
    lines = (DATA / "interval.txt").read_text().splitlines()
    lines[4] = lines[4].replace("3856", "38x6")
    (tmp_path / "t.txt").write_text("\n".join(lines))
    with pytest.raises(ImportFormatError, match=r"line 5: '38x6' is not a number"):
        read_turbostat(tmp_path / "t.txt")
