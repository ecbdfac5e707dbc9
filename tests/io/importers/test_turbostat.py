"""turbostat interval output: read as a timeline table; refused (clearly) as a latency import."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from jitterscope.errors import ImportFormatError, JitterscopeError
from jitterscope.io import detect, import_files, read_timeline, read_turbostat

DATA = Path(__file__).resolve().parents[2] / "data" / "formats" / "turbostat"
HEADER = "Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\tSMI"
BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "import_fuzz.py"


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
    with pytest.raises(ImportFormatError, match=r"timeline, not wake-up latencies.*--onto DATASET"):
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


def test_read_timeline_time_of_day_fixture():
    # turbostat --quiet --interval 1 --show Time_Of_Day_Seconds,CPU,Busy%,Bzy_MHz,SMI, 2 CPUs, 3 blocks
    doc = read_timeline(DATA / "time_of_day.txt")
    assert doc["time_from"] == "Time_Of_Day_Seconds" and doc["cpus"] == [0, 1]
    assert doc["columns"] == ["Busy%", "Bzy_MHz", "SMI"]
    # the end of a block is its latest reading; blocks are contiguous; the first starts one interval earlier
    assert doc["end_s"] == [1764460801.000312, 1764460802.000297, 1764460803.000305]
    assert doc["interval_s"] == pytest.approx(0.9999965)  # median spacing of the block ends
    assert doc["start_s"][1:] == doc["end_s"][:-1]
    assert doc["start_s"][0] == pytest.approx(1764460801.000312 - 0.9999965, abs=1e-6)
    assert doc["values"]["1"]["Bzy_MHz"] == [2400, 2399, 1201]
    assert doc["values"]["0"]["SMI"] == [0, 2, 0] and doc["package"]["SMI"] == [0, 4, 0]
    assert json.loads(json.dumps(doc)) == doc


def test_read_timeline_needs_a_start_without_time_column():
    with pytest.raises(ImportFormatError, match=r"no Time_Of_Day_Seconds column.*--turbostat-start EPOCH_SECONDS"):
        read_timeline(DATA / "interval.txt")
    doc = read_timeline(DATA / "interval.txt", start_s=1000.0, interval_s=2.0)
    assert doc["start_s"] == [1000.0, 1002.0] and doc["end_s"] == [1002.0, 1004.0]
    assert doc["time_from"] == "--turbostat-start" and doc["values"]["4"]["Busy%"] == [99.99, 99.99]
    assert doc["values"]["4"]["CPU%c3"] == [None, None]  # the sibling thread leaves core columns out
    assert doc["package"]["Avg_MHz"] == [488, 491]


@pytest.mark.parametrize("text, message", [
    ("Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n5.0\t0\t1\t2400\nTime_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n"
     "4.0\t0\t1\t2400\n", "does not increase"),
    ("Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n5.0\t0\t1\t24x0\n", "is not a number"),
    ("Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n5.0\t0\t1\t2400\n5.0\t0\t1\t2400\n", "does not increase"),
    ("Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n5.0\t0\t1\t2400\n5.0\t1\t1\t2400\n6.0\t1\t1\t2400\n"
     "7.0\t0\t1\t2400\n7.0\t1\t1\t2400\n", "block 2: rows for CPUs 1, 0, but the first block has 0, 1"),
    ("Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n", "no rows"),
    ("Time_Of_Day_Seconds\tCPU\tBusy%\tBzy_MHz\n99999999999999.0\t0\t1\t2400\n", "not a wall-clock"),
])
def test_read_timeline_refuses_corrupt_files(tmp_path, text, message):
    (tmp_path / "t.txt").write_text(text)
    with pytest.raises(ImportFormatError, match=message) as info:
        read_timeline(tmp_path / "t.txt")
    assert "\n" not in str(info.value)


def test_mutated_time_of_day_files_read_or_fail_in_one_line(tmp_path):
    spec = importlib.util.spec_from_file_location("import_fuzz", BENCH)
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    source = (DATA / "time_of_day.txt").read_bytes()
    outcomes = set()
    for case in range(300):
        rng = np.random.default_rng([20261130, case])
        _, mutate = fuzz.MUTATIONS[int(rng.integers(0, len(fuzz.MUTATIONS)))]
        mutated = tmp_path / f"case{case}.txt"
        mutated.write_bytes(mutate(source, rng))
        try:
            doc = read_timeline(mutated, start_s=1764460800.0 if case % 2 else None)
            json.dumps(doc, allow_nan=False)
            assert all(e > s for s, e in zip(doc["start_s"], doc["end_s"], strict=True))
            outcomes.add("read")
        except JitterscopeError as exc:
            assert str(exc) and "\n" not in str(exc), f"case {case}: {exc!r}"
            outcomes.add(type(exc).__name__)
    assert {"read", "ImportFormatError"} <= outcomes


def test_header_every_n_intervals_and_an_incomplete_last_block(tmp_path):
    # turbostat --header_iterations 2: the header only before every second block; killed while printing block 4
    rows = [f"{100 + k}.000100\t{cpu}\t1.00\t{2400 - 100 * k}\t0" for k in range(3) for cpu in ("-", "0", "1")]
    text = "\n".join([HEADER, *rows[:6], HEADER, *rows[6:], "103.000100\t-\t1.00\t2100\t0", "103.000100\t0"])
    (tmp_path / "t.txt").write_text(text + "\n")
    doc = read_timeline(tmp_path / "t.txt")
    assert doc["end_s"] == [100.0001, 101.0001, 102.0001]
    assert doc["values"]["1"]["Bzy_MHz"] == [2400, 2300, 2200]
    assert doc["notes"] == ["the last block lists 2 of 3 rows (turbostat stopped while printing it); left out"]
