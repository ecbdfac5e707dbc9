"""A sweep's plan (TOML, read with the standard library): what every run captures, the factors and their levels,
the design (replicates, order, seed, warm-up), where loads run; checked against the machine before anything runs.

Every problem is found before the first change: an unknown factor, a level the machine cannot take, a load
whose program is not installed, a duration of zero.  :func:`check_plan` collects them all, one line each.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
import shlex
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import JitterscopeError
from .knobs import KNOBS, KnobError, Machine, Setting, knob_settings, parse_cpuset

LOAD = "load"
DMA = "cpu_dma_latency"
CAPTURE_PREFIX = "capture."
ORDERS = ("random", "sequential")
RESERVED_CAPTURE = {"output", "force", "help", "version", "quiet", "o", "q", "h"}
"""Capture options a plan may not set: the sweep chooses the output and the console."""
CAPTURE_OPTIONS = (
    "interval", "frequency", "affinity", "priority", "policy", "loops", "latency", "no-latency", "timer",
    "counters", "msr-dir", "flush-interval", "ring", "sync", "writer-cpu", "group-seconds", "group-rows",
    "part-seconds", "trace", "trace-buffer", "break", "trace-read-interval", "trace-flush", "deepest-idle-state",
)
"""The capture binary's long options a plan may set (``[capture]`` or a ``capture.NAME`` factor); a test keeps
them within ``jitterscope capture``'s mirror of ``capture/config.c``."""
_ALIASES = {"interval_us": "interval", "frequency_hz": "frequency", "latency_us": "latency"}
_CHOICES = {"policy": ("fifo", "rr", "other"), "timer": ("abs", "timerfd", "posix"),
            "counters": ("auto", "msr", "perf", "none"), "sync": ("data", "none")}
_INT_RANGES = {"interval": (1, 10**9), "priority": (1, 99), "latency": (0, 2**31 - 1), "loops": (1, 2**62),
               "writer-cpu": (0, 8191), "trace-buffer": (1, 2**31 - 1), "break": (1, 2**31 - 1),
               "deepest-idle-state": (0, 63)}


class PlanError(JitterscopeError):
    """A plan that cannot run; ``problems`` has one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


@dataclass(frozen=True)
class Condition:
    """One combination of factor levels."""

    index: int
    levels: tuple[tuple[str, Any], ...]
    """(factor, level) in the plan's factor order."""

    @property
    def label(self) -> str:
        return ", ".join(f"{name}={_level_text(level)}" for name, level in self.levels)

    def level(self, factor: str) -> Any:
        return dict(self.levels)[factor]


@dataclass(frozen=True)
class PlannedRun:
    """One run of the design: a condition in a block (replicate), at a position of the order."""

    id: str
    position: int
    block: int
    condition: Condition


