"""Kind ``poll`` (``jitterscope-capture --mode poll``): the per-second table and the checks of a poll dataset.

A poll dataset's rows are interruptions of a busy loop (``start_ns``, ``duration_ns``; docs/dataset-format.md,
"Poll columns"); beside them, ``_poll/part-NNNNN.parquet`` holds one row per thread per second of polling: loop
iterations, noise, interruptions, the largest gap and a log histogram of every gap (the edges are in metadata
``jitterscope.poll.histogram_edges_ns``).  :func:`read_poll_table` is the one reader of that table (from the
directory, or from a packed file, which carries it in ``jitterscope.pack.poll_windows``);
:func:`write_poll_dataset` writes a poll dataset from Python (simulations, imports) in the contract's schema;
:func:`poll_problems` is what ``jitterscope validate`` checks of a poll dataset, rows and table together: nothing
measured may be lost between them.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DatasetError, SchemaError
from .metadata import Metadata
from .schema import POLL_COLUMNS, POLL_DIR, POLL_WINDOW_COLUMNS, poll_bucket_column, poll_schema, poll_window_schema

if TYPE_CHECKING:
    import pandas as pd

    from .files import Dataset
    from .trace import TraceEvents

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


def _check_window_table(table: pa.Table, buckets: int, where: str) -> pa.Table:
    """``table`` in the contract's columns and types (:func:`poll_window_schema`), its own metadata dropped."""
    expected = poll_window_schema(buckets)
    missing = [n for n in expected.names if n not in table.column_names]
    if missing:
        raise SchemaError(f"{where}: per-second table lacks column(s) {', '.join(missing[:5])}"
                          f"{', ...' if len(missing) > 5 else ''} (jitterscope.poll gives {buckets} buckets)")
    for fld in expected:
        if table.schema.field(fld.name).type != fld.type:
            raise SchemaError(f"{where}: column '{fld.name}' has type {table.schema.field(fld.name).type}, "
                              f"the contract says {fld.type}")
    return table.select(expected.names).replace_schema_metadata(None)


def _window_tables(path: Path, buckets: int) -> Iterator[pa.Table]:
    parts = poll_window_parts(path)
    if not parts:
        raise DatasetError(f"{path}: no per-second table {POLL_DIR}/part-*.parquet; a poll dataset is the capture's "
                           "directory with its _poll folder (copy or pack the whole directory)")
    for part in parts:
        try:
            table = pq.read_table(part)
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(f"{part}: not a readable Parquet file ({' '.join(str(exc).split())}); the per-second "
                               "table is damaged") from None
        yield _check_window_table(table, buckets, str(part))


# ---- the per-second table inside a packed file --------------------------------------------------------------

PACKED_WINDOWS_FORMAT = "parquet-zstd-base64"
"""How ``pack`` carries the per-second table inside its one file: ``jitterscope.pack.poll_windows.data`` is the
table as a zstd Parquet file (no metadata of its own), base64-encoded; ``sha256`` is :func:`content_sha256`."""


def content_sha256(table: pa.Table) -> str:
    """SHA-256 of a table's canonical column data: for each column in table order, its name, type and values as
    little-endian fixed-width integers, in row order.  Metadata is not included.  A pack's rows and its
    per-second table are checked with it (:mod:`jitterscope.io.pack`)."""
    digest = hashlib.sha256()
    for name in table.column_names:
        column = table.column(name)
        digest.update(f"{name}:{column.type}\n".encode())
        values = column.to_numpy(zero_copy_only=False)
        digest.update(np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).tobytes())
    return digest.hexdigest()


def pack_poll_windows(table: pa.Table, *, where: str = "") -> dict[str, Any]:
    """The per-second table as ``pack`` stores it in ``jitterscope.pack.poll_windows`` (one file, no folder).

    Raises
    ------
    DatasetError
        The encoded table is larger than one metadata value may be (:data:`~.contract.MAX_VALUE_BYTES`).
    """
    from .contract import MAX_VALUE_BYTES

    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(None), sink, compression="zstd", compression_level=15,
                   use_dictionary=False)
    data = base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")
    if len(data) > MAX_VALUE_BYTES - 4096:  # room for the rest of jitterscope.pack
        raise DatasetError(f"{where or 'the dataset'}: its per-second table packs to {len(data) >> 20} MiB, more "
                           f"than the {MAX_VALUE_BYTES >> 20} MiB one metadata value may hold; share the capture's "
                           "directory instead")
    return {"format": PACKED_WINDOWS_FORMAT, "rows": table.num_rows, "sha256": content_sha256(table), "data": data}


def _packed_window_table(dataset: Dataset, buckets: int) -> pa.Table | None:
    packed = (dataset.metadata.pack or {}).get("poll_windows")
    if packed is None:
        return None
    where = f"{dataset.path}: jitterscope.pack.poll_windows"
    if not isinstance(packed, dict) or packed.get("format") != PACKED_WINDOWS_FORMAT:
        raise SchemaError(f"{where} is not the format {PACKED_WINDOWS_FORMAT} this jitterscope writes; "
                          "pack the capture's directory again")
    try:
        raw = base64.b64decode(str(packed.get("data", "")), validate=True)
        table = pq.read_table(pa.BufferReader(raw))
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise DatasetError(f"{where} cannot be read ({' '.join(str(exc).split())[:200]}); the file is damaged, "
                           "pack the capture's directory again") from None
    table = _check_window_table(table, buckets, where)
    if content_sha256(table) != packed.get("sha256"):
        raise DatasetError(f"{where}: its checksum does not match the table; the per-second table was changed "
                           "after packing")
    return table


