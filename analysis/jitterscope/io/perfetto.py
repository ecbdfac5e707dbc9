"""``export --event N --format perfetto``: one latency event's window as Trace Event Format JSON.

The file opens in ui.perfetto.dev and chrome://tracing (the Trace Event Format: a JSON object whose
``traceEvents`` list holds events with ``name``, ``ph`` (phase), ``ts`` (µs), ``pid``, ``tid``; ``X`` complete
events with ``dur`` µs, ``i`` instant events with scope ``s``, ``C`` counter events whose ``args`` are the
values, ``M`` metadata events naming processes and threads).

What is written, for the window from ``margin`` before the event's first late wake-up's target to ``margin``
after its last wake-up, on **every measured CPU**:

* one track per CPU: ``pid`` 1 (the process "jitterscope …"), ``tid`` = CPU + 1 (tid 0 is the idle task to
  a trace viewer), named "CPU n" and sorted by CPU;
* slices (``X``): the task that held the CPU (from ``sched_switch``; the idle task as ``<idle>``), and nested
  in it the hard IRQ handlers, interrupt vectors, softirqs and NMIs, clipped to the window; the context
  at the window's start comes from the events before it (the last ``sched_switch``, the interrupts still
  open), so a slice that began before the window starts at the window's start;
* instants (``i``, thread scope): each measured wake-up at its ``actual_ns`` with its latency, programmed
  time and seq in ``args`` (late ones also their interrupt/thread split, :mod:`jitterscope.derive.split`);
  ``sched_wakeup``, ``hrtimer_expire_entry``, markers and lost-event records as they were traced;
* counters (``C``): each CPU's wake-up latency (µs) and, where the dataset records them, the SMI count since
  the window's start and APERF/MPERF between wake-ups (the share of nominal frequency while running).

``ts`` is CLOCK_MONOTONIC in µs with ns decimals, so times can be matched to the dataset's ``expected_ns``.
Events of a track are written in time order, parents before the slices they contain.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..dataset import (
    TRACE_EVENTS,
    Dataset,
    check_output,
    iter_thread_batches,
    open_dataset,
    open_trace,
    write_atomically,
)
from ..derive import HRTIMER_WAKEUP, TIMER_VECTOR, WakeMarks
from ..errors import AnalysisError, DatasetError

PERFETTO_PID = 1
DEFAULT_MARGIN_NS = 1_000_000
_ENTRY = {TRACE_EVENTS["irq_entry"]: "irq", TRACE_EVENTS["vector_entry"]: "vector",
          TRACE_EVENTS["softirq_entry"]: "softirq"}
_EXIT = {TRACE_EVENTS["irq_exit"]: "irq", TRACE_EVENTS["vector_exit"]: "vector",
         TRACE_EVENTS["softirq_exit"]: "softirq"}
_INSTANT = {TRACE_EVENTS["wakeup"]: "sched_wakeup", TRACE_EVENTS["waking"]: "sched_waking",
            TRACE_EVENTS["hrtimer"]: "hrtimer_expire_entry", TRACE_EVENTS["marker"]: "marker",
            TRACE_EVENTS["softirq_raise"]: "softirq_raise", TRACE_EVENTS["other"]: "event",
            TRACE_EVENTS["lost"]: "lost events"}
_COLUMNS = ("ts_ns", "cpu", "event", "pid", "comm", "prio", "number", "name", "other_pid", "other_prio",
            "other_comm", "value")


def track_of(cpu: int) -> int:
    """The ``tid`` of a CPU's track (CPU + 1: a viewer takes tid 0 for the idle task)."""
    return cpu + 1


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


