"""Open, read and write jitterscope datasets (one Parquet file or a directory of parts).

Reading is streaming: :meth:`Dataset.iter_batches` yields Arrow record batches
row group by row group, so memory stays bounded by one row group whatever the
dataset's size.  :func:`iter_thread_batches` splits them by thread (each
thread's rows in order) and checks the contract's invariants on the way.
Writing is for importers, ``simulate`` and ``pack``; the capture binary
writes its own files in C.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DatasetError, SchemaError
from .atomic import check_output, write_atomically
from .contract import check_footer_size, check_samples, rows_from_row_groups
from .invariants import InvariantChecker
from .metadata import Metadata, ThreadInfo
from .schema import HISTOGRAM_COLUMNS, POLL_COLUMNS, SAMPLE_COLUMNS, histogram_schema, poll_schema, sample_schema

PART_GLOB = "part-*.parquet"
READER_THREAD_PREFIX = "jitterscope-read"
"""Name prefix of the read-ahead thread of :meth:`Dataset.iter_batches` (tests look for it)."""
PREFETCH = 2
"""Row groups decoded ahead of the one being used: two keep the reader busy while the caller checks and splits
a batch and its workers compute."""


@dataclass(frozen=True)
class Dataset:
    """An opened dataset: its files, decoded metadata and Arrow schema."""

    path: Path
    files: tuple[Path, ...]
    metadata: Metadata
    schema: pa.Schema
    num_rows: int

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.schema.names)

    @property
    def is_histogram(self) -> bool:
        return self.metadata.kind == "histogram"

    def has(self, *columns: str) -> bool:
        return all(c in self.schema.names for c in columns)

    def iter_batches(
        self, columns: Sequence[str] | None = None, *, threads: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """Yield record batches in file order (parts in name order, row groups in order).

        With ``threads`` the next ``PREFETCH`` row groups are decoded in a background thread
        while the caller works on the current one (pyarrow and numpy release the
        GIL), their columns in parallel on pyarrow's CPU pool, so at most ``PREFETCH + 1``
        row groups are in memory.  Without, everything runs in the calling thread, one
        row group at a time: one core, for callers that get their parallelism
        from running many readers at once (a fleet's Dask tasks).
        """
        wanted = list(columns) if columns is not None else list(self.schema.names)
        absent = [c for c in wanted if c not in self.schema.names]
        if absent:
            raise SchemaError(f"{self.path}: dataset has no column(s) {', '.join(absent)}")
        groups = self._row_groups()
        if not threads:
            for file, parquet, group in groups:
                yield from _read_group(file, parquet, group, wanted, use_threads=False).to_batches()
            return
        # one reader thread: three reading row groups of one ParquetFile at once hung here (pyarrow)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix=READER_THREAD_PREFIX) as pool:
            pending: deque[Future[pa.Table]] = deque()
            for file, parquet, group in groups:
                pending.append(pool.submit(_read_group, file, parquet, group, wanted, use_threads=True))
                if len(pending) > PREFETCH:
                    yield from pending.popleft().result().to_batches()
            while pending:
                yield from pending.popleft().result().to_batches()

    def thread_maxima(self, columns: Sequence[str]) -> dict[int, dict[str, int]] | None:
        """Each thread's largest value of integer ``columns``, from the row groups' statistics alone.

        What a query engine's filter would use, without decoding a page.  ``None`` (read the values
        instead) unless every row group holds one thread (``thread`` minimum equal to its maximum, as
        the capture and the writers here lay them out) and carries a minimum and maximum of every
        column, none negative (an unsigned counter past 2**63 reads as negative in int64).
        """
        maxima: dict[int, dict[str, int]] = {}
        for _, parquet, group in self._row_groups():
            meta = parquet.metadata.row_group(group)
            if meta.num_rows == 0:
                continue
            names = {meta.column(i).path_in_schema: i for i in range(meta.num_columns)}
            ranges = {}
            for name in ("thread", *columns):
                stats = meta.column(names[name]).statistics if name in names else None
                if stats is None or not stats.has_min_max or not isinstance(stats.max, int) or stats.min < 0:
                    return None
                ranges[name] = (stats.min, stats.max)
            low, high = ranges.pop("thread")
            if low != high:
                return None
            mine = maxima.setdefault(int(low), {})
            for name, (_, top) in ranges.items():
                mine[name] = max(mine.get(name, 0), int(top))
        return maxima

    def _row_groups(self) -> Iterator[tuple[Path, pq.ParquetFile, int]]:
        for file in self.files:
            parquet = _open_parquet(file)
            for group in range(parquet.num_row_groups):
                yield file, parquet, group

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Read the whole dataset (or some columns) into memory."""
        batches = list(self.iter_batches(columns))
        schema = self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        return pa.Table.from_batches(batches, schema=schema)


