"""The events table: kernel trace events stored inside a dataset (``_trace/events.parquet``).

The Python half of the "Trace events" contract in ``docs/dataset-format.md``;
``capture/trace.h`` is the C half (``TRACE_COLUMNS``, ``enum trace_event_code``)
and ``tests/test_contract.py`` keeps the three equal.  The directory name starts
with ``_`` so that ``pyarrow.dataset`` and DuckDB's ``PATH/*.parquet`` read the
samples of a capture directory without it.

Version history
---------------
1 (2026-12-01)
    First version: twelve fixed-width columns, strings in ``jitterscope.trace_strings``,
    settings and losses in ``jitterscope.trace``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DatasetError, SchemaError
from .atomic import write_atomically
from .schema import Column

TRACE_DIR = "_trace"
TRACE_FILE = "events.parquet"
TRACE_VERSION = 1

# One row per kernel event, in the order the capture writes them; -1 = not applicable.
TRACE_COLUMNS: tuple[Column, ...] = (
    Column("ts_ns", pa.int64(), True, "ns",
           "event time, CLOCK_MONOTONIC (trace_clock mono); its resolution is in jitterscope.trace"),
    Column("cpu", pa.int32(), True, "-", "CPU the event was recorded on"),
    Column("event", pa.int32(), True, "-", "event code (TRACE_EVENTS)"),
    Column("pid", pa.int32(), True, "-", "task running when the event fired (sched_switch: the previous task)"),
    Column("comm", pa.int32(), True, "-", "its command name, an index into jitterscope.trace_strings"),
    Column("number", pa.int32(), True, "-", "irq, vector or softirq number; sched_wakeup: target CPU"),
    Column("name", pa.int32(), True, "-",
           "string index: irq handler, softirq action, vector name, NMI handler, marker text, other event's name"),
    Column("other_pid", pa.int32(), True, "-", "sched_switch: next task; sched_wakeup: woken task"),
    Column("other_prio", pa.int32(), True, "-", "kernel priority of other_pid (0-99 real-time: 99 - rtprio)"),
    Column("other_comm", pa.int32(), True, "-", "string index of other_pid's command name"),
    Column("prio", pa.int32(), True, "-", "sched_switch: kernel priority of the previous task"),
    Column("value", pa.int64(), True, "-",
           "NMI: handler duration ns (ts_ns is its end); sched_switch: 1 if the previous task stayed runnable; "
           "lost: events lost"),
)

# The `event` codes (contract:trace-events); the C enum trace_event_code mirrors them.
TRACE_EVENTS: Mapping[str, int] = {
    "other": 0, "irq_entry": 1, "irq_exit": 2, "softirq_entry": 3, "softirq_exit": 4, "softirq_raise": 5,
    "vector_entry": 6, "vector_exit": 7, "nmi": 8, "switch": 9, "wakeup": 10, "waking": 11, "hrtimer": 12,
    "marker": 13, "lost": 14,
}


def trace_schema() -> pa.Schema:
    """The Arrow schema of the events table (every column non-nullable)."""
    return pa.schema([pa.field(c.name, c.arrow_type, nullable=False) for c in TRACE_COLUMNS])


@dataclass(frozen=True)
class TraceEvents:
    """The events table of one dataset: columns as numpy arrays, the strings, and what was traced.

    ``info`` is the ``jitterscope.trace`` document (clock, resolution, events, CPUs, buffer,
    state, ``lost``: per-CPU ``overrun``/``dropped`` from the kernel's stats).
    """

    columns: Mapping[str, np.ndarray]
    strings: tuple[str, ...]
    info: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def num_rows(self) -> int:
        return int(self.columns["ts_ns"].size)

    @property
    def resolution_ns(self) -> int:
        return int(self.info.get("resolution_ns") or 1000)

    @property
    def cpus(self) -> tuple[int, ...]:
        listed = self.info.get("cpus")
        return tuple(int(c) for c in listed) if listed else tuple(int(c) for c in np.unique(self.columns["cpu"]))

    def lost_by_cpu(self) -> dict[int, int]:
        """Events the kernel lost per CPU (its ``overrun`` + ``dropped`` counters, else the LOST rows)."""
        lost = (self.info.get("lost") or {}).get("per_cpu")
        if lost:
            return {int(e["cpu"]): int(e.get("overrun", 0)) + int(e.get("dropped", 0)) for e in lost}
        rows = self.columns["event"] == TRACE_EVENTS["lost"]
        out: dict[int, int] = {}
        for cpu, value in zip(self.columns["cpu"][rows].tolist(), self.columns["value"][rows].tolist(), strict=True):
            out[cpu] = out.get(cpu, 0) + max(int(value), 0)
        return out

    def string(self, index: int) -> str:
        """The text of a string index (``-1`` is "")."""
        return self.strings[index] if 0 <= index < len(self.strings) else ""

    def to_table(self) -> pa.Table:
        meta = {b"jitterscope.trace": json.dumps(dict(self.info)).encode(),
                b"jitterscope.trace_strings": json.dumps(list(self.strings)).encode()}
        arrays = [pa.array(np.asarray(self.columns[c.name]), type=c.arrow_type) for c in TRACE_COLUMNS]
        return pa.Table.from_arrays(arrays, schema=trace_schema()).replace_schema_metadata(meta)


def trace_events_path(dataset_path: str | os.PathLike[str]) -> Path:
    """Where a dataset directory keeps its events table."""
    return Path(dataset_path) / TRACE_DIR / TRACE_FILE


def read_trace_events(dataset_path: str | os.PathLike[str]) -> TraceEvents | None:
    """Read the events table of a dataset directory; ``None`` when it has none.

    Raises
    ------
    SchemaError
        The file's columns or metadata break the contract.
    DatasetError
        The file cannot be read.
    """
    path = trace_events_path(dataset_path)
    if not Path(dataset_path).is_dir() or not path.exists():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise DatasetError(f"{path}: cannot read the events table ({exc}); the trace is damaged") from None
    got = [(f.name, f.type) for f in table.schema]
    want = [(c.name, c.arrow_type) for c in TRACE_COLUMNS]
    if got != want:
        raise SchemaError(f"{path}: columns {[n for n, _ in got]} are not the events table's "
                          f"{[n for n, _ in want]} (docs/dataset-format.md, Trace events)")
    kv = table.schema.metadata or {}
    try:
        info = json.loads(kv.get(b"jitterscope.trace", b"{}")) or {}
        strings = tuple(json.loads(kv.get(b"jitterscope.trace_strings", b"[]")))
    except ValueError:
        raise SchemaError(f"{path}: jitterscope.trace metadata is not valid JSON") from None
    columns = {c.name: table.column(c.name).to_numpy() for c in TRACE_COLUMNS}
    return TraceEvents(columns=columns, strings=strings, info=info, source=str(path))


def events_from_rows(rows: Sequence[Sequence[int]], strings: Sequence[str], info: Mapping[str, Any],
                     source: str = "") -> TraceEvents:
    """Build a :class:`TraceEvents` from rows in :data:`TRACE_COLUMNS` order (importers, tests)."""
    matrix = np.asarray(rows, dtype=np.int64).reshape(-1, len(TRACE_COLUMNS))
    columns = {c.name: matrix[:, i].astype(np.int64 if c.arrow_type == pa.int64() else np.int32)
               for i, c in enumerate(TRACE_COLUMNS)}
    return TraceEvents(columns=columns, strings=tuple(strings), info=dict(info), source=source)


def write_trace_events(events: TraceEvents, dataset_path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``events`` as the events table of the dataset directory ``dataset_path``."""
    path = trace_events_path(dataset_path)
    if path.exists() and not overwrite:
        raise DatasetError(f"{path}: already exists; pass --force to replace the trace")
    path.parent.mkdir(parents=True, exist_ok=True)
    with write_atomically(path) as tmp:
        pq.write_table(events.to_table(), tmp, compression="zstd", use_dictionary=False)
    return path
