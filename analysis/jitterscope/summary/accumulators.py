"""Mergeable accumulators besides the histogram: moments, top spikes, interval blocks, cyclictest's line.

Each has ``update(...)`` (returns self), ``merge(other) -> self`` and
``result()`` giving a frozen dataclass with ``to_json()``.  ``update`` takes
the rows of one thread in order; rows of different threads may come in any
interleaving, but one thread's rows must not be split over accumulators that
are merged later (spikes and intervals look at neighbouring rows).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AnalysisError


def _to_json(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


# ---- moments -----------------------------------------------------------------------------

@dataclass(frozen=True)
class MomentsResult:
    """Count, mean, variance (population, ddof=0), standard deviation and exact extremes, in ns."""

    n: int
    mean_ns: float
    var_ns2: float
    std_ns: float
    min_ns: int
    max_ns: int

    def to_json(self) -> dict[str, Any]:
        return _to_json(self)


class Moments:
    """Mergeable mean and variance (Chan, Golub & LeVeque 1979, the parallel form of Welford's algorithm)."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min: int | None = None
        self.max: int | None = None

    def update(self, values_ns: np.ndarray, *, extremes: tuple[int, int] | None = None) -> Moments:
        """Add values (int ns); ``extremes``: their (min, max) when the caller knows them already."""
        values = np.asarray(values_ns)
        if values.size == 0:
            return self
        # deviations from the batch's first value keep the sums small (float64 exact below 2**53)
        reference = int(values[0])
        deviation = np.subtract(values, reference, dtype=np.float64)  # one pass: converted and shifted
        total = float(deviation.sum())
        n = values.size
        mean = reference + total / n
        # einsum, not np.dot: BLAS threads spin on a busy machine and cost several times the sum itself
        m2 = max(float(np.einsum("i,i->", deviation, deviation)) - total * total / n, 0.0)
        low, high = (int(values.min()), int(values.max())) if extremes is None else extremes
        self._combine(n, mean, m2, low, high)
        return self

    def _combine(self, n: int, mean: float, m2: float, low: int | None, high: int | None) -> None:
        if n == 0:
            return
        total = self.n + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.n * n / total
        self.n = total
        if low is not None:
            self.min = low if self.min is None else min(self.min, low)
        if high is not None:
            self.max = high if self.max is None else max(self.max, high)

    def merge(self, other: Moments) -> Moments:
        self._combine(other.n, other.mean, other.m2, other.min, other.max)
        return self

    def result(self) -> MomentsResult:
        if self.n == 0:
            raise AnalysisError("no values: mean and variance are undefined")
        var = self.m2 / self.n
        return MomentsResult(n=self.n, mean_ns=self.mean, var_ns2=var, std_ns=math.sqrt(var),
                             min_ns=int(self.min or 0), max_ns=int(self.max or 0))


# ---- top spikes --------------------------------------------------------------------------

@dataclass(frozen=True)
class Spike:
    """One of the largest latencies, with the latencies of its neighbours in its thread (ns)."""

    thread: int
    cpu: int
    seq: int
    actual_ns: int
    latency_ns: int
    before_ns: tuple[int, ...]
    after_ns: tuple[int, ...]


@dataclass(frozen=True)
class SpikesResult:
    """The top spikes, largest first (ties: lower thread, then lower seq, first)."""

    spikes: tuple[Spike, ...]

    def to_json(self) -> dict[str, Any]:
        return _to_json(self)


class TopSpikes:
    """The ``k`` largest latencies with ``neighbours`` latencies before and after each.

    ``update`` takes consecutive rows of one thread; neighbours are completed
    across batches of the same thread.
    """

    def __init__(self, k: int = 20, neighbours: int = 3) -> None:
        if k < 1 or neighbours < 0:
            raise AnalysisError("TopSpikes needs k >= 1 and neighbours >= 0")
        self.k = k
        self.neighbours = neighbours
        self._spikes: list[Spike] = []
        self._tail: dict[int, np.ndarray] = {}  # last latencies of each thread, for before_ns

    def _threshold(self) -> int | None:
        if len(self._spikes) < self.k:
            return None
        return min(s.latency_ns for s in self._spikes)

    def update(
        self, thread: int, cpu: int, seq: np.ndarray, actual_ns: np.ndarray, latency_ns: np.ndarray,
    ) -> TopSpikes:
        latency = np.asarray(latency_ns, dtype=np.int64)
        if latency.size == 0:
            return self
        w = self.neighbours
        self._complete_after(thread, latency)
        previous = self._tail.get(thread, np.zeros(0, np.int64))
        threshold = self._threshold()
        # once k spikes are known, only rows at or above the smallest of them can enter: one compare, no partition
        if threshold is None and latency.size > self.k:
            # every row a candidate: the partition of all of them, without a row-number array and its gather
            candidates = np.argpartition(-latency, self.k)[: self.k]
        else:
            candidates = np.arange(latency.size) if threshold is None else np.flatnonzero(latency >= threshold)
            if candidates.size > self.k:
                candidates = candidates[np.argpartition(-latency[candidates], self.k)[: self.k]]
        # the previous batch's last w latencies and this one's first w: the "before" of the first rows
        head = np.concatenate([previous, latency[:w]])
        for index in candidates.tolist():
            before = latency[index - w:index] if index >= w else head[max(0, previous.size + index - w):
                                                                      previous.size + index]
            self._spikes.append(Spike(
                thread=thread, cpu=cpu, seq=int(seq[index]), actual_ns=int(actual_ns[index]),
                latency_ns=int(latency[index]), before_ns=tuple(int(v) for v in before),
                after_ns=tuple(int(v) for v in latency[index + 1:index + 1 + w]),
            ))
        self._trim()
        # a copy: the caller may reuse its latency buffer for the next batch
        self._tail[thread] = (latency[-w:].copy() if latency.size >= w else np.concatenate([previous, latency])[-w:]
                              ) if w else np.zeros(0, np.int64)
        return self

    def _complete_after(self, thread: int, latency: np.ndarray) -> None:
        """Give spikes near the end of the previous batch of ``thread`` their missing ``after`` values."""
        for i, spike in enumerate(self._spikes):
            missing = self.neighbours - len(spike.after_ns)
            if spike.thread == thread and missing > 0:
                extra = tuple(int(v) for v in latency[:missing])
                self._spikes[i] = dataclasses.replace(spike, after_ns=spike.after_ns + extra)

    def _trim(self) -> None:
        self._spikes.sort(key=lambda s: (-s.latency_ns, s.thread, s.seq))
        del self._spikes[self.k:]

    def merge(self, other: TopSpikes) -> TopSpikes:
        self._spikes.extend(other._spikes)
        self._tail.update(other._tail)
        self._trim()
        return self

    def result(self) -> SpikesResult:
        self._trim()
        return SpikesResult(spikes=tuple(self._spikes))


# ---- periodic_timer interval blocks -------------------------------------------------------

@dataclass(frozen=True)
class IntervalBlock:
    """Statistics of ``n`` consecutive periods of one thread, as periodic_timer prints them.

    Periods (Δactual between consecutive wake-ups with no drop between them) in
    µs: min, max, mean, population stddev.  Errors are periodic_timer's
    ``nominal - period`` (positive = the period was short); only those with
    ``|error| > tolerance`` are counted and described.
    """

    thread: int
    first_seq: int
    n: int
    nominal_us: float
    min_us: float
    max_us: float
    mean_us: float
    stddev_us: float
    tolerance_us: float
    errors: int
    error_min_us: float | None
    error_max_us: float | None
    error_mean_us: float | None
    error_stddev_us: float | None


@dataclass(frozen=True)
class IntervalResult:
    """Complete blocks of every thread, in thread then time order; ``leftover`` periods per thread."""

    block: int
    tolerance_ns: int
    blocks: tuple[IntervalBlock, ...]
    leftover: dict[int, int]

    def to_json(self) -> dict[str, Any]:
        out = _to_json(self)
        out["leftover"] = {str(k): v for k, v in self.leftover.items()}
        return out


class _BlockSums:
    """Running sums of one (possibly unfinished) block, deviations from nominal in ns."""

    def __init__(self, first_seq: int) -> None:
        self.first_seq = first_seq
        self.n = 0
        self.sum = 0.0
        self.sumsq = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.e_n = 0
        self.e_sum = 0.0
        self.e_sumsq = 0.0
        self.e_min = math.inf
        self.e_max = -math.inf

    def add(self, deviation: np.ndarray, tolerance_ns: int) -> None:
        d = deviation.astype(np.float64)
        self.n += d.size
        self.sum += float(d.sum())
        self.sumsq += float(np.dot(d, d))
        self.min = min(self.min, float(d.min()))
        self.max = max(self.max, float(d.max()))
        errors = -d[np.abs(d) > tolerance_ns]  # periodic_timer's sign: nominal - period
        if errors.size:
            self.e_n += errors.size
            self.e_sum += float(errors.sum())
            self.e_sumsq += float(np.dot(errors, errors))
            self.e_min = min(self.e_min, float(errors.min()))
            self.e_max = max(self.e_max, float(errors.max()))

    def block(self, thread: int, interval_ns: int, tolerance_ns: int) -> IntervalBlock:
        mean = self.sum / self.n
        std = math.sqrt(max(self.sumsq / self.n - mean * mean, 0.0))
        e_mean = self.e_sum / self.e_n if self.e_n else None
        e_std = math.sqrt(max(self.e_sumsq / self.e_n - e_mean * e_mean, 0.0)) if e_mean is not None else None
        us = 1e-3
        return IntervalBlock(
            thread=thread, first_seq=self.first_seq, n=self.n, nominal_us=interval_ns * us,
            min_us=(interval_ns + self.min) * us, max_us=(interval_ns + self.max) * us,
            mean_us=(interval_ns + mean) * us, stddev_us=std * us, tolerance_us=tolerance_ns * us,
            errors=self.e_n,
            error_min_us=self.e_min * us if self.e_n else None, error_max_us=self.e_max * us if self.e_n else None,
            error_mean_us=e_mean * us if e_mean is not None else None,
            error_stddev_us=e_std * us if e_std is not None else None,
        )


class IntervalStats:
    """periodic_timer-style statistics of the measured period, every ``block`` periods per thread.

    A period is the difference of ``actual_ns`` between consecutive rows of a
    thread whose ``seq`` differ by 1 (a drop makes the next difference
    unknown, so it is skipped; an overrun's long period is kept: it happened).
    """

    def __init__(self, block: int, tolerance_ns: int) -> None:
        if block < 1 or tolerance_ns < 0:
            raise AnalysisError("interval statistics need a block of >= 1 periods and a tolerance >= 0")
        self.block = block
        self.tolerance_ns = tolerance_ns
        self._blocks: dict[int, list[IntervalBlock]] = {}
        self._open: dict[int, _BlockSums] = {}
        self._last: dict[int, tuple[int, int]] = {}  # thread -> (seq, actual_ns) of its last row
        self._interval: dict[int, int] = {}

    def update(self, thread: int, interval_ns: int, seq: np.ndarray, actual_ns: np.ndarray) -> IntervalStats:
        seq = np.asarray(seq, dtype=np.int64)
        actual = np.asarray(actual_ns, dtype=np.int64)
        if seq.size == 0:
            return self
        self._interval[thread] = interval_ns
        if thread in self._last:
            last_seq, last_actual = self._last[thread]
            seq_all = np.concatenate([[last_seq], seq])
            actual_all = np.concatenate([[last_actual], actual])
        else:
            seq_all, actual_all = seq, actual
        self._last[thread] = (int(seq[-1]), int(actual[-1]))
        valid = np.diff(seq_all) == 1
        deviation = (np.diff(actual_all) - interval_ns)[valid]
        period_seq = seq_all[1:][valid]
        blocks = self._blocks.setdefault(thread, [])
        start = 0
        while start < deviation.size:
            current = self._open.get(thread)
            if current is None:
                current = self._open[thread] = _BlockSums(int(period_seq[start]))
            take = min(self.block - current.n, deviation.size - start)
            current.add(deviation[start:start + take], self.tolerance_ns)
            start += take
            if current.n == self.block:
                blocks.append(current.block(thread, interval_ns, self.tolerance_ns))
                del self._open[thread]
        return self

    def merge(self, other: IntervalStats) -> IntervalStats:
        if (other.block, other.tolerance_ns) != (self.block, self.tolerance_ns):
            raise AnalysisError("cannot merge interval statistics with different block or tolerance")
        overlap = set(self._last) & set(other._last)
        if overlap:
            raise AnalysisError(f"cannot merge interval statistics of the same thread(s) {sorted(overlap)}")
        self._blocks.update(other._blocks)
        self._open.update(other._open)
        self._last.update(other._last)
        self._interval.update(other._interval)
        return self

    def result(self) -> IntervalResult:
        blocks = tuple(b for thread in sorted(self._blocks) for b in self._blocks[thread])
        leftover = {thread: (self._open[thread].n if thread in self._open else 0) for thread in sorted(self._last)}
        return IntervalResult(block=self.block, tolerance_ns=self.tolerance_ns, blocks=blocks, leftover=leftover)


# ---- cyclictest's summary line -------------------------------------------------------------

@dataclass(frozen=True)
class CyclictestResult:
    """The numbers of cyclictest's ``T: ...`` line, in µs as cyclictest computes them.

    cyclictest converts each latency with ``calcdiff``: whole seconds times 1e6
    plus the nanosecond-field difference divided by 1000 (C division, truncating
    toward zero); Avg is the truncated mean of those; Act is the last one.
    """

    cycles: int
    min_us: int
    act_us: int | None  # None: a summary-only source did not keep the last wake-up
    avg_us: int
    max_us: int

    def to_json(self) -> dict[str, Any]:
        return _to_json(self)


def cyclictest_us(actual_ns: np.ndarray, expected_ns: np.ndarray, *, sorted_expected: bool = False,
                  latency_ns: np.ndarray | None = None, extremes: tuple[int, int] | None = None) -> np.ndarray:
    """Per-wake-up latency in µs exactly as cyclictest's ``calcdiff(now, next)`` computes it.

    ``1e6 * (sec(now) - sec(next)) + (nsec(now) - nsec(next)) / 1000`` with C's
    truncating division: ``floor(latency / 1000)``, plus 1 when the nanosecond
    field wrapped (a whole second lies in ``(expected, actual]``) and the
    latency is not a whole µs.  With ``sorted_expected`` (one thread's rows in
    order) the wrapped rows are found by searching the few second boundaries
    instead of dividing every row.  ``latency_ns`` (``actual - expected``) and its ``extremes`` (min, max),
    when the caller has them, save passes.
    """
    actual = np.asarray(actual_ns, dtype=np.int64)
    expected = np.asarray(expected_ns, dtype=np.int64)
    latency = actual - expected if latency_ns is None else np.asarray(latency_ns, dtype=np.int64)
    if latency.size == 0:
        return latency
    low, high = (int(latency.min()), int(latency.max())) if extremes is None else extremes
    if 0 <= low and high < _SECOND:
        floor_us = latency // 1000  # numpy divides by a scalar without a hardware division per element
        wrapped = _wrapped_rows(expected, latency, high) if sorted_expected else None
        if wrapped is None:
            wrapped = np.flatnonzero(expected % _SECOND + latency >= _SECOND)
        wrapped = wrapped[floor_us[wrapped] * 1000 != latency[wrapped]]
        floor_us[wrapped] += 1
        return floor_us
    seconds = actual // _SECOND - expected // _SECOND
    nsec = actual % _SECOND - expected % _SECOND
    return seconds * 1_000_000 + np.sign(nsec) * (np.abs(nsec) // 1000)


_SECOND = 1_000_000_000


def _wrapped_rows(expected: np.ndarray, latency: np.ndarray, max_latency: int) -> np.ndarray | None:
    """Rows with a second boundary B in ``(expected, expected + latency]``; None when a search would not pay."""
    first = (int(expected[0]) // _SECOND + 1) * _SECOND
    last = int(expected[-1]) + max_latency
    if last < first:
        return np.zeros(0, dtype=np.int64)
    if (last - first) // _SECOND + 1 > expected.size // 8:
        return None
    bounds = np.arange(first, last + 1, _SECOND, dtype=np.int64)
    before = np.searchsorted(expected, bounds, side="left")  # rows with expected < B
    reach = np.searchsorted(expected, bounds - max_latency, side="left")  # rows that can reach B
    sizes = before - reach
    if sizes.sum() > expected.size // 8:
        return None
    rows = np.repeat(reach - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(sizes.sum())
    boundary = np.repeat(bounds, sizes)
    return np.unique(rows[expected[rows] + latency[rows] >= boundary])


class CyclictestStats:
    """Accumulates cyclictest's Min/Act/Avg/Max/C for one thread (rows in order)."""

    def __init__(self) -> None:
        self.cycles = 0
        self.sum = 0
        self.min: int | None = None
        self.max: int | None = None
        self.act = 0

    def update(self, actual_ns: np.ndarray, expected_ns: np.ndarray, *, sorted_expected: bool = False,
               latency_ns: np.ndarray | None = None, extremes: tuple[int, int] | None = None) -> CyclictestStats:
        """Add rows of the thread; ``sorted_expected``: ``expected_ns`` is increasing (a faster path);
        ``latency_ns`` and its ``extremes``: see :func:`cyclictest_us`."""
        us = cyclictest_us(actual_ns, expected_ns, sorted_expected=sorted_expected, latency_ns=latency_ns,
                           extremes=extremes)
        if us.size == 0:
            return self
        self.cycles += us.size
        self.sum += int(us.sum())  # exact; cyclictest's double sum is exact below 2**53 µs too
        low, high = int(us.min()), int(us.max())
        self.min = low if self.min is None else min(self.min, low)
        self.max = high if self.max is None else max(self.max, high)
        self.act = int(us[-1])
        return self

    def merge(self, other: CyclictestStats) -> CyclictestStats:
        """Combine with the rows that came *after* this one's (Act is the later one's)."""
        if other.cycles == 0:
            return self
        self.cycles += other.cycles
        self.sum += other.sum
        assert other.min is not None and other.max is not None  # cycles > 0
        self.min = other.min if self.min is None else min(self.min, other.min)
        self.max = other.max if self.max is None else max(self.max, other.max)
        self.act = other.act
        return self

    def result(self) -> CyclictestResult:
        # (long)(avg / cycles) in C: the double mean truncated toward zero
        avg = int(self.sum / self.cycles) if self.cycles else 0
        return CyclictestResult(cycles=self.cycles, min_us=self.min or 0, act_us=self.act, avg_us=avg,
                                max_us=self.max or 0)
