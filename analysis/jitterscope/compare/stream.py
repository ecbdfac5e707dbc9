"""The streaming accumulator of compare: one pass per run, memory bounded whatever its size, mergeable.

:class:`CompareStream` takes a run's wake-ups in batches (``update(thread, seq, latency)``),
merges with another stream of the same run (other parts, other threads; ``merge``) and
yields a :class:`StreamedRun` (``result``).  It holds, whatever the number of wake-ups:

* the counts of every value on an **HDR grid** (log-linear buckets, :data:`SUB_BITS` bits:
  one bucket per value below 1024 ns, above that at most ``2**-10`` of its lower edge wide),
  the exact count, min, max and the :data:`TOP_VALUES` largest values (exact);
* ``n_boot`` **replicate histograms** on the same grid: a Poisson block bootstrap.  Wake-ups
  are cut into blocks of ``block_length`` consecutive ``seq`` (serial dependence kept inside a
  block), and each block enters replicate ``r`` with a Poisson(``resample_fraction``) weight
  (Hanley & MacGibbon 2006 for the Poisson bootstrap; with a fraction below 1 it is an m-out-of-n
  bootstrap, ``m = fraction x n``, whose spread the caller rescales by ``sqrt(m / n)``).

The weights of a block depend only on ``(seed, run, group)`` (the same for every thread: a stall of all CPUs
stays one draw), where a *group* is
:data:`GROUP_ROWS` ``seq`` values' worth of blocks: the same wake-ups give the same replicates
however they are batched, split into parts or merged, provided each stream holds contiguous
stretches of a thread's wake-ups (as the parts of a dataset do).  A group is drawn once all its
rows are known: the first group a stream saw of a thread, and its last, wait for :meth:`result`
(or a merge), so at most two groups per thread are held.

Memory: ``n_boot x keys`` int32 for the replicates (int64 once a cell could pass 2**31 - 1; keys span the
run's min to max on the grid: about 14,000 for 1 µs … 12 ms, 56 MB at 1000 resamples), plus a group per thread
and a draw's chunks (a few MiB).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import AnalysisError
from ..summary import sparse_tools

if TYPE_CHECKING:
    from .episodes import Drift, Exceedances

SUB_BITS = 10
"""Bits of sub-bucket: buckets are one value wide below ``2**SUB_BITS`` ns, at most ``2**-SUB_BITS`` relative above."""
RELATIVE_ERROR = 2.0 ** -SUB_BITS
"""Largest relative width of a grid bucket; a bucket's midpoint is within half of it of every value in it."""
GROUP_ROWS = 1 << 16
"""``seq`` values per group of blocks whose bootstrap weights are drawn together."""
TOP_VALUES = 256
"""The largest values of a run kept exactly (tail fits, the max, quantiles with few wake-ups above)."""
_DRAW_CELLS = 1 << 20
"""Weights (replicates x blocks) of one chunk of a group's draw: 8 MiB."""
_PRODUCT_CELLS = 1 << 18
"""Cells (keys x replicates) of one chunk's product, float64: 2 MiB (a short run has few blocks and many keys)."""
_INT32_MAX = np.iinfo(np.int32).max
_SPARSE = sparse_tools()
"""scipy.sparse's compiled kernels (the bootstrap's product), without importing scipy.sparse."""
_EXACT = 1 << 53
_GROW_MARGIN = 512


def grid_keys(values_ns: np.ndarray) -> np.ndarray:
    """Grid key of each int64 ns value: its HDR bucket index, ``-1 - index(-v)`` for negative values.

    Keys increase with the value; a key's bucket holds the integers ``key_bounds`` gives.

    Raises
    ------
    AnalysisError
        A value of magnitude ``2**53`` ns (104 days) or more.
    """
    values = np.asarray(values_ns).astype(np.int64, copy=False)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    low, high = int(values.min()), int(values.max())
    if high >= _EXACT or low <= -_EXACT:
        raise AnalysisError(f"latency of {high if high >= _EXACT else low} ns is beyond ±2^53 ns (104 days): "
                            "the dataset's timestamps are broken; run 'jitterscope validate' on it")
    magnitude = np.abs(values) if low < 0 else values
    # exact in float64 below 2**53: the exponent and the leading SUB_BITS mantissa bits are the bucket
    index = magnitude.astype(np.float64).view(np.int64) >> (52 - SUB_BITS)
    index -= (1023 + SUB_BITS - 1) << SUB_BITS
    index = np.where(magnitude < (1 << SUB_BITS), magnitude, index)
    return np.where(values < 0, -1 - index, index) if low < 0 else index


