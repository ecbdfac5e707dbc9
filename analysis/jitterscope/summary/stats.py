"""Latency statistics of a dataset in one streaming pass: :func:`summarize` -> :class:`Summary`.

The accumulators live in :mod:`jitterscope.histogram` (the HDR histogram) and
:mod:`jitterscope.accumulators` (moments, top spikes, interval blocks,
cyclictest's line) and are re-exported here, so ``from jitterscope.stats
import LatencyHistogram`` works.  Per thread: the latency histogram (all
percentiles, mode, MAD), exact moments, the period-error histogram, top
spikes with neighbours, cyclictest's numbers, and optionally periodic_timer's
interval blocks; the ``overall`` row merges the threads.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..dataset import Dataset, ThreadInfo, column_values, iter_thread_batches
from ..errors import AnalysisError
from .accumulators import (
    CyclictestResult,
    CyclictestStats,
    IntervalBlock,
    IntervalResult,
    IntervalStats,
    Moments,
    MomentsResult,
    Spike,
    SpikesResult,
    TopSpikes,
    cyclictest_us,
)
from .histogram import HistogramResult, LatencyHistogram

__all__ = [
    "PERCENTILES", "CyclictestResult", "CyclictestStats", "DatasetProvenance", "HistogramResult",
    "IntervalBlock", "IntervalResult", "IntervalStats", "LatencyHistogram", "Moments", "MomentsResult",
    "Spike", "SpikesResult", "Summary", "ThreadSummary", "TopSpikes", "cyclictest_us", "is_summary_only",
    "summarize",
]

PERCENTILES: tuple[str, ...] = ("50", "90", "99", "99.9", "99.99", "99.999")
"""Percentile keys of :attr:`ThreadSummary.percentiles` (strings, as printed)."""

OVERALL = -1
"""``thread`` and ``cpu`` of the all-threads row."""


@dataclass(frozen=True)
class ThreadSummary:
    """Latency statistics of one thread (or of all: ``thread == cpu == -1``), in ns.

    ``mean_ns``/``std_ns`` are exact (population std); percentiles, ``mad_ns``
    and ``mode_ns`` come from the histogram (relative error <= its
    ``relative_error``/2 for percentiles).  ``period_error`` is the histogram of
    measured period minus interval (None when no two consecutive rows exist);
    ``cyclictest`` holds cyclictest's µs line numbers (None for the overall row
    and for histogram datasets).

    ``summary_only``: the source kept only count/min/avg/max per thread (cyclictest
    ``-q``/``--json`` without histogram, jitterdebugger's stdout, periodic_timer logs);
    then ``n``, ``min_ns``, ``mean_ns`` (the source's avg) and ``max_ns`` are the source's
    numbers (None when it printed none) and every other statistic is None.
    """

    thread: int
    cpu: int
    tid: int | None
    policy: str | None
    priority: int | None
    interval_ns: int | None
    n: int
    min_ns: float | None
    max_ns: float | None
    mean_ns: float | None
    std_ns: float | None
    mad_ns: float | None
    mode_ns: float | None
    percentiles: dict[str, float | None]
    overruns: int | None
    drops: int | None
    histogram: HistogramResult | None
    period_error: HistogramResult | None
    spikes: SpikesResult
    cyclictest: CyclictestResult | None = None
    summary_only: bool = False
    overflows: int = 0
    """Wake-ups of a histogram source above its range (counted in ``n``, their values unknown)."""
    percentiles_above: dict[str, float] = dataclasses.field(default_factory=dict)
    """Percentiles that fall among the overflows: only a lower bound is known (``percentiles`` holds None);
    printed "> bound"."""

    def to_json(self, *, histograms: bool = True) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["spikes"] = self.spikes.to_json()
        out["cyclictest"] = None if self.cyclictest is None else self.cyclictest.to_json()
        out["percentiles"] = dict(self.percentiles)
        out["percentiles_above"] = dict(self.percentiles_above)
        if histograms:
            out["histogram"] = None if self.histogram is None else self.histogram.to_json()
            out["period_error"] = None if self.period_error is None else self.period_error.to_json()
        else:
            del out["histogram"], out["period_error"]
        return out


@dataclass(frozen=True)
class DatasetProvenance:
    """Which dataset a result describes."""

    path: str
    kind: str
    files: int
    rows: int
    schema_version: int
    tool: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Summary:
    """Per-thread and overall latency statistics; ``intervals`` when asked for."""

    threads: tuple[ThreadSummary, ...]
    overall: ThreadSummary
    dataset: DatasetProvenance
    intervals: IntervalResult | None = None

    @property
    def summary_only(self) -> bool:
        """True when every thread is summary-only: only count/min/avg/max are known."""
        return all(t.summary_only for t in self.threads)

    def thread(self, index: int) -> ThreadSummary:
        for summary in self.threads:
            if summary.thread == index:
                return summary
        raise KeyError(index)

    def to_json(self, *, histograms: bool = False) -> dict[str, Any]:
        """JSON-ready dict; bucket arrays only with ``histograms=True`` (they are large)."""
        return {
            "dataset": self.dataset.to_json(),
            "threads": [t.to_json(histograms=histograms) for t in self.threads],
            "overall": self.overall.to_json(histograms=histograms),
            "intervals": None if self.intervals is None else self.intervals.to_json(),
        }


class _ThreadAccumulators:
    def __init__(self, info: ThreadInfo, top_k: int) -> None:
        self.info = info
        self.histogram = LatencyHistogram()
        self.moments = Moments()
        self.period_error = LatencyHistogram()
        self.spikes = TopSpikes(k=top_k)
        self.cyclictest = CyclictestStats()
        self.last: tuple[int, int] | None = None  # (seq, actual_ns) of the previous row
        self.overruns = 0

    def update(self, seq: np.ndarray, expected: np.ndarray, actual: np.ndarray, overruns: np.ndarray | None) -> None:
        latency = actual - expected
        extremes = (int(latency.min()), int(latency.max())) if latency.size else None  # found once, used thrice
        self.histogram.update(latency, extremes=extremes)
        self.moments.update(latency, extremes=extremes)
        self.spikes.update(self.info.thread, self.info.cpu, seq, actual, latency)
        # iter_thread_batches checked the order
        self.cyclictest.update(actual, expected, sorted_expected=True, latency_ns=latency, extremes=extremes)
        if overruns is not None:
            self.overruns += int(overruns.sum())
        # periods within the batch, and the one joining it to the previous batch; a period across a drop is none
        interval = self.info.interval_ns
        if seq.size and seq[-1] - seq[0] != seq.size - 1:  # seq strictly increases, so this means a gap
            error = actual[1:] - actual[:-1]
            error -= interval
            self.period_error.update(error[seq[1:] - seq[:-1] == 1])
        else:  # no drop (the usual batch): every difference is a period, counted block by block in cache
            self.period_error.update_steps(actual, interval)
        if self.last is not None and seq[0] - self.last[0] == 1:
            self.period_error.update(np.array([actual[0] - self.last[1] - interval], dtype=np.int64))
        self.last = (int(seq[-1]), int(actual[-1]))


class _OrderedWorkers:
    """Runs the updates of each measuring thread in order, on one of ``workers`` threads.

    The updates of one thread must stay in order (spikes and periods look across batches), those of different
    threads are independent: thread ``t`` always goes to the same worker, and at most two batches per worker
    wait, which bounds memory to a few row groups.
    """

    def __init__(self, workers: int) -> None:
        self._pools = [ThreadPoolExecutor(max_workers=1, thread_name_prefix="jitterscope-summary")
                       for _ in range(workers)]
        self._slots: dict[int, int] = {}
        self._pending: deque[Future[None]] = deque()

    def submit(self, thread: int, update: Callable[..., None], *args: Any) -> None:
        while len(self._pending) >= 2 * len(self._pools):
            self._pending.popleft().result()  # re-raises what the update raised
        slot = self._slots.setdefault(thread, len(self._slots) % len(self._pools))
        self._pending.append(self._pools[slot].submit(update, *args))

    def finish(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def __enter__(self) -> _OrderedWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)


def summarize(
    dataset: Dataset,
    *,
    progress: bool = False,
    top_k: int = 20,
    interval_block: int | None = None,
    tolerance_ns: int = 1_000,
) -> Summary:
    """Latency statistics of every thread and of all together, in one streaming pass.

    Parameters
    ----------
    dataset
        An opened dataset (see :func:`jitterscope.dataset.open_dataset`).
    progress
        Show a tqdm progress bar on stderr.
    top_k
        Number of top spikes kept per thread (and overall).
    interval_block, tolerance_ns
        When ``interval_block`` is given, also compute periodic_timer's blocks
        of that many periods with that error tolerance.

    Returns
    -------
    Summary

    Raises
    ------
    AnalysisError
        The dataset has no rows (a summary-only import, see :func:`is_summary_only`, gives
        its threads' count/min/avg/max with ``summary_only`` set instead).
    SchemaError
        The rows break the contract's invariants (checked while reading).

    Notes
    -----
    Memory is bounded by one row group plus O(threads x histogram buckets).
    """
    if is_summary_only(dataset):
        return _summarize_source(dataset)
    if dataset.is_histogram:
        return _summarize_histogram(dataset)
    settings = _policy(dataset.metadata.granted)
    has_overruns = dataset.has("overruns")
    columns = ["seq", "expected_ns", "actual_ns"] + (["overruns"] if has_overruns else [])
    accumulators: dict[int, _ThreadAccumulators] = {}
    intervals = None if interval_block is None else IntervalStats(interval_block, tolerance_ns)
    workers = max(1, min(len(dataset.metadata.threads), os.cpu_count() or 1))
    with _progress_bar(progress, total=dataset.num_rows, unit="rows", unit_scale=True, desc="summary",
                       leave=False) as bar, _OrderedWorkers(workers) as pool:
        for info, batch in iter_thread_batches(dataset, columns):
            arrays = [column_values(batch, i) for i in range(batch.num_columns)]
            acc = accumulators.get(info.thread)
            if acc is None:
                acc = accumulators[info.thread] = _ThreadAccumulators(info, top_k)
            overruns = arrays[3] if has_overruns else None
            # each thread's batches in order on one worker; threads in parallel (numpy drops the GIL in its loops)
            pool.submit(info.thread, acc.update, arrays[0], arrays[1], arrays[2], overruns)
            if intervals is not None:
                intervals.update(info.thread, info.interval_ns, arrays[0], arrays[2])
            bar.update(batch.num_rows)
        pool.finish()
    if not accumulators:
        raise AnalysisError(f"{dataset.path}: the dataset has no rows (no wake-ups were recorded)")
    if not has_overruns:  # no column (an import that fires every target): the count its metadata reconstructs
        for acc in accumulators.values():
            acc.overruns = acc.info.overruns
    threads = tuple(_thread_summary(accumulators[t], settings) for t in sorted(accumulators))
    overall = _overall(list(accumulators.values()), threads, settings, top_k)
    return Summary(threads=threads, overall=overall, dataset=_provenance(dataset),
                   intervals=None if intervals is None else intervals.result())


def is_summary_only(dataset: Dataset) -> bool:
    """True for a histogram dataset without bins whose every thread is ``summary_only`` (see the format doc).

    Parameters
    ----------
    dataset
        An opened dataset.

    Returns
    -------
    bool
    """
    threads = dataset.metadata.threads
    return (dataset.is_histogram and dataset.num_rows == 0 and bool(threads)
            and all(t.extra.get("summary_only") is True for t in threads))


def _summarize_source(dataset: Dataset) -> Summary:
    """What a summary-only source printed, per thread and over all threads; nothing else is known."""
    settings = _policy(dataset.metadata.granted)
    threads = tuple(_source_summary(info, settings) for info in dataset.metadata.threads)
    n = sum(t.n for t in threads)
    intervals = {t.interval_ns for t in threads}
    means = [(t.mean_ns, t.n) for t in threads if t.n]
    # the count-weighted mean of the threads' means is the mean of all wake-ups
    mean = (sum(m * k for m, k in means if m is not None) / n
            if means and all(m is not None for m, _ in means) else None)
    counted = [t for t in threads if t.n]
    overall = _unknown_summary(ThreadInfo(thread=OVERALL, cpu=OVERALL, interval_ns=0), settings, n=n,
                               min_ns=_extreme(min, [t.min_ns for t in counted]),
                               max_ns=_extreme(max, [t.max_ns for t in counted]), mean_ns=mean)
    overall = dataclasses.replace(overall, interval_ns=intervals.pop() if len(intervals) == 1 else None)
    return Summary(threads=threads, overall=overall, dataset=_provenance(dataset))


def _extreme(pick: Any, values: list[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else float(pick(values))


def _source_summary(info: ThreadInfo, settings: dict[str, Any]) -> ThreadSummary:
    extra = info.extra
    numbers = {key: None if extra.get(key) is None else float(extra[key]) for key in ("min_ns", "avg_ns", "max_ns")}
    summary = _unknown_summary(info, settings, n=int(info.samples), min_ns=numbers["min_ns"],
                               max_ns=numbers["max_ns"], mean_ns=numbers["avg_ns"])
    low, avg, high = numbers["min_ns"], numbers["avg_ns"], numbers["max_ns"]
    if info.samples and low is not None and avg is not None and high is not None:
        # cyclictest's own line: µs, truncated as cyclictest prints them; Act (the last wake-up) is not kept
        line = CyclictestResult(cycles=int(info.samples), min_us=int(low // 1000), act_us=None,
                                avg_us=int(avg // 1000), max_us=int(high // 1000))
        summary = dataclasses.replace(summary, cyclictest=line)
    return summary


def _unknown_summary(info: ThreadInfo, settings: dict[str, Any], *, n: int, min_ns: float | None,
                     max_ns: float | None, mean_ns: float | None) -> ThreadSummary:
    return ThreadSummary(
        thread=info.thread, cpu=info.cpu, tid=info.tid, policy=settings.get("policy"),
        priority=settings.get("priority"), interval_ns=info.interval_ns or None, n=n, min_ns=min_ns,
        max_ns=max_ns, mean_ns=mean_ns, std_ns=None, mad_ns=None, mode_ns=None,
        percentiles=dict.fromkeys(PERCENTILES), overruns=None, drops=None, histogram=None, period_error=None,
        spikes=SpikesResult(spikes=()), summary_only=True,
    )


def _policy(granted: Any) -> dict[str, Any]:
    """Policy and priority as granted, when the metadata holds them with sensible types."""
    policy, priority = granted.get("policy"), granted.get("priority")
    return {
        "policy": policy if isinstance(policy, str) else None,
        "priority": priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
    }


def _provenance(dataset: Dataset) -> DatasetProvenance:
    meta = dataset.metadata
    return DatasetProvenance(path=str(dataset.path), kind=meta.kind, files=len(dataset.files),
                             rows=dataset.num_rows, schema_version=meta.schema_version, tool=dict(meta.tool))


def resolved(n: int, key: str) -> bool:
    """Whether ``n`` wake-ups resolve the percentile ``key``: n·(1 − q) ≥ 1 (else it is n/a, everywhere)."""
    return n * (1.0 - float(key) / 100.0) >= 1.0


def _shape_stats(histogram: HistogramResult, known: int | None = None, above_ns: float | None = None,
                 ) -> dict[str, Any]:
    """Percentiles (None where the count does not resolve them), MAD and mode of a histogram.

    ``known``/``above_ns``: only the lowest ``known`` values are placed by bins; the others (a histogram
    source's overflows) are only known to be above ``above_ns``.  A percentile whose interpolation reaches
    among them is given as a lower bound in ``percentiles_above``, never as a value interpolated below it.
    """
    values = histogram.percentiles(float(q) for q in PERCENTILES)
    n = histogram.count
    percentiles: dict[str, float | None] = {}
    bounds: dict[str, float] = {}
    for key in PERCENTILES:
        if not resolved(n, key):
            percentiles[key] = None
            continue
        position = (n - 1) * float(key) / 100.0
        below = math.floor(position)
        reaches = below + 1 if position > below else below
        if known is None or above_ns is None or reaches < known:
            percentiles[key] = values[float(key)]
            continue
        percentiles[key] = None
        if below >= known:
            bounds[key] = float(above_ns)
        else:  # between the last value in range and an overflow (> above_ns): above the interpolation to above_ns
            low = histogram.percentile(100.0 * below / (n - 1))
            bounds[key] = low + (position - below) * (float(above_ns) - low)
    return {"percentiles": percentiles, "percentiles_above": bounds,
            "mad_ns": histogram.mad_ns(), "mode_ns": histogram.mode_ns()}


def _thread_summary(acc: _ThreadAccumulators, settings: dict[str, Any]) -> ThreadSummary:
    histogram = acc.histogram.result()
    moments = acc.moments.result()
    period = acc.period_error.result() if acc.period_error.count else None
    return ThreadSummary(
        thread=acc.info.thread, cpu=acc.info.cpu, tid=acc.info.tid,
        policy=settings.get("policy"), priority=settings.get("priority"), interval_ns=acc.info.interval_ns,
        n=moments.n, min_ns=moments.min_ns, max_ns=moments.max_ns, mean_ns=moments.mean_ns, std_ns=moments.std_ns,
        **_shape_stats(histogram), overruns=acc.overruns, drops=acc.info.drops, histogram=histogram,
        period_error=period, spikes=acc.spikes.result(), cyclictest=acc.cyclictest.result(),
    )


def _overall(
    accs: list[_ThreadAccumulators], threads: tuple[ThreadSummary, ...], settings: dict[str, Any], top_k: int,
) -> ThreadSummary:
    histogram, moments, period, spikes = LatencyHistogram(), Moments(), LatencyHistogram(), TopSpikes(k=top_k)
    for acc in accs:
        histogram.merge(acc.histogram)
        moments.merge(acc.moments)
        period.merge(acc.period_error)
        spikes.merge(acc.spikes)
    intervals = {t.interval_ns for t in threads}
    merged = histogram.result()
    total = moments.result()
    return ThreadSummary(
        thread=OVERALL, cpu=OVERALL, tid=None, policy=settings.get("policy"), priority=settings.get("priority"),
        interval_ns=intervals.pop() if len(intervals) == 1 else None,
        n=total.n, min_ns=total.min_ns, max_ns=total.max_ns, mean_ns=total.mean_ns, std_ns=total.std_ns,
        **_shape_stats(merged), overruns=sum(t.overruns for t in threads), drops=sum(t.drops for t in threads),
        histogram=merged, period_error=period.result() if period.count else None, spikes=spikes.result(),
    )


def _summarize_histogram(dataset: Dataset) -> Summary:
    """Summary of a histogram-kind dataset: statistics from the bins, extremes from the source."""
    settings = _policy(dataset.metadata.granted)
    bins = _read_bins(dataset)
    summaries = []
    histograms = []
    ranges: list[tuple[float, int, np.ndarray, np.ndarray]] = []  # (range, overflows, bin tops, bin counts)
    for info in dataset.metadata.threads:
        lower, upper, count, relative_error = bins.pop(info.thread, (None, None, None, 0.0))
        if count is None or count.sum() == 0:
            continue
        extra = info.extra
        overflows = int(extra.get("overflows") or 0)
        above = float(upper[-1]) if upper.size else 0.0  # overflows lie above every bin at least
        if overflows:
            # one bucket for the overflows, from the histogram's range to the source's maximum: it places them
            # in n, the median and the MAD; a percentile among them is given only as "> range" (_shape_stats)
            recorded = extra.get("overflow_above_ns")
            above = max(above, float(recorded)) if isinstance(recorded, int | float) else above
            top = float(extra["max_ns"]) if isinstance(extra.get("max_ns"), int | float) else above
            lower, upper = np.append(lower, above), np.append(upper, max(top, above + 1.0))
            count = np.append(count, overflows)
        ranges.append((above, overflows, upper[:-1] if overflows else upper, count[:-1] if overflows else count))
        histogram = HistogramResult.from_edges(lower, upper, count, min_ns=extra.get("min_ns"),
                                               max_ns=extra.get("max_ns"), relative_error=relative_error)
        del lower, upper, count  # the histogram holds them (no copy when in order)
        histograms.append(histogram)
        summaries.append(_binned_summary(histogram, info, settings, extra.get("avg_ns"), overflows=overflows,
                                         above_ns=above))
    if not summaries:
        raise AnalysisError(f"{dataset.path}: the histogram dataset has no counts (no wake-ups were recorded)")
    low, high = min(s.min_ns for s in summaries), max(s.max_ns for s in summaries)
    if len(histograms) == 1:  # the bins of all threads are those of the one: no second copy of 10^7 bins
        merged = dataclasses.replace(histograms[0], min_ns=low, max_ns=high)
    else:
        merged = HistogramResult.from_edges(
            np.concatenate([h.bucket_lower_ns for h in histograms]),
            np.concatenate([h.bucket_upper_ns for h in histograms]),
            np.concatenate([h.bucket_counts for h in histograms]),
            min_ns=low, max_ns=high, relative_error=max(h.relative_error for h in histograms))
    overflows = sum(s.overflows for s in summaries)
    # all threads: every overflow is above the lowest range, so the values in bins wholly below it are the
    # lowest ones, in order; the rest (overflows, and bins of threads with a larger range) only "> lowest range"
    floor = min(r[0] for r in ranges if r[1]) if overflows else None
    known = sum(int(c[t <= floor].sum()) for _, _, t, c in ranges) if floor is not None else None
    overall = _binned_summary(merged, ThreadInfo(thread=OVERALL, cpu=OVERALL, interval_ns=0), settings, None,
                              overflows=overflows, above_ns=floor, known=known)
    overall = dataclasses.replace(overall, interval_ns=None, overruns=sum(s.overruns for s in summaries),
                                  drops=sum(s.drops for s in summaries))
    if overflows:
        # the mean of all wake-ups from the threads' means (the sources' averages include their overflows)
        means = [(s.mean_ns, s.n) for s in summaries]
        mean = (sum(m * k for m, k in means) / sum(k for _, k in means)
                if all(m is not None for m, _ in means) else None)
        overall = dataclasses.replace(overall, mean_ns=mean)
    return Summary(threads=tuple(summaries), overall=overall, dataset=_provenance(dataset))


def _read_bins(dataset: Dataset) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
    """Each thread's bins as (lower, upper, count, largest relative width), read a row group at a time.

    Two reads: the thread column alone (to size each thread's arrays), then the bins straight into those
    arrays, so memory holds the bins once (float64 edges, int64 counts) and one row group, not the table.
    """
    sizes: dict[int, int] = {}
    for batch in dataset.iter_batches(["thread"], threads=False):
        threads, counts = np.unique(batch.column(0).to_numpy(), return_counts=True)
        for thread, n in zip(threads.tolist(), counts.tolist(), strict=True):
            sizes[thread] = sizes.get(thread, 0) + n
    bins = {t: (np.empty(n, np.float64), np.empty(n, np.float64), np.empty(n, np.int64)) for t, n in sizes.items()}
    filled = dict.fromkeys(sizes, 0)
    widest = dict.fromkeys(sizes, 0.0)
    for batch in dataset.iter_batches(["thread", "bin_start_ns", "bin_width_ns", "count"], threads=False):
        thread_col = batch.column(0).to_numpy()
        columns = [batch.column(i).to_numpy() for i in (1, 2, 3)]
        for thread in np.unique(thread_col).tolist():
            rows = slice(None) if thread_col[0] == thread_col[-1] == thread else thread_col == thread
            start, width, count = (c[rows] for c in columns)
            lower, upper, counts = bins[thread]
            at, n = filled[thread], start.size
            lower[at:at + n] = start
            np.add(lower[at:at + n], width, out=upper[at:at + n])  # in float64, as from_bins computes it
            counts[at:at + n] = count
            widest[thread] = max(widest[thread], float(np.max(width / np.maximum(np.abs(start), 1))))
            filled[thread] = at + n
        del batch, thread_col, columns
        # Arrow's allocator keeps freed row groups for reuse (~100 MB over 10^7 bins): hand them back, the
        # bins we keep are numpy's
        pa.default_memory_pool().release_unused()
    return {t: (*bins[t], widest[t]) for t in bins}


def _binned_summary(
    histogram: HistogramResult, info: ThreadInfo, settings: dict[str, Any], avg_ns: float | None, *,
    overflows: int = 0, above_ns: float | None = None, known: int | None = None,
) -> ThreadSummary:
    """Statistics of one histogram (its last bucket the ``overflows`` above ``above_ns``, when there are any).

    With overflows the mean is the source's average (over every wake-up) or unknown, and the standard
    deviation unknown: the overflows' values are not recorded.
    """
    if overflows:
        mean = float(avg_ns) if avg_ns is not None else None
        std = None
        shape = _shape_stats(histogram, histogram.count - overflows if known is None else known, above_ns)
    else:
        mean = float(avg_ns) if avg_ns is not None else histogram.mean_ns()
        std = histogram.std_ns(mean)
        shape = _shape_stats(histogram)
    return ThreadSummary(
        thread=info.thread, cpu=info.cpu, tid=info.tid, policy=settings.get("policy"),
        priority=settings.get("priority"), interval_ns=info.interval_ns or None, n=histogram.count,
        min_ns=histogram.min_ns, max_ns=histogram.max_ns, mean_ns=mean, std_ns=std, **shape,
        overruns=info.overruns, drops=info.drops, histogram=histogram, period_error=None,
        spikes=SpikesResult(spikes=()), overflows=overflows,
    )


class _NoBar:
    """What a progress bar offers, doing nothing: without ``--progress`` tqdm is not imported (57 ms of every
    ``summary``)."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        pass


def _progress_bar(progress: bool, **options: Any) -> Any:
    """A tqdm bar with ``options`` when ``progress``, else a :class:`_NoBar`."""
    if not progress:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(**options)
