"""Fixtures of the sweep tests: a fake sysfs/procfs tree (this VM has no cpufreq and no per-CPU idle states),
and a lock for the tests that turn the real machine's knobs (two of them at once would record each other's
changes as the originals)."""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

JITTERSCOPE = [sys.executable, "-c", "import sys; from jitterscope.cli import main; sys.exit(main())"]
REAL_GOVERNOR = Path("/sys/devices/system/cpu/cpuidle/current_governor")
REAL_RT_RUNTIME = Path("/proc/sys/kernel/sched_rt_runtime_us")


def make_fake_machine(root: Path, cpus: int = 2, states: int = 3) -> Path:
    """A tree laid out as /sys and /proc are: cpuidle governors, per-CPU idle states, cpufreq, RT throttling."""
    cpu = root / "sys/devices/system/cpu"
    (cpu / "cpuidle").mkdir(parents=True)
    (cpu / "cpuidle/available_governors").write_text("ladder menu haltpoll\n")
    (cpu / "cpuidle/current_governor").write_text("menu\n")
    (cpu / "cpuidle/current_driver").write_text("fake\n")
    (cpu / "online").write_text(f"0-{cpus - 1}\n")
    for n in range(cpus):
        for s in range(states):
            state = cpu / f"cpu{n}/cpuidle/state{s}"
            state.mkdir(parents=True)
            (state / "disable").write_text("0\n")
            (state / "name").write_text(["POLL", "C1", "C6"][s % 3] + "\n")
        freq = cpu / f"cpu{n}/cpufreq"
        freq.mkdir(parents=True)
        (freq / "scaling_available_governors").write_text("performance powersave schedutil\n")
        (freq / "scaling_governor").write_text("schedutil\n")
        (freq / "cpuinfo_min_freq").write_text("800000\n")
        (freq / "cpuinfo_max_freq").write_text("3600000\n")
        (freq / "scaling_min_freq").write_text("800000\n")
        (freq / "scaling_max_freq").write_text("3600000\n")
    kernel = root / "proc/sys/kernel"
    kernel.mkdir(parents=True)
    (kernel / "sched_rt_runtime_us").write_text("950000\n")
    (kernel / "sched_rt_period_us").write_text("1000000\n")
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def fake_machine(tmp_path: Path) -> Path:
    return make_fake_machine(tmp_path / "machine")


@pytest.fixture
def real_knobs() -> Iterator[dict[str, str]]:
    """Root, the real knobs, one test at a time; yields their values before and checks them after."""
    if os.geteuid() != 0 or not REAL_GOVERNOR.exists():
        pytest.skip("needs root and cpuidle governors")
    with open("/tmp/jitterscope-sweep-real-knobs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = {"governor": REAL_GOVERNOR.read_text().strip(), "rt": REAL_RT_RUNTIME.read_text().strip()}
        try:
            yield before
        finally:
            after = {"governor": REAL_GOVERNOR.read_text().strip(), "rt": REAL_RT_RUNTIME.read_text().strip()}
            if after != before:  # never leave the machine changed, even when the code under test failed
                REAL_GOVERNOR.write_text(before["governor"])
                REAL_RT_RUNTIME.write_text(before["rt"])
            assert after == before, f"the machine was left changed: {after} != {before}"