@dataclass
class _Cpu:
    """One CPU's context as the events are read: the task, the interrupts open, and what is kept."""

    cpu: int
    start: int
    end: int
    task: tuple[str, int, int, int] | None = None  # label, pid, prio, since
    stack: list[tuple[str, str, int]] = field(default_factory=list)  # kind, label, since
    last: int | None = None
    beyond: bool = False  # the CPU's trace goes on after the window: what is open lasts to its end
    slices: list[tuple[int, int, int, str, str, dict[str, Any]]] = field(default_factory=list)
    instants: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    marks: WakeMarks = field(default_factory=WakeMarks)

    def slice(self, since: int, until: int, depth: int, name: str, cat: str, args: dict[str, Any]) -> None:
        lo, hi = max(since, self.start), min(until, self.end)
        if hi >= lo and until >= self.start and since <= self.end:
            self.slices.append((lo, hi, depth, name, cat, args))

    def close_stack(self, at: int, keep: int = 0) -> None:
        while len(self.stack) > keep:
            kind, label, since = self.stack.pop()
            self.slice(since, at, len(self.stack) + 1, label, kind, {})

    def close_task(self, at: int) -> None:
        if self.task is not None:
            label, pid, prio, since = self.task
            self.slice(since, at, 0, label, "idle" if pid == 0 else "task", {"pid": pid, "prio": prio})
            self.task = None


def _context_label(kind: str, number: int, name: str) -> str:
    if kind == "irq":
        return f"irq {number} {name}".rstrip()
    if kind == "vector":
        return f"{name} ({number})" if name else f"vector {number}"
    return f"softirq {name}" if name else f"softirq {number}"


def _task_label(pid: int, comm: str) -> str:
    return "<idle>" if pid == 0 else f"{comm} [{pid}]"


def _read_trace(trace: Any, cpus: Sequence[int], start: int, end: int) -> dict[int, _Cpu]:
    """Every CPU's slices and instants in ``[start, end]``, the context at ``start`` rebuilt from before it."""
    state = {cpu: _Cpu(cpu, start, end) for cpu in cpus}
    string = trace.string
    for batch in trace.iter_batches(_COLUMNS):
        ts_all = batch["ts_ns"]
        for cpu, cs in state.items():
            mine = batch["cpu"] == cpu
            cs.beyond = cs.beyond or bool((mine & (ts_all > end)).any())
            on = np.flatnonzero(mine & (ts_all <= end))
            if not on.size:
                continue
            before = on[ts_all[on] < start]
            switches = before[batch["event"][before] == TRACE_EVENTS["switch"]]
            if switches.size:  # the context before the last switch ahead of the window is not needed
                on = on[on >= switches[-1]]
                cs.stack, cs.task = [], None
            col = {name: batch[name][on].tolist() for name in _COLUMNS}
            for i, t in enumerate(col["ts_ns"]):
                _step(cs, {k: v[i] for k, v in col.items()}, t, string)
    for cs in state.values():
        at = end if cs.beyond or cs.last is None else min(end, cs.last)
        cs.close_stack(at)
        cs.close_task(at)
    return state


def _step(cs: _Cpu, row: Mapping[str, int], t: int, string: Any) -> None:
    code = row["event"]
    previous = cs.last
    cs.last = t
    if code in _ENTRY:
        kind = _ENTRY[code]
        name = string(row["name"])
        cs.stack.append((kind, _context_label(kind, row["number"], name), t))
    elif code in _EXIT:
        kind = _EXIT[code]
        depth = next((k for k in range(len(cs.stack) - 1, -1, -1) if cs.stack[k][0] == kind), None)
        if depth is not None:
            cs.close_stack(t, keep=depth)
    elif code == TRACE_EVENTS["nmi"]:
        # recorded at its end with its duration; nothing else is traced on the CPU during an NMI, so it began
        # after the CPU's previous event (this keeps it nested in the context that was current)
        since = max(t - row["value"], previous if previous is not None else t - row["value"])
        if cs.stack:
            since = max(since, cs.stack[-1][2])
        cs.slice(since, t, len(cs.stack) + 1, f"NMI {string(row['name'])}".rstrip(), "nmi",
                 {"duration_ns": row["value"]})
    elif code == TRACE_EVENTS["switch"]:
        cs.close_stack(t)  # no switch happens inside an interrupt: anything open was lost
        cs.close_task(t)
        pid, comm = row["other_pid"], string(row["other_comm"])
        cs.task = (_task_label(pid, comm), pid, row["other_prio"], t)
    if code == TRACE_EVENTS["wakeup"]:
        timer = next((since for kind, label, since in reversed(cs.stack)
                      if kind == "vector" and label.startswith(f"{TIMER_VECTOR} (")), -1)
        cs.marks.wakeup(t, row["other_pid"], string(row["other_comm"]), timer)
    elif code == TRACE_EVENTS["hrtimer"] and string(row["name"]) == HRTIMER_WAKEUP:
        timer = next((since for kind, label, since in reversed(cs.stack)
                      if kind == "vector" and label.startswith(f"{TIMER_VECTOR} (")), -1)
        cs.marks.hrtimer(t, timer)
    if code in _INSTANT and cs.start <= t <= cs.end:
        cs.instants.append((t, *_instant(code, row, string)))
    if code == TRACE_EVENTS["lost"]:
        cs.close_stack(t)
        cs.close_task(t)  # what ran after the loss is unknown until the next switch


