"""The events table: kernel trace events stored inside a dataset (``_trace/part-NNNNN.parquet``).

The Python half of the "Trace events" contract in ``docs/dataset-format.md``;
``capture/trace.h`` is the C half (``TRACE_COLUMNS``, ``enum trace_event_code``)
and ``tests/test_contract.py`` keeps the three equal.  The directory name starts
with ``_`` so that ``pyarrow.dataset`` and DuckDB's ``PATH/*.parquet`` read the
samples of a capture directory without it.

A capture writes the table as the samples' part container does (parts of ``--part-seconds``,
row groups of ``--group-seconds``, each flush one rename of a complete file); the strings and
settings of the **last** part cover every part (the dictionary only grows).  Read it with
:func:`open_trace` (the parts' footers; rows in bounded memory with
:meth:`TraceTable.iter_batches`) or :func:`read_trace_events` (everything in memory).

Version history
---------------
1 (2026-12-01)
    First version: twelve fixed-width columns, strings in ``jitterscope.trace_strings``,
    settings and losses in ``jitterscope.trace``; one file ``_trace/events.parquet``.
1 (2026-12-01, issue 13)
    The capture writes parts ``_trace/part-NNNNN.parquet``; the single file still reads.
1 (2026-12-01, issue 22)
    ``--trace-keep spikes`` (the capture's default): only kept windows, each CPU's part between a
    ``window`` and a ``window_end`` row; ``hrtimer_exit``; ``hrtimer``'s value is ``ts_ns`` minus the expiry's ``now``;
    ``keep``, ``events_seen``, ``events_kept`` and ``windows`` in ``jitterscope.trace``.  Full traces
    (``keep`` absent or ``"all"``) read as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DatasetError, SchemaError
from .atomic import write_atomically
from .contract import MAX_VALUE_BYTES
from .jsonvalue import load_json
from .schema import Column

TRACE_DIR = "_trace"
TRACE_FILE = "events.parquet"  # the one file of captures before the events parts: read, never written
TRACE_PART_GLOB = "part-*.parquet"
TRACE_VERSION = 1
TRACE_BATCH_ROWS = 65536  # rows per batch when streaming (a page of the capture's columns is 128 Ki values)

# One row per kernel event, in the order the capture writes them; -1 = not applicable.
TRACE_COLUMNS: tuple[Column, ...] = (
    Column("ts_ns", pa.int64(), True, "ns",
           "event time, CLOCK_MONOTONIC (trace_clock mono); its resolution is in jitterscope.trace"),
    Column("cpu", pa.int32(), True, "-", "CPU the event was recorded on"),
    Column("event", pa.int32(), True, "-", "event code (TRACE_EVENTS)"),
    Column("pid", pa.int32(), True, "-", "task running when the event fired (sched_switch: the previous task)"),
    Column("comm", pa.int32(), True, "-", "its command name, an index into jitterscope.trace_strings"),
    Column("number", pa.int32(), True, "-",
           "irq, vector or softirq number; sched_wakeup: target CPU; window/window_end: the window id"),
    Column("name", pa.int32(), True, "-",
           "string index: irq handler, softirq action, vector name, NMI handler, marker text, other event's name"),
    Column("other_pid", pa.int32(), True, "-", "sched_switch: next task; sched_wakeup: woken task"),
    Column("other_prio", pa.int32(), True, "-", "kernel priority of other_pid (0-99 real-time: 99 - rtprio)"),
    Column("other_comm", pa.int32(), True, "-", "string index of other_pid's command name"),
    Column("prio", pa.int32(), True, "-", "sched_switch: kernel priority of the previous task"),
    Column("value", pa.int64(), True, "-",
           "NMI: handler duration ns (ts_ns is its end); sched_switch: 1 if the previous task stayed runnable; "
           "lost: events lost; hrtimer: ts_ns minus the expiry's now (ns); window/window_end: flags; an entry "
           "re-stated at a window's start: its own entry time"),
)

# The `event` codes (contract:trace-events); the C enum trace_event_code mirrors them.
TRACE_EVENTS: Mapping[str, int] = {
    "other": 0, "irq_entry": 1, "irq_exit": 2, "softirq_entry": 3, "softirq_exit": 4, "softirq_raise": 5,
    "vector_entry": 6, "vector_exit": 7, "nmi": 8, "switch": 9, "wakeup": 10, "waking": 11, "hrtimer": 12,
    "marker": 13, "lost": 14, "hrtimer_exit": 15, "window": 16, "window_end": 17,
}

# The flags of a kept window (``value`` of its ``window`` and ``window_end`` rows; capture/trace.h mirrors them).
WINDOW_SPIKE, WINDOW_BACKGROUND, WINDOW_MARKER, WINDOW_INCOMPLETE = 1, 2, 4, 8


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


    def iter_batches(self, columns: Sequence[str] | None = None,
                     batch_rows: int = TRACE_BATCH_ROWS) -> Iterator[dict[str, np.ndarray]]:
        """The rows in order, ``batch_rows`` at a time (the in-memory twin of :meth:`TraceTable.iter_batches`)."""
        names = list(columns) if columns is not None else [c.name for c in TRACE_COLUMNS]
        for start in range(0, self.num_rows, batch_rows):
            yield {n: self.columns[n][start:start + batch_rows] for n in names}


class _WindowIds:
    """Numbers kept windows where the capture left their ids out (``number`` -1 in ``window``/``window_end`` rows).

    The capture writes windows in order, each on every measured CPU, numbered 0, 1, ...; since format 1's
    2026-12-02 change it leaves the number out (a value unique to every window, twice per CPU, cost more on
    disk than the other columns of those rows).  So a CPU's k-th ``window`` row opens window k, and its
    ``window_end`` rows close the window its last ``window`` row opened.  Rows that carry an id keep it (older
    captures, imports).  Feed the batches in file order: the count goes on across batches and parts.
    """

    def __init__(self) -> None:
        self._opened: dict[int, int] = {}  # cpu -> window rows seen

    def fill(self, cpu: np.ndarray, event: np.ndarray, number: np.ndarray) -> np.ndarray:
        """``number`` with the left-out window ids filled in (a copy where any was left out)."""
        opens = event == TRACE_EVENTS["window"]
        marks = opens | (event == TRACE_EVENTS["window_end"])
        if not marks.any():
            return number
        out = number.copy()
        for c in np.unique(cpu[marks]).tolist():
            at = np.flatnonzero(marks & (cpu == c))
            seen = self._opened.get(c, 0) + np.cumsum(opens[at])
            self._opened[c] = int(seen[-1])
            missing = out[at] == -1
            out[at[missing]] = (seen[missing] - 1).astype(out.dtype)
        return out


def trace_events_path(dataset_path: str | os.PathLike[str]) -> Path:
    """The directory in which a dataset directory keeps its events table (``_trace``)."""
    return Path(dataset_path) / TRACE_DIR


def trace_part_paths(dataset_path: str | os.PathLike[str]) -> tuple[Path, ...]:
    """The files of a dataset's events table in name order: its parts, else the older single file; () if none."""
    where = trace_events_path(dataset_path)
    if not Path(dataset_path).is_dir() or not where.is_dir():
        return ()
    parts = tuple(sorted(where.glob(TRACE_PART_GLOB)))
    if parts:
        return parts
    single = where / TRACE_FILE
    return (single,) if single.is_file() else ()


