"""Latency over time: per-thread maximum and p99 per time bin, in bounded memory.

:class:`LatencyTimeline` is a mergeable accumulator (``update`` / ``merge`` /
``result``).  Each thread keeps a fixed number of time bins; when the data
spans more than they cover, the bin width doubles and neighbouring pairs merge,
so memory does not grow with the length of a capture.  Bins are aligned to
multiples of their width on the absolute clock, so two accumulators always
merge exactly (coarsen both to the wider width, then add).

Each bin holds the exact maximum, the count, and a small log-spaced latency
histogram (``SUB_BUCKETS`` per octave, relative bucket width 2^(1/16) - 1 ≈ 4.4 %),
from which the bin's p99 is read at the bucket's geometric centre, clipped to
the bin's exact maximum: relative error at most 2^(1/32) - 1 ≈ 2.2 %.
Latencies of 1 ns or less (negative ones occur in imported data) share the
lowest bucket, whose value is 1 ns.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from ..dataset import Dataset, column_values
from ..derive import latency_ns
from ..errors import AnalysisError

SUB_BUCKETS = 16
OCTAVES = 40  # 2**40 ns is 18 minutes: no wake-up latency is later than that
N_BUCKETS = 1 + SUB_BUCKETS * OCTAVES
DEFAULT_BINS = 256
MIN_WIDTH_NS = 1_000_000  # bins never narrower than 1 ms
_EMPTY_MAX = np.iinfo(np.int64).min


def bucket_of(latency_ns: np.ndarray) -> np.ndarray:
    """Bucket index of each latency: 0 for <= 1 ns, else 1 + floor(16 * log2(latency))."""
    values = np.asarray(latency_ns, dtype=np.int64)
    out = np.zeros(values.shape, dtype=np.int64)
    positive = values > 1
    out[positive] = 1 + np.floor(np.log2(values[positive].astype(np.float64)) * SUB_BUCKETS).astype(np.int64)
    return np.minimum(out, N_BUCKETS - 1)


def bucket_centre_ns(bucket: np.ndarray) -> np.ndarray:
    """Geometric centre of each bucket in ns (1 ns for bucket 0)."""
    bucket = np.asarray(bucket, dtype=np.float64)
    return np.where(bucket == 0, 1.0, np.exp2((bucket - 0.5) / SUB_BUCKETS))


@dataclass(frozen=True)
class ThreadTimeline:
    """One thread's latency over time.

    Attributes
    ----------
    thread, cpu
        Which thread, pinned to which CPU.
    bin_width_ns
        Width of every bin; a power-of-two multiple of the starting width.
    bin_start_ns
        Absolute CLOCK_MONOTONIC start of each bin (non-empty bins only).
    count
        Wake-ups in each bin.
    max_ns
        Exact maximum latency in each bin.
    p99_ns
        99th percentile of latency in each bin (within 2.2 %, see module notes).
    first_ns, last_ns
        Times of the first and last wake-up seen.
    """

    thread: int
    cpu: int
    bin_width_ns: int
    bin_start_ns: np.ndarray
    count: np.ndarray
    max_ns: np.ndarray
    p99_ns: np.ndarray
    first_ns: int
    last_ns: int

    def to_json(self) -> dict[str, Any]:
        return {
            "thread": self.thread, "cpu": self.cpu, "bin_width_ns": self.bin_width_ns,
            "bin_start_ns": self.bin_start_ns.tolist(), "count": self.count.tolist(),
            "max_ns": self.max_ns.tolist(), "p99_ns": self.p99_ns.tolist(),
            "first_ns": self.first_ns, "last_ns": self.last_ns,
        }


@dataclass(frozen=True)
class TimelineResult:
    """Latency over time for every thread; ``origin_ns`` is the first wake-up of any thread."""

    threads: tuple[ThreadTimeline, ...]
    origin_ns: int

    def thread(self, index: int) -> ThreadTimeline:
        for item in self.threads:
            if item.thread == index:
                return item
        raise KeyError(index)

    def to_json(self) -> dict[str, Any]:
        return {"origin_ns": self.origin_ns, "threads": [t.to_json() for t in self.threads]}


@dataclass
class _ThreadState:
    cpu: int
    width: int
    first_index: int  # absolute bin index (time // width) of position 0
    count: np.ndarray
    max_ns: np.ndarray
    hist: np.ndarray  # (bins, N_BUCKETS)
    first_ns: int
    last_ns: int

    @classmethod
    def empty(cls, cpu: int, bins: int, width: int, first_index: int) -> _ThreadState:
        return cls(cpu=cpu, width=width, first_index=first_index, count=np.zeros(bins, np.int64),
                   max_ns=np.full(bins, _EMPTY_MAX, np.int64), hist=np.zeros((bins, N_BUCKETS), np.int64),
                   first_ns=np.iinfo(np.int64).max, last_ns=np.iinfo(np.int64).min)

    def covering(self, lo_index: int, hi_index: int, width: int) -> None:
        """Re-lay the bins (coarsening as needed) so absolute indices lo..hi at ``width`` fit."""
        bins = len(self.count)
        while self.width < width:
            self._relayout(self.width * 2, self.first_index // 2)
        while True:
            first = min(self.first_index, lo_index) if self.count.any() else lo_index
            last = max(self.first_index + _last_used(self.count), hi_index) if self.count.any() else hi_index
            if last - first < bins:
                break
            self._relayout(self.width * 2, self.first_index // 2)
            lo_index, hi_index = lo_index // 2, hi_index // 2
        if first != self.first_index:
            self._relayout(self.width, first)

    def _relayout(self, width: int, first_index: int) -> None:
        bins = len(self.count)
        factor = width // self.width
        old = self.first_index + np.arange(bins)
        used = self.count > 0
        position = old[used] // factor - first_index
        count = np.zeros(bins, np.int64)
        max_ns = np.full(bins, _EMPTY_MAX, np.int64)
        hist = np.zeros((bins, N_BUCKETS), np.int64)
        np.add.at(count, position, self.count[used])
        np.maximum.at(max_ns, position, self.max_ns[used])
        np.add.at(hist, position, self.hist[used])
        self.width, self.first_index, self.count, self.max_ns, self.hist = width, first_index, count, max_ns, hist


def _last_used(count: np.ndarray) -> int:
    return int(np.flatnonzero(count)[-1])


@dataclass
class LatencyTimeline:
    """Mergeable accumulator of per-thread latency over time.

    Parameters
    ----------
    bins
        Time bins kept per thread (memory per thread is about ``bins`` x 5 kB).
    min_width_ns
        Narrowest bin; bins start this wide and double as the data's span grows.
    """

    bins: int = DEFAULT_BINS
    min_width_ns: int = MIN_WIDTH_NS
    _threads: dict[int, _ThreadState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bins < 2 or self.min_width_ns < 1:
            raise ValueError("LatencyTimeline needs bins >= 2 and min_width_ns >= 1")

    def update(self, thread: int, cpu: int, actual_ns: np.ndarray, latency_ns: np.ndarray) -> LatencyTimeline:
        """Add wake-ups of one thread: their times (CLOCK_MONOTONIC ns) and latencies (ns)."""
        actual = np.asarray(actual_ns, dtype=np.int64)
        latency = np.asarray(latency_ns, dtype=np.int64)
        if actual.shape != latency.shape:
            raise ValueError("actual_ns and latency_ns differ in length")
        if actual.size == 0:
            return self
        state = self._state(thread, cpu, int(actual.min()))
        state.covering(int(actual.min()) // state.width, int(actual.max()) // state.width, state.width)
        position = actual // state.width - state.first_index
        state.count += np.bincount(position, minlength=state.count.size)
        np.maximum.at(state.max_ns, position, latency)
        flat = position * N_BUCKETS + bucket_of(latency)
        state.hist += np.bincount(flat, minlength=state.hist.size).reshape(state.hist.shape)
        state.first_ns = min(state.first_ns, int(actual.min()))
        state.last_ns = max(state.last_ns, int(actual.max()))
        return self

    def merge(self, other: LatencyTimeline) -> LatencyTimeline:
        """Add ``other``'s bins into this one (coarsening either side as needed); returns self."""
        if other.bins != self.bins:
            raise ValueError("cannot merge timelines with different bin counts")
        for thread, theirs in other._threads.items():
            if not theirs.count.any():
                continue
            ours = self._state(thread, theirs.cpu, theirs.first_ns)
            theirs = _copy(theirs)
            width = max(ours.width, theirs.width)
            while theirs.width < width:
                theirs._relayout(theirs.width * 2, theirs.first_index // 2)
            lo, hi = theirs.first_index, theirs.first_index + _last_used(theirs.count)
            ours.covering(lo, hi, width)
            while theirs.width < ours.width:  # ours may have coarsened further to fit both
                theirs._relayout(theirs.width * 2, theirs.first_index // 2)
            used = theirs.count > 0
            position = theirs.first_index + np.flatnonzero(used) - ours.first_index
            ours.count[position] += theirs.count[used]
            np.maximum.at(ours.max_ns, position, theirs.max_ns[used])
            ours.hist[position] += theirs.hist[used]
            ours.first_ns = min(ours.first_ns, theirs.first_ns)
            ours.last_ns = max(ours.last_ns, theirs.last_ns)
        return self

    def result(self) -> TimelineResult:
        """Frozen per-thread series (non-empty bins only), threads in index order."""
        threads = []
        for thread in sorted(self._threads):
            state = self._threads[thread]
            used = np.flatnonzero(state.count)
            if used.size == 0:
                continue
            threads.append(ThreadTimeline(
                thread=thread, cpu=state.cpu, bin_width_ns=state.width,
                bin_start_ns=(state.first_index + used) * state.width,
                count=state.count[used].copy(), max_ns=state.max_ns[used].copy(),
                p99_ns=_percentile_of_bins(state.hist[used], state.count[used], state.max_ns[used], 99.0),
                first_ns=state.first_ns, last_ns=state.last_ns,
            ))
        if not threads:
            raise AnalysisError("no wake-ups to put on a timeline; the dataset has no sample rows")
        return TimelineResult(threads=tuple(threads), origin_ns=min(t.first_ns for t in threads))

    def _state(self, thread: int, cpu: int, start_ns: int) -> _ThreadState:
        if thread not in self._threads:
            self._threads[thread] = _ThreadState.empty(cpu, self.bins, self.min_width_ns, start_ns // self.min_width_ns)
        return self._threads[thread]


def _copy(state: _ThreadState) -> _ThreadState:
    return _ThreadState(cpu=state.cpu, width=state.width, first_index=state.first_index, count=state.count.copy(),
                        max_ns=state.max_ns.copy(), hist=state.hist.copy(), first_ns=state.first_ns,
                        last_ns=state.last_ns)


def _percentile_of_bins(hist: np.ndarray, count: np.ndarray, max_ns: np.ndarray, q: float) -> np.ndarray:
    # Inverted-CDF rank: the smallest bucket whose cumulative count reaches ceil(q/100 * n).
    rank = np.ceil(count * (q / 100.0)).astype(np.int64)
    rank = np.maximum(rank, 1)
    cumulative = np.cumsum(hist, axis=1)
    bucket = (cumulative < rank[:, None]).sum(axis=1)
    return np.minimum(bucket_centre_ns(bucket), max_ns.astype(np.float64))


def compute_timeline(dataset: Dataset, *, bins: int = DEFAULT_BINS, progress: bool = False) -> TimelineResult:
    """Latency over time of every thread of a sample dataset, in one streaming pass.

    Parameters
    ----------
    dataset
        An opened sample dataset (not histogram-only).
    bins
        Time bins per thread.
    progress
        Show a progress bar (rows) on stderr.

    Returns
    -------
    TimelineResult

    Raises
    ------
    AnalysisError
        The dataset is histogram-only or has no rows.
    """
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: histogram-only data has no wake-up times; a timeline needs samples")
    cpus = {info.thread: info.cpu for info in dataset.metadata.threads}
    timeline = LatencyTimeline(bins=bins)
    with tqdm(total=dataset.num_rows, desc="timeline", unit="row", unit_scale=True, file=sys.stderr,
              disable=not progress, leave=False) as bar:
        for thread, cpu, actual, latency in _thread_slices(dataset, cpus):
            timeline.update(thread, cpu, actual, latency)
            bar.update(actual.size)
    return timeline.result()


def _thread_slices(dataset: Dataset, cpus: dict[int, int]) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    for batch in dataset.iter_batches(["thread", "cpu", "expected_ns", "actual_ns"]):
        thread = column_values(batch, "thread")  # not to_numpy, which imports pandas
        actual = column_values(batch, "actual_ns")
        latency = latency_ns(batch)
        cpu = column_values(batch, "cpu")
        if thread.size == 0:
            continue
        if thread[0] == thread[-1] and (thread == thread[0]).all():
            yield int(thread[0]), cpus.get(int(thread[0]), int(cpu[0])), actual, latency
            continue
        order = np.argsort(thread, kind="stable")
        sorted_threads = thread[order]
        starts = np.flatnonzero(np.r_[True, sorted_threads[1:] != sorted_threads[:-1]])
        for begin, end in zip(starts, np.r_[starts[1:], sorted_threads.size], strict=True):
            rows = order[begin:end]
            index = int(sorted_threads[begin])
            yield index, cpus.get(index, int(cpu[rows[0]])), actual[rows], latency[rows]
