"""``validate``: every way a dataset breaks the contract, collected rather than raised.

Opening checks the container, metadata and columns (one reason, since
nothing after it can be read); a full pass then checks every row against the
per-thread invariants (:mod:`jitterscope.invariants`) and reads every row
group, so a truncated or damaged part is found too.  A dataset directory's
kernel trace (``_trace``, "Trace events") is checked too, and a poll dataset's rows against its per-second table
(``_poll``, :mod:`.poll`); the trace, streamed part by part:
its columns, clock, event codes and string indices, each CPU's times in order
across every part, the parts' names, row counts and string lists.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import JitterscopeError, SchemaError
from .contract import MAX_VALUE_BYTES
from .files import open_dataset
from .invariants import InvariantChecker
from .jsonvalue import load_json
from .poll import poll_problems
from .trace import TRACE_EVENTS, open_trace

_CHECKED = ("thread", "cpu", "seq", "expected_ns", "actual_ns")


@dataclass(frozen=True)
class Validation:
    """The verdict on a dataset: ``problems`` is empty when it is valid; ``notes`` never invalidate."""

    path: str
    valid: bool
    kind: str | None
    rows: int
    threads: int
    problems: tuple[str, ...]
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def validate_dataset(path: str | os.PathLike[str]) -> Validation:
    """Check a dataset against docs/dataset-format.md without raising.

    Parameters
    ----------
    path
        A dataset file or directory.

    Returns
    -------
    Validation
        ``valid`` and one line per problem (at most a few dozen).
    """
    try:
        dataset = open_dataset(path, check_counts=False)  # the full pass below says which thread is off
    except JitterscopeError as exc:
        return Validation(path=str(path), valid=False, kind=None, rows=0, threads=0, problems=(str(exc),), notes=())
    meta = dataset.metadata
    notes = []
    state = (meta.status or {}).get("state")
    if state and state != "complete":
        notes.append(f"status is '{state}' ({(meta.status or {}).get('reason', 'no reason given')})")
    if dataset.is_histogram:
        return _validate_histogram(dataset, notes)
    if meta.kind == "poll":
        rows_read, problems = poll_problems(dataset, notes)
        if os.path.isdir(dataset.path):
            problems.extend(_validate_trace(dataset.path, notes))
        return Validation(path=str(dataset.path), valid=not problems, kind=meta.kind, rows=rows_read,
                          threads=len(meta.threads), problems=tuple(problems), notes=tuple(notes))
    checker = InvariantChecker(meta, where=str(dataset.path), strict=False)
    has_overruns = dataset.has("overruns")
    columns = [*_CHECKED, "overruns"] if has_overruns else list(_CHECKED)
    rows_read = 0
    try:
        for batch in dataset.iter_batches(columns):
            rows_read += batch.num_rows
            arrays = {name: batch.column(name).to_numpy() for name in columns}
            threads = arrays["thread"]
            for thread in _threads_in(threads):
                rows = threads == thread
                checker.check(
                    thread, arrays["cpu"][rows], arrays["seq"][rows], arrays["expected_ns"][rows],
                    arrays["actual_ns"][rows], arrays["overruns"][rows] if has_overruns else None,
                )
        # a capture stopped before its first wake-up is a valid, empty record of that (its status says how it ended)
        empty_capture = meta.kind == "capture" and state in ("complete", "interrupted") and dataset.num_rows == 0
        checker.finish(has_overruns, empty_ok=empty_capture)
        if empty_capture and not checker.problems:
            notes.append("no wake-up was recorded: the capture ended before its first wake-up; there is nothing "
                         "to analyse")
    except JitterscopeError as exc:
        checker.problems.append(str(exc))
    if rows_read != dataset.num_rows and not checker.problems:  # the rows are counted as read, not as told
        checker.problems.append(f"the row groups claim {dataset.num_rows} rows, {rows_read} could be read")
    if not meta.threads and rows_read:
        checker.problems.append("metadata jitterscope.threads is empty but the data has rows")
    if os.path.isdir(dataset.path):
        checker.problems.extend(_validate_trace(dataset.path, notes))
    problems = tuple(checker.problems)
    return Validation(path=str(dataset.path), valid=not problems, kind=meta.kind, rows=rows_read,
                      threads=len(meta.threads), problems=problems, notes=tuple(notes))


_STRING_COLUMNS = ("comm", "name", "other_comm")
_MAX_TRACE_PROBLEMS = 20


def _validate_trace(path: str | os.PathLike[str], notes: list[str]) -> list[str]:
    """The events table's problems (none when there is no trace); a note says what it holds."""
    import pyarrow.parquet as pq
    try:
        table = open_trace(path)
    except JitterscopeError as exc:
        return [f"kernel trace: {exc}"]
    if table is None:
        return []
    where = f"{path}/_trace"
    problems: list[str] = []
    names = [p.name for p in table.parts]
    if names[0] != "events.parquet" and names != [f"part-{i:05d}.parquet" for i in range(len(names))]:
        problems.append(f"kernel trace: {where} parts are not part-00000.parquet, part-00001.parquet, ... in "
                        f"order (found {', '.join(names[:5])}{', ...' if len(names) > 5 else ''})")
    info = table.info
    recorded = "mono" if "instance" in info else ("as recorded" if "source" in info else None)
    if info.get("clock") not in ("mono", "as recorded") or (recorded and info.get("clock") != recorded):
        problems.append(f"kernel trace: clock {info.get('clock')!r} in jitterscope.trace; a capture's trace is "
                        "'mono' (the samples' CLOCK_MONOTONIC), an import's 'as recorded'")
    if "rows" in info and info["rows"] != table.num_rows:
        problems.append(f"kernel trace: jitterscope.trace says {info['rows']} events, the parts hold "
                        f"{table.num_rows}")
    strings = table.strings
    for part, count in zip(table.parts[:-1], table.part_strings[:-1], strict=True):
        kv = pq.read_metadata(part).metadata or {}
        try:
            earlier = load_json(kv.get(b"jitterscope.trace_strings", b"[]"), f"{part}: jitterscope.trace_strings",
                                max_bytes=MAX_VALUE_BYTES)
        except SchemaError:
            earlier = None
        if earlier is None or list(strings[:count]) != earlier:
            problems.append(f"kernel trace: {part.name}'s string list is not the start of the last part's: its "
                            "string indices would name other strings")
    last_ts: dict[int, int] = {}
    codes = max(TRACE_EVENTS.values())
    rows = 0
    try:
        for part, claimed in zip(table.parts, table.part_rows, strict=True):
            read = 0
            one = dataclasses.replace(table, parts=(part,), part_rows=(claimed,))
            for batch in one.iter_batches(["ts_ns", "cpu", "event", *_STRING_COLUMNS]):
                read += batch["ts_ns"].size
                _check_trace_batch(batch, last_ts, codes, len(strings), part.name, problems)
                if len(problems) >= _MAX_TRACE_PROBLEMS:
                    break
            rows += read
            if read != claimed and len(problems) < _MAX_TRACE_PROBLEMS:
                problems.append(f"kernel trace: {part.name} claims {claimed} events, {read} could be read")
    except JitterscopeError as exc:
        problems.append(f"kernel trace: {exc}")
    if not problems:
        state = info.get("state")
        lost = (info.get("lost") or {}).get("total")
        notes.append(f"kernel trace: {rows} events in {len(table.parts)} part(s), CPUs {sorted(last_ts)}, clock "
                     f"{info.get('clock')}" + (f", {lost} lost by the kernel" if lost else "")
                     + (f", state '{state}'" if state and state != "complete" else ""))
    return problems[:_MAX_TRACE_PROBLEMS]