def iter_thread_batches(
    dataset: Dataset, columns: Sequence[str], *, check: bool = True, threads: bool = True,
) -> Iterator[tuple[ThreadInfo, pa.RecordBatch]]:
    """Yield ``(thread info, batch)`` with the rows of one thread per batch, in bounded memory.

    One pass over the dataset in file order.  Each thread's rows come in
    order (``seq`` increasing) across the batches yielded for it; batches of
    different threads interleave as the rows do in the files.  Each batch has
    exactly ``columns``.

    Parameters
    ----------
    dataset
        An opened sample dataset (not kind ``histogram``).
    columns
        Columns wanted in the batches.
    check
        Check the contract's per-thread invariants while reading (strictly
        increasing ``seq`` and ``expected_ns``, steps that are whole multiples of
        the interval and agree with ``overruns``, drops equal to the ``seq`` gaps)
        and raise at the first violation.
    threads
        Read ahead in a background thread and decode on pyarrow's thread pool
        (as :meth:`Dataset.iter_batches`); False keeps the reading on the
        calling thread, one core.

    Raises
    ------
    SchemaError
        A row belongs to a thread the metadata does not list, or (with ``check``)
        the rows break an invariant.
    DatasetError
        A row group cannot be read.
    """
    if dataset.is_histogram:
        raise SchemaError(f"{dataset.path}: a histogram dataset has no per-wake-up rows to iterate")
    if dataset.metadata.kind == "poll":
        yield from _iter_poll_thread_batches(dataset, list(columns), check=check, threads=threads)
        return
    columns = list(columns)
    checked = ["cpu", "seq", "expected_ns", "actual_ns"] + (["overruns"] if dataset.has("overruns") else [])
    needed = list(dict.fromkeys(["thread", *columns, *(checked if check else [])]))
    checker = InvariantChecker(dataset.metadata, where=str(dataset.path), strict=True)
    for batch in dataset.iter_batches(needed, threads=threads):
        thread_of_row = column_values(batch, "thread")
        for thread, rows in _split_by_thread(thread_of_row, batch):
            info = checker.info(thread)
            assert info is not None  # strict: an unknown thread raised
            if check:
                arrays = [column_values(rows, c) for c in checked]
                checker.check(thread, *arrays[:4], arrays[4] if len(arrays) > 4 else None)
            yield info, rows.select(columns)
    if check:
        checker.finish(dataset.has("overruns"))


def _iter_poll_thread_batches(
    dataset: Dataset, columns: list[str], *, check: bool, threads: bool,
) -> Iterator[tuple[ThreadInfo, pa.RecordBatch]]:
    """:func:`iter_thread_batches` of a poll dataset: each thread's ``seq`` and ``start_ns`` strictly increase."""
    needed = list(dict.fromkeys(["thread", *columns, *(["seq", "start_ns"] if check else [])]))
    infos = {info.thread: info for info in dataset.metadata.threads}
    last: dict[int, tuple[int, int]] = {}
    for batch in dataset.iter_batches(needed, threads=threads):
        for thread, rows in _split_by_thread(column_values(batch, "thread"), batch):
            if thread not in infos:
                raise SchemaError(f"{dataset.path}: rows of thread {thread}, which metadata jitterscope.threads does "
                                  "not list; 'jitterscope validate' lists every problem")
            if check and rows.num_rows:
                seq, start = column_values(rows, "seq"), column_values(rows, "start_ns")
                before = last.get(thread)
                if ((np.diff(seq) < 1).any() or (np.diff(start) < 1).any()
                        or (before is not None and (seq[0] <= before[0] or start[0] <= before[1]))):
                    raise SchemaError(f"{dataset.path}: thread {thread}: seq or start_ns not strictly increasing; "
                                      "'jitterscope validate' lists every problem")
                last[thread] = (int(seq[-1]), int(start[-1]))
            yield infos[thread], rows.select(columns)


_NUMPY_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
                pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
                pa.float32(): np.float32, pa.float64(): np.float64}


