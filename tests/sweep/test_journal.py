"""The journal: every change recorded before it is made, and the machine put back after a kill at any step
(fault injection, as the capture's crash tests do), on a fake sysfs tree that has cpufreq and idle states."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitterscope.errors import JitterscopeError
from jitterscope.sweep import (
    FAULT_ENV,
    Journal,
    KnobError,
    Machine,
    RestoreError,
    knob_settings,
    read_journal,
    restore_directory,
)

from .conftest import snapshot

APPLY_AND_RESTORE = """
import sys
from jitterscope.sweep import Journal, Machine, knob_settings
root, out = sys.argv[1], sys.argv[2]
machine = Machine(root)
journal = Journal(out, machine)
cpus = [0, 1]
settings = (knob_settings(machine, "cpuidle.governor", "ladder", cpus)
            + knob_settings(machine, "cpuidle.deepest_state", 0, cpus)
            + knob_settings(machine, "cpufreq.governor", "performance", cpus)
            + knob_settings(machine, "cpufreq.max_khz", 2000000, cpus)
            + knob_settings(machine, "sched_rt_runtime_us", -1, cpus))
journal.apply(settings)
journal.restore_settings()
journal.verify()
print(len(settings))
"""
SETTINGS = 1 + 6 + 2 + 2 + 1
CHANGED = 1 + 4 + 2 + 2 + 1
"""Settings the script writes, and how many of them differ from the tree's values (state0 stays enabled)."""


