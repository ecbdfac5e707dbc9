"""HDR-style log-linear histogram of int64 nanosecond values (negative ones too).

Values with magnitude below ``2**s`` get one bucket each (exact); above, each
power-of-two range ``[2**e, 2**(e+1))`` is split into ``2**s`` equal buckets,
so a bucket is at most ``2**-s`` of its lower edge wide.  ``s`` is the smallest
with ``2**-s <= relative_error``; a value reported as its bucket's midpoint is
then within ``relative_error / 2`` of every value in the bucket.  Negative
values go into a mirror histogram of their magnitudes.  Count, min and max
are exact.  Same idea as Gil Tene's HdrHistogram (hdrhistogram.org).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import AnalysisError

CHUNK_BUCKETS = 1 << 20
"""Buckets processed at a time by reductions over a histogram: temporaries stay a few MiB however many
buckets it has (10^7 bins of an imported histogram), and a histogram of fewer buckets is done in one go."""


@dataclass(frozen=True, eq=False)
class HistogramResult:
    """A frozen histogram: non-empty buckets in ascending order, exact count/min/max.

    Bucket ``i`` holds ``bucket_counts[i]`` values ``v`` with
    ``bucket_lower_ns[i] <= v < bucket_upper_ns[i]``.  ``discrete`` says the
    values are integers (so a bucket ``[l, u)`` holds ``l .. u-1``); binned
    imports (``from_bins``) are continuous.

    The buckets are read-only numpy arrays (any sequence given is converted): edges int64 for
    :class:`LatencyHistogram` results (object, exact Python ints, only for edges beyond the int64 range),
    float64 for bins; counts int64.  Only non-empty buckets are kept (the histogram is sparse), and the
    statistics work on them a chunk of :data:`CHUNK_BUCKETS` at a time, so a 10^7-bin histogram costs its
    three arrays and a few MiB more.  ``to_json`` gives them as lists.
    """

    count: int
    min_ns: int | float
    max_ns: int | float
    bucket_lower_ns: np.ndarray
    bucket_upper_ns: np.ndarray
    bucket_counts: np.ndarray
    relative_error: float = 1e-3
    discrete: bool = True

    def __post_init__(self) -> None:
        for name in ("bucket_lower_ns", "bucket_upper_ns", "bucket_counts"):
            value = getattr(self, name)
            array = value if isinstance(value, np.ndarray) else np.asarray(
                value if isinstance(value, list | tuple) else list(value))
            if array.size == 0:
                array = np.zeros(0, np.int64)
            if name == "bucket_counts" and array.dtype != np.int64:
                array = array.astype(np.int64)
            if array.ndim != 1:
                raise AnalysisError(f"histogram {name} must be 1-D, got shape {array.shape}")
            if array.flags.writeable:
                array = array.view()
                array.flags.writeable = False  # frozen: a result is never changed under its users
            object.__setattr__(self, name, array)
        if not self.bucket_lower_ns.size == self.bucket_upper_ns.size == self.bucket_counts.size:
            raise AnalysisError("histogram buckets: lower, upper and counts must be of equal length")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HistogramResult):
            return NotImplemented
        return (self.count, self.min_ns, self.max_ns, self.relative_error, self.discrete) == (
            other.count, other.min_ns, other.max_ns, other.relative_error, other.discrete) and all(
            np.array_equal(getattr(self, n), getattr(other, n))
            for n in ("bucket_lower_ns", "bucket_upper_ns", "bucket_counts"))

    __hash__ = None  # type: ignore[assignment]  # holds arrays

    @classmethod
    def from_bins(
        cls, lower_ns: Sequence[float], width_ns: Sequence[float], counts: Sequence[int],
        *, min_ns: float | None = None, max_ns: float | None = None,
    ) -> HistogramResult:
        """A histogram from fixed bins (histogram-kind datasets: cyclictest -h and the like).

        ``min_ns``/``max_ns`` are the exact extremes when the source printed them;
        otherwise the outer bin edges are used.
        """
        lower = np.asarray(lower_ns, dtype=np.float64)
        width = np.asarray(width_ns, dtype=np.float64)
        n = np.asarray(counts, dtype=np.int64)
        if not (lower.shape == width.shape == n.shape) or lower.ndim != 1:
            raise AnalysisError("histogram bins: lower, width and counts must be 1-D and of equal length")
        if np.any(width <= 0) or np.any(n < 0):
            raise AnalysisError("histogram bins: widths must be > 0 and counts >= 0")
        relative_error = _max_relative_width(lower, width)
        upper = lower + width
        del width
        return cls.from_edges(lower, upper, n, min_ns=min_ns, max_ns=max_ns, relative_error=relative_error)

    @classmethod
    def from_edges(
        cls, lower_ns: np.ndarray, upper_ns: np.ndarray, counts: np.ndarray, *, min_ns: float | None = None,
        max_ns: float | None = None, relative_error: float | None = None,
    ) -> HistogramResult:
        """A histogram from bins given by their edges ``[lower, upper)`` (float64), e.g. read batch by batch.

        Arrays already in order with no empty bin are kept as they are (no copy).  ``relative_error``: the
        largest ``width / max(|lower|, 1)``, when the caller has it (computed otherwise).

        Raises
        ------
        AnalysisError
            Shapes differ, an upper edge is not above its lower one, a count is negative, or every count is 0.
        """
        lower = np.asarray(lower_ns, dtype=np.float64)
        upper = np.asarray(upper_ns, dtype=np.float64)
        n = np.asarray(counts, dtype=np.int64)
        if not (lower.shape == upper.shape == n.shape) or lower.ndim != 1:
            raise AnalysisError("histogram bins: lower, upper and counts must be 1-D and of equal length")
        if np.any(upper <= lower) or np.any(n < 0):
            raise AnalysisError("histogram bins: widths must be > 0 and counts >= 0")
        if relative_error is None:
            relative_error = _max_relative_width(lower, upper - lower)
        if lower.size > 1 and not np.all(lower[1:] >= lower[:-1]):
            order = np.argsort(lower, kind="stable")
            lower, upper, n = lower[order], upper[order], n[order]
        if not np.all(n > 0):
            keep = n > 0
            lower, upper, n = lower[keep], upper[keep], n[keep]
        if n.size == 0:
            raise AnalysisError("histogram bins: all counts are zero; the source recorded no wake-ups")
        return cls(
            count=int(n.sum()),
            min_ns=float(lower[0]) if min_ns is None else min_ns,
            max_ns=float(upper[-1]) if max_ns is None else max_ns,
            bucket_lower_ns=lower, bucket_upper_ns=upper, bucket_counts=n, relative_error=float(relative_error),
            discrete=False,
        )

    # ---- derived values, a chunk of buckets at a time ----------------------------------------------
    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(lower, top, counts, middle) as float arrays over every bucket (full-size: for small histograms)."""
        return self._slice(0, self.bucket_counts.size)

    def _slice(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(lower, top, counts, middle) of buckets ``start:stop`` as float64/int64 arrays."""
        lower = np.asarray(self.bucket_lower_ns[start:stop], dtype=np.float64)
        upper = np.asarray(self.bucket_upper_ns[start:stop], dtype=np.float64)
        counts = self.bucket_counts[start:stop]
        top = upper - 1 if self.discrete else upper
        middle = (lower + top) / 2
        # the extreme buckets' representatives cannot lie outside the exact extremes
        np.clip(middle, self.min_ns, self.max_ns, out=middle)
        return lower, top, counts, middle

    def _chunks(self) -> Iterator[tuple[int, int]]:
        size = self.bucket_counts.size
        for start in range(0, max(size, 1), CHUNK_BUCKETS):
            yield start, min(start + CHUNK_BUCKETS, size)

    def _middle_at(self, index: np.ndarray) -> np.ndarray:
        """Bucket midpoints (as in :meth:`_slice`) at the given indices only."""
        lower = np.asarray(self.bucket_lower_ns[index], dtype=np.float64)
        upper = np.asarray(self.bucket_upper_ns[index], dtype=np.float64)
        middle = (lower + (upper - 1 if self.discrete else upper)) / 2
        return np.clip(middle, self.min_ns, self.max_ns)

    def _average(self, of: Callable[[np.ndarray], np.ndarray]) -> float:
        """Count-weighted mean of ``of(middle)`` over the buckets, as ``numpy.average`` (chunk sums added)."""
        if self.bucket_counts.size <= CHUNK_BUCKETS:
            _, _, counts, middle = self._slice(0, self.bucket_counts.size)
            return float(np.average(of(middle), weights=counts))
        total = 0.0
        for start, stop in self._chunks():
            _, _, counts, middle = self._slice(start, stop)
            total += float(np.multiply(of(middle), counts).sum())
        return total / int(self.bucket_counts.sum())

    def _require_data(self) -> None:
        if self.count == 0:
            raise AnalysisError("histogram is empty: there are no wake-ups to compute statistics of")

    def _value_at_rank(self, ranks: np.ndarray, cumulative: _Cumulative | None = None) -> np.ndarray:
        """Estimated value of the order statistics at 0-based ``ranks``."""
        cumulative = _Cumulative(self.bucket_counts) if cumulative is None else cumulative
        size = self.bucket_counts.size
        index = cumulative.first_above(np.asarray(ranks).astype(np.int64))
        values = self._middle_at(np.minimum(index, size - 1))
        values = np.where(ranks <= 0, self.min_ns, values)
        return np.where(ranks >= self.count - 1, self.max_ns, values)

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (``q`` in [0, 100]), like ``numpy.percentile`` (linear method).

        Interpolates linearly between the two order statistics around rank
        ``(n - 1) q / 100``, each estimated by its bucket's midpoint (exact for
        the first and last, which are min and max).
        """
        return self.percentiles([q])[float(q)]

    def percentiles(self, qs: Iterable[float]) -> dict[float, float]:
        """Several percentiles at once: ``{q: value_ns}``."""
        self._require_data()
        q = np.asarray([float(v) for v in qs], dtype=np.float64)
        if np.any((q < 0) | (q > 100)) or np.any(np.isnan(q)):
            raise AnalysisError(f"percentiles must be in [0, 100], got {q.tolist()}")
        position = (self.count - 1) * q / 100.0
        below = np.floor(position)
        frac = position - below
        cumulative = _Cumulative(self.bucket_counts)
        low = self._value_at_rank(below, cumulative)
        high = self._value_at_rank(np.minimum(below + 1, self.count - 1), cumulative)
        values = low + frac * (high - low)
        return {float(k): float(v) for k, v in zip(q, values, strict=True)}

    def ccdf(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x_ns, p_exceed)``: for each bucket's top value x, the fraction of values above x."""
        self._require_data()
        top = np.asarray(self.bucket_upper_ns, dtype=np.float64)
        top = top - 1 if self.discrete else top.copy()
        x = np.minimum(top, self.max_ns, out=top)
        return x, (self.count - np.cumsum(self.bucket_counts)) / self.count

    def mode_ns(self, resolution: float = 0.05) -> float:
        """The densest value: centre of the bin with the most values per ns.

        Bins are ``resolution`` relative wide (1 ns wide below ``1/resolution``);
        finer ones would make the mode of integer-ns data a matter of noise.
        """
        self._require_data()
        step = math.log1p(resolution)
        runs = self._mode_runs(resolution, step)
        if runs is None:  # buckets overlap (bins of several widths): group the whole array at once
            return self._mode_unsorted(resolution, step)
        firsts, ends, totals = runs
        middle = self._middle_at(firsts)
        magnitude = np.abs(middle)
        small = magnitude < 1 / resolution
        k = np.floor(np.log(np.maximum(magnitude, 1.0)) / step)
        width = np.where(small, 1.0, np.exp((k + 1) * step) - np.exp(k * step))
        best = int(np.argmax(totals / width))
        start, stop = int(firsts[best]), int(ends[best])
        _, _, counts, members = self._slice(start, stop)
        return float(np.average(members, weights=counts))

    def _mode_key(self, middle: np.ndarray, resolution: float, step: float) -> np.ndarray:
        key = np.abs(middle)
        small = key < 1 / resolution
        np.maximum(key, 1.0, out=key)
        np.log(key, out=key)
        key /= step
        np.floor(key, out=key)
        key += 1e6
        np.copysign(key, middle, out=key)  # sign(middle) * (1e6 + k); a middle of +-0 is small
        key[small] = np.round(middle[small])
        return key

    def _mode_runs(self, resolution: float, step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(first bucket, end, count) of each run of buckets in one mode bin, if the bins come in order.

        Buckets in ascending order that do not overlap have midpoints in order, so each mode bin is one run
        of consecutive buckets; None when they are not in order.
        """
        firsts, ends, totals = [], [], []
        last_key = None
        for start, stop in self._chunks():
            if stop <= start:
                break
            _, _, counts, middle = self._slice(start, stop)
            key = self._mode_key(middle, resolution, step)
            if np.any(key[1:] < key[:-1]) or (last_key is not None and key[0] < last_key):
                return None
            breaks = np.flatnonzero(key[1:] != key[:-1]) + 1
            starts = np.concatenate([[0], breaks])
            sums = np.add.reduceat(counts, starts)
            if last_key is not None and key[0] == last_key:  # the run goes on from the chunk before
                totals[-1] += int(sums[0])
                ends[-1] = start + (int(breaks[0]) if breaks.size else stop - start)
                starts, sums = starts[1:], sums[1:]
            bounds = np.append(starts, stop - start)
            firsts.extend((start + starts).tolist())
            ends.extend((start + bounds[1:]).tolist())
            totals.extend(sums.tolist())
            last_key = key[-1]
        return np.asarray(firsts, np.int64), np.asarray(ends, np.int64), np.asarray(totals, np.float64)

    def _mode_unsorted(self, resolution: float, step: float) -> float:
        _, _, counts, middle = self._arrays
        magnitude = np.abs(middle)
        small = magnitude < 1 / resolution
        k = np.floor(np.log(np.maximum(magnitude, 1.0)) / step)
        key = np.where(small, np.round(middle), np.sign(middle) * (1e6 + k))
        width = np.where(small, 1.0, np.exp((k + 1) * step) - np.exp(k * step))
        groups, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        totals = np.bincount(inverse, weights=counts, minlength=groups.size)
        best = int(np.argmax(totals / width[first]))
        members = inverse == best
        return float(np.average(middle[members], weights=counts[members]))

    def mad_ns(self) -> float:
        """Median absolute deviation from the median (unscaled), from bucket midpoints."""
        self._require_data()
        median = self.percentile(50)
        total = self.count
        cumulative = _Cumulative(self.bucket_counts)
        # the deviations |middle - median| of buckets in order fall towards the median and rise after it: two
        # sorted runs, whose merged order statistics are found by bisection (no sort of every bucket)
        lo = self._deviation_at_rank((total - 1) // 2, median, cumulative)
        hi = self._deviation_at_rank(total // 2, median, cumulative)
        return float((lo + hi) / 2)

    def _deviation_at_rank(self, rank: int, median: float, cumulative: _Cumulative) -> float:
        """Element ``rank`` (0-based) of every value's ``|middle - median|`` in ascending order.

        The same number as sorting the buckets' deviations (each counted ``count`` times), found without the
        sort when the midpoints are in order: deviations fall over the buckets below the median and rise
        over the rest, so the weight of values within ``d`` of the median, and on each side the smallest
        deviation whose weight passes ``rank``, are found by bisection.
        """
        if not self._in_order:
            _, _, counts, middle = self._arrays
            deviation = np.abs(middle - median)
            order = np.argsort(deviation, kind="stable")
            cumulative = np.cumsum(counts[order])
            return float(deviation[order][np.searchsorted(cumulative, rank, side="right")])
        size = self.bucket_counts.size
        split = _bisect(0, size, lambda j: self._middle(j) >= median)  # [0, split) below the median

        def deviation(j: int) -> float:
            return abs(self._middle(j) - median)

        def weight_within(d: float) -> int:
            first = _bisect(0, split, lambda j: deviation(j) <= d)  # below: deviations fall with j
            stop = _bisect(split, size, lambda j: deviation(j) > d)  # above: they rise with j
            return cumulative.through(stop - 1) - (cumulative.through(first - 1) if first else 0) if stop > first else 0

        best = math.inf
        below = _bisect(0, split, lambda p: weight_within(deviation(split - 1 - p)) > rank)
        if below < split:
            best = deviation(split - 1 - below)
        above = _bisect(0, size - split, lambda p: weight_within(deviation(split + p)) > rank)
        if above < size - split:
            best = min(best, deviation(split + above))
        return best

    def _middle(self, index: int) -> float:
        """``_middle_at([index])[0]`` in Python floats: the MAD's bisection asks for a few thousand single midpoints,
        and a numpy call per scalar (array, gather, clip) cost 60 ms of every summary.  The same IEEE double
        operations: edges converted to float64, ``(lower + top) / 2``, clipped to the float64 extremes."""
        lower = float(self.bucket_lower_ns[index])
        upper = float(self.bucket_upper_ns[index])
        middle = (lower + (upper - 1 if self.discrete else upper)) / 2
        return min(max(middle, float(self.min_ns)), float(self.max_ns))

    @cached_property
    def _in_order(self) -> bool:
        """Whether the bucket midpoints never decrease (disjoint buckets in order: every result but odd bins)."""
        last = -math.inf
        for start, stop in self._chunks():
            if stop <= start:
                break
            middle = self._slice(start, stop)[3]
            if np.any(middle[1:] < middle[:-1]) or middle[0] < last:
                return False
            last = float(middle[-1])
        return True

    def mean_ns(self) -> float:
        """Mean from bucket midpoints (use :class:`Moments` for the exact one)."""
        self._require_data()
        return self._average(lambda middle: middle)

    def std_ns(self, mean_ns: float | None = None) -> float:
        """Standard deviation of the bucket midpoints about ``mean_ns`` (default: :meth:`mean_ns`)."""
        self._require_data()
        mean = self.mean_ns() if mean_ns is None else float(mean_ns)
        return math.sqrt(self._average(lambda middle: (middle - mean) ** 2))

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count, "min_ns": self.min_ns, "max_ns": self.max_ns,
            "relative_error": self.relative_error, "discrete": self.discrete,
            "bucket_lower_ns": self.bucket_lower_ns.tolist(), "bucket_upper_ns": self.bucket_upper_ns.tolist(),
            "bucket_counts": self.bucket_counts.tolist(),
        }


class _Cumulative:
    """Cumulative bucket counts without the full ``cumsum``: each chunk's total, and a chunk's cumsum when asked.

    ``first_above(ranks)`` is ``numpy.searchsorted(cumsum(counts), ranks, side="right")``; ``through(i)`` is
    ``cumsum(counts)[i]``.  Memory: one chunk of :data:`CHUNK_BUCKETS`, not one int64 per bucket.
    """

    def __init__(self, counts: np.ndarray) -> None:
        self.counts = counts
        self.step = CHUNK_BUCKETS
        self.chunk_ends = np.cumsum([int(counts[i:i + self.step].sum()) for i in range(0, counts.size, self.step)],
                                    dtype=np.int64)
        self._held: tuple[int, np.ndarray] | None = None

    def _chunk(self, chunk: int) -> np.ndarray:
        if self._held is None or self._held[0] != chunk:
            offset = int(self.chunk_ends[chunk - 1]) if chunk else 0
            self._held = chunk, np.cumsum(self.counts[chunk * self.step:(chunk + 1) * self.step]) + offset
        return self._held[1]

    def through(self, index: int) -> int:
        return int(self._chunk(index // self.step)[index % self.step])

    def first_above(self, ranks: np.ndarray) -> np.ndarray:
        chunks = np.searchsorted(self.chunk_ends, ranks, side="right")
        out = np.full(ranks.shape, self.counts.size, dtype=np.int64)
        for chunk in np.unique(chunks).tolist():
            if chunk >= self.chunk_ends.size:
                continue  # past the last bucket (ranks >= count)
            mine = chunks == chunk
            out[mine] = chunk * self.step + np.searchsorted(self._chunk(chunk), ranks[mine], side="right")
        return out


def _bisect(lo: int, hi: int, passes: Callable[[int], bool]) -> int:
    """The first index in ``[lo, hi)`` for which ``passes`` holds (``hi`` if none); ``passes`` must be monotone."""
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _max_relative_width(lower: np.ndarray, width: np.ndarray) -> float:
    """``max(width / max(|lower|, 1))`` a chunk at a time (exact: a maximum does not depend on the chunking)."""
    if lower.size == 0:
        return 0.0
    return max(float(np.max(width[i:i + CHUNK_BUCKETS] / np.maximum(np.abs(lower[i:i + CHUNK_BUCKETS]), 1)))
               for i in range(0, lower.size, CHUNK_BUCKETS))


_EXACT = 1 << 53  # int64 magnitudes below this convert to float64 exactly
# Values below 1 ms (nearly every latency and period error) index through a table: one gather instead of
# four passes, and int64 entries, which bincount takes without a converted copy.  8 MiB, built in ~10 ms on
# the first large batch (a larger table cost more to build than it saved on a 10^7-row summary).
_LUT_SIZE = 1 << 20
_LUT_MIN_BATCH = 1 << 14
_LUTS: dict[int, np.ndarray] = {}
_STEP_BLOCK = 1 << 16  # rows of differences per block in update_steps: 512 KiB of int64, within a core's L2


class LatencyHistogram:
    """Accumulator: HDR-style histogram of int64 ns values (``update`` / ``merge`` / ``result``).

    Parameters
    ----------
    relative_error
        Largest relative width of a bucket (default 1e-3: 1024 buckets per octave).
    """

    def __init__(self, relative_error: float = 1e-3) -> None:
        if not 0 < relative_error < 1:
            raise AnalysisError(f"relative_error must be in (0, 1), got {relative_error}")
        self.relative_error = relative_error
        self.sub_bits = max(1, math.ceil(-math.log2(relative_error)))
        self._positive = np.zeros(0, dtype=np.int64)  # counts by bucket index of v >= 0
        self._negative = np.zeros(0, dtype=np.int64)  # counts by bucket index of -v for v < 0
        self.count = 0
        self._mid_rank_cache: tuple[int, np.ndarray] | None = None  # (count when computed, ranks by bucket)
        self.min_ns: int | None = None
        self.max_ns: int | None = None

    def update(self, values_ns: np.ndarray, *, extremes: tuple[int, int] | None = None) -> LatencyHistogram:
        """Add values (int64 ns); ``extremes``: their (min, max) when the caller knows them already."""
        values = np.asarray(values_ns)
        if values.size == 0:
            return self
        if values.dtype.kind not in "iu":
            raise AnalysisError(f"LatencyHistogram takes integer ns values, got dtype {values.dtype}")
        values = values.astype(np.int64, copy=False)
        low, high = (int(values.min()), int(values.max())) if extremes is None else extremes
        self.min_ns = low if self.min_ns is None else min(self.min_ns, low)
        self.max_ns = high if self.max_ns is None else max(self.max_ns, high)
        self.count += values.size
        if low >= 0:
            self._positive = _add(self._positive, np.bincount(self._index(values, low, high)))
        elif -_LUT_SIZE < low and high < _LUT_SIZE and values.size >= _LUT_MIN_BATCH:
            # both signs (period errors) through one table of signed values: one gather, one count
            table, block = self._signed_lookup()
            counts = np.bincount(table.take(values + (_LUT_SIZE - 1)), minlength=2 * block)
            self._positive = _add(self._positive, counts[:block])
            self._negative = _add(self._negative, counts[block:])
        elif -low < _EXACT and high < _EXACT:
            # one pass for both signs: negative magnitudes counted in a second block of indices
            negative = values < 0
            index = self._index(np.abs(values))
            block = int(self._index(np.array([max(-low, high)], dtype=np.int64))[0]) + 1
            np.add(index, block, out=index, where=negative)
            counts = np.bincount(index, minlength=2 * block)
            self._positive = _add(self._positive, counts[:block])
            self._negative = _add(self._negative, counts[block:])
        else:
            negative = values < 0
            # -(v + 1) + 1 in uint64: the magnitude even of the most negative int64
            magnitude = (-(values[negative] + 1)).astype(np.uint64) + np.uint64(1)
            self._positive = _add(self._positive, np.bincount(self._index(values[~negative])))
            self._negative = _add(self._negative, np.bincount(self._index(magnitude)))
        return self

    def update_steps(self, values_ns: np.ndarray, offset: int = 0) -> LatencyHistogram:
        """Add ``values_ns[1:] - values_ns[:-1] - offset`` (int64 ns; period errors from wake-up times).

        The same counts as ``update`` of that array, computed a cache-sized block at a time into one buffer:
        the differences of 10^6 rows never exist as a whole, which saves their write and re-reads from memory
        (half the time of the pass on a busy machine).
        """
        values = np.asarray(values_ns)
        if values.dtype.kind not in "iu":
            raise AnalysisError(f"LatencyHistogram takes integer ns values, got dtype {values.dtype}")
        values = values.astype(np.int64, copy=False)
        n = values.size - 1
        if n <= 0:
            return self
        buffer = np.empty(min(n, _STEP_BLOCK), dtype=np.int64)
        for start in range(0, n, _STEP_BLOCK):
            stop = min(start + _STEP_BLOCK, n)
            steps = np.subtract(values[start + 1:stop + 1], values[start:stop], out=buffer[:stop - start])
            steps -= offset
            self.update(steps)
        return self

    def _index(self, magnitude: np.ndarray, low: int | None = None, top: int | None = None) -> np.ndarray:
        """Bucket index of non-negative values (int64 or uint64); ``low``, ``top``: their extremes, if known."""
        s = self.sub_bits
        if magnitude.size == 0:
            return np.zeros(0, dtype=np.int64)
        top = int(magnitude.max()) if top is None else top
        if top < (1 << s):
            return magnitude.astype(np.int64)
        if top < _LUT_SIZE and magnitude.size >= _LUT_MIN_BATCH and magnitude.dtype == np.int64:
            return self._lookup().take(magnitude)
        if top < _EXACT and magnitude.dtype == np.int64:
            if magnitude.size >= _LUT_MIN_BATCH and (low is None or low < _LUT_SIZE):
                # latencies: nearly all below 1 ms, a few spikes above: the table for all (clipped), the exact
                # float64 way for the few beyond it
                beyond = np.flatnonzero(magnitude >= _LUT_SIZE)
                if beyond.size <= magnitude.size // 8:
                    index = self._lookup().take(np.minimum(magnitude, _LUT_SIZE - 1))
                    index[beyond] = self._float_index(magnitude[beyond])
                    return index
            index = self._float_index(magnitude)
            if low is not None and low >= (1 << s):
                return index
            return np.where(magnitude < (1 << s), magnitude, index)
        magnitude = magnitude.astype(np.uint64, copy=False)
        # exponent e with 2**e <= v < 2**(e+1); float64 frexp, corrected where rounding moved it up
        exponent = np.frexp(magnitude.astype(np.float64))[1].astype(np.int64) - 1
        exponent = np.clip(exponent, s, 63).astype(np.uint64)
        exponent -= ((magnitude >> exponent) == 0).astype(np.uint64)
        exponent = np.maximum(exponent, np.uint64(s))
        shift = exponent - np.uint64(s)
        index = ((shift + np.uint64(1)) << np.uint64(s)) + (magnitude >> shift) - np.uint64(1 << s)
        return np.where(magnitude < (1 << s), magnitude, index).astype(np.int64)

    def _float_index(self, magnitude: np.ndarray) -> np.ndarray:
        """Bucket index of int64 values in [2**sub_bits, 2**53): exact in float64, the exponent and the leading
        sub_bits mantissa bits are the bucket."""
        s = self.sub_bits
        index = magnitude.astype(np.float64).view(np.int64) >> (52 - s)
        index -= (1023 + s - 1) << s
        return index

    def _lookup(self) -> np.ndarray:
        """Bucket index of every value below ``_LUT_SIZE`` (built once per process and bucket layout)."""
        table = _LUTS.get(self.sub_bits)
        if table is None:
            values = np.arange(_LUT_SIZE, dtype=np.int64)
            # computed without the table (it does not exist yet): the exact float64-bits path
            index = values.astype(np.float64).view(np.int64) >> (52 - self.sub_bits)
            index -= (1023 + self.sub_bits - 1) << self.sub_bits
            table = np.where(values < (1 << self.sub_bits), values, index)
            _LUTS[self.sub_bits] = table
        return table

    def _signed_lookup(self) -> tuple[np.ndarray, int]:
        """``(table, block)``: ``table[v + _LUT_SIZE - 1]`` is the bucket of ``v`` for ``|v| < _LUT_SIZE``, the
        positive buckets as they are and the negative ones (by magnitude) after ``block`` of them."""
        key = -self.sub_bits
        table = _LUTS.get(key)
        positive = self._lookup()
        block = int(positive[-1]) + 1
        if table is None:
            table = _LUTS[key] = np.concatenate([block + positive[1:][::-1], positive])
        return table, block

    def _bounds(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inclusive lower and exclusive upper value of non-negative bucket indices."""
        s = self.sub_bits
        index = index.astype(object)  # Python ints: bounds up to 2**64 do not fit int64
        block = index >> s  # 0 for exact buckets, else shift + 1
        lower = np.array([i if b == 0 else ((i & ((1 << s) - 1)) + (1 << s)) << (b - 1) for i, b in zip(index, block,
                          strict=True)], dtype=object)
        width = np.array([1 if b == 0 else 1 << (b - 1) for b in block], dtype=object)
        return lower, lower + width

    def bucket_top(self, value_ns: float) -> int:
        """The largest integer in the bucket of ``value_ns`` (≥ 0): a threshold there splits the counts exactly."""
        value = max(math.floor(value_ns), 0)
        index = self._index(np.array([value], dtype=np.int64))
        return int(self._bounds(index)[1][0]) - 1

    def count_above(self, value_ns: int) -> int:
        """How many values counted exceed ``value_ns`` (≥ 0): exact when it is a :meth:`bucket_top`."""
        if self._positive.size == 0:
            return 0
        index = int(self._index(np.array([max(int(value_ns), 0)], dtype=np.int64))[0])
        return int(self._positive[index + 1:].sum())

    def merge(self, other: LatencyHistogram) -> LatencyHistogram:
        """Add ``other``'s values to this one (same ``relative_error`` required)."""
        if other.sub_bits != self.sub_bits:
            raise AnalysisError("cannot merge histograms of different relative_error")
        self._positive = _add(self._positive, other._positive)
        self._negative = _add(self._negative, other._negative)
        self.count += other.count
        for name, pick in (("min_ns", min), ("max_ns", max)):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, theirs if mine is None else mine if theirs is None else pick(mine, theirs))
        return self

    def mid_ranks(self, values_ns: np.ndarray) -> np.ndarray:
        """1-based mid-rank of each value's bucket among the values counted so far.

        Values sharing a bucket share a rank (their average rank, as tied values get in
        ``scipy.stats.rankdata``), so a rank is exact where buckets are one value wide
        (magnitudes below ``2**sub_bits``) and otherwise exact up to the bucket width.
        Values should have been counted; others get the rank of the bucket they would fall in.
        """
        values = np.asarray(values_ns).astype(np.int64, copy=False)
        negative_total = int(self._negative.sum())
        if values.size and int(values.min()) >= 0:  # the usual case: one index, one gather, no masks
            index = self._index(values, int(values.min()), int(values.max()))
            np.minimum(index, max(self._positive.size - 1, 0), out=index)
            return self._positive_mid_ranks(negative_total).take(index)
        out = np.empty(values.size, dtype=np.float64)
        positive = values >= 0
        if positive.any():
            index = np.minimum(self._index(values[positive]), max(self._positive.size - 1, 0))
            out[positive] = self._positive_mid_ranks(negative_total)[index]
        if (~positive).any():
            magnitude = -(values[~positive] + 1) + 1  # values here are > int64 min in practice
            counts = self._negative if self._negative.size else np.zeros(1, dtype=np.int64)
            index = np.minimum(self._index(magnitude), counts.size - 1)
            through = np.cumsum(counts)
            out[~positive] = (negative_total - through[index]) + (counts[index] + 1) / 2.0
        return out

    def _positive_mid_ranks(self, negative_total: int) -> np.ndarray:
        """Mid-rank of each non-negative bucket; kept while the counts stay the same (a streamed
        rank pass asks for it once per chunk, and the cumulative sum is as long as the histogram)."""
        cached = self._mid_rank_cache
        if cached is not None and cached[0] == self.count:
            return cached[1]
        counts = self._positive if self._positive.size else np.zeros(1, dtype=np.int64)
        ranks = negative_total + (np.cumsum(counts) - counts) + (counts + 1) / 2.0
        self._mid_rank_cache = (self.count, ranks)
        return ranks

    def result(self) -> HistogramResult:
        pos = np.flatnonzero(self._positive)
        neg = np.flatnonzero(self._negative)[::-1]
        pos_lower, pos_upper = self._bounds(pos)
        neg_lower, neg_upper = self._bounds(neg)
        # a magnitude bucket [l, u) of negatives holds -u+1 .. -l, i.e. [-u+1, -l+1)
        lower = np.concatenate([-(neg_upper - 1), pos_lower])
        upper = np.concatenate([-neg_lower + 1, pos_upper])
        counts = np.concatenate([self._negative[neg], self._positive[pos]])
        return HistogramResult(
            count=self.count, min_ns=0 if self.min_ns is None else self.min_ns,
            max_ns=0 if self.max_ns is None else self.max_ns,
            bucket_lower_ns=_int_edges(lower), bucket_upper_ns=_int_edges(upper),
            bucket_counts=counts.astype(np.int64), relative_error=2.0 ** -self.sub_bits,
        )



class KeyedLatencyHistograms:
    """Accumulator: one :class:`LatencyHistogram` per small integer key, fed values and their keys together.

    ``update(values, keys)`` counts every value in the histogram of its key, as ``histograms[k].update(
    values[keys == k])`` for each k would, but indexes the values once and counts every key's buckets in one
    ``bincount`` (a dozen subsets of a chunk cost about what one does).  ``merged(keys)`` gives the histogram of
    several keys' values together (exact: histograms merge exactly); ``merge`` adds another's counts.
    """

    def __init__(self, n_keys: int, relative_error: float = 1e-3) -> None:
        if n_keys < 1:
            raise AnalysisError(f"KeyedLatencyHistograms needs at least one key, got {n_keys}")
        self.histograms = [LatencyHistogram(relative_error) for _ in range(n_keys)]

    def update(self, values_ns: np.ndarray, keys: np.ndarray) -> KeyedLatencyHistograms:
        """Add int64 ns ``values_ns``, each to the histogram of its key (``keys``: ints in ``[0, n_keys)``)."""
        values, keys = np.asarray(values_ns), np.asarray(keys)
        if values.shape != keys.shape:
            raise AnalysisError(f"{values.size} values but {keys.size} keys")
        if values.size == 0:
            return self
        if values.dtype.kind not in "iu" or keys.dtype.kind not in "iu":
            raise AnalysisError(f"KeyedLatencyHistograms takes integer values and keys, got {values.dtype}, "
                                f"{keys.dtype}")
        n = len(self.histograms)
        values, keys = values.astype(np.int64, copy=False), keys.astype(np.int64, copy=False)
        if int(keys.min()) < 0 or int(keys.max()) >= n:
            raise AnalysisError(f"keys must lie in [0, {n}), got {int(keys.min())}..{int(keys.max())}")
        low, high = int(values.min()), int(values.max())
        if low < 0:  # negative latencies are rare (clock steps, imports): each key's subset on its own
            for k in np.unique(keys).tolist():
                self.histograms[k].update(values[keys == k])
            return self
        index = self.histograms[0]._index(values, low, high)
        width = int(index.max()) + 1
        joint = np.bincount(keys * width + index, minlength=n * width).reshape(n, width)
        lows = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        highs = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(lows, keys, values)
        np.maximum.at(highs, keys, values)
        totals = joint.sum(axis=1)
        for k in np.flatnonzero(totals).tolist():
            h = self.histograms[k]
            counts = joint[k, : int(np.flatnonzero(joint[k])[-1]) + 1].copy()
            h._positive = _add(h._positive, counts)
            h.count += int(totals[k])
            h.min_ns = int(lows[k]) if h.min_ns is None else min(h.min_ns, int(lows[k]))
            h.max_ns = int(highs[k]) if h.max_ns is None else max(h.max_ns, int(highs[k]))
        return self

    def merged(self, keys: Iterable[int]) -> LatencyHistogram:
        """A new histogram of the values of ``keys`` together."""
        out = LatencyHistogram(self.histograms[0].relative_error)
        for k in keys:
            out.merge(self.histograms[k])
        return out

    def merge(self, other: KeyedLatencyHistograms) -> KeyedLatencyHistograms:
        if len(other.histograms) != len(self.histograms):
            raise AnalysisError(f"cannot merge {len(other.histograms)} keyed histograms into {len(self.histograms)}")
        for mine, theirs in zip(self.histograms, other.histograms, strict=True):
            mine.merge(theirs)
        return self


def _int_edges(edges: np.ndarray) -> np.ndarray:
    """Bucket edges (Python ints) as int64, or as exact Python ints (object) where one is beyond int64."""
    try:
        return np.asarray(edges.tolist(), dtype=np.int64)
    except OverflowError:
        return np.asarray(edges.tolist(), dtype=object)


def _add(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    if counts.size > total.size:
        counts = counts.copy()
        counts[: total.size] += total
        return counts
    total[: counts.size] += counts
    return total
