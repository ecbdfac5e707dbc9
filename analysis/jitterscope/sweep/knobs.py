"""The machine's knobs a sweep may turn: where each lives, which levels the machine can take, what files a level writes.

A knob level becomes a list of :class:`Setting` (one file, one value); only files are journaled and restored,
so a knob that spans CPUs or idle states (``cpuidle.deepest_state``) is several settings, each put back on its
own.  Every path is taken under a root (``/`` on a real machine; a fake sysfs/procfs tree in tests, because
this VM has neither cpufreq nor per-CPU idle states).  ``cpu_dma_latency`` is not here: it is a capture option
(``--latency``/``--no-latency``) held by the capture binary while it runs and released by the kernel when the
binary exits, however it exits, so there is nothing to journal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import JitterscopeError

CPU = "sys/devices/system/cpu"
RT_RUNTIME = "proc/sys/kernel/sched_rt_runtime_us"
RT_PERIOD = "proc/sys/kernel/sched_rt_period_us"


class KnobError(JitterscopeError):
    """A knob level the machine cannot take, or a knob that does not exist here; the message is one line."""


@dataclass(frozen=True)
class Setting:
    """One file and the value a level writes into it."""

    knob: str
    path: str
    """Absolute path (under the machine's root)."""
    value: str


class Machine:
    """The files of one machine under ``root`` (``/`` for the real one)."""

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        self.root = Path(root)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def read(self, path: str | os.PathLike[str]) -> str:
        """A knob file's value, stripped; the active choice of a ``[a] b`` list file (cpufreq style) as ``b``."""
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()

    def write(self, path: str | os.PathLike[str], value: str) -> None:
        """Write ``value`` as one write(2) (sysfs takes a value per write); an error names the file."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)  # O_TRUNC: sysfs ignores it
        except OSError as exc:
            raise KnobError(f"cannot open {path} for writing: {exc.strerror}") from None
        try:
            os.write(fd, value.encode() + b"\n")
        except OSError as exc:
            raise KnobError(f"cannot write {value!r} to {path}: {exc.strerror}") from None
        finally:
            os.close(fd)

    def online_cpus(self) -> list[int]:
        try:
            return parse_cpuset(self.read(self.path(f"{CPU}/online")))
        except (OSError, ValueError):
            return list(range(os.cpu_count() or 1))

    def _read_or(self, relative: str, missing: str) -> str:
        try:
            return self.read(self.path(relative))
        except OSError:
            raise KnobError(missing) from None


def parse_cpuset(text: str) -> list[int]:
    """``0-3,5`` as ``[0, 1, 2, 3, 5]``; ValueError on anything else."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not match:
            raise ValueError(f"not a CPU list: {text!r}")
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if high < low:
            raise ValueError(f"not a CPU list: {text!r}")
        cpus.update(range(low, high + 1))
    return sorted(cpus)


# ---- the knobs -----------------------------------------------------------------------------------------------

def _cpuidle_governor(machine: Machine, level: object, cpus: Sequence[int]) -> list[Setting]:
    base = f"{CPU}/cpuidle"
    available = machine._read_or(f"{base}/available_governors",
                                 f"cpuidle.governor: no cpuidle governors here ({machine.path(base)} is missing)")
    names = available.split()
    if not isinstance(level, str) or level not in names:
        raise KnobError(f"cpuidle.governor: {level!r} is not one of this machine's governors ({', '.join(names)})")
    return [Setting("cpuidle.governor", str(machine.path(f"{base}/current_governor")), level)]


def _idle_states(machine: Machine, cpu: int) -> list[Path]:
    directory = machine.path(f"{CPU}/cpu{cpu}/cpuidle")
    try:
        states = [p for p in directory.iterdir() if re.fullmatch(r"state\d+", p.name)]
    except OSError:
        states = []
    return sorted(states, key=lambda p: int(p.name[5:]))


def _cpuidle_deepest_state(machine: Machine, level: object, cpus: Sequence[int]) -> list[Setting]:
    if not isinstance(level, int) or isinstance(level, bool) or level < 0:
        raise KnobError(f"cpuidle.deepest_state: {level!r} is not an idle state number (0, 1, ...)")
    settings = []
    for cpu in cpus:
        states = _idle_states(machine, cpu)
        if not states:
            driver = machine.path(f"{CPU}/cpuidle/current_driver")
            try:
                name = machine.read(driver)
            except OSError:
                name = "unknown"
            raise KnobError(f"cpuidle.deepest_state: CPU {cpu} has no idle states "
                            f"({machine.path(f'{CPU}/cpu{cpu}/cpuidle')} is missing; cpuidle driver {name!r})")
        if level >= len(states):
            raise KnobError(f"cpuidle.deepest_state: CPU {cpu} has states 0-{len(states) - 1}, not {level}")
        # the level defines the state completely: shallower states enabled, deeper ones disabled
        settings += [Setting("cpuidle.deepest_state", str(state / "disable"), "1" if int(state.name[5:]) > level
                             else "0") for state in states]
    return settings


def _cpufreq_dir(machine: Machine, knob: str, cpu: int) -> str:
    base = f"{CPU}/cpu{cpu}/cpufreq"
    if not machine.path(base).is_dir():
        raise KnobError(f"{knob}: CPU {cpu} has no cpufreq ({machine.path(base)} is missing)")
    return base


def _cpufreq_governor(machine: Machine, level: object, cpus: Sequence[int]) -> list[Setting]:
    settings = []
    for cpu in cpus:
        base = _cpufreq_dir(machine, "cpufreq.governor", cpu)
        names = machine._read_or(f"{base}/scaling_available_governors",
                                 f"cpufreq.governor: CPU {cpu} lists no governors").split()
        if not isinstance(level, str) or level not in names:
            raise KnobError(f"cpufreq.governor: {level!r} is not one of CPU {cpu}'s governors ({', '.join(names)})")
        settings.append(Setting("cpufreq.governor", str(machine.path(f"{base}/scaling_governor")), level))
    return settings


def _cpufreq_khz(which: str) -> Callable[[Machine, object, Sequence[int]], list[Setting]]:
    knob = f"cpufreq.{which}_khz"

    def settings(machine: Machine, level: object, cpus: Sequence[int]) -> list[Setting]:
        if not isinstance(level, int) or isinstance(level, bool) or level <= 0:
            raise KnobError(f"{knob}: {level!r} is not a frequency in kHz")
        out = []
        for cpu in cpus:
            base = _cpufreq_dir(machine, knob, cpu)
            low = int(machine._read_or(f"{base}/cpuinfo_min_freq", f"{knob}: CPU {cpu} has no cpuinfo_min_freq"))
            high = int(machine._read_or(f"{base}/cpuinfo_max_freq", f"{knob}: CPU {cpu} has no cpuinfo_max_freq"))
            if not low <= level <= high:
                raise KnobError(f"{knob}: {level} kHz is outside CPU {cpu}'s range {low}-{high} kHz")
            out.append(Setting(knob, str(machine.path(f"{base}/scaling_{which}_freq")), str(level)))
        return out

    return settings


def _sched_rt_runtime(machine: Machine, level: object, cpus: Sequence[int]) -> list[Setting]:
    period = int(machine._read_or(RT_PERIOD, f"sched_rt_runtime_us: {machine.path(RT_PERIOD)} is missing"))
    if not isinstance(level, int) or isinstance(level, bool) or not (level == -1 or 0 <= level <= period):
        raise KnobError(f"sched_rt_runtime_us: {level!r} is not -1 (no throttling) or 0-{period} "
                        "(sched_rt_period_us)")
    return [Setting("sched_rt_runtime_us", str(machine.path(RT_RUNTIME)), str(level))]


KNOBS: dict[str, Callable[[Machine, object, Sequence[int]], list[Setting]]] = {
    "cpuidle.governor": _cpuidle_governor,
    "cpuidle.deepest_state": _cpuidle_deepest_state,
    "cpufreq.governor": _cpufreq_governor,
    "cpufreq.min_khz": _cpufreq_khz("min"),
    "cpufreq.max_khz": _cpufreq_khz("max"),
    "sched_rt_runtime_us": _sched_rt_runtime,
}
"""Machine knobs by factor name: each turns a level into the settings it writes (or refuses it, one line)."""


def knob_settings(machine: Machine, knob: str, level: object, cpus: Sequence[int]) -> list[Setting]:
    """The settings ``knob`` at ``level`` writes on ``cpus`` of ``machine``.

    Raises
    ------
    KnobError
        An unknown knob, a level the machine cannot take, or a knob this machine does not have.
    """
    if knob not in KNOBS:
        raise KnobError(f"unknown knob {knob!r} (known: {', '.join(KNOBS)})")
    return KNOBS[knob](machine, level, cpus)
