"""``export``: write a dataset in formats other tools read.

* ``csv``: every column plus ``latency_ns`` (sample datasets) or the bins
  (histogram datasets), streamed batch by batch; a dataset with a kernel trace
  also gets ``FILE.trace.csv`` beside (``FILE`` without its ``.csv``): every
  event of every part, event codes and string indices as their text.
* the other formats have no place for kernel events: the result says plainly
  that the trace was not exported.
* ``rt-tests-json``: the shape of ``cyclictest --json`` (rt-tests
  ``file_version`` 1, with its ``"cmdline:"`` key spelling): per thread a
  histogram of whole µs (latencies truncated toward zero, as cyclictest does),
  ``cycles``, ``min``, ``max``, ``avg`` (``%.2f`` µs), ``cpu``.
* ``hgrm``: HdrHistogram's percentile-distribution text (``Value Percentile
  TotalCount 1/(1-Percentile)``, values in µs, five ticks per half distance,
  ``#[Mean ...]`` footer), readable by HdrHistogram's plotter.  Percentiles
  come from :class:`jitterscope.histogram.LatencyHistogram` (0.1 % buckets).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .. import __version__
from ..dataset import (
    TRACE_COLUMNS,
    TRACE_EVENTS,
    Dataset,
    TraceTable,
    check_output,
    open_dataset,
    open_trace,
    write_atomically,
)
from ..errors import AnalysisError, DatasetError
from ..summary import HistogramResult, LatencyHistogram
from .names import EXPORT_FORMATS

HGRM_TICKS_PER_HALF_DISTANCE = 5


@dataclass(frozen=True)
class ExportResult:
    """What ``export`` wrote."""

    path: str
    format: str
    rows: int
    threads: tuple[int, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "rows": self.rows, "threads": list(self.threads),
                "notes": list(self.notes)}


def export_dataset(
    source: str | os.PathLike[str], fmt: str, output: str | os.PathLike[str], *,
    thread: int | None = None, overwrite: bool = False,
) -> ExportResult:
    """Export ``source`` to ``output`` in ``fmt`` (one of :data:`EXPORT_FORMATS`).

    Parameters
    ----------
    source
        A dataset.
    fmt
        ``csv``, ``rt-tests-json`` or ``hgrm``.
    output
        The file to write.
    thread
        Only this thread (``hgrm`` merges all threads otherwise).
    overwrite
        Replace ``output`` if it exists.

    Raises
    ------
    DatasetError
        Unknown format, unknown thread, unreadable dataset or unwritable output.
    AnalysisError
        The dataset holds no wake-ups to export.
    """
    if fmt not in EXPORT_FORMATS:
        raise DatasetError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    out = check_output(output, inputs=[source], overwrite=overwrite)
    dataset = open_dataset(source)
    known = tuple(t.thread for t in dataset.metadata.threads)
    if thread is not None and thread not in known:
        raise DatasetError(f"{source}: has no thread {thread} (threads: {', '.join(map(str, known))})")
    threads = known if thread is None else (thread,)
    trace = open_trace(dataset.path) if Path(dataset.path).is_dir() else None
    poll = dataset.metadata.kind == "poll"
    if poll and fmt != "csv":
        raise AnalysisError(f"{source}: a busy-poll dataset (kind poll) has interruptions, not wake-up latencies: "
                            f"{fmt} has no place for them; export it with --format csv (one row per interruption)")
    if fmt == "csv":
        trace_out = None
        if trace is not None:  # checked before anything is written: both files or neither
            trace_out = check_output(trace_csv_path(out), inputs=[source], overwrite=overwrite)
        with write_atomically(out) as tmp:
            rows = _write_csv(dataset, tmp, thread, latency=not poll)
        notes: tuple[str, ...] = ()
        if trace is not None and trace_out is not None:
            with write_atomically(trace_out) as tmp:
                events = _write_trace_csv(trace, tmp)
            notes = (f"kernel trace: {events} event(s) of {len(trace.parts)} part(s) written to {trace_out} "
                     f"(every CPU and thread: --thread selects samples only)",)
        return ExportResult(str(out), fmt, rows, threads, notes)
    histograms = _histograms(dataset, threads)
    if fmt == "rt-tests-json":
        text, notes = _rt_tests_json(dataset, histograms)
    else:
        merged = _merge(list(histograms.values()))
        text, notes = _hgrm(merged), ("values in µs",)
    if trace is not None:
        notes = (*notes, f"the kernel trace ({trace.num_rows} events in {dataset.path}/_trace) is not exported: "
                         f"{fmt} has no place for it; --format csv writes it beside the samples")
    with write_atomically(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return ExportResult(str(out), fmt, sum(h.count for h in histograms.values()), threads, tuple(notes))


def trace_csv_path(output: str | os.PathLike[str]) -> Path:
    """Where ``export --format csv`` writes a dataset's kernel trace: ``FILE.trace.csv`` beside ``FILE(.csv)``."""
    out = Path(output)
    stem = out.name[:-4] if out.name.lower().endswith(".csv") else out.name
    return out.with_name(f"{stem}.trace.csv")


