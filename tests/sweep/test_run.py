"""``sweep run`` for real on this machine (root): the cpuidle governor and sched_rt_runtime_us changed per run
and put back after the sweep, after SIGINT, SIGTERM and SIGHUP mid-run, and after SIGKILL followed by
``sweep restore``; no load or capture left running; ``--resume`` finishes a killed sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from jitterscope.dataset import open_dataset
from jitterscope.sweep import read_journal

from .conftest import JITTERSCOPE, REAL_GOVERNOR, REAL_RT_RUNTIME

pytestmark = pytest.mark.root


def _plan(tmp_path: Path, duration: str, load_seconds: str) -> Path:
    # the load's command line is unique to this test run, so a leftover is recognisable among other engineers'
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[capture]
duration = "{duration}"
interval_us = 1000
[factors]
"cpuidle.governor" = ["ladder", "haltpoll"]
sched_rt_runtime_us = [-1]
load = ["none", "stress-ng --cpu 1 --quiet --timeout {load_seconds}"]
[design]
replicates = 1
order = "random"
seed = 3
warmup = "100ms"
""")
    return path


def _load_argv(load_seconds: str) -> list[str]:
    return ["stress-ng", "--cpu", "1", "--quiet", "--timeout", load_seconds]


def _running(argv: list[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = [c.decode() for c in (entry / "cmdline").read_bytes().split(b"\0")[:-1]]
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if cmdline[:len(argv)] == argv and state != "Z":
                found.append(int(entry.name))
    return found


def _ours_left(directory: Path) -> list[str]:
    """Processes the journal ever recorded that still run their recorded command line."""
    left = []
    for line in (directory / "journal.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("op") == "process":
            try:
                cmdline = [c.decode() for c in Path(f"/proc/{record['pid']}/cmdline").read_bytes().split(b"\0")[:-1]]
            except OSError:
                continue
            if cmdline == record["cmdline"]:
                left.append(f"{record['role']} {record['pid']}")
    return left


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _seconds() -> str:
    return f"{3000 + os.getpid() % 997}"


def test_a_sweep_runs_every_run_records_its_levels_and_puts_the_machine_back(
        tmp_path: Path, real_knobs: dict[str, str]) -> None:
    seconds = _seconds()
    out = tmp_path / "sweep"
    done = subprocess.run([*JITTERSCOPE, "sweep", "run", str(_plan(tmp_path, "0.4s", seconds)), "-o", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "ETA" in done.stderr and "4/4 runs complete" in done.stdout
    assert REAL_GOVERNOR.read_text().strip() == real_knobs["governor"]
    assert REAL_RT_RUNTIME.read_text().strip() == real_knobs["rt"]
    assert not _running(_load_argv(seconds)) and not _ours_left(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [r["status"] for r in manifest["runs"]] == ["complete"] * 4
    governors = set()
    for run in manifest["runs"]:
        experiment = open_dataset(out / "runs" / run["id"]).metadata.experiment
        assert experiment["levels"] == run["levels"] and experiment["warmup_ns"] == 100_000_000
        governors.add(experiment["levels"]["cpuidle.governor"])
        # the capture saw the governor the run asked for: set before it, restored only after it
        applied = {s["path"]: s["value"] for s in experiment["settings"]}
        assert applied[str(REAL_GOVERNOR)] == run["levels"]["cpuidle.governor"]
        if run["levels"]["load"] != "none":
            assert (out / "runs" / f"{run['id']}.load.log").exists()
            assert experiment["load"]["cpus"] == sorted(os.sched_getaffinity(0))
    assert governors == {"ladder", "haltpoll"}
    assert not read_journal(out).changed
    # put back after every run, not only at the end: each run's changes are restored before the next run's
    ops = [json.loads(line)["op"] for line in (out / "journal.jsonl").read_text().splitlines()]
    settings_ops = [op for op in ops if op in ("before", "restored")]
    assert settings_ops == ["before", "before", "restored", "restored"] * 4, settings_ops
    assert (out / "plan.toml").read_text() == (tmp_path / "plan.toml").read_text()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_mid_run_puts_the_machine_back_and_leaves_nothing_running(
        tmp_path: Path, real_knobs: dict[str, str], signum: int) -> None:
    seconds = _seconds()
    out = tmp_path / "sweep"
    child = subprocess.Popen([*JITTERSCOPE, "sweep", "run", str(_plan(tmp_path, "20s", seconds)), "-o", str(out),
                              "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_capture(out)
        changed = REAL_GOVERNOR.read_text().strip() != real_knobs["governor"] or \
            REAL_RT_RUNTIME.read_text().strip() != real_knobs["rt"]
        assert changed, "mid-run, the run's settings should be in place"
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        # a sweep that did not handle the signal leaves its load running: end it, so no test leaves one behind
        # (on success the asserts below check that nothing was left, before anything is cleaned up)
        if child.returncode != 128 + signum and (out / "journal.jsonl").exists():
            subprocess.run([*JITTERSCOPE, "sweep", "restore", str(out)], capture_output=True, timeout=60,
                           check=False)
    assert child.returncode == 128 + signum, err
    assert "interrupted" in err and "Traceback" not in err
    assert REAL_GOVERNOR.read_text().strip() == real_knobs["governor"]
    assert REAL_RT_RUNTIME.read_text().strip() == real_knobs["rt"]
    assert not _ours_left(out) and not _running(_load_argv(seconds))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["interrupted"] == signal.Signals(signum).name


def _wait_for_capture(out: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        journal = out / "journal.jsonl"
        if journal.exists() and '"role": "capture"' in journal.read_text():
            time.sleep(0.5)  # the capture is past its setup
            return
        time.sleep(0.05)
    raise AssertionError("the sweep never started a capture")


def test_after_sigkill_restore_repairs_and_resume_finishes(tmp_path: Path, real_knobs: dict[str, str]) -> None:
    seconds = _seconds()
    out = tmp_path / "sweep"
    plan = _plan(tmp_path, "2s", seconds)
    # a sequential order puts the loaded ladder run first, so the kill lands while a load runs and ladder is set
    plan.write_text(plan.read_text().replace('order = "random"', 'order = "sequential"').replace(
        'warmup = "100ms"', 'warmup = "100ms"\n[load]\ncpus = "0"').replace(
        'load = ["none", ', 'load = [').replace('"]\n[design]', '", "none"]\n[design]'))
    child = subprocess.Popen([*JITTERSCOPE, "sweep", "run", str(plan), "-o", str(out), "--quiet"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_capture(out)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert REAL_GOVERNOR.read_text().strip() == "ladder"  # the kill left the machine changed...
        loads = _running(_load_argv(seconds))
        assert loads  # ...and the load running, pinned where the plan says, its workers too
        workers = [int(p.name) for p in Path("/proc").iterdir()
                   if p.name.isdigit() and _pgid(int(p.name)) == loads[0]]
        assert len(workers) >= 2 and all(os.sched_getaffinity(pid) == {0} for pid in workers)
        done = subprocess.run([*JITTERSCOPE, "sweep", "restore", str(out)], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert "ended load" in done.stdout and "every journaled setting reads as before" in done.stdout
        assert REAL_GOVERNOR.read_text().strip() == real_knobs["governor"]
        assert REAL_RT_RUNTIME.read_text().strip() == real_knobs["rt"]
        assert not _running(_load_argv(seconds)) and not _ours_left(out)
        plan.write_text(plan.read_text())
        done = subprocess.run([*JITTERSCOPE, "sweep", "run", str(plan), "-o", str(out), "--resume"],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert [r["status"] for r in manifest["runs"]] == ["complete"] * 4
        assert REAL_GOVERNOR.read_text().strip() == real_knobs["governor"]
        assert not _ours_left(out)
    finally:
        if child.poll() is None:
            child.kill()
        subprocess.run([*JITTERSCOPE, "sweep", "restore", str(out)], capture_output=True, timeout=60, check=False)


def test_a_failed_capture_is_recorded_the_sweep_goes_on_and_the_machine_is_put_back(
        tmp_path: Path) -> None:
    from .conftest import make_fake_machine, snapshot  # cpufreq exists only in the fake tree

    machine = make_fake_machine(tmp_path / "machine")
    before = snapshot(machine)
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[capture]
duration = "0.3s"
[factors]
"cpufreq.governor" = ["performance", "powersave"]
capture.writer-cpu = [0, 63]
[design]
order = "sequential"
[machine]
root = "{machine}"
""")
    done = subprocess.run([*JITTERSCOPE, "sweep", "run", str(plan), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    statuses = {(r["levels"]["cpufreq.governor"], r["levels"]["capture.writer-cpu"]): r["status"]
                for r in manifest["runs"]}
    assert statuses == {("performance", 0): "complete", ("performance", 63): "failed",
                        ("powersave", 0): "complete", ("powersave", 63): "failed"}
    failed = next(r for r in manifest["runs"] if r["status"] == "failed")
    assert "CPU 63 is not online" in failed["error"]
    assert snapshot(machine) == before
    assert "failed: run-002, run-004" in done.stdout