def _check_trace_batch(batch: dict[str, np.ndarray], last_ts: dict[int, int], max_code: int, n_strings: int,
                       part: str, problems: list[str]) -> None:
    bad = (batch["event"] < 0) | (batch["event"] > max_code)
    if bad.any():
        problems.append(f"kernel trace: {part} has {int(bad.sum())} event code(s) outside 0-{max_code} "
                        f"(first {int(batch['event'][bad][0])})")
    for column in _STRING_COLUMNS:
        values = batch[column]
        bad = (values < -1) | (values >= n_strings)
        if bad.any():
            problems.append(f"kernel trace: {part} column {column} has {int(bad.sum())} string index(es) outside "
                            f"-1-{n_strings - 1} (first {int(values[bad][0])})")
    ts, cpu = batch["ts_ns"], batch["cpu"]
    for c in np.unique(cpu).tolist():
        mine = ts[cpu == c]
        before = last_ts.get(c)
        if (before is not None and mine[0] < before) or (mine.size > 1 and bool((np.diff(mine) < 0).any())):
            problems.append(f"kernel trace: {part} CPU {c}'s event times go backwards (each CPU's events must be in "
                            "time order across the parts)")
        last_ts[c] = int(mine[-1])


def _threads_in(threads: Any) -> list[int]:
    if threads.size == 0:
        return []
    if threads.min() == threads.max():
        return [int(threads[0])]
    return [int(t) for t in np.unique(threads)]