def _trace_metadata(path: Path, kv: Mapping[bytes, bytes]) -> tuple[dict[str, Any], tuple[str, ...]]:
    info = load_json(kv.get(b"jitterscope.trace", b"{}"), f"{path}: metadata jitterscope.trace",
                     max_bytes=MAX_VALUE_BYTES) or {}
    strings = load_json(kv.get(b"jitterscope.trace_strings", b"[]"), f"{path}: metadata jitterscope.trace_strings",
                        max_bytes=MAX_VALUE_BYTES)
    if not isinstance(info, dict) or not isinstance(strings, list) or not all(isinstance(x, str) for x in strings):
        raise SchemaError(f"{path}: jitterscope.trace must be an object and jitterscope.trace_strings a list of "
                          "strings (docs/dataset-format.md, Trace events)")
    return info, tuple(strings)


@dataclass(frozen=True)
class TraceTable:
    """The events table of a dataset as its files' footers describe it; rows are read on demand.

    ``info`` and ``strings`` are the last part's (they cover every part); ``part_rows`` the
    rows of each file in ``parts``.
    """

    parts: tuple[Path, ...]
    part_rows: tuple[int, ...]
    strings: tuple[str, ...]
    info: Mapping[str, Any]
    part_strings: tuple[int, ...] = ()  # the dictionary length each part's footer carried

    @property
    def num_rows(self) -> int:
        return sum(self.part_rows)

    @property
    def source(self) -> str:
        return str(self.parts[0].parent) if len(self.parts) > 1 else str(self.parts[0])

    @property
    def resolution_ns(self) -> int:
        return int(self.info.get("resolution_ns") or 1000)

    def string(self, index: int) -> str:
        """The text of a string index (``-1`` is "")."""
        return self.strings[index] if 0 <= index < len(self.strings) else ""

    def iter_batches(self, columns: Sequence[str] | None = None,
                     batch_rows: int = TRACE_BATCH_ROWS) -> Iterator[dict[str, np.ndarray]]:
        """The rows in file order (parts in name order), ``batch_rows`` at a time: bounded memory.

        Raises
        ------
        DatasetError
            A part cannot be read.
        """
        names = list(columns) if columns is not None else [c.name for c in TRACE_COLUMNS]
        # the window ids the capture leaves out (number -1 in window rows) need each row's cpu and event
        read = names + [n for n in ("cpu", "event") if "number" in names and n not in names]
        ids = _WindowIds()
        for path in self.parts:
            try:
                with pq.ParquetFile(path) as handle:
                    for batch in handle.iter_batches(batch_size=batch_rows, columns=read, use_threads=False):
                        got = {n: batch.column(n).to_numpy() for n in read}
                        if "number" in names:
                            got["number"] = ids.fill(got["cpu"], got["event"], got["number"])
                        yield {n: got[n] for n in names}
            except (OSError, pa.ArrowException) as exc:
                raise DatasetError(f"{path}: cannot read the events table ({exc}); the trace is damaged") from None

    def lost_by_cpu(self) -> dict[int, int]:
        """Events the kernel lost per CPU (its ``overrun`` + ``dropped`` counters, else the LOST rows; streamed)."""
        lost = (self.info.get("lost") or {}).get("per_cpu")
        if lost:
            return {int(e["cpu"]): int(e.get("overrun", 0)) + int(e.get("dropped", 0)) for e in lost}
        out: dict[int, int] = {}
        for batch in self.iter_batches(["cpu", "event", "value"]):
            rows = batch["event"] == TRACE_EVENTS["lost"]
            for cpu, value in zip(batch["cpu"][rows].tolist(), batch["value"][rows].tolist(), strict=True):
                out[cpu] = out.get(cpu, 0) + max(int(value), 0)
        return out

    def read(self) -> TraceEvents:
        """Every row in memory (small traces, tests; the analyses stream with :meth:`iter_batches`)."""
        chunks = list(self.iter_batches())
        columns = {c.name: (np.concatenate([b[c.name] for b in chunks]) if chunks else
                            np.zeros(0, np.int64 if c.arrow_type == pa.int64() else np.int32)) for c in TRACE_COLUMNS}
        return TraceEvents(columns=columns, strings=self.strings, info=dict(self.info), source=self.source)


