"""Kind ``poll`` (``jitterscope-capture --mode poll``): the per-second table and the checks of a poll dataset.

A poll dataset's rows are interruptions of a busy loop (``start_ns``, ``duration_ns``; docs/dataset-format.md,
"Poll columns"); beside them, ``_poll/part-NNNNN.parquet`` holds one row per thread per second of polling: loop
iterations, noise, interruptions, the largest gap and a log histogram of every gap (the edges are in metadata
``jitterscope.poll.histogram_edges_ns``).  :func:`read_poll_windows` reads that table;
:func:`poll_problems` is what ``jitterscope validate`` checks of a poll dataset, rows and table together: nothing
measured may be lost between them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DatasetError, SchemaError
from .metadata import Metadata
from .schema import POLL_DIR, POLL_WINDOW_COLUMNS, poll_bucket_column, poll_window_schema

if TYPE_CHECKING:
    import pandas as pd

    from .files import Dataset

_MAX_PROBLEMS = 20


def poll_edges(metadata: Metadata) -> np.ndarray:
    """The histogram's bucket edges in ns (``len`` = buckets + 1; bucket k is ``[edges[k], edges[k+1])``).

    Raises
    ------
    SchemaError
        ``metadata`` is not of a poll dataset.
    """
    poll = metadata.poll if metadata.kind == "poll" else None
    if not isinstance(poll, dict):
        raise SchemaError(f"a {metadata.kind} dataset has no poll histogram (jitterscope.poll); "
                          "record one with jitterscope capture --mode poll")
    return np.asarray(poll["histogram_edges_ns"], dtype=np.int64)


def poll_window_parts(path: str | os.PathLike[str]) -> list[Path]:
    """The per-second table's parts of the dataset directory ``path``, in order (empty when there are none)."""
    folder = Path(path) / POLL_DIR
    return sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []


def _window_tables(path: Path, buckets: int) -> Iterator[pa.Table]:
    parts = poll_window_parts(path)
    if not parts:
        raise DatasetError(f"{path}: no per-second table {POLL_DIR}/part-*.parquet; a poll dataset is the capture's "
                           "directory with its _poll folder (copy or pack the whole directory)")
    expected = poll_window_schema(buckets)
    for part in parts:
        try:
            table = pq.read_table(part)
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(f"{part}: not a readable Parquet file ({' '.join(str(exc).split())}); the per-second "
                               "table is damaged") from None
        missing = [n for n in expected.names if n not in table.column_names]
        if missing:
            raise SchemaError(f"{part}: per-second table lacks column(s) {', '.join(missing[:5])}"
                              f"{', ...' if len(missing) > 5 else ''} (jitterscope.poll gives {buckets} buckets)")
        for fld in expected:
            if table.schema.field(fld.name).type != fld.type:
                raise SchemaError(f"{part}: column '{fld.name}' has type {table.schema.field(fld.name).type}, "
                                  f"the contract says {fld.type}")
        yield table.select(expected.names).replace_schema_metadata(None)