def _instant(code: int, row: Mapping[str, int], string: Any) -> tuple[str, str, dict[str, Any]]:
    if code in (TRACE_EVENTS["wakeup"], TRACE_EVENTS["waking"]):
        comm, pid = string(row["other_comm"]), row["other_pid"]
        return (f"{_INSTANT[code]} {comm} [{pid}]", "sched",
                {"pid": pid, "comm": comm, "prio": row["other_prio"], "target_cpu": row["number"]})
    if code == TRACE_EVENTS["lost"]:
        return f"LOST {row['value']} events", "lost", {"lost": row["value"]}
    name = string(row["name"]) if row["name"] >= 0 else ""
    return f"{_INSTANT[code]} {name}".rstrip(), _INSTANT[code], {}


@dataclass(frozen=True)
class _Wakeups:
    cpu: np.ndarray
    thread: np.ndarray
    seq: np.ndarray
    expected: np.ndarray
    actual: np.ndarray
    counters: Mapping[str, np.ndarray]


def _wakeups(dataset: Dataset, start: int, end: int) -> _Wakeups:
    """Every measured wake-up whose actual time lies in ``[start, end]`` (one streamed pass)."""
    counters = [c for c in ("smi", "aperf", "mperf") if dataset.has(c)]
    columns = ["cpu", "thread", "seq", "expected_ns", "actual_ns", *counters]
    kept: dict[str, list[np.ndarray]] = {c: [] for c in columns}
    for _info, batch in iter_thread_batches(dataset, columns, check=False):
        actual = batch.column("actual_ns").to_numpy()
        keep = np.flatnonzero((actual >= start) & (actual <= end))
        if keep.size:
            for c in columns:
                kept[c].append(batch.column(c).to_numpy(zero_copy_only=False)[keep])
    cat = {c: np.concatenate(v) if v else np.zeros(0, np.int64) for c, v in kept.items()}
    order = np.lexsort((cat["actual_ns"], cat["thread"]))
    cat = {c: v[order] for c, v in cat.items()}
    return _Wakeups(cat["cpu"].astype(np.int64), cat["thread"], cat["seq"], cat["expected_ns"], cat["actual_ns"],
                    {c: cat[c] for c in counters})


def _is_thread(tid: int | None, cpu: int) -> Any:
    """Whether a woken task (pid, comm) is the measuring thread: its tid, else the capture's name ``js-cpuN``."""
    if tid is not None:
        return lambda pid, comm: pid == tid
    return lambda pid, comm: comm == f"js-cpu{cpu}"


def _measuring(dataset: Dataset) -> dict[int, Any]:
    return {int(t.thread): _is_thread(int(t.tid) if t.tid else None, int(t.cpu)) for t in dataset.metadata.threads}


