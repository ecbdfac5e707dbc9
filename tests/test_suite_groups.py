"""The real-time xdist group covers every test module that starts a real-time process (see tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

_spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).with_name("conftest.py"))
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
REALTIME_PATHS, TESTS = _conftest.REALTIME_PATHS, _conftest.TESTS
runs_realtime_processes = _conftest.runs_realtime_processes

# What starting a real-time process looks like in a test module: the capture binary (directly, through the
# runner fixture or the `capture` command in a subprocess), a FIFO spinner, cyclictest.
STARTS_REALTIME = re.compile(r"run_capture\(|capture_binary\(\)|sched_setscheduler|\"chrt\"|"
                             r"\"cyclictest\"\)|CLI, \"capture\"")


def test_every_listed_path_exists() -> None:
    assert [entry for entry in REALTIME_PATHS if not (TESTS / entry).exists()] == []


def test_every_module_starting_a_realtime_process_is_in_the_group() -> None:
    starting = {path.relative_to(TESTS).as_posix() for path in TESTS.rglob("test_*.py")
                if path.name != Path(__file__).name and STARTS_REALTIME.search(path.read_text())}
    assert len(starting) >= 10, starting  # the pattern still finds them
    assert sorted(p for p in starting if not runs_realtime_processes(TESTS / p)) == []


def test_analysis_modules_stay_out_of_the_group() -> None:
    assert not runs_realtime_processes(TESTS / "report" / "test_figure_layout.py")
    assert not runs_realtime_processes(TESTS / "capture_notes.py")  # a prefix of a name is not its folder
