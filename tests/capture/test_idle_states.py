"""``--deepest-idle-state N``: states deeper than N disabled on the measured CPUs while measuring, put back on
every exit path (end of run, SIGINT, SIGTERM, SIGHUP, a setup failure), journaled so that the next capture
repairs a killed one.  On a tree laid out as /sys/devices/system/cpu (this VM's cpuidle driver is "none": no
per-CPU idle states to exercise the real path)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .conftest import is_root

STATES = ("POLL", "haltpoll", "C6")


def _tree(root: Path, cpus: int = 2, disabled: tuple[tuple[int, int], ...] = ()) -> Path:
    for cpu in range(cpus):
        for state, name in enumerate(STATES):
            path = root / f"cpu{cpu}/cpuidle/state{state}"
            path.mkdir(parents=True)
            (path / "name").write_text(name + "\n")
            (path / "disable").write_text("1\n" if (cpu, state) in disabled else "0\n")
    return root


def _disabled(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root).parent): p.read_text().strip() for p in sorted(root.rglob("disable"))}


def _args(tree: Path, state_dir: Path, n: int = 0) -> list[str]:
    return ["--deepest-idle-state", str(n), "--cpu-sysfs", str(tree), "--state-dir", str(state_dir), "-q"]


def test_states_deeper_than_n_are_disabled_while_measuring_and_enabled_after(
        capture_bin: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cpu", disabled=((1, 2),))  # CPU 1's C6 was already disabled: it stays so
    before = _disabled(tree)
    child = subprocess.Popen([str(capture_bin), "-D", "3", *_args(tree, tmp_path / "state"), "-o",
                              str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.2)
    during = _disabled(tree)
    journal = [p.read_text() for p in (tmp_path / "state").glob("idle-*.journal")]
    _, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert during == {"cpu0/cpuidle/state0": "0", "cpu0/cpuidle/state1": "1", "cpu0/cpuidle/state2": "1",
                      "cpu1/cpuidle/state0": "0", "cpu1/cpuidle/state1": "1", "cpu1/cpuidle/state2": "1"}
    assert len(journal) == 1 and len(journal[0].splitlines()) == 3  # the three it changed
    assert _disabled(tree) == before
    assert not list((tmp_path / "state").glob("idle-*.journal"))
    settings = json.loads(pq.read_metadata(next((tmp_path / "out").glob("part-*.parquet"))).metadata[
        b"jitterscope.settings"])
    assert settings["asked"]["deepest_idle_state"] == 0 and settings["granted"]["idle_states_disabled"] == 3


def test_only_the_measured_cpus_are_touched(capture_bin: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cpu")
    child = subprocess.Popen([str(capture_bin), "-D", "2", "-a", "1", *_args(tree, tmp_path / "state", n=1)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    during = _disabled(tree)
    child.communicate(timeout=30)
    assert [k for k, v in during.items() if v == "1"] == ["cpu1/cpuidle/state2"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_puts_the_states_back(capture_bin: Path, tmp_path: Path, signum: int) -> None:
    tree = _tree(tmp_path / "cpu")
    before = _disabled(tree)
    child = subprocess.Popen([str(capture_bin), "-D", "60", *_args(tree, tmp_path / "state"), "-o",
                              str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert _disabled(tree) != before
    child.send_signal(signum)
    child.communicate(timeout=30)
    assert _disabled(tree) == before
    assert not list((tmp_path / "state").glob("idle-*.journal"))


def test_a_setup_failure_after_the_change_puts_the_states_back(capture_bin: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cpu")
    before = _disabled(tree)
    # --trace into a tracefs that refuses the instance name fails after the idle states were changed
    done = subprocess.run([str(capture_bin), "-D", "5", *_args(tree, tmp_path / "state"), "-o", str(tmp_path / "o"),
                           "--trace=no_such_system:no_such_event"], capture_output=True, text=True, timeout=60,
                          check=False)
    if done.returncode == 0:
        pytest.skip("this kernel accepted the bogus trace event")
    assert _disabled(tree) == before
    assert not list((tmp_path / "state").glob("idle-*.journal"))


def test_the_next_capture_repairs_a_killed_one(capture_bin: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cpu")
    before = _disabled(tree)
    child = subprocess.Popen([str(capture_bin), "-D", "60", *_args(tree, tmp_path / "state")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    child.kill()
    child.wait(timeout=30)
    assert _disabled(tree) != before  # SIGKILL: nothing could put them back...
    assert len(list((tmp_path / "state").glob("idle-*.journal"))) == 1  # ...but the journal says what to
    done = subprocess.run([str(capture_bin), "-l", "1", "-q", "--cpu-sysfs", str(tree), "--state-dir",
                           str(tmp_path / "state")], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"put back the idle states a killed capture (pid {child.pid}) left disabled" in done.stderr
    assert _disabled(tree) == before
    assert not list((tmp_path / "state").glob("idle-*.journal"))


def test_a_journal_of_a_running_capture_is_left_alone(capture_bin: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cpu")
    child = subprocess.Popen([str(capture_bin), "-D", "3", *_args(tree, tmp_path / "state")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    done = subprocess.run([str(capture_bin), "-l", "1", "-q", "--cpu-sysfs", str(tree), "--state-dir",
                           str(tmp_path / "state")], capture_output=True, text=True, timeout=60, check=False)
    assert "put back" not in done.stderr
    assert _disabled(tree)["cpu0/cpuidle/state1"] == "1"  # still the running capture's setting
    child.wait(timeout=30)
    assert _disabled(tree)["cpu0/cpuidle/state1"] == "0"


def test_a_cpu_without_idle_states_is_one_line_and_exit_1(capture_bin: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(capture_bin), "-l", "1", "-q", "--deepest-idle-state", "0", "--cpu-sysfs",
                           str(tmp_path / "none"), "--state-dir", str(tmp_path / "state")], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "CPU 0 has no idle states" in lines[0]


@pytest.mark.parametrize("value", ["-1", "x", "64", ""])
def test_a_bad_state_number_is_a_usage_error(capture_bin: Path, value: str) -> None:
    done = subprocess.run([str(capture_bin), "-l", "1", "--deepest-idle-state", value], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


pytestmark = pytest.mark.skipif(not is_root(), reason="writes a fake sysfs tree as root; SCHED_FIFO")