def _wakeup_events(w: _Wakeups, state: Mapping[int, _Cpu], threshold_ns: float, resolution_ns: int,
                   measuring: Mapping[int, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The wake-up instants (on their CPU's track) and the counter events."""
    instants, counters = [], []
    for k in range(w.actual.size):
        cpu, actual, expected = int(w.cpu[k]), int(w.actual[k]), int(w.expected[k])
        latency = actual - expected
        args: dict[str, Any] = {"thread": int(w.thread[k]), "seq": int(w.seq[k]), "latency_us": _us(latency),
                                "expected_ns": expected, "actual_ns": actual, "late": latency > threshold_ns}
        cs = state.get(cpu)
        is_measuring = measuring.get(int(w.thread[k]))
        if latency > threshold_ns and cs is not None and is_measuring is not None:
            found = cs.marks.find(expected, actual, resolution_ns, is_measuring)
            if isinstance(found, str):
                args["split"] = found
            else:
                point = min(max(found[1], expected), actual)
                args.update(interrupt_latency_us=_us(point - expected), thread_latency_us=_us(actual - point),
                            split_at=found[0])
        if cpu in state:
            instants.append({"name": f"wake-up {_us(latency):g} µs", "cat": "wakeup", "ph": "i", "s": "t",
                             "ts": _us(actual), "pid": PERFETTO_PID, "tid": track_of(cpu), "args": args})
        counters.append({"name": f"CPU {cpu} latency", "cat": "latency", "ph": "C", "ts": _us(actual),
                         "pid": PERFETTO_PID, "args": {"µs": _us(latency)}})
    for cpu in np.unique(w.cpu).tolist():
        on = np.flatnonzero(w.cpu == cpu)
        if "smi" in w.counters:
            smi = w.counters["smi"][on]
            for k, value in zip(on.tolist(), (smi - smi[0]).tolist(), strict=True):
                counters.append({"name": f"CPU {cpu} SMIs", "cat": "counter", "ph": "C", "ts": _us(int(w.actual[k])),
                                 "pid": PERFETTO_PID, "args": {"since window start": int(value)}})
        if "aperf" in w.counters and "mperf" in w.counters and on.size > 1:
            da, dm = np.diff(w.counters["aperf"][on]), np.diff(w.counters["mperf"][on])
            for k, a, m in zip(on[1:].tolist(), da.tolist(), dm.tolist(), strict=True):
                if m > 0:
                    counters.append({"name": f"CPU {cpu} APERF/MPERF", "cat": "counter", "ph": "C",
                                     "ts": _us(int(w.actual[k])), "pid": PERFETTO_PID, "args": {"ratio": a / m}})
    return instants, counters


@dataclass(frozen=True)
class PerfettoExport:
    """What ``export --format perfetto`` wrote: the file, the event and its window, and the counts."""

    path: str
    event: int
    start_ns: int
    end_ns: int
    cpus: tuple[int, ...]
    slices: int
    instants: int
    counters: int
    peak_latency_ns: int
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__) | {"cpus": list(self.cpus), "notes": list(self.notes)}


def export_event_perfetto(source: str | os.PathLike[str], output: str | os.PathLike[str], event: int, *,
                          threshold_ns: float | None = None, margin_ns: int = DEFAULT_MARGIN_NS,
                          overwrite: bool = False) -> PerfettoExport:
    """Write event ``event`` of ``source`` (as ``jitterscope events`` numbers them) as Trace Event Format JSON.

    Parameters
    ----------
    source
        A dataset directory with a kernel trace.
    output
        The JSON file to write.
    event
        The event's rank in ``jitterscope events`` at the same threshold (1: the largest peak latency).
    threshold_ns
        The events' threshold (default: that of ``jitterscope events``).
    margin_ns
        Time kept before the event's first late target and after its last wake-up.
    overwrite
        Replace ``output`` if it exists.

    Raises
    ------
    DatasetError
        No kernel trace in the dataset, or an unwritable output.
    AnalysisError
        No event ``event`` in the dataset.
    """
    from ..events import find_events  # the analysis, loaded only for this format
    out = check_output(output, inputs=[source], overwrite=overwrite)
    dataset = open_dataset(source)
    trace = open_trace(dataset.path) if Path(dataset.path).is_dir() and not dataset.is_histogram else None
    if trace is None:
        raise DatasetError(f"{source}: no kernel trace to export (capture with --trace, or attach one with "
                           "'jitterscope import TRACE --onto DATASET -o OUT')")
    if event < 1:
        raise AnalysisError(f"--event must be 1 or more (events are numbered from 1), not {event}")
    events = find_events(dataset, threshold_ns=threshold_ns)
    ranked = events.worst(event)
    if len(ranked) < event:
        raise AnalysisError(f"{source}: no event {event}: it has {len(events.events):,} event(s) above "
                            f"{events.threshold_ns / 1000:g} µs (see 'jitterscope events')")
    chosen = ranked[event - 1]
    start, end = chosen.start_ns - margin_ns, chosen.end_ns + margin_ns
    cpus = tuple(sorted({int(t.cpu) for t in dataset.metadata.threads if t.cpu >= 0}))
    state = _read_trace(trace, cpus, start, end)
    wakeups = _wakeups(dataset, start, end)
    instants, counters = _wakeup_events(wakeups, state, events.threshold_ns, trace.resolution_ns,
                                        _measuring(dataset))
    trace_events = _metadata_events(dataset, event, cpus)
    per_track: list[dict[str, Any]] = []
    for cpu, cs in state.items():
        tid = track_of(cpu)
        per_track += [{"name": name, "cat": cat, "ph": "X", "ts": _us(lo), "dur": _us(hi - lo),
                       "pid": PERFETTO_PID, "tid": tid, "args": args, "_depth": depth}
                      for lo, hi, depth, name, cat, args in cs.slices]
        per_track += [{"name": name, "cat": cat, "ph": "i", "s": "t", "ts": _us(t), "pid": PERFETTO_PID,
                       "tid": tid, "args": args, "_depth": 99} for t, name, cat, args in cs.instants]
    per_track += [dict(e, _depth=99) for e in instants]
    # time order per track; at one instant the enclosing slice (longer, shallower) before what it holds
    per_track.sort(key=lambda e: (e["tid"], e["ts"], e["_depth"], -e.get("dur", 0)))
    for e in per_track:
        del e["_depth"]
    counters.sort(key=lambda e: (e["name"], e["ts"]))
    trace_events += per_track + counters
    notes = []
    if not any(cs.slices for cs in state.values()):
        notes.append("the kernel trace has no event in this window: only the wake-ups are shown")
    body = {"traceEvents": trace_events, "displayTimeUnit": "ns",
            "otherData": {"producer": f"jitterscope {__version__}", "dataset": str(dataset.path),
                          "event": event, "peak_latency_ns": chosen.peak_latency_ns, "window_ns": [start, end],
                          "threshold_ns": events.threshold_ns, "clock": "CLOCK_MONOTONIC, ts in µs",
                          "cause_kinds": list(chosen.cause_kinds)}}
    with write_atomically(out, what="the Perfetto trace") as tmp:
        tmp.write_text(json.dumps(body, allow_nan=False), encoding="utf-8")
    return PerfettoExport(path=str(out), event=event, start_ns=start, end_ns=end, cpus=cpus,
                          slices=sum(len(cs.slices) for cs in state.values()),
                          instants=sum(len(cs.instants) for cs in state.values()) + len(instants),
                          counters=len(counters), peak_latency_ns=chosen.peak_latency_ns, notes=tuple(notes))


def _metadata_events(dataset: Dataset, event: int, cpus: Sequence[int]) -> list[dict[str, Any]]:
    name = f"jitterscope {Path(dataset.path).name} event {event}"
    out: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": PERFETTO_PID, "tid": 0,
                                  "args": {"name": name}}]
    for cpu in cpus:
        out.append({"name": "thread_name", "ph": "M", "pid": PERFETTO_PID, "tid": track_of(cpu),
                    "args": {"name": f"CPU {cpu}"}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": PERFETTO_PID, "tid": track_of(cpu),
                    "args": {"sort_index": cpu}})
    return out
