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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import AnalysisError


@dataclass(frozen=True)
class HistogramResult:
    """A frozen histogram: non-empty buckets in ascending order, exact count/min/max.

    Bucket ``i`` holds ``bucket_counts[i]`` values ``v`` with
    ``bucket_lower_ns[i] <= v < bucket_upper_ns[i]``.  ``discrete`` says the
    values are integers (so a bucket ``[l, u)`` holds ``l .. u-1``); binned
    imports (``from_bins``) are continuous.
    """

    count: int
    min_ns: int | float
    max_ns: int | float
    bucket_lower_ns: tuple[int | float, ...]
    bucket_upper_ns: tuple[int | float, ...]
    bucket_counts: tuple[int, ...]
    relative_error: float = 1e-3
    discrete: bool = True

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
        order = np.argsort(lower, kind="stable")
        lower, width, n = lower[order], width[order], n[order]
        keep = n > 0
        lower, width, n = lower[keep], width[keep], n[keep]
        if n.size == 0:
            raise AnalysisError("histogram bins: all counts are zero; the source recorded no wake-ups")
        return cls(
            count=int(n.sum()),
            min_ns=float(lower[0]) if min_ns is None else min_ns,
            max_ns=float(lower[-1] + width[-1]) if max_ns is None else max_ns,
            bucket_lower_ns=tuple(lower.tolist()), bucket_upper_ns=tuple((lower + width).tolist()),
            bucket_counts=tuple(int(c) for c in n), relative_error=float(np.max(width / np.maximum(np.abs(lower), 1))),
            discrete=False,
        )

    # ---- derived arrays, computed once -------------------------------------------------
    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        lower = np.asarray(self.bucket_lower_ns, dtype=np.float64)
        upper = np.asarray(self.bucket_upper_ns, dtype=np.float64)
        counts = np.asarray(self.bucket_counts, dtype=np.int64)
        top = upper - 1 if self.discrete else upper
        middle = (lower + top) / 2
        # the extreme buckets' representatives cannot lie outside the exact extremes
        middle = np.clip(middle, self.min_ns, self.max_ns)
        return lower, top, counts, middle

    def _require_data(self) -> None:
        if self.count == 0:
            raise AnalysisError("histogram is empty: there are no wake-ups to compute statistics of")

    def _value_at_rank(self, ranks: np.ndarray) -> np.ndarray:
        """Estimated value of the order statistics at 0-based ``ranks``."""
        _, _, counts, middle = self._arrays
        ends = np.cumsum(counts)
        index = np.searchsorted(ends, ranks, side="right")
        values = middle[np.minimum(index, middle.size - 1)]
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
        low = self._value_at_rank(below)
        high = self._value_at_rank(np.minimum(below + 1, self.count - 1))
        values = low + frac * (high - low)
        return {float(k): float(v) for k, v in zip(q, values, strict=True)}

    def ccdf(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x_ns, p_exceed)``: for each bucket's top value x, the fraction of values above x."""
        self._require_data()
        _, top, counts, _ = self._arrays
        x = np.minimum(top, self.max_ns)
        return x, (self.count - np.cumsum(counts)) / self.count

    def mode_ns(self, resolution: float = 0.05) -> float:
        """The densest value: centre of the bin with the most values per ns.

        Bins are ``resolution`` relative wide (1 ns wide below ``1/resolution``);
        finer ones would make the mode of integer-ns data a matter of noise.
        """
        self._require_data()
        _, _, counts, middle = self._arrays
        step = math.log1p(resolution)
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
        _, _, counts, middle = self._arrays
        median = self.percentile(50)
        deviation = np.abs(middle - median)
        order = np.argsort(deviation, kind="stable")
        return _weighted_median(deviation[order], counts[order])

    def mean_ns(self) -> float:
        """Mean from bucket midpoints (use :class:`Moments` for the exact one)."""
        self._require_data()
        _, _, counts, middle = self._arrays
        return float(np.average(middle, weights=counts))

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count, "min_ns": self.min_ns, "max_ns": self.max_ns,
            "relative_error": self.relative_error, "discrete": self.discrete,
            "bucket_lower_ns": list(self.bucket_lower_ns), "bucket_upper_ns": list(self.bucket_upper_ns),
            "bucket_counts": list(self.bucket_counts),
        }


def _weighted_median(sorted_values: np.ndarray, weights: np.ndarray) -> float:
    total = int(weights.sum())
    ends = np.cumsum(weights)
    # same convention as percentile(50): average the two middle order statistics
    lo = sorted_values[np.searchsorted(ends, (total - 1) // 2, side="right")]
    hi = sorted_values[np.searchsorted(ends, total // 2, side="right")]
    return float((lo + hi) / 2)


_EXACT = 1 << 53  # int64 magnitudes below this convert to float64 exactly
# Values below 1 ms (nearly every latency and period error) index through a table: one gather instead of
# four passes, and int64 entries, which bincount takes without a converted copy.  8 MiB, built in ~10 ms on
# the first large batch (a larger table cost more to build than it saved on a 10^7-row summary).
_LUT_SIZE = 1 << 20
_LUT_MIN_BATCH = 1 << 14
_LUTS: dict[int, np.ndarray] = {}


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
            # exact in float64: the exponent and the leading s mantissa bits are the bucket
            index = magnitude.astype(np.float64).view(np.int64) >> (52 - s)
            index -= (1023 + s - 1) << s
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
        out = np.empty(values.size, dtype=np.float64)
        negative_total = int(self._negative.sum())
        positive = values >= 0
        if positive.any():
            index = np.minimum(self._index(values[positive]), max(self._positive.size - 1, 0))
            counts = self._positive if self._positive.size else np.zeros(1, dtype=np.int64)
            before = np.cumsum(counts) - counts
            out[positive] = negative_total + before[index] + (counts[index] + 1) / 2.0
        if (~positive).any():
            magnitude = -(values[~positive] + 1) + 1  # values here are > int64 min in practice
            counts = self._negative if self._negative.size else np.zeros(1, dtype=np.int64)
            index = np.minimum(self._index(magnitude), counts.size - 1)
            through = np.cumsum(counts)
            out[~positive] = (negative_total - through[index]) + (counts[index] + 1) / 2.0
        return out

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
            bucket_lower_ns=tuple(int(v) for v in lower), bucket_upper_ns=tuple(int(v) for v in upper),
            bucket_counts=tuple(int(v) for v in counts), relative_error=2.0 ** -self.sub_bits,
        )


def _add(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    if counts.size > total.size:
        counts = counts.copy()
        counts[: total.size] += total
        return counts
    total[: counts.size] += counts
    return total