_TRACE_TEXT = ("comm", "name", "other_comm")  # string-index columns, written as their text


def _write_trace_csv(trace: TraceTable, out: Path) -> int:
    """Every event of every part, streamed: event names and strings as text, the numbers as they are."""
    codes = {code: name for name, code in TRACE_EVENTS.items()}
    event_names = np.asarray([codes.get(i, f"code {i}") for i in range(max(codes) + 1)] + ["unknown"], dtype=object)
    strings = np.asarray([*trace.strings, ""], dtype=object)  # index -1 (and any out of range): ""
    fields = [pa.field(c.name, pa.string() if c.name in (*_TRACE_TEXT, "event") else c.arrow_type)
              for c in TRACE_COLUMNS]
    schema = pa.schema(fields)
    rows = 0
    with pacsv.CSVWriter(out, schema) as writer:
        for batch in trace.iter_batches():
            arrays = []
            for c in TRACE_COLUMNS:
                values = batch[c.name]
                if c.name == "event":
                    index = np.where((values >= 0) & (values < event_names.size - 1), values, event_names.size - 1)
                    arrays.append(pa.array(event_names[index], pa.string()))
                elif c.name in _TRACE_TEXT:
                    index = np.where((values >= 0) & (values < strings.size - 1), values, strings.size - 1)
                    arrays.append(pa.array(strings[index], pa.string()))
                else:
                    arrays.append(pa.array(values, c.arrow_type))
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            rows += len(batch["ts_ns"])
    return rows


# ---- CSV -----------------------------------------------------------------------------------------------

def _write_csv(dataset: Dataset, out: Path, thread: int | None, *, latency: bool = True) -> int:
    """Every column of every row; ``latency_ns`` added for wake-up rows (not for bins or poll interruptions)."""
    latency = latency and not dataset.is_histogram
    rows = 0
    writer = None
    try:
        for batch in _batches(dataset, thread):
            if latency:
                latency = pc.subtract(batch.column("actual_ns"), batch.column("expected_ns"))
                batch = pa.RecordBatch.from_arrays([*batch.columns, latency], names=[*batch.schema.names, "latency_ns"])
            if writer is None:
                writer = pacsv.CSVWriter(out, batch.schema)
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is None:  # an empty dataset still gets its header
            names = list(dataset.columns) + (["latency_ns"] if latency else [])
            out.write_text(",".join(f'"{n}"' for n in names) + "\n")
    finally:
        if writer is not None:
            writer.close()
    return rows


def _batches(dataset: Dataset, thread: int | None) -> Iterator[pa.RecordBatch]:
    for batch in dataset.iter_batches():
        if thread is not None:
            batch = batch.filter(pc.equal(batch.column("thread"), thread))
        if batch.num_rows:
            yield batch


# ---- histograms ------------------------------------------------------------------------------------------

@dataclass
class _Thread:
    """Exact per-thread numbers in whole µs, plus an HDR histogram of ns for percentiles."""

    thread: int
    cpu: int
    us_values: dict[int, int]
    count: int
    sum_us: float
    sumsq_us: float
    min_us: int | None
    max_us: int | None
    hdr: HistogramResult | None
    overflows: int = 0


