"""What changed between runs: every differing metadata value, by a readable dotted key.

Environment, settings (asked and granted), counters, threads (intervals, CPUs,
policy), the kind and tool, and a simulation's planted spec are flattened to
``key -> value`` and compared across runs.  Per-CPU cpufreq entries are folded
into one value per field (``environment.cpufreq.governor = "powersave"``) so
runs on different CPU sets do not flood the diff; idle states become one line.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dataset import Metadata

LONG_LIST = 8
"""Lists longer than this (planted event times) are summarised as their length."""
PER_RUN_KEYS: tuple[str, ...] = (
    # the clocks read at the start and the TSC rate measured against them: readings, new in every run
    "clock.realtime_ns", "clock.monotonic_ns", "clock.tsc_hz",
    # counts of what happened during the run (a duration-bound run's wake-ups differ by one or two)
    "threads.wakeups", "threads.overruns", "threads.counter_read_errors", "threads.drops_after_last",
    # a poll run's loop iterations and noise time: what was measured, not how
    "threads.iterations", "threads.noise_ns", "threads.interruptions", "threads.clock_read_ns",
    "threads.iteration_ns", "poll.rows_dropped",
    # process ids and what is named after them (the capture's tracefs instance is jitterscope-<pid>)
    "*pid", "*.tid", "environment.tracing.instance",
    # where an import was read from
    "source.file", "source.path",
)
"""Keys whose values differ in every run whatever the settings (readings, counts, pids, times): not causes."""


@dataclass(frozen=True)
class EnvironmentDifference:
    """One metadata key whose value differs between runs; ``values`` in run order (None = absent)."""

    key: str
    values: tuple[str | None, ...]


def flatten_metadata(metadata: Metadata) -> dict[str, str]:
    """Metadata as ``dotted.key -> text`` for diffing."""
    out: dict[str, str] = {"kind": metadata.kind, "tool.version": str(metadata.tool.get("version"))}
    threads = metadata.threads
    out["threads.count"] = str(len(threads))
    out["threads.cpus"] = ",".join(str(t.cpu) for t in threads)
    out["threads.interval_ns"] = ",".join(sorted({str(t.interval_ns) for t in threads}))
    for extra in sorted({k for t in threads for k in t.extra if k not in ("min_ns", "max_ns", "avg_ns")}):
        out[f"threads.{extra}"] = ",".join(sorted({str(t.extra.get(extra)) for t in threads}))
    env = dict(metadata.environment or {})
    cpufreq = env.pop("cpufreq", None)
    cpuidle = env.pop("cpuidle", None)
    _flatten("environment", env, out)
    if isinstance(cpufreq, Mapping):
        fields = sorted({f for entry in cpufreq.values() if isinstance(entry, Mapping) for f in entry})
        for name in fields:
            values = sorted({str(entry.get(name)) for entry in cpufreq.values() if isinstance(entry, Mapping)})
            out[f"environment.cpufreq.{name}"] = ",".join(values)
    if isinstance(cpuidle, Mapping):
        _flatten("environment.cpuidle.driver", cpuidle.get("driver"), out)
        _flatten("environment.cpuidle.governor", cpuidle.get("governor"), out)
        out["environment.cpuidle.states"] = "; ".join(_idle_state(s) for s in cpuidle.get("states") or ())
    for section in ("settings", "counters", "clock", "source"):
        value = getattr(metadata, section)
        if value:
            _flatten(section, value, out)
    out.pop("settings.asked.output", None)  # the output path always differs and says nothing
    if metadata.ground_truth:
        _flatten("ground_truth.spec", metadata.ground_truth.get("spec", {}), out)
    return out


def per_run_key(key: str) -> bool:
    """Whether ``key`` is a reading that differs in every run (:data:`PER_RUN_KEYS`)."""
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in PER_RUN_KEYS)


def diff_environments(metadatas: Sequence[Metadata], *, readings: bool = False) -> tuple[EnvironmentDifference, ...]:
    """Every key whose value is not the same in all runs, in key order.

    Keys that differ in every run (:func:`per_run_key`: clock readings, counts, pids, times) are left out
    unless ``readings``.
    """
    flat = [flatten_metadata(m) for m in metadatas]
    keys = sorted(set().union(*flat))
    out = []
    for key in keys:
        values = tuple(f.get(key) for f in flat)
        if len(set(values)) > 1 and (readings or not per_run_key(key)):
            out.append(EnvironmentDifference(key, values))
    return tuple(out)


def readings_note(metadatas: Sequence[Metadata]) -> tuple[str, ...]:
    """A note naming the keys :func:`diff_environments` left out as readings (empty when none differed)."""
    kept = {d.key for d in diff_environments(metadatas)}
    left = [d.key for d in diff_environments(metadatas, readings=True) if d.key not in kept]
    if not left:
        return ()
    shown = ", ".join(left[:5]) + (" …" if len(left) > 5 else "")
    return (f"what differs leaves out {len(left)} key{'s' if len(left) > 1 else ''} that differ in every run "
            f"whatever the settings (clock readings, counts, pids): {shown}",)


def diff_groups(baseline: Sequence[Metadata],
                candidate: Sequence[Metadata]) -> tuple[tuple[EnvironmentDifference, ...], tuple[str, ...]]:
    """What differs between two groups of runs: keys the same within each side and different between them.

    Returns the differences (values: side A's, side B's) and the keys left out because they differ between
    runs of one side or are readings (:func:`per_run_key`): what varies from run to run explains nothing.
    """
    flat_a = [flatten_metadata(m) for m in baseline]
    flat_b = [flatten_metadata(m) for m in candidate]
    keys = sorted(set().union(*flat_a, *flat_b))
    out, varying = [], []
    for key in keys:
        side_a = {f.get(key) for f in flat_a}
        side_b = {f.get(key) for f in flat_b}
        if len(side_a) > 1 or len(side_b) > 1 or per_run_key(key):
            if len(side_a | side_b) > 1:
                varying.append(key)
            continue
        if side_a != side_b:
            out.append(EnvironmentDifference(key, (side_a.pop(), side_b.pop())))
    return tuple(out), tuple(varying)


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}", value[key], out)
    elif isinstance(value, list | tuple) and not value:
        out[prefix] = "none"  # so an empty list differs from a list of entries by name, not as "absent"
    elif isinstance(value, list | tuple) and all(isinstance(v, Mapping) for v in value):
        out[prefix] = f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
        for i, item in enumerate(value):
            _flatten(f"{prefix}[{i}]", item, out)
    elif isinstance(value, list | tuple):
        out[prefix] = f"<{len(value)} values>" if len(value) > LONG_LIST else ",".join(str(v) for v in value)
    else:
        out[prefix] = "null" if value is None else str(value)


def _idle_state(state: Any) -> str:
    if not isinstance(state, Mapping):
        return str(state)
    text = f"{state.get('name')} ({state.get('exit_latency_us')} µs"
    return text + (", disabled)" if state.get("disabled") else ")")