def key_bounds(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lowest value and one past the highest value (int64 ns) of the integers in each key's bucket."""
    keys = np.asarray(keys, dtype=np.int64)
    negative = keys < 0
    index = np.where(negative, -1 - keys, keys)
    block = index >> SUB_BITS
    shift = np.maximum(block - 1, 0)
    lower = np.where(block == 0, index, ((index & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS)) << shift)
    upper = lower + np.where(block == 0, 1, np.left_shift(1, shift))
    # a magnitude bucket [l, u) of negative values holds -u+1 … -l
    return np.where(negative, 1 - upper, lower), np.where(negative, 1 - lower, upper)


@dataclass(frozen=True, eq=False)
class StreamedRun:
    """What :class:`CompareStream` gathered of one run (arrays over the grid keys ``low_key …``)."""

    count: int
    min_ns: int
    max_ns: int
    late_wakeups: int
    """Wake-ups later than ``late_ns`` (exact)."""
    low_key: int
    counts: np.ndarray
    """(keys,) wake-ups per grid key, keys ``low_key + arange(keys)``."""
    replicates: np.ndarray
    """(n_boot, keys) the bootstrap replicates' counts on the same keys."""
    top_ns: np.ndarray
    """The :data:`TOP_VALUES` largest values (all of them for a smaller run), ascending, exact."""
    block_length: int
    resample_fraction: float
    threads: tuple[int, ...] = field(default=())
    block_reason: str = ""
    """Why the block length (set by whoever chose it, e.g. :func:`~.streamed.prefix_block_length`)."""
    exceedances: Exceedances | None = None
    """Times and values of the run's largest wake-ups, for counting episodes (set by :func:`~.streamed.stream_run`)."""
    drift: Drift | None = None
    """How the run's segments differ (set by :func:`~.streamed.stream_run`)."""

    @property
    def keys(self) -> np.ndarray:
        return self.low_key + np.arange(self.counts.size)

    def middle(self) -> np.ndarray:
        """Representative value of each key: its bucket's middle integer, clipped to the run's exact extremes."""
        lower, upper = key_bounds(self.keys)
        return np.clip((lower + upper - 1) / 2.0, self.min_ns, self.max_ns)

    def quantiles(self, levels: np.ndarray) -> np.ndarray:
        """Quantiles at ``levels`` (in [0, 1]) like ``numpy.quantile`` (linear): from the grid, exact where known.

        An order statistic among the :data:`TOP_VALUES` largest, or the smallest, is exact; any other is
        its bucket's middle, within ``RELATIVE_ERROR / 2`` of the exact value (one ns below 1024 ns: exact).
        """
        levels = np.asarray(levels, dtype=np.float64)
        position = (self.count - 1) * levels
        below = np.floor(position)
        low = self._value_at_rank(below)
        high = self._value_at_rank(np.minimum(below + 1, self.count - 1))
        return low + (position - below) * (high - low)

    def _value_at_rank(self, ranks: np.ndarray) -> np.ndarray:
        ends = np.cumsum(self.counts)
        index = np.minimum(np.searchsorted(ends, ranks, side="right"), self.counts.size - 1)
        values = self.middle()[index]
        first_top = self.count - self.top_ns.size
        in_top = ranks >= first_top
        values = np.where(in_top, self.top_ns[np.clip(ranks - first_top, 0, self.top_ns.size - 1).astype(np.int64)],
                          values)
        return np.where(ranks <= 0, float(self.min_ns), values)


class CompareStream:
    """Accumulator of one run for compare: grid counts, Poisson block-bootstrap replicates, exact extremes.

    Parameters
    ----------
    n_boot : int
        Bootstrap replicates.
    block_length : int
        Wake-ups (``seq`` values) per bootstrap block.
    resample_fraction : float
        Mean Poisson weight of a block, in (0, 1]: 1 is the plain Poisson bootstrap; below 1, the
        replicates are m-out-of-n with ``m = fraction x n``.
    seed : int
        Seed (>= 0); the replicates are a function of the seed, ``run`` and the wake-ups.
    run : int
        Index of the run in its comparison (>= 0), so that two runs get independent replicates.
    late_ns : int
        Wake-ups later than this are counted as late (0: none counted).
    """

    def __init__(self, *, n_boot: int, block_length: int, resample_fraction: float, seed: int, run: int = 0,
                 late_ns: int = 0) -> None:
        if n_boot < 1 or block_length < 1 or not 0 < resample_fraction <= 1 or seed < 0 or run < 0:
            raise AnalysisError("CompareStream needs n_boot >= 1, block_length >= 1, 0 < resample_fraction <= 1 "
                                "and seed, run >= 0")
        self.n_boot, self.block_length, self.resample_fraction = n_boot, block_length, float(resample_fraction)
        self.seed, self.run, self.late_ns = seed, run, late_ns
        self.group_blocks = max(1, GROUP_ROWS // block_length)
        self.count, self.late_wakeups = 0, 0
        self.min_ns: int | None = None
        self.max_ns: int | None = None
        self._low = 0
        self._counts = np.zeros(0, dtype=np.int64)
        self._replicates = np.zeros((n_boot, 0), dtype=np.int32)  # int64 once a cell could pass 2**31 - 1
        self._bound = 0
        """No replicate cell is above this (sum of each draw's largest possible gain)."""
        self._top = np.zeros(0, dtype=np.int64)
        self._pending: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
        self._first_group: dict[int, int] = {}
        self._last_seq: dict[int, int] = {}
        self._done = False

    def _settings(self) -> tuple[int, int, float, int, int, int]:
        return self.n_boot, self.block_length, self.resample_fraction, self.seed, self.run, self.late_ns

    def update(self, thread: int, seq: np.ndarray, latency_ns: np.ndarray) -> CompareStream:
        """Add wake-ups of one thread, in ``seq`` order (after those already added for it)."""
        self._check_open()
        seq = np.asarray(seq).astype(np.int64, copy=False)
        latency = np.asarray(latency_ns).astype(np.int64, copy=False)
        if seq.shape != latency.shape or seq.ndim != 1:
            raise AnalysisError("CompareStream.update: seq and latency must be 1-D and of equal length")
        if latency.size == 0:
            return self
        if thread < 0:
            raise AnalysisError(f"thread index {thread} is negative; thread indices are >= 0")
        last = self._last_seq.get(thread)
        if np.any(np.diff(seq) <= 0) or (last is not None and seq[0] <= last) or seq[0] < 0:
            raise AnalysisError(f"thread {thread}: wake-ups not in seq order; compare streams each thread in "
                                "order (run 'jitterscope validate' on the dataset)")
        self._last_seq[thread] = int(seq[-1])
        keys = grid_keys(latency)
        low, high = int(keys.min()), int(keys.max())
        self._grow(low, high)
        self._counts[low - self._low: high - self._low + 1] += np.bincount(keys - low)
        self._extremes(latency)
        keys32 = (keys - self._low).astype(np.int32)  # column of each wake-up in the arrays
        group = seq // self.block_length // self.group_blocks
        offset = (seq // self.block_length - group * self.group_blocks).astype(np.int32)
        cuts = np.flatnonzero(np.diff(group)) + 1
        for start, stop in itertools.pairwise([0, *cuts.tolist(), group.size]):
            piece = (offset[start:stop].copy(), keys32[start:stop].copy())
            self._pending.setdefault((thread, int(group[start])), []).append(piece)
        first = self._first_group.setdefault(thread, int(group[0]))
        latest = int(group[-1])
        # a group is complete once a later one has begun, unless it is the first this stream saw of the thread:
        # its start may be in another stream (part) still to be merged
        for key in [k for k in self._pending if k[0] == thread and first != k[1] < latest]:
            self._draw(*key)
        return self

    def merge(self, other: CompareStream) -> CompareStream:
        """Add another stream of the same run (same settings): other parts or threads."""
        self._check_open()
        other._check_open()
        if other._settings() != self._settings():
            raise AnalysisError("cannot merge compare streams with different settings (n_boot, block, fraction, "
                                "seed, run, late_ns)")
        if other.count == 0:
            return self
        self._grow(other._low, other._low + other._counts.size - 1)
        shift = other._low - self._low
        span = slice(shift, shift + other._counts.size)
        self._counts[span] += other._counts
        self._wide_enough(self._bound + other._bound)
        self._replicates[:, span] += other._replicates
        self._extremes_from(other)
        for key, pieces in other._pending.items():
            moved = [(offset, (keys + shift).astype(np.int32)) for offset, keys in pieces]
            self._pending.setdefault(key, []).extend(moved)
        for thread, group in other._first_group.items():
            self._first_group[thread] = min(group, self._first_group.get(thread, group))
        for thread, last in other._last_seq.items():
            self._last_seq[thread] = max(last, self._last_seq.get(thread, last))
        return self

    def result(self) -> StreamedRun:
        """Draw the groups still held and end the stream (no update or merge after this).

        Raises
        ------
        AnalysisError
            No wake-up was added.
        """
        self._check_open()
        if self.count == 0:
            raise AnalysisError("compare stream received no wake-ups")
        for key in sorted(self._pending):
            self._draw(*key)
        self._done = True
        assert self.min_ns is not None and self.max_ns is not None
        return StreamedRun(
            count=self.count, min_ns=self.min_ns, max_ns=self.max_ns, late_wakeups=self.late_wakeups,
            low_key=self._low, counts=self._counts, replicates=self._replicates, top_ns=np.sort(self._top),
            block_length=self.block_length, resample_fraction=self.resample_fraction,
            threads=tuple(sorted(self._last_seq)))

    # ---- internals ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._done:
            raise AnalysisError("compare stream already ended by result()")

    def _grow(self, low: int, high: int) -> None:
        """Make the arrays cover keys ``low … high`` (with a margin, so that a growing range reallocates rarely)."""
        size = self._counts.size
        if size and self._low <= low and high < self._low + size:
            return
        new_low = low - _GROW_MARGIN if not size else min(self._low, low - _GROW_MARGIN)
        new_high = high + _GROW_MARGIN if not size else max(self._low + size - 1, high + _GROW_MARGIN)
        counts = np.zeros(new_high - new_low + 1, dtype=np.int64)
        replicates = np.zeros((self.n_boot, counts.size), dtype=self._replicates.dtype)
        shift = self._low - new_low
        if size:
            counts[shift:shift + size] = self._counts
            replicates[:, shift:shift + size] = self._replicates
            for pieces in self._pending.values():
                for i, (offset, keys) in enumerate(pieces):
                    pieces[i] = (offset, keys + np.int32(shift))
        self._low, self._counts, self._replicates = new_low, counts, replicates

    def _wide_enough(self, bound: int) -> None:
        """Note that no replicate cell will pass ``bound``; make the replicates int64 if int32 cannot hold it.

        int32 halves the largest array of a comparison (n_boot x keys: 33 MiB instead of 66 for a 20,000-wake-up
        run at 1000 resamples); a run whose cells could pass 2**31 - 1 gets int64, so counts are exact either way.
        """
        self._bound = bound
        if bound > _INT32_MAX and self._replicates.dtype != np.int64:
            self._replicates = self._replicates.astype(np.int64)

    def _extremes(self, latency: np.ndarray) -> None:
        low, high = int(latency.min()), int(latency.max())
        self.min_ns = low if self.min_ns is None else min(self.min_ns, low)
        self.max_ns = high if self.max_ns is None else max(self.max_ns, high)
        self.count += latency.size
        if self.late_ns > 0:
            self.late_wakeups += int(np.count_nonzero(latency > self.late_ns))
        self._keep_top(latency)

    def _extremes_from(self, other: CompareStream) -> None:
        assert other.min_ns is not None and other.max_ns is not None
        self.min_ns = other.min_ns if self.min_ns is None else min(self.min_ns, other.min_ns)
        self.max_ns = other.max_ns if self.max_ns is None else max(self.max_ns, other.max_ns)
        self.count += other.count
        self.late_wakeups += other.late_wakeups
        self._keep_top(other._top)

    def _keep_top(self, values: np.ndarray) -> None:
        if self._top.size == TOP_VALUES:  # only values above the least kept can enter (equal ones change nothing)
            values = values[values > self._top.min()]
        if values.size > TOP_VALUES:
            values = np.partition(values, values.size - TOP_VALUES)[values.size - TOP_VALUES:]
        both = np.concatenate([self._top, values])
        self._top = both if both.size <= TOP_VALUES else np.partition(both, both.size - TOP_VALUES)[-TOP_VALUES:]

    def _draw(self, thread: int, group: int) -> None:
        """Add group ``group`` of ``thread`` to the replicates: each block with a Poisson weight per replicate."""
        pieces = self._pending.pop((thread, group))
        offset = np.concatenate([p[0] for p in pieces])
        columns = np.concatenate([p[1] for p in pieces])
        if len(pieces) > 1:
            order = np.argsort(offset, kind="stable")
            offset, columns = offset[order], columns[order]
        # blocks past the group's last wake-up hold none: drawing weights for them would change nothing, and
        # the group's content alone decides how many are drawn, so the draw is the same however it was batched
        blocks = int(offset.max()) + 1
        # the thread is not in the seed: block b of every thread (the same stretch of time when the threads share
        # an interval) gets the same weights, so a stall of several CPUs is resampled as one
        rng = np.random.default_rng([self.seed, self.run, group])
        # independent Poisson(f) weights for the G blocks of each replicate, drawn as a Poisson(f G) number of
        # uniform block choices (the same law, and cost in proportion to the weights, not to n_boot x G)
        per_replicate = rng.poisson(self.resample_fraction * blocks, self.n_boot)
        # A replicate adds, for each block, (times it was chosen) x (the block's counts per key): the weights W
        # (replicates x blocks) times the group's sparse (blocks x keys) count matrix H. One sparse product per
        # chunk of replicates costs (rows of the group) x (replicates) additions in one C loop, with temporaries
        # of a few MiB; the uniform block choices are drawn chunk by chunk, which gives numpy's generator the
        # same values as one draw of all of them (tests/compare/test_stream_speed.py checks the replicates are
        # identical to the former row-by-row accumulation). The product is scipy.sparse's own kernel (csr_matvecs,
        # what its csr @ dense calls) on H transposed in CSR form: importing scipy.sparse would cost compare of a
        # small run ~0.15 s, more than its whole bootstrap.
        width = self._replicates.shape[1]
        by_key = np.argsort(columns, kind="stable")  # H transposed (keys x blocks), one row per key
        indices = offset[by_key].astype(np.int64)
        indptr = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(columns, minlength=width), out=indptr[1:])
        ones = np.ones(offset.size)
        ends = np.cumsum(per_replicate)
        # the product is dense (keys x replicates, float64): bounded too, or a short run's few blocks would make
        # it every replicate at once (with its rounded and cast copies, 4 times the replicates: 450 MB for two
        # 20,000-wake-up runs)
        rows_at_once = max(1, min(_DRAW_CELLS // blocks, _PRODUCT_CELLS // width))
        # a replicate's cell gains at most (its block choices) x (the largest block's wake-ups) here
        self._wide_enough(self._bound + int(per_replicate.max(initial=0)) * int(np.bincount(offset).max()))
        for r0 in range(0, self.n_boot, rows_at_once):
            r1 = min(self.n_boot, r0 + rows_at_once)
            first = int(ends[r0 - 1]) if r0 else 0
            chosen = rng.integers(0, blocks, int(ends[r1 - 1]) - first)
            if not chosen.size:
                continue
            replicate = np.repeat(np.arange(r1 - r0, dtype=np.int64), per_replicate[r0:r1])
            weights = np.bincount(replicate * blocks + chosen, minlength=(r1 - r0) * blocks)
            chunk = np.ascontiguousarray(weights.reshape(r1 - r0, blocks).T, dtype=np.float64)  # blocks x replicates
            added = np.zeros((width, r1 - r0))  # keys x replicates: H^T W^T, exact (integers below 2**53)
            _SPARSE.csr_matvecs(width, blocks, r1 - r0, indptr, indices, ones, chunk.ravel(), added.ravel())
            np.add(self._replicates[r0:r1], np.rint(added.T, out=added.T), out=self._replicates[r0:r1],
                   casting="unsafe")  # exact: _wide_enough made the cells wide enough for every sum