def open_trace(dataset_path: str | os.PathLike[str]) -> TraceTable | None:
    """Open the events table of a dataset directory from its footers; ``None`` when it has none.

    Raises
    ------
    SchemaError
        A part's columns or metadata break the contract.
    DatasetError
        A part cannot be read.
    """
    paths = trace_part_paths(dataset_path)
    if not paths:
        return None
    want = [(c.name, c.arrow_type) for c in TRACE_COLUMNS]
    rows: list[int] = []
    lengths: list[int] = []
    info: dict[str, Any] = {}
    strings: tuple[str, ...] = ()
    for path in paths:
        try:
            meta = pq.read_metadata(path)
            schema = meta.schema.to_arrow_schema()
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(f"{path}: cannot read the events table ({exc}); the trace is damaged") from None
        got = [(f.name, f.type) for f in schema]
        if got != want:
            raise SchemaError(f"{path}: columns {[n for n, _ in got]} are not the events table's "
                              f"{[n for n, _ in want]} (docs/dataset-format.md, Trace events)")
        info, strings = _trace_metadata(path, meta.metadata or {})
        rows.append(int(meta.num_rows))
        lengths.append(len(strings))
    return TraceTable(parts=paths, part_rows=tuple(rows), strings=strings, info=info, part_strings=tuple(lengths))


def read_trace_events(dataset_path: str | os.PathLike[str]) -> TraceEvents | None:
    """Read the whole events table of a dataset directory (every part) into memory; ``None`` when it has none.

    Raises
    ------
    SchemaError
        The files' columns or metadata break the contract.
    DatasetError
        A file cannot be read.
    """
    table = open_trace(dataset_path)
    return table.read() if table is not None else None


def events_from_rows(rows: Sequence[Sequence[int]], strings: Sequence[str], info: Mapping[str, Any],
                     source: str = "") -> TraceEvents:
    """Build a :class:`TraceEvents` from rows in :data:`TRACE_COLUMNS` order (importers, tests)."""
    matrix = np.asarray(rows, dtype=np.int64).reshape(-1, len(TRACE_COLUMNS))
    columns = {c.name: matrix[:, i].astype(np.int64 if c.arrow_type == pa.int64() else np.int32)
               for i, c in enumerate(TRACE_COLUMNS)}
    return TraceEvents(columns=columns, strings=tuple(strings), info=dict(info), source=source)


def write_trace_events(events: TraceEvents, dataset_path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``events`` as the events table of the dataset directory ``dataset_path`` (one part)."""
    existing = trace_part_paths(dataset_path)
    if existing and not overwrite:
        raise DatasetError(f"{existing[0]}: already exists; pass --force to replace the trace")
    path = trace_events_path(dataset_path) / "part-00000.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in existing:
        if old != path:
            old.unlink()
    with write_atomically(path) as tmp:
        pq.write_table(events.to_table(), tmp, compression="zstd", use_dictionary=False)
    return path