def _summary_only_problems(info: Any) -> list[str]:
    """A summary-only thread: every wake-up an overflow, and min <= avg <= max when it counted any."""
    extra, where = info.extra, f"thread {info.thread} (summary-only)"
    numbers = {key: extra.get(key) for key in ("min_ns", "avg_ns", "max_ns")}
    if extra.get("overflows") != info.samples:
        return [f"{where}: overflows {extra.get('overflows')} differ from samples {info.samples}; every wake-up of a "
                "summary-only source is an overflow"]
    if info.samples == 0:
        if any(v is not None for v in numbers.values()):
            return [f"{where}: no wake-ups counted but min/avg/max given"]
        return []
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in numbers.values()):
        missing = ", ".join(k for k, v in numbers.items() if not isinstance(v, int | float) or isinstance(v, bool))
        return [f"{where}: {info.samples} wake-ups counted but no number for {missing}"]
    slack = float(extra.get("avg_precision_ns") or 0)  # the source rounds or truncates its average
    low, avg, high = numbers["min_ns"], numbers["avg_ns"], numbers["max_ns"]
    if not (low <= high and low - slack <= avg <= high + slack):
        return [f"{where}: min {low} ns, avg {avg} ns, max {high} ns are not ordered min <= avg <= max"]
    return []


def _validate_histogram(dataset: Any, notes: list[str]) -> Validation:
    problems = []
    try:
        table = dataset.read()
    except JitterscopeError as exc:
        problems.append(str(exc))
    else:
        width = table.column("bin_width_ns").to_numpy()
        count = table.column("count").to_numpy()
        if (width <= 0).any():
            problems.append("histogram has bins of width <= 0")
        if (count < 0).any():
            problems.append("histogram has negative counts")
        known = {t.thread for t in dataset.metadata.threads}
        unknown = set(table.column("thread").to_numpy().tolist()) - known
        if unknown:
            problems.append(f"bins of thread(s) {sorted(unknown)} that metadata jitterscope.threads does not list")
        if table.num_rows == 0 and all(t.extra.get("summary_only") is True for t in dataset.metadata.threads):
            problems += [p for t in dataset.metadata.threads for p in _summary_only_problems(t)]
            notes.append("summary-only source: no bins; only each thread's count/min/avg/max are known")
        elif table.num_rows == 0 or count.sum() == 0:
            problems.append("the histogram holds no counts (no wake-ups were recorded)")
    return Validation(path=str(dataset.path), valid=not problems, kind=dataset.metadata.kind,
                      rows=dataset.num_rows, threads=len(dataset.metadata.threads), problems=tuple(problems),
                      notes=tuple(notes))