@dataclass(frozen=True)
class Plan:
    capture: Mapping[str, Any]
    """Capture options by long name (``duration`` excluded), as in the plan."""
    duration_s: float
    factors: Mapping[str, tuple[Any, ...]]
    replicates: int = 1
    order: str = "random"
    seed: int = 0
    warmup_s: float = 0.0
    load_cpus: tuple[int, ...] | None = None
    machine_root: str = "/"
    text: str = ""
    """The plan file as read (kept beside the runs)."""
    source: str = ""
    problems: tuple[str, ...] = ()
    """What is wrong with the plan's shape (one line each); :func:`check_plan` adds the machine's."""

    @property
    def conditions(self) -> list[Condition]:
        names = list(self.factors)
        combos = itertools.product(*(self.factors[name] for name in names))
        return [Condition(i, tuple(zip(names, combo, strict=True))) for i, combo in enumerate(combos)]

    def design(self) -> list[PlannedRun]:
        """The runs in order: ``replicates`` blocks of every condition, shuffled within each block (seeded) when
        the order is random: randomised complete blocks, so drift over the sweep hits every condition alike."""
        rng = random.Random(self.seed)
        runs: list[PlannedRun] = []
        for block in range(self.replicates):
            conditions = list(self.conditions)
            if self.order == "random":
                rng.shuffle(conditions)
            for condition in conditions:
                runs.append(PlannedRun(f"run-{len(runs) + 1:03d}", len(runs), block, condition))
        return runs

    def run_seconds(self) -> float:
        return self.warmup_s + self.duration_s

    def measured_cpus(self, condition: Condition, machine: Machine) -> list[int]:
        affinity = dict(condition.levels).get(f"{CAPTURE_PREFIX}affinity", dict(condition.levels).get(
            "affinity", self.capture.get("affinity")))
        return parse_cpuset(str(affinity)) if affinity is not None else machine.online_cpus()

    def load_cpus_for(self, condition: Condition, machine: Machine) -> list[int]:
        """Where a load runs: the plan's ``[load] cpus``, else the CPUs not measured, else all."""
        if self.load_cpus is not None:
            return list(self.load_cpus)
        online = machine.online_cpus()
        measured = set(self.measured_cpus(condition, machine))
        return [cpu for cpu in online if cpu not in measured] or online

    def settings(self, condition: Condition, machine: Machine) -> list[Setting]:
        """The machine settings ``condition`` writes (knob factors only)."""
        cpus = self.measured_cpus(condition, machine)
        out: list[Setting] = []
        for name, level in condition.levels:
            if name in KNOBS:
                out += knob_settings(machine, name, level, cpus)
        return out

    def capture_options(self, condition: Condition) -> list[str]:
        """The capture binary's options for ``condition`` (the sweep adds output, duration and -q)."""
        options = dict(self.capture)
        for name, level in condition.levels:
            if name == DMA:
                options.pop("latency", None)
                options.pop("no-latency", None)
                if level == "none":
                    options["no-latency"] = True
                else:
                    options["latency"] = level
            elif _capture_name(name):
                options[_capture_name(name)] = level  # type: ignore[index]
        argv: list[str] = []
        for name, value in options.items():
            if value is True:
                argv.append(f"--{name}")
            elif value is not False:
                argv.append(f"--{name}={value}")
        return argv

    def load_command(self, condition: Condition) -> list[str] | None:
        level = dict(condition.levels).get(LOAD, "none")
        return None if level == "none" else shlex.split(str(level))


def _level_text(level: Any) -> str:
    return level if isinstance(level, str) else str(level).lower() if isinstance(level, bool) else repr(level)


def _capture_name(factor: str) -> str | None:
    name = factor.removeprefix(CAPTURE_PREFIX)
    name = _ALIASES.get(name, name)
    return name if name in CAPTURE_OPTIONS and (factor.startswith(CAPTURE_PREFIX) or factor == name
                                                or factor in _ALIASES) else None


_DURATION = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|m|h|d)?\s*")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0,
          "d": 86400.0}