def column_values(batch: pa.RecordBatch | pa.Table, column: str | int) -> np.ndarray:
    """One column as a numpy array: a read-only view of Arrow's buffer for fixed-width numbers without nulls.

    The same values as ``batch.column(column).to_numpy()``, which imports pandas on its first call in a
    process (pyarrow's conversion initialises its pandas support: 0.2 s of CPU, more on a busy machine) even
    where no pandas object is made; reading a column needs none of it.  Other columns (nulls, several chunks,
    other types) go through ``to_numpy``.

    Parameters
    ----------
    batch
        A record batch or table.
    column
        Its name or index.

    Returns
    -------
    numpy.ndarray
    """
    values = batch.column(column)
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks != 1:
            return values.to_numpy()
        values = values.chunk(0)
    dtype = _NUMPY_TYPES.get(values.type)
    if dtype is None or values.null_count:
        return values.to_numpy(zero_copy_only=False)
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(values.buffers()[1], dtype=dtype, count=len(values), offset=values.offset * itemsize)


def _split_by_thread(threads: np.ndarray, batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    if threads.size == 0:
        return
    first = int(threads[0])
    if threads.min() == threads.max():  # the common case: a row group holds one thread
        yield first, batch
        return
    order = np.argsort(threads, kind="stable")  # stable keeps each thread's rows in order
    sorted_threads = threads[order]
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(sorted_threads)) + 1, [threads.size]])
    for start, stop in itertools.pairwise(bounds.tolist()):
        yield int(sorted_threads[start]), _take_rows(batch, order[start:stop])