def _histograms(dataset: Dataset, threads: tuple[int, ...]) -> dict[int, _Thread]:
    if dataset.is_histogram:
        return _from_bins(dataset, threads)
    hdr = {t: LatencyHistogram() for t in threads}
    counts: dict[int, dict[int, int]] = {t: {} for t in threads}
    sums = {t: [0, 0.0, 0.0, None, None] for t in threads}
    cpus = {t.thread: t.cpu for t in dataset.metadata.threads}
    for batch in dataset.iter_batches(["thread", "expected_ns", "actual_ns"]):
        thread_col = batch.column("thread").to_numpy()
        latency = batch.column("actual_ns").to_numpy() - batch.column("expected_ns").to_numpy()
        for t in threads:
            values = latency[thread_col == t]
            if not values.size:
                continue
            hdr[t].update(values)
            us = np.trunc(values / 1000.0).astype(np.int64) if values.min() < 0 else values // 1000
            keys, numbers = np.unique(us, return_counts=True)
            bucket = counts[t]
            for k, n in zip(keys.tolist(), numbers.tolist(), strict=True):
                bucket[k] = bucket.get(k, 0) + n
            acc = sums[t]
            acc[0] += values.size
            acc[1] += float(us.sum())
            acc[2] += float(np.square(values / 1000.0).sum())
            acc[3] = int(us.min()) if acc[3] is None else min(acc[3], int(us.min()))
            acc[4] = int(us.max()) if acc[4] is None else max(acc[4], int(us.max()))
    out = {}
    for t in threads:
        n, total, sumsq, low, high = sums[t]
        out[t] = _Thread(t, cpus.get(t, -1), counts[t], n, total, sumsq, low, high,
                         hdr[t].result() if n else None)
    return out