def parse_seconds(value: Any, what: str) -> float:
    """``10``, ``"10s"``, ``"500ms"``, ``"2m"`` as seconds; ValueError (one line naming ``what``) otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.fullmatch(str(value))
        if not match:
            raise ValueError(f"{what}: {value!r} is not a duration (e.g. 10s, 500ms, 2m)")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{what}: {value!r} is not a duration (e.g. 10s, 500ms, 2m)")
    return seconds


def read_plan(path: str | os.PathLike[str], *, machine_root: str | None = None) -> Plan:
    """Read a plan file; its shape only, problems kept in :attr:`Plan.problems` (the machine is checked, and
    every problem reported, by :func:`check_plan`).

    Raises
    ------
    PlanError
        The file cannot be read or is not TOML.
    """
    source = Path(path)
    try:
        text = source.read_text()
    except OSError as exc:
        raise PlanError([f"cannot read the plan {source}: {exc.strerror}"]) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError([f"{source}: not a TOML file ({exc})"]) from None
    problems: list[str] = []
    unknown_tables = sorted(set(doc) - {"capture", "factors", "design", "load", "machine"})
    problems += [f"{source}: unknown table [{name}] (known: capture, factors, design, load, machine)"
                 for name in unknown_tables]
    capture = dict(_table(doc, "capture", problems))
    duration_s = 0.0
    if "duration" not in capture:
        problems.append(f"{source}: [capture] needs a duration (e.g. duration = \"10s\")")
    else:
        try:
            duration_s = parse_seconds(capture.pop("duration"), "[capture] duration")
            if duration_s <= 0:
                problems.append("[capture] duration: must be longer than 0 (e.g. \"10s\")")
        except ValueError as exc:
            problems.append(str(exc))
    options: dict[str, Any] = {}
    for key, value in capture.items():
        name = _ALIASES.get(key, key)
        if name in RESERVED_CAPTURE:
            problems.append(f"[capture] {key}: the sweep sets this itself; remove it")
        elif name not in CAPTURE_OPTIONS:
            problems.append(f"[capture] {key}: not a jitterscope-capture option (known: {', '.join(CAPTURE_OPTIONS)})")
        else:
            problem = _check_capture_value(f"[capture] {key}", name, value)
            if problem:
                problems.append(problem)
            options[name] = value
    factors: dict[str, tuple[Any, ...]] = {}
    for name, levels in _flatten(_table(doc, "factors", problems)).items():
        if not isinstance(levels, list) or not levels:
            problems.append(f"[factors] {name}: give a non-empty list of levels, e.g. {name} = [a, b]")
            continue
        if len({repr(level) for level in levels}) != len(levels):
            problems.append(f"[factors] {name}: a level is listed twice")
        factors[name] = tuple(levels)
    if not factors:
        problems.append(f"{source}: [factors] is empty; give at least one factor with its levels")
    design = _table(doc, "design", problems)
    replicates = design.get("replicates", 1)
    if not isinstance(replicates, int) or isinstance(replicates, bool) or not 1 <= replicates <= 10_000:
        problems.append(f"[design] replicates: {replicates!r} is not a whole number from 1 to 10000")
        replicates = 1
    order = design.get("order", "random")
    if order not in ORDERS:
        problems.append(f"[design] order: {order!r} is not random or sequential")
        order = "random"
    seed = design.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        problems.append(f"[design] seed: {seed!r} is not a whole number")
        seed = 0
    warmup_s = 0.0
    try:
        warmup_s = parse_seconds(design.get("warmup", 0), "[design] warmup")
    except ValueError as exc:
        problems.append(str(exc))
    unknown = sorted(set(design) - {"replicates", "order", "seed", "warmup"})
    problems += [f"[design] {key}: unknown (known: replicates, order, seed, warmup)" for key in unknown]
    load = _table(doc, "load", problems)
    load_cpus = None
    if "cpus" in load:
        try:
            load_cpus = tuple(parse_cpuset(str(load["cpus"])))
        except ValueError:
            problems.append(f"[load] cpus: {load['cpus']!r} is not a CPU list (e.g. \"1\" or \"2-3\")")
    root = machine_root or str(_table(doc, "machine", problems).get("root", "/"))
    return Plan(capture=options, duration_s=duration_s, factors=factors, replicates=replicates, order=order,
                seed=seed, warmup_s=warmup_s, load_cpus=load_cpus, machine_root=root, text=text, source=str(source),
                problems=tuple(problems))


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML reads an unquoted ``cpuidle.governor = [...]`` as a nested table: the same factor name either way."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _table(doc: Mapping[str, Any], name: str, problems: list[str]) -> Mapping[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, dict):
        problems.append(f"[{name}] must be a table")
        return {}
    return value


def _check_capture_value(what: str, name: str, value: Any) -> str | None:
    if name in _CHOICES and value not in _CHOICES[name]:
        return f"{what}: {value!r} is not one of {', '.join(_CHOICES[name])}"
    if name in _INT_RANGES:
        low, high = _INT_RANGES[name]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            return f"{what}: {value!r} is not a whole number from {low} to {high}"
    if name == "frequency" and (not isinstance(value, int | float) or isinstance(value, bool) or value <= 0):
        return f"{what}: {value!r} is not a frequency in Hz above 0"
    if name == "affinity":
        try:
            parse_cpuset(str(value))
        except ValueError:
            return f"{what}: {value!r} is not a CPU list (e.g. \"1\" or \"0-3,5\")"
    if name == "no-latency" and not isinstance(value, bool):
        return f"{what}: {value!r} is not true or false"
    return None


@dataclass(frozen=True)
class PlanCheck:
    """What a plan would do on this machine: the changes per condition, the problems (one line each)."""

    plan: Plan
    changes: tuple[tuple[str, str, str, str], ...]
    """(knob, path, current value, new value), each distinct change once."""
    problems: tuple[str, ...]
    loads: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_plan(plan: Plan, machine: Machine | None = None) -> PlanCheck:
    """Check every factor level against ``machine`` (read only: nothing is changed) and list the changes."""
    machine = machine or Machine(plan.machine_root)
    problems: list[str] = list(plan.problems)
    online = set(machine.online_cpus())
    for name, levels in plan.factors.items():
        if name in KNOBS or name == LOAD:
            continue
        if name == DMA:
            problems += [f"[factors] {DMA}: {level!r} is not a latency in µs (0, 1, ...) or \"none\""
                         for level in levels if level != "none" and (not isinstance(level, int)
                                                                      or isinstance(level, bool) or level < 0)]
            continue
        capture = _capture_name(name)
        if capture is None:
            problems.append(f"[factors] {name}: unknown factor (known: {', '.join([*KNOBS, LOAD, DMA])}, "
                            f"or a capture option such as capture.timer)")
            continue
        problems += [p for p in (_check_capture_value(f"[factors] {name}", capture, level) for level in levels) if p]
    for where, cpus_text in [("[capture] affinity", plan.capture.get("affinity"))] + [
            (f"[factors] {name}", level) for name, levels in plan.factors.items() if _capture_name(name) == "affinity"
            for level in levels]:
        if cpus_text is None:
            continue
        try:
            missing = sorted(set(parse_cpuset(str(cpus_text))) - online)
        except ValueError:
            continue
        if missing:
            problems.append(f"{where}: CPU {missing[0]} is not online here (online: {_cpus_text(sorted(online))})")
    if plan.load_cpus is not None and set(plan.load_cpus) - online:
        problems.append(f"[load] cpus: CPU {sorted(set(plan.load_cpus) - online)[0]} is not online here")
    loads = []
    for level in plan.factors.get(LOAD, ()):
        if level == "none":
            continue
        try:
            argv = shlex.split(str(level))
        except ValueError as exc:
            problems.append(f"[factors] load: {level!r} is not a command line ({exc})")
            continue
        if not argv or shutil.which(argv[0]) is None:
            problems.append(f"[factors] load: program {argv[0] if argv else level!r} not found on PATH "
                            "(install it, e.g. apt-get install stress-ng rt-tests)")
            continue
        loads.append(str(level))
    changes: dict[str, tuple[str, str, str, str]] = {}
    seen: set[str] = set()
    for condition in plan.conditions:
        for name, level in condition.levels:
            if name not in KNOBS:
                continue
            try:
                settings = knob_settings(machine, name, level, plan.measured_cpus(condition, machine))
            except KnobError as exc:
                if str(exc) not in seen:
                    seen.add(str(exc))
                    problems.append(f"[factors] {exc}")
                continue
            except ValueError:
                continue  # a bad affinity, already said
            for setting in settings:
                try:
                    current = machine.read(setting.path)
                except OSError as exc:
                    problems.append(f"[factors] {name}: cannot read {setting.path}: {exc.strerror}")
                    continue
                if not os.access(setting.path, os.W_OK):
                    problems.append(f"[factors] {name}: {setting.path} is not writable here (run as root)")
                changes.setdefault(f"{setting.path}={setting.value}",
                                   (name, setting.path, current, setting.value))
    return PlanCheck(plan=plan, changes=tuple(changes.values()), problems=tuple(dict.fromkeys(problems)),
                     loads=tuple(loads))


def _cpus_text(cpus: Sequence[int]) -> str:
    return ",".join(str(cpu) for cpu in cpus)


def check_text(check: PlanCheck, *, problems: bool = True) -> str:
    """``sweep check``'s answer: the design, then each change from what to what, the loads, and (unless
    ``problems`` is false: the CLI prints them on stderr) the problems."""
    plan = check.plan
    runs = len(plan.conditions) * plan.replicates
    lines = [f"plan {plan.source}: {len(plan.conditions)} conditions x {plan.replicates} replicates = {runs} runs "
             f"({plan.order} order, seed {plan.seed}), each {plan.warmup_s:g} s warm-up + {plan.duration_s:g} s; "
             f"about {runs * (plan.run_seconds() + 2):.0f} s in all"]
    for name, levels in plan.factors.items():
        lines.append(f"  factor {name}: {', '.join(_level_text(level) for level in levels)}")
    if check.changes:
        lines.append("would change (journaled, put back after every run and at exit):")
        for knob, path, current, value in check.changes:
            lines.append(f"  {knob}: {path}: {current} -> {value}" + ("  (already)" if current == value else ""))
    for load in check.loads:
        lines.append(f"would run the load: {load}")
    if check.problems and problems:
        lines.append("cannot run:")
        lines += [f"  {problem}" for problem in check.problems]
    return "\n".join(lines)