def read_poll_windows(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The per-second table of the poll dataset directory ``path``, every part, sorted by thread and time.

    Columns: ``cpu``, ``thread``, ``window_start_ns``, ``window_ns``, ``iterations``, ``noise_ns``,
    ``interruptions``, ``max_gap_ns``, then ``h00`` ... one count per histogram bucket
    (:func:`poll_edges` gives the edges).  A gap is accounted to the window holding its start.

    Raises
    ------
    DatasetError
        No such dataset, or no readable ``_poll`` table.
    SchemaError
        Not a poll dataset, or the table breaks the contract.
    """
    from .files import open_dataset

    dataset = open_dataset(path)
    buckets = len(poll_edges(dataset.metadata)) - 1
    table = pa.concat_tables(list(_window_tables(Path(dataset.path), buckets)))
    frame = table.to_pandas()
    return frame.sort_values(["thread", "window_start_ns"], kind="stable").reset_index(drop=True)


def _bucket_columns(buckets: int) -> list[str]:
    return [poll_bucket_column(k) for k in range(buckets)]


def _row_problems(dataset: Dataset, threshold: int) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Per thread: rows, seq gaps (drops), noise (sum of durations), and the rows' own problems."""
    per: dict[int, dict[str, Any]] = {}
    problems: list[str] = []
    cpus = {t.thread: t.cpu for t in dataset.metadata.threads}
    for batch in dataset.iter_batches(["thread", "cpu", "seq", "start_ns", "duration_ns"]):
        cols = {n: batch.column(n).to_numpy() for n in batch.schema.names}
        for thread in np.unique(cols["thread"]).tolist():
            mine = cols["thread"] == thread
            seq, start, dur = cols["seq"][mine], cols["start_ns"][mine], cols["duration_ns"][mine]
            if thread not in cpus:
                problems.append(f"rows of thread {thread}, which metadata jitterscope.threads does not list")
                continue
            state = per.setdefault(thread, {"rows": 0, "gaps": 0, "noise": 0, "seq": None, "start": None,
                                            "starts": [], "durations": []})
            if (cols["cpu"][mine] != cpus[thread]).any():
                problems.append(f"thread {thread}: rows on a CPU other than its metadata's {cpus[thread]}")
            prev_seq = [] if state["seq"] is None else [state["seq"]]
            prev_start = [] if state["start"] is None else [state["start"]]
            steps = np.diff(np.concatenate([prev_seq, seq]).astype(np.int64))
            if (steps < 1).any() or (state["seq"] is None and seq.size and seq[0] < 0):
                problems.append(f"thread {thread}: seq not strictly increasing")
            if (np.diff(np.concatenate([prev_start, start]).astype(np.int64)) <= 0).any():
                problems.append(f"thread {thread}: start_ns not strictly increasing")
            if (dur < threshold).any():
                problems.append(f"thread {thread}: {int((dur < threshold).sum())} row(s) shorter than the threshold "
                                f"{threshold} ns (every row is a gap >= it)")
            state["gaps"] += int((steps - 1).clip(min=0).sum()) + (int(seq[0]) if state["seq"] is None and seq.size
                                                                    else 0)
            state["rows"] += int(seq.size)
            state["noise"] += int(dur.sum())
            if seq.size:
                state["seq"], state["start"] = int(seq[-1]), int(start[-1])
            state["starts"].append(start)
            state["durations"].append(dur)
    return per, problems


def _window_problems(frame: pd.DataFrame, edges: np.ndarray, per: dict[int, dict[str, Any]], metadata: Metadata,
                     finished: bool) -> list[str]:
    problems: list[str] = []
    hist = frame[_bucket_columns(edges.size - 1)].to_numpy()
    if (hist.sum(axis=1) != frame["iterations"].to_numpy()).any():
        problems.append("per-second table: a window's histogram does not add up to its iterations (every gap is "
                        "counted once)")
    busy = hist.sum(axis=1) > 0
    if busy.any():  # the largest gap lies in the highest non-empty bucket: the buckets are where the edges say
        top = hist.shape[1] - 1 - np.argmax(hist[:, ::-1] > 0, axis=1)
        largest = frame["max_gap_ns"].to_numpy()
        outside = busy & ((largest < edges[top]) | (largest >= edges[top + 1]))
        if outside.any():
            problems.append(f"per-second table: in {int(outside.sum())} window(s) max_gap_ns is not in the highest "
                            "non-empty histogram bucket (the counts are not in the buckets the edges give)")
    for info in metadata.threads:
        mine = frame[frame["thread"] == info.thread]
        rows = per.get(info.thread, {"rows": 0, "gaps": 0, "noise": 0, "starts": [], "durations": []})
        starts = mine["window_start_ns"].to_numpy()
        if (np.diff(starts) <= 0).any():
            problems.append(f"per-second table: thread {info.thread}'s windows are not in time order")
        if (mine["cpu"] != info.cpu).any():
            problems.append(f"per-second table: thread {info.thread}'s windows name a CPU other than {info.cpu}")
        if not finished:
            continue  # a running (crashed) capture's last rows may be ahead of its last window
        seen = int(mine["interruptions"].sum())
        lost = info.drops + int(info.extra.get("drops_after_last") or 0)
        if seen != rows["rows"] + lost:
            problems.append(f"thread {info.thread}: the per-second table counts {seen} interruptions, the rows "
                            f"{rows['rows']} and drops {lost}: they must agree (nothing lost between them)")
        if lost == 0 and int(mine["noise_ns"].sum()) != rows["noise"]:
            problems.append(f"thread {info.thread}: the per-second table's noise_ns {int(mine['noise_ns'].sum())} "
                            f"differs from the rows' duration_ns total {rows['noise']}")
        if rows["starts"] and starts.size:
            start = np.concatenate(rows["starts"])
            dur = np.concatenate(rows["durations"])
            index = np.searchsorted(starts, start, side="right") - 1
            if (index < 0).any():
                problems.append(f"thread {info.thread}: rows start before the first window")
            else:
                largest = np.zeros(starts.size, dtype=np.int64)
                np.maximum.at(largest, index, dur)
                if (largest > mine["max_gap_ns"].to_numpy()).any():
                    problems.append(f"thread {info.thread}: a row's duration exceeds its window's max_gap_ns")
    return problems


def poll_problems(dataset: Dataset, notes: list[str]) -> tuple[int, list[str]]:
    """Every problem of a poll dataset (rows, per-second table, the two together); also the rows read."""
    meta = dataset.metadata
    edges = poll_edges(meta)
    threshold = int(meta.poll["threshold_ns"]) if meta.poll else 0
    try:
        per, problems = _row_problems(dataset, threshold)
    except (DatasetError, SchemaError) as exc:
        return 0, [str(exc)]
    rows = sum(s["rows"] for s in per.values())
    for info in meta.threads:
        mine = per.get(info.thread, {"rows": 0, "gaps": 0})
        if mine["rows"] != info.samples:
            problems.append(f"thread {info.thread}: metadata says {info.samples} rows, the files hold {mine['rows']}")
        if mine["gaps"] != info.drops:
            problems.append(f"thread {info.thread}: metadata says {info.drops} drops, the seq gaps make {mine['gaps']}")
    if not os.path.isdir(dataset.path):  # pack writes the rows alone, as it leaves the kernel trace out
        notes.append("one file (a pack?): the rows only; the per-second table _poll/ stays in the capture's directory")
        return rows, problems[:_MAX_PROBLEMS]
    try:
        frame = pa.concat_tables(list(_window_tables(Path(dataset.path), len(edges) - 1))).to_pandas()
    except (DatasetError, SchemaError) as exc:
        return rows, [*problems, str(exc)]
    finished = (meta.status or {}).get("state") in ("complete", "interrupted", None)
    problems += _window_problems(frame, edges, per, meta, finished)
    if not problems:
        seconds = frame["window_ns"].sum() / 1e9
        notes.append(f"poll: {rows} interruptions >= {threshold} ns in {seconds:.1f} s of polling on "
                     f"{len(meta.threads)} thread(s); per-second table of {len(frame)} windows agrees with the rows")
    return rows, problems[:_MAX_PROBLEMS]


__all__ = ["POLL_WINDOW_COLUMNS", "poll_edges", "poll_problems", "poll_window_parts", "read_poll_windows"]