def _take_rows(batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
    """``batch.take(rows)``: fixed-width columns without nulls gathered by numpy into new Arrow buffers.

    ``RecordBatch.take`` goes through pyarrow.compute, whose import alone costs 0.1-0.2 s of CPU in every
    command that reads a real capture (its row groups hold every thread); the numbers are the same.  A batch
    with any other column (nulls, strings) keeps Arrow's take.
    """
    arrays = []
    for i, field in enumerate(batch.schema):
        column = batch.column(i)
        dtype = _NUMPY_TYPES.get(field.type)
        if dtype is None or column.null_count:
            return batch.take(_indices(rows))
        values = column_values(batch, i).take(rows)
        arrays.append(pa.Array.from_buffers(field.type, values.size, [None, pa.py_buffer(values)]))
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def _indices(values: np.ndarray) -> pa.Array:
    """int64 row numbers as an Arrow array over the same memory: ``pa.array`` of a numpy array imports pandas (its
    first call in a process looks for pandas objects), 0.2 s and 60 MB that reading a dataset does not need."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), values.size, [None, pa.py_buffer(values)])


def open_dataset(path: str | os.PathLike[str], *, check_counts: bool = True) -> Dataset:
    """Open a dataset file or directory, decode its metadata and check it against the contract and the data.

    This is the gate every command passes: the metadata's types, ranges and sizes
    (:mod:`.contract`), the row count from the row groups (not the footer's total alone),
    every part from the same run, and the per-thread samples adding up to the rows.

    Parameters
    ----------
    path
        A dataset file or directory of parts.
    check_counts
        Refuse a dataset whose ``threads[].samples`` do not add up to its rows.  ``validate``
        turns it off to report, thread by thread, what its full pass finds.

    Raises
    ------
    DatasetError
        The path is missing, empty, or not readable Parquet.
    SchemaError
        The files are Parquet but not a jitterscope dataset of a supported version,
        or their columns break the contract.
    """
    root = Path(path)
    if not root.exists():
        raise DatasetError(f"{root}: no such file or directory")
    files = _dataset_files(root)
    parquet_files = [_open_parquet(f) for f in files]
    last = parquet_files[-1]
    metadata = Metadata.from_kv(last.schema_arrow.metadata, where=str(files[-1]))
    schema = _check_columns(last.schema_arrow, metadata.kind, str(files[-1]))
    for file, parquet in zip(files[:-1], parquet_files[:-1], strict=True):
        if parquet.schema_arrow.remove_metadata() != schema:
            raise SchemaError(f"{file}: columns differ from {files[-1].name}; the parts belong to different datasets")
    clock = _start_time(last)
    for file, parquet in zip(files[:-1], parquet_files[:-1], strict=True):
        other = _start_time(parquet)
        if clock is not None and other is not None and other != clock:
            raise SchemaError(f"{file}: started at another time than {files[-1].name} (metadata jitterscope.clock "
                              "differs); the parts belong to different runs: keep each run's parts in its own "
                              "directory")
    file_rows = [(str(f), p.metadata.num_rows, sum(p.metadata.row_group(g).num_rows
                                                   for g in range(p.num_row_groups)))
                 for f, p in zip(files, parquet_files, strict=True)]
    num_rows = rows_from_row_groups(file_rows)
    if check_counts:
        check_samples(kind=metadata.kind, threads=metadata.threads, rows=num_rows, where=str(root))
    return Dataset(path=root, files=tuple(files), metadata=metadata, schema=schema, num_rows=num_rows)


def _start_time(parquet: pq.ParquetFile) -> tuple[object, object] | None:
    """The (realtime, monotonic) start pair a part records, which every part of one run shares."""
    raw = (parquet.schema_arrow.metadata or {}).get(b"jitterscope.clock")
    try:
        clock = json.loads(raw) if raw is not None and len(raw) < 1 << 16 else None
    except ValueError:
        return None
    return (clock.get("realtime_ns"), clock.get("monotonic_ns")) if isinstance(clock, dict) else None


def write_dataset(
    table: pa.Table,
    metadata: Metadata,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    inputs: Sequence[str | os.PathLike[str]] = (),
    compression: str = "zstd",
    row_group_size: int = 1 << 20,
) -> Path:
    """Write ``table`` with ``metadata`` as one Parquet file at ``path``.

    The table's columns are cast to the contract types and put in contract order.  ``inputs`` (the files
    the table was made from) are never overwritten; an existing ``path`` only with ``overwrite``.
    """
    out = check_output(path, inputs=inputs, overwrite=overwrite)
    table = _contract_table(table, metadata.kind).replace_schema_metadata(metadata.to_kv())
    _check_columns(table.schema, metadata.kind, str(out))
    with write_atomically(out) as tmp:
        pq.write_table(
            table, tmp, compression=compression, row_group_size=row_group_size,
            use_dictionary=False, write_statistics=True,
        )
    return out


def _contract_table(table: pa.Table, kind: str) -> pa.Table:
    """``table`` with the contract's column types, in contract order (unknown columns refused)."""
    if kind == "poll":
        expected = poll_schema([c for c in table.column_names if c in {col.name for col in POLL_COLUMNS}])
    else:
        expected = histogram_schema() if kind == "histogram" else sample_schema(
            [c for c in table.column_names if c in {col.name for col in SAMPLE_COLUMNS}]
        )
    extra = set(table.column_names) - set(expected.names)
    if extra:
        raise SchemaError(f"not dataset columns: {', '.join(sorted(extra))}")
    return table.select(expected.names).cast(expected)


class DatasetStream:
    """A dataset file being written row group by row group (from :func:`stream_dataset`).

    :meth:`write` tables of one kind and one set of columns, in any number; :meth:`finish` with the
    metadata once everything is written (metadata that counts rows can only be known then).  Rows are
    buffered up to one row group, so memory is bounded by ``row_group_size`` rows, not by the dataset.
    """

    def __init__(self, tmp: Path, out: Path, compression: str, row_group_size: int) -> None:
        self._tmp, self._out = tmp, out
        self._compression, self._row_group_size = compression, row_group_size
        self._writer: pq.ParquetWriter | None = None
        self._kind: str | None = None
        self._schema: pa.Schema | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self.rows = 0
        """Rows written so far (buffered ones included)."""
        self.metadata: Metadata | None = None

    def write(self, table: pa.Table, kind: str) -> None:
        """Add ``table``'s rows (``kind``: ``"histogram"`` or a sample kind; the same columns every time)."""
        table = _contract_table(table, kind)
        if self._schema is None:
            self._kind, self._schema = kind, table.schema
        elif table.schema != self._schema or (kind == "histogram") != (self._kind == "histogram"):
            raise SchemaError(f"{self._out}: a table with columns {table.column_names} written after "
                              f"{self._schema.names}; one dataset has one set of columns")
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        self.rows += table.num_rows
        if self._pending_rows >= self._row_group_size:
            self._flush(whole_groups_only=True)

    def discard(self) -> None:
        """Forget every row written so far (an importer that must start over, e.g. a second pass)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._tmp.unlink(missing_ok=True)
        self._pending, self._pending_rows, self.rows = [], 0, 0
        self._kind = self._schema = None

    def finish(self, metadata: Metadata) -> None:
        """Write the buffered rows and the footer with ``metadata`` (its kind must be that of the rows)."""
        if self._schema is None:
            raise SchemaError(f"{self._out}: nothing was written (not even the columns); no dataset to finish")
        if (metadata.kind == "histogram") != (self._kind == "histogram"):
            raise SchemaError(f"{self._out}: {metadata.kind} metadata for rows of kind {self._kind}")
        _check_columns(self._schema, metadata.kind, str(self._out))
        self._flush(whole_groups_only=False)
        writer = self._open()
        # the Arrow schema is not stored (store_schema=False), so readers take this key-value metadata
        writer.add_key_value_metadata(metadata.to_kv())
        writer.close()
        self._writer = None
        self.metadata = metadata

    def _open(self) -> pq.ParquetWriter:
        if self._writer is None:
            assert self._schema is not None
            self._writer = pq.ParquetWriter(
                self._tmp, self._schema, compression=self._compression, use_dictionary=False,
                write_statistics=True, store_schema=False,
            )
        return self._writer

    def _flush(self, *, whole_groups_only: bool) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending)  # no copy: the writer takes the chunks as they are
        keep = table.num_rows % self._row_group_size if whole_groups_only else 0
        head = table.slice(0, table.num_rows - keep)
        if head.num_rows:
            self._open().write_table(head, row_group_size=self._row_group_size)
        self._pending = [table.slice(table.num_rows - keep)] if keep else []
        self._pending_rows = keep

    def _close(self) -> None:
        """Close the file if it is open (an unfinished stream: its temporary is then removed)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


@contextmanager
def stream_dataset(
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    inputs: Sequence[str | os.PathLike[str]] = (),
    compression: str = "zstd",
    row_group_size: int = 1 << 20,
) -> Iterator[DatasetStream]:
    """Write a dataset at ``path`` row group by row group: the file appears only when complete.

    The output is checked as by :func:`write_dataset` before anything is read or written; rows go into a
    temporary beside it, renamed over ``path`` when the block ends after :meth:`DatasetStream.finish`.  An
    error, Ctrl-C or SIGTERM inside the block (or a block that never calls ``finish``) leaves no file and
    no temporary.

    Examples
    --------
    >>> with stream_dataset("out.parquet") as stream:  # doctest: +SKIP
    ...     for table in tables:
    ...         stream.write(table, "import")
    ...     stream.finish(metadata)
    """
    out = check_output(path, inputs=inputs, overwrite=overwrite)
    with write_atomically(out) as tmp:
        stream = DatasetStream(tmp, out, compression, row_group_size)
        try:
            yield stream
        finally:
            stream._close()
        if stream.metadata is None:
            raise SchemaError(f"{out}: the dataset was not finished (no metadata written); nothing was kept")


def _dataset_files(root: Path) -> list[Path]:
    if root.is_dir():
        files = sorted(root.glob(PART_GLOB)) or sorted(root.glob("*.parquet"))
        if not files:
            raise DatasetError(f"{root}: directory holds no Parquet files (expected {PART_GLOB})")
        return files
    return [root]


def _open_parquet(file: Path) -> pq.ParquetFile:
    try:
        if file.stat().st_size == 0:
            raise DatasetError(f"{file}: file is empty (0 bytes); the capture wrote nothing")
        check_footer_size(file)  # before pyarrow decodes (and allocates) what the footer claims
        return pq.ParquetFile(file)
    except DatasetError:
        raise
    except OSError as exc:
        if exc.errno is not None:
            raise DatasetError(f"{file}: cannot open ({exc.strerror})") from None
        raise DatasetError(
            f"{file}: not a readable Parquet file ({_one_line(exc)}); "
            "if a capture was killed mid-write, run 'jitterscope validate' on it"
        ) from None
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        # a damaged footer can decode to a column name that is not UTF-8
        raise DatasetError(
            f"{file}: not a readable Parquet file ({_one_line(exc)}); "
            "if it is another tool's output, use 'jitterscope import'"
        ) from None


def _check_columns(schema: pa.Schema, kind: str, where: str) -> pa.Schema:
    contract = HISTOGRAM_COLUMNS if kind == "histogram" else POLL_COLUMNS if kind == "poll" else SAMPLE_COLUMNS
    by_name = {c.name: c for c in contract}
    for col in contract:
        if col.required and col.name not in schema.names:
            raise SchemaError(f"{where}: required column '{col.name}' is missing")
    for fld in schema:
        col = by_name.get(fld.name)
        if col is None:
            continue  # unknown columns are tolerated and ignored
        if fld.type != col.arrow_type:
            raise SchemaError(
                f"{where}: column '{fld.name}' has type {fld.type}, the contract says {col.arrow_type}"
            )
    return schema.remove_metadata()


def _read_group(file: Path, parquet: pq.ParquetFile, group: int, columns: list[str], *,
                use_threads: bool) -> pa.Table:
    try:
        return parquet.read_row_group(group, columns=columns, use_threads=use_threads)
    except (OSError, pa.ArrowException) as exc:
        raise DatasetError(
            f"{file}: row group {group} cannot be read ({_one_line(exc)}); "
            "the file is damaged — 'jitterscope validate' says what is still readable"
        ) from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
