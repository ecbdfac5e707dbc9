"""Kernel trace text: a raw ftrace ``trace`` file, or ``trace-cmd report`` output, into an events table.

Like turbostat's timeline this is not latency data: it attaches to a dataset of
the same run (``jitterscope import TRACE --onto DATASET -o OUT``), as the
dataset's events table (``_trace/part-NNNNN.parquet``, the contract's "Trace
events"), and only when its clock can be aligned with the dataset's: the
timestamps must be seconds with a fraction (a counter clock such as
``x86-tsc`` prints bare integers) and most events must fall within the
dataset's CLOCK_MONOTONIC span, which holds when the trace was recorded with
``trace_clock`` ``mono`` (``trace-cmd record -C mono``).

Lines read (the same events the capture's ``--trace`` parses, capture/trace_parse.c)::

    <comm>-<pid> [<cpu>] <flags> <sec>.<frac>: <event>: <fields>
    CPU:<n> [LOST <k> EVENTS]                  (ftrace: events overwritten)
    CPU:<n> [<k> EVENTS DROPPED]               (trace-cmd)

trace-cmd's sched plugin prints ``sched_switch`` as ``prev:pid [prio] S ==> next:pid [prio]`` and
``sched_wakeup`` as ``comm:pid [prio] ...``; both that and the kernel's ``key=value`` form are read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import TRACE_EVENTS, TraceEvents, events_from_rows
from ...errors import ImportFormatError
from ._common import fail, open_input, read_text, show

FORMATS = ("ftrace", "trace-cmd-report")
_LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d{1,4})\]\s+"
                   r"(?:(?P<flags>[^\s\d][^\s]*)\s+)?(?P<ts>\d+(?:\.(?P<frac>\d+))?):\s+(?P<event>[\w:]+):\s?(?P<fields>.*)$")
_LOST = re.compile(r"^\s*CPU:\s*(\d+)\s*\[(?:LOST\s+(\d+)\s+EVENTS|LOST EVENTS|(\d+)\s+EVENTS DROPPED)\]")
_PLUGIN_TASK = re.compile(r"(?P<comm>\S.*?):(?P<pid>-?\d+) \[(?P<prio>-?\d+)\]")
_VECTOR_SUFFIX = re.compile(r"_(entry|exit)$")


def sniff_trace(head: bytes) -> str | None:
    """``ftrace``, ``trace-cmd-report`` or ``None`` for the first bytes of a file."""
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()[:60]
    traced = sum(1 for line in lines if _LINE.match(line))
    if lines and lines[0].startswith("# tracer:") and (traced or len(lines) < 60):
        return "ftrace"
    if lines and (lines[0].startswith("cpus=") or lines[0].startswith("version =")) and traced:
        return "trace-cmd-report"
    return "ftrace" if traced >= max(3, len([x for x in lines if x.strip() and not x.startswith("#")]) // 2) else None


class _Builder:
    def __init__(self) -> None:
        self.rows: list[list[int]] = []
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}
        self.last_ts: dict[int, int] = {}
        self.unparsed = 0

    def sid(self, text: str | None) -> int:
        if text is None:
            return -1
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self.strings)
            self.strings.append(text)
        return found


def _field(fields: str, key: str, until: str | None = None) -> str | None:
    """The text after ``key``: up to ``until`` (or the end), else up to the next space."""
    at = fields.find(key)
    if at < 0:
        return None
    start = at + len(key)
    if until is None:
        return fields[start:].split(" ")[0]
    end = fields.find(until, start)
    return fields[start:end] if end >= 0 else fields[start:]


def _int(fields: str, key: str, default: int = -1) -> int:
    match = re.search(re.escape(key) + r"(-?\d+)", fields)
    return int(match.group(1)) if match else default


def _sched(b: _Builder, event: str, fields: str, row: dict[str, int]) -> None:
    plugin = _PLUGIN_TASK.findall(fields)
    if event == "sched_switch":
        row["event"] = TRACE_EVENTS["switch"]
        left, _, right = fields.partition("==>")
        prev, nxt = _PLUGIN_TASK.match(left.strip()), _PLUGIN_TASK.match(right.strip())
        if prev and nxt and "next_pid=" not in fields:
            (pc, pp, pr), (nc, np_, nr) = prev.groups(), nxt.groups()
            state = left.split("]", 1)[1].strip()
            row.update(pid=int(pp), comm=b.sid(pc), prio=int(pr), other_pid=int(np_), other_comm=b.sid(nc),
                       other_prio=int(nr), value=int(state.startswith("R")))
            return
        state = _field(fields, "prev_state=") or ""
        row.update(pid=_int(fields, "prev_pid=", row["pid"]), comm=b.sid(_field(fields, "prev_comm=", " prev_pid=")),
                   prio=_int(fields, "prev_prio="), other_pid=_int(fields, "next_pid="),
                   other_comm=b.sid(_field(fields, "next_comm=", " next_pid=")), other_prio=_int(fields, "next_prio="),
                   value=int(state.startswith("R")))
        return
    row["event"] = TRACE_EVENTS["wakeup" if event == "sched_wakeup" else "waking"]
    if plugin and "pid=" not in fields:
        comm, pid, prio = plugin[0]
        row.update(other_comm=b.sid(comm), other_pid=int(pid), other_prio=int(prio),
                   number=_int(fields, "CPU:"))
        return
    row.update(other_comm=b.sid(_field(fields, "comm=", " pid=")), other_pid=_int(fields, " pid="),
               other_prio=_int(fields, "prio="), number=_int(fields, "target_cpu="))


def _fill(b: _Builder, event: str, fields: str, row: dict[str, int]) -> None:
    event = event.split(":")[-1]
    if event == "irq_handler_entry":
        row.update(event=TRACE_EVENTS["irq_entry"], number=_int(fields, "irq="),
                   name=b.sid(_field(fields, "name=", "\0")))
    elif event == "irq_handler_exit":
        row.update(event=TRACE_EVENTS["irq_exit"], number=_int(fields, "irq="))
    elif event.startswith("softirq_"):
        kind = {"entry": "softirq_entry", "exit": "softirq_exit"}.get(event[8:], "softirq_raise")
        row.update(event=TRACE_EVENTS[kind], number=_int(fields, "vec="), name=b.sid(_field(fields, "[action=", "]")))
    elif event in ("sched_switch", "sched_wakeup", "sched_waking"):
        _sched(b, event, fields, row)
    elif "vector=" in fields and _VECTOR_SUFFIX.search(event):
        entry = event.endswith("_entry")
        row.update(event=TRACE_EVENTS["vector_entry" if entry else "vector_exit"], number=_int(fields, "vector="),
                   name=b.sid(_VECTOR_SUFFIX.sub("", event)))
    elif event == "nmi_handler":  # the kernel prints "%ps() delta_ns: %lld handled: %d"
        handler = _field(fields, "handler=") if "handler=" in fields else fields.split("(")[0].strip()
        delta = re.search(r"delta_ns[:=]\s*(-?\d+)", fields)
        row.update(event=TRACE_EVENTS["nmi"], name=b.sid(handler), value=max(int(delta.group(1)) if delta else 0, 0))
    elif event == "hrtimer_expire_entry":
        row.update(event=TRACE_EVENTS["hrtimer"], name=b.sid(_field(fields, "function=")))
    elif event in ("tracing_mark_write", "print"):
        row.update(event=TRACE_EVENTS["marker"], name=b.sid(fields.strip()))
    else:
        row.update(event=TRACE_EVENTS["other"], name=b.sid(event))


_ORDER = ("ts_ns", "cpu", "event", "pid", "comm", "number", "name", "other_pid", "other_prio", "other_comm", "prio",
          "value")


def read_trace_text(path: str | os.PathLike[str], fmt: str | None = None) -> TraceEvents:
    """Parse a raw ftrace ``trace`` file or ``trace-cmd report`` text into a :class:`TraceEvents`.

    Raises
    ------
    ImportFormatError
        No trace line in the file, or timestamps that are not seconds (a counter clock).
    """
    file = Path(path)
    if fmt is None:
        with open_input(file) as handle:  # the head only: the whole file is read (bounded) once, below
            head = handle.read(65536)
    name = fmt or sniff_trace(head) or "ftrace"
    text = read_text(file, name)
    b = _Builder()
    digits: set[int] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#") or line.startswith("cpus=") or line.startswith("version ="):
            continue
        lost = _LOST.match(line)
        if lost:
            cpu, count = int(lost.group(1)), int(lost.group(2) or lost.group(3) or -1)
            b.rows.append([b.last_ts.get(cpu, 0), cpu, TRACE_EVENTS["lost"], -1, -1, -1, -1, -1, -1, -1, -1, count])
            continue
        match = _LINE.match(line)
        if not match:
            b.unparsed += 1
            continue
        if match.group("frac") is None:
            raise fail(name, file, f"line {number}", f"timestamp {match.group('ts')!r} is a counter, not seconds",
                       "a counter clock (x86-tsc, counter) cannot be aligned with the dataset's CLOCK_MONOTONIC; "
                       "record with the mono clock (trace-cmd record -C mono, or echo mono > trace_clock)")
        frac = match.group("frac")
        digits.add(len(frac))
        ts = int(match.group("ts").split(".")[0]) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        cpu = int(match.group("cpu"))
        row = dict.fromkeys(_ORDER, -1) | {"ts_ns": ts, "cpu": cpu, "pid": int(match.group("pid")),
                                           "comm": b.sid(match.group("comm").strip()), "value": 0}
        _fill(b, match.group("event"), match.group("fields"), row)
        b.last_ts[cpu] = ts
        b.rows.append([row[k] for k in _ORDER])
    if not b.rows:
        raise fail(name, file, "the whole file", "no trace event line found",
                   f"expected lines like '<idle>-0 [001] d.h1. 2237.123456: local_timer_entry: vector=236'; "
                   f"first line: {show(text.splitlines()[0] if text else '')}")
    resolution = 10 ** (9 - min(digits)) if digits else 1000
    info: dict[str, Any] = {"version": 1, "clock": "as recorded", "resolution_ns": resolution,
                            "cpus": sorted({r[1] for r in b.rows}), "lost": None,
                            "source": {"format": name, "file": file.name, "unparsed_lines": b.unparsed}}
    order = np.argsort(np.asarray([r[0] for r in b.rows], dtype=np.int64), kind="stable")
    rows = [b.rows[i] for i in order.tolist()]
    return events_from_rows(rows, b.strings, info, source=str(file))


def check_alignment(events: TraceEvents, span_ns: tuple[int, int], *, where: str, onto: str) -> str:
    """Refuse (one line) a trace whose clock does not match the dataset's; returns the overlap note.

    Most of the events (at least half) must lie within the dataset's CLOCK_MONOTONIC
    span, widened by 1 s on each side.
    """
    ts = events.columns["ts_ns"]
    lo, hi = span_ns[0] - 1_000_000_000, span_ns[1] + 1_000_000_000
    inside = float(np.mean((ts >= lo) & (ts <= hi))) if ts.size else 0.0
    if inside < 0.5:
        raise ImportFormatError(
            f"{where}: its timestamps ({ts.min() / 1e9:.3f} to {ts.max() / 1e9:.3f} s) do not fall within "
            f"{onto}'s CLOCK_MONOTONIC span ({span_ns[0] / 1e9:.3f} to {span_ns[1] / 1e9:.3f} s), so its clock "
            "cannot be aligned with the dataset's: record the trace during the capture with the mono clock "
            "(trace-cmd record -C mono, or echo mono > /sys/kernel/tracing/trace_clock)")
    return f"{inside:.0%} of the {ts.size} events lie within the dataset's span"


def with_source(events: TraceEvents, note: Mapping[str, Any]) -> TraceEvents:
    """The same events with ``note`` merged into ``info["source"]``."""
    info = dict(events.info)
    info["source"] = {**(info.get("source") or {}), **note}
    return TraceEvents(columns=events.columns, strings=events.strings, info=info, source=events.source)
