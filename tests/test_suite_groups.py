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


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path: Path) -> None:
    """What `make test` relies on: with `-n 2 --dist loadgroup` the tests of one xdist group run on one worker
    (pytest 9.2 with pytest-xdist 3.8 silently spread them over both)."""
    import subprocess
    import sys

    (tmp_path / "test_grouped.py").write_text(
        "import pytest\npytestmark = pytest.mark.xdist_group('g')\n\n"
        "@pytest.mark.parametrize('i', range(8))\ndef test_member(i):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                           "-v", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path / "test_grouped.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    workers = set(re.findall(r"\[(gw\d+)\].*PASSED", done.stdout))
    assert done.returncode == 0 and len(workers) == 1, done.stdout[-2000:]