def _window_table(dataset: Dataset, *, ordered: bool = True) -> pa.Table | None:
    """The per-second table, all parts, contract-checked, sorted by thread and time (``ordered``; else as
    stored, for validate's order check); None for a single file without one (a pack of an older jitterscope)."""
    buckets = len(poll_edges(dataset.metadata)) - 1
    if Path(dataset.path).is_dir():
        table = pa.concat_tables(list(_window_tables(Path(dataset.path), buckets)))
    else:
        table = _packed_window_table(dataset, buckets)
        if table is None:
            return None
    return table.sort_by([("thread", "ascending"), ("window_start_ns", "ascending")]) if ordered else table


def read_poll_table(dataset: Dataset | str | os.PathLike[str]) -> pa.Table:
    """The per-second table of a poll dataset (a capture's directory, or a packed file), every part, sorted by
    thread and time: the one reader of ``_poll/`` (:func:`read_poll_windows` and the poll analyses use it).

    Columns: ``cpu``, ``thread``, ``window_start_ns``, ``window_ns``, ``iterations``, ``noise_ns``,
    ``interruptions``, ``max_gap_ns``, then ``h00`` ... one count per histogram bucket
    (:func:`poll_edges` gives the edges).  A gap is accounted to the window holding its start.

    Raises
    ------
    DatasetError
        No such dataset, or no readable per-second table.
    SchemaError
        Not a poll dataset, or the table breaks the contract.
    """
    from .files import open_dataset

    if isinstance(dataset, str | os.PathLike):
        dataset = open_dataset(dataset)
    table = _window_table(dataset)
    if table is None:
        raise DatasetError(f"{dataset.path}: a packed poll dataset without its per-second table (packed by an "
                           "older jitterscope); pack the capture's directory again")
    return table


def read_poll_windows(path: str | os.PathLike[str]) -> pd.DataFrame:
    """:func:`read_poll_table` as a pandas frame."""
    return read_poll_table(path).to_pandas()


def write_poll_dataset(path: str | os.PathLike[str], rows: pa.Table, windows: pa.Table, metadata: Metadata, *,
                       trace: TraceEvents | None = None, overwrite: bool = False,
                       inputs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Write a poll dataset directory as the capture lays it out: ``part-00000.parquet`` (the rows),
    ``POLL_DIR/part-00000.parquet`` (the per-second table) and, given ``trace``, ``_trace/``.

    For Python writers (simulate, importers).  The directory appears whole or not at all.  Columns are cast to
    the contract's types (:func:`poll_schema` for the rows, the optional columns when present;
    :func:`poll_window_schema` with as many buckets as ``jitterscope.poll.histogram_edges_ns`` has).

    Raises
    ------
    DatasetError
        ``path`` exists (without ``overwrite``) or cannot be written; columns missing.
    """
    from .atomic import check_output, write_directory_atomically
    from .trace import TRACE_DIR, write_trace_events

    out = check_output(path, inputs=inputs, overwrite=overwrite, directory=True)
    buckets = max(len((metadata.poll or {}).get("histogram_edges_ns") or []) - 1, 0)
    present = [c.name for c in POLL_COLUMNS if c.required or c.name in rows.column_names]
    main = _cast(rows, poll_schema(present), out)
    per_second = _cast(windows, poll_window_schema(buckets), out)
    kv = metadata.to_kv()
    if overwrite and out.is_dir():
        # --force over an earlier dataset: its tables are folders, which a rename cannot replace when not empty
        for old in (out / POLL_DIR, out / TRACE_DIR):
            shutil.rmtree(old, ignore_errors=True)
    with write_directory_atomically(out, what="the poll dataset") as tmp:
        pq.write_table(main.replace_schema_metadata(kv), tmp / "part-00000.parquet", compression="zstd",
                       use_dictionary=False)
        (tmp / POLL_DIR).mkdir()
        pq.write_table(per_second.replace_schema_metadata(kv), tmp / POLL_DIR / "part-00000.parquet",
                       compression="zstd", use_dictionary=False)
        if trace is not None:
            write_trace_events(trace, tmp)
    return out


def _cast(table: pa.Table, schema: pa.Schema, out: Path) -> pa.Table:
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise DatasetError(f"{out}: poll table lacks column(s) {', '.join(missing[:5])}")
    return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema)


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
    histogram_only = bool((metadata.source or {}).get("histogram_only"))
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
        if not finished or histogram_only:
            continue  # a running (crashed) capture's last rows may be ahead of its last window; an import of a
            # tool that keeps no interruption (oslat, rtla) has no rows to agree with
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
    try:
        table = _window_table(dataset, ordered=False)
    except (DatasetError, SchemaError) as exc:
        return rows, [*problems, str(exc)]
    if table is None:  # a pack of an older jitterscope wrote the rows alone
        notes.append("one file packed without its per-second table: the rows only; pack the capture's directory "
                     "again to keep it")
        return rows, problems[:_MAX_PROBLEMS]
    frame = table.to_pandas()
    finished = (meta.status or {}).get("state") in ("complete", "interrupted", None)
    problems += _window_problems(frame, edges, per, meta, finished)
    if not problems:
        seconds = frame["window_ns"].sum() / 1e9
        notes.append(f"poll: {rows} interruptions >= {threshold} ns in {seconds:.1f} s of polling on "
                     f"{len(meta.threads)} thread(s); per-second table of {len(frame)} windows agrees with the rows")
    return rows, problems[:_MAX_PROBLEMS]


__all__ = ["PACKED_WINDOWS_FORMAT", "POLL_WINDOW_COLUMNS", "content_sha256", "pack_poll_windows", "poll_edges",
           "poll_problems", "poll_window_parts", "read_poll_table", "read_poll_windows", "write_poll_dataset"]