def _apply(fake_machine: Path, out: Path, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, FAULT_ENV: fault} if fault else {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    out.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", APPLY_AND_RESTORE, str(fake_machine), str(out)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_apply_then_restore_puts_every_file_back(tmp_path: Path, fake_machine: Path) -> None:
    before = snapshot(fake_machine)
    done = _apply(fake_machine, tmp_path / "out", None)
    assert done.returncode == 0 and done.stdout.strip() == str(SETTINGS), done.stderr
    assert snapshot(fake_machine) == before
    state = read_journal(tmp_path / "out")
    assert len(state.originals) == SETTINGS and not state.changed


FAULTS = ([f"before-recorded:{n}" for n in (1, 2, 7, SETTINGS)] + [f"setting-written:{n}" for n in (1, 5, SETTINGS)]
          + [f"torn-record:{n}" for n in (1, 2, SETTINGS + 1)] + [f"restore-written:{n}" for n in (1, 4, CHANGED)])


@pytest.mark.parametrize("fault", FAULTS)
def test_a_kill_at_any_step_is_repaired_by_restore(tmp_path: Path, fake_machine: Path, fault: str) -> None:
    before = snapshot(fake_machine)
    done = _apply(fake_machine, tmp_path / "out", fault)
    assert done.returncode == -9, (done.returncode, done.stderr)  # SIGKILL at the step
    step = fault.split(":")[0]
    if step == "setting-written" or (step == "restore-written" and fault != f"restore-written:{CHANGED}"):
        assert snapshot(fake_machine) != before  # the kill left the machine changed: restore has work to do
    restore_directory(tmp_path / "out")
    assert snapshot(fake_machine) == before
    assert not read_journal(tmp_path / "out").changed
    restore_directory(tmp_path / "out")  # idempotent
    assert snapshot(fake_machine) == before


def test_the_original_is_recorded_before_the_file_changes(tmp_path: Path, fake_machine: Path) -> None:
    done = _apply(fake_machine, tmp_path / "out", "before-recorded:1")
    assert done.returncode == -9
    governor = fake_machine / "sys/devices/system/cpu/cpuidle/current_governor"
    assert governor.read_text().strip() == "menu"  # not yet written...
    state = read_journal(tmp_path / "out")
    assert state.originals == {str(governor): ("cpuidle.governor", "menu")}  # ...but already journaled


def test_restore_writes_only_what_differs(tmp_path: Path, fake_machine: Path) -> None:
    machine = Machine(fake_machine)
    journal = Journal(tmp_path, machine)
    governor = fake_machine / "sys/devices/system/cpu/cpuidle/current_governor"
    journal.apply(knob_settings(machine, "cpuidle.governor", "menu", [0]))  # already menu: nothing to switch
    mtime = governor.stat().st_mtime_ns
    time.sleep(0.01)
    journal.restore_settings()
    assert governor.stat().st_mtime_ns == mtime  # a governor switch costs a latency spike: not done for nothing


def test_a_setting_that_will_not_go_back_is_an_error_naming_it(tmp_path: Path, fake_machine: Path) -> None:
    machine = Machine(fake_machine)
    journal = Journal(tmp_path, machine)
    journal.apply(knob_settings(machine, "sched_rt_runtime_us", -1, [0]))
    target = fake_machine / "proc/sys/kernel/sched_rt_runtime_us"
    target.chmod(0o444)
    if os.access(target, os.W_OK):  # root writes read-only files: take the file away instead
        target.chmod(0o644)
        target.unlink()
        target.mkdir()
    with pytest.raises(RestoreError, match="sched_rt_runtime_us"):
        journal.restore_settings()


def test_verify_names_a_setting_changed_behind_our_back(tmp_path: Path, fake_machine: Path) -> None:
    machine = Machine(fake_machine)
    journal = Journal(tmp_path, machine)
    journal.apply(knob_settings(machine, "cpufreq.governor", "performance", [1]))
    journal.restore_settings()
    journal.verify()
    (fake_machine / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").write_text("powersave\n")
    with pytest.raises(RestoreError, match=r"cpufreq.governor .*reads 'powersave', the journal says it was "
                                           "'schedutil'"):
        journal.verify()


def test_a_value_that_does_not_read_back_is_refused(tmp_path: Path, fake_machine: Path) -> None:
    machine = Machine(fake_machine)

    class Stubborn(Machine):  # a kernel that takes the write but keeps its value (as sysfs does on EINVAL-less
        def write(self, path: str | os.PathLike[str], value: str) -> None:  # knobs like an unknown governor)
            pass

    journal = Journal(tmp_path, Stubborn(fake_machine))
    with pytest.raises(KnobError, match=r"wrote 'ladder' .* but it reads 'menu'"):
        journal.apply(knob_settings(machine, "cpuidle.governor", "ladder", [0]))


START_LOAD = """
import sys
from pathlib import Path
from jitterscope.sweep import Journal, Machine, start_process
journal = Journal(sys.argv[1], Machine(sys.argv[2]))
started = start_process(["sleep", sys.argv[3]], journal, role="load", run="run-001", cpus=[0],
                        log=Path(sys.argv[1]) / "load.log")
print(started.pid, flush=True)
started.popen.wait()
"""


def _running(argv: list[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if [c.decode() for c in cmdline] == argv and state != "Z":
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("fault", ["process-started", "process-recorded", "process-running"])
def test_a_load_never_runs_unrecorded_and_restore_ends_it(tmp_path: Path, fake_machine: Path, fault: str) -> None:
    seconds = f"{3000 + os.getpid() % 500}.{len(fault)}"  # a command line no one else runs
    done = subprocess.run([sys.executable, "-c", START_LOAD, str(tmp_path), str(fake_machine), seconds],
                          env={**os.environ, FAULT_ENV: fault}, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == -9, done.stderr
    deadline = time.monotonic() + 5
    if fault != "process-running":  # killed before the gate opened: it closes, nothing runs
        while _running(["sleep", seconds]) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert not _running(["sleep", seconds])
        assert bool(read_journal(tmp_path).processes) == (fault == "process-recorded")
        if fault == "process-recorded":
            ended, _ = restore_directory(tmp_path)
            assert ended and all("already ended" in line for line in ended)
        return
    while not _running(["sleep", seconds]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(["sleep", seconds]), "the recorded load should be running after the kill"
    ended, _ = restore_directory(tmp_path)
    assert any(line.startswith("ended load") for line in ended), ended
    assert not _running(["sleep", seconds])
    assert not read_journal(tmp_path).processes


def test_restore_leaves_a_recycled_pid_alone(tmp_path: Path, fake_machine: Path) -> None:
    # a record whose pid now runs something else (this test process): never signalled
    record = {"op": "process", "pid": os.getpid(), "pgid": os.getpid(), "start_ticks": 1,
              "cmdline": ["stress-ng", "--cpu", "1"], "role": "load", "run": "run-001"}
    (tmp_path / "journal.jsonl").write_text(json.dumps({"op": "machine", "root": str(fake_machine)}) + "\n"
                                            + json.dumps(record) + "\n")
    ended, _ = restore_directory(tmp_path)
    assert ended and "left alone" in ended[0]
    assert not read_journal(tmp_path).processes


def test_restore_of_a_directory_without_a_journal_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RestoreError, match=r"has no journal\.jsonl"):
        restore_directory(tmp_path)


def test_one_sweep_or_restore_per_machine_at_a_time(tmp_path: Path, fake_machine: Path) -> None:
    from jitterscope.sweep import lock_machine, run_sweep

    plan = tmp_path / "plan.toml"
    plan.write_text(f'[capture]\nduration = "1s"\n[factors]\n"cpufreq.governor" = ["performance"]\n'
                    f'[machine]\nroot = "{fake_machine}"\n')
    before = snapshot(fake_machine)
    held = lock_machine(Machine(fake_machine))  # as a sweep in progress holds it
    try:
        with pytest.raises(JitterscopeError, match=rf"another sweep \(pid {os.getpid()}\) is changing"):
            run_sweep(plan, tmp_path / "out", progress=False)
        (tmp_path / "restore").mkdir()
        (tmp_path / "restore" / "journal.jsonl").write_text(json.dumps({"op": "machine", "root": str(fake_machine)})
                                                            + "\n")
        with pytest.raises(JitterscopeError, match="another sweep"):
            restore_directory(tmp_path / "restore")
    finally:
        os.close(held)
    assert snapshot(fake_machine) == before and not (tmp_path / "out").exists()
    restore_directory(tmp_path / "restore")  # free again


def test_a_sweep_or_restore_leaves_no_lock_file(tmp_path: Path, fake_machine: Path) -> None:
    """The lock file goes with the lock (issue 26: /run/lock/jitterscope-sweep.lock was left after every sweep)."""
    from jitterscope.sweep import lock_machine, lock_path, run_sweep, unlock_machine

    machine = Machine(fake_machine)
    path = lock_path(machine)
    held = lock_machine(machine)
    assert path.read_text() == f"{os.getpid()}\n"
    unlock_machine(machine, held)
    assert not path.exists()
    plan = tmp_path / "plan.toml"
    plan.write_text(f'[capture]\nduration = "1s"\n[factors]\n"cpufreq.governor" = ["performance"]\n'
                    f'[machine]\nroot = "{fake_machine}"\n')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "someone-else.txt").write_text("not a sweep")
    with pytest.raises(JitterscopeError):  # refused after the lock was taken: given back and removed all the same
        run_sweep(plan, tmp_path / "out", progress=False)
    assert not path.exists()
    (tmp_path / "restore").mkdir()
    (tmp_path / "restore" / "journal.jsonl").write_text(json.dumps({"op": "machine", "root": str(fake_machine)}) + "\n")
    restore_directory(tmp_path / "restore")
    assert not path.exists()


def test_a_lock_file_removed_between_open_and_lock_is_not_a_lock(fake_machine: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The race of removing a lock file: a sweep opens the file, its holder removes it and lets go, the sweep's
    flock then succeeds on a file no other sweep can find. lock_machine must notice and lock the file the path
    names (else a third sweep would create a new file, lock it too, and two sweeps would change the machine)."""
    import fcntl

    from jitterscope.sweep import journal as journal_module
    from jitterscope.sweep import lock_machine, lock_path, unlock_machine

    machine = Machine(fake_machine)
    path = lock_path(machine)
    real_flock = fcntl.flock
    calls = []

    def flock_after_the_holder_left(fd: int, operation: int) -> None:
        if not calls:  # the first attempt: the holder removes the file between our open and our flock
            path.unlink()
        calls.append(fd)
        real_flock(fd, operation)

    monkeypatch.setattr(journal_module.fcntl, "flock", flock_after_the_holder_left)
    held = lock_machine(machine)
    monkeypatch.setattr(journal_module.fcntl, "flock", real_flock)
    try:
        assert len(calls) == 2  # started over once
        assert os.fstat(held).st_ino == os.stat(path).st_ino  # the lock is on the file the path names
        with pytest.raises(JitterscopeError, match="another sweep"):  # so a second sweep is refused
            unlock_machine(machine, lock_machine(machine))
    finally:
        unlock_machine(machine, held)
    assert not path.exists()