def _from_bins(dataset: Dataset, threads: tuple[int, ...]) -> dict[int, _Thread]:
    table = dataset.read()
    out = {}
    for info in dataset.metadata.threads:
        if info.thread not in threads:
            continue
        mask = np.asarray(table.column("thread")) == info.thread
        lower = np.asarray(table.column("bin_start_ns"))[mask]
        width = np.asarray(table.column("bin_width_ns"))[mask]
        counts = np.asarray(table.column("count"))[mask]
        us: dict[int, int] = {}
        for start, n in zip((lower // 1000).tolist(), counts.tolist(), strict=True):
            us[start] = us.get(start, 0) + n
        binned = int(counts.sum())
        mid_us = (lower + width / 2.0) / 1000.0
        hdr = HistogramResult.from_bins(lower, width, counts, min_ns=info.extra.get("min_ns"),
                                        max_ns=info.extra.get("max_ns")) if binned else None
        out[info.thread] = _Thread(
            info.thread, info.cpu, us, binned, float((lower // 1000 * counts).sum()),
            float((np.square(mid_us) * counts).sum()),
            None if info.extra.get("min_ns") is None else int(info.extra["min_ns"]) // 1000,
            None if info.extra.get("max_ns") is None else int(info.extra["max_ns"]) // 1000,
            hdr, overflows=int(info.extra.get("overflows", 0) or 0),
        )
    return out


def _merge(histograms: list[_Thread]) -> _Thread:
    parts = [h.hdr for h in histograms if h.hdr is not None]
    if not parts:
        raise AnalysisError("the dataset holds no binned wake-ups: nothing to export as a percentile distribution")
    if len(parts) == 1:
        merged = parts[0]
    else:
        lower = np.concatenate([np.asarray(p.bucket_lower_ns, float) for p in parts])
        upper = np.concatenate([np.asarray(p.bucket_upper_ns, float) for p in parts])
        counts = np.concatenate([np.asarray(p.bucket_counts) for p in parts])
        keys, inverse = np.unique(np.stack([lower, upper]), axis=1, return_inverse=True)
        summed = np.bincount(inverse.ravel(), weights=counts, minlength=keys.shape[1]).astype(np.int64)
        merged = HistogramResult(
            count=int(counts.sum()), min_ns=min(p.min_ns for p in parts), max_ns=max(p.max_ns for p in parts),
            bucket_lower_ns=tuple(keys[0].tolist()), bucket_upper_ns=tuple(keys[1].tolist()),
            bucket_counts=tuple(int(c) for c in summed), relative_error=max(p.relative_error for p in parts),
            discrete=all(p.discrete for p in parts),
        )
    total = sum(h.count for h in histograms)
    return _Thread(-1, -1, {}, total, sum(h.sum_us for h in histograms), sum(h.sumsq_us for h in histograms),
                   None, None, merged)


def _rt_tests_json(dataset: Dataset, histograms: dict[int, _Thread]) -> tuple[str, tuple[str, ...]]:
    meta = dataset.metadata
    env = meta.environment or {}
    notes = ["latencies in whole µs, truncated toward zero as cyclictest does"]
    threads_json = {}
    for index, (t, h) in enumerate(sorted(histograms.items())):
        cycles = h.count + h.overflows
        threads_json[str(index)] = {
            "histogram": {str(k): v for k, v in sorted(h.us_values.items())},
            "cycles": cycles,
            "min": h.min_us if h.min_us is not None else 0,
            "max": h.max_us if h.max_us is not None else 0,
            "avg": float(f"{h.sum_us / h.count:.2f}") if h.count else 0.0,
            "cpu": h.cpu,
            "node": 0,
        }
        if dataset.is_histogram:
            notes.append(f"thread {t}: from bins; overflows ({h.overflows}) counted in cycles only, avg from bin "
                         "lower edges")
    doc = {
        "file_version": 1,
        "cmdline:": f"jitterscope export {dataset.path} --format rt-tests-json",
        "rt_test_version:": f"jitterscope {__version__}",
        "return_code": 0,
        "sysinfo": {"sysname": "Linux", "nodename": env.get("hostname") or "unknown",
                    "release": env.get("kernel_release") or "unknown",
                    "version": env.get("kernel_version") or "unknown", "machine": env.get("machine") or "unknown",
                    "realtime": int(bool(env.get("preempt_rt")))},
        "num_threads": len(threads_json),
        "resolution_in_ns": 0,
        "thread": threads_json,
    }
    return json.dumps(doc, indent=2) + "\n", tuple(notes)


def _hgrm(h: _Thread) -> str:
    """HdrHistogram percentile distribution text of ``h`` (values in µs)."""
    hdr = h.hdr
    assert hdr is not None
    lower = np.asarray(hdr.bucket_lower_ns, dtype=np.float64)
    upper = np.asarray(hdr.bucket_upper_ns, dtype=np.float64)
    counts = np.asarray(hdr.bucket_counts, dtype=np.int64)
    ends = np.cumsum(counts)
    total = int(ends[-1])
    top = np.minimum(upper - (1 if hdr.discrete else 0), hdr.max_ns)  # highest value a bucket can hold
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}", ""]
    for percentile in _percentile_ticks():
        rank = max(1, math.ceil(percentile / 100.0 * total))
        if rank >= total:
            lines.append(f"{hdr.max_ns / 1000.0:12.3f} {1.0:14.12f} {total:10d}")
            break
        index = int(np.searchsorted(ends, rank, side="left"))
        value = hdr.min_ns if percentile == 0.0 else top[index]
        fraction = percentile / 100.0
        lines.append(f"{value / 1000.0:12.3f} {fraction:14.12f} {int(ends[index]):10d} {1 / (1 - fraction):14.2f}")
    mean = np.average((lower + upper) / 2.0, weights=counts) / 1000.0
    var = np.average(np.square((lower + upper) / 2.0 / 1000.0 - mean), weights=counts)
    lines.append(f"#[Mean    = {mean:12.3f}, StdDeviation   = {math.sqrt(var):12.3f}]")
    lines.append(f"#[Max     = {hdr.max_ns / 1000.0:12.3f}, Total count    = {total:12d}]")
    lines.append(f"#[Buckets = {len(counts):12d}, SubBuckets     = {round(1 / hdr.relative_error):12d}]")
    return "\n".join(lines) + "\n"


def _percentile_ticks() -> Iterator[float]:
    """HdrHistogram's percentile iteration: ticks halve the distance to 100 %, five per half."""
    percentile = 0.0
    while 100.0 - percentile > 1e-12:
        yield percentile
        ticks = HGRM_TICKS_PER_HALF_DISTANCE * 2 ** (int(math.log2(100.0 / (100.0 - percentile))) + 1)
        percentile += 100.0 / ticks
    yield 100.0
