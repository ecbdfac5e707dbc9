"""Streaming, mergeable summary of one thread's latency series: what a tail fit needs, in bounded memory.

A peaks-over-threshold fit (:mod:`jitterscope.tails`) looks only at the largest
values, their wake-up positions, maxima of fixed blocks, the count and the
fraction above a few requested levels.  :class:`TailAccumulator` keeps exactly
those while the series streams past (``update(batch)``, ``merge``), so the memory
does not grow with the length of the capture:

* the :data:`TOP_K` largest values with their wake-up indices (ties broken by a
  seeded hash of the index, see below);
* the maximum of each block of ``block_size`` consecutive wake-ups, the block
  size chosen up front from the expected length (about :data:`N_BLOCKS` blocks);
* ``n``, the recorded maximum, the count above each requested level, and which
  powers of ten every value is a multiple of (the clock resolution).

Rounded clocks (cyclictest prints whole µs) put many values on the same step,
which a continuous GPD cannot fit; the fit spreads each value uniformly over its
rounding interval.  The spread of wake-up ``i`` is a hash of ``(seed, i)``
(:func:`spread`), not a draw from a random stream, so it is known for any value
without knowing the others, and ranking by ``(value, spread)`` is the same for
every resolution: the top values are the right ones whatever resolution the rest
of the stream turns out to have.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError

MAX_EXCEEDANCES = 10_000
TOP_K = MAX_EXCEEDANCES + 1 + 500
"""Largest values kept: the highest threshold candidate is the (MAX_EXCEEDANCES+1)-th largest; margin for ties."""
N_BLOCKS = 100
MIN_BLOCK = 10
RESOLUTIONS = (10, 100, 1000, 10_000)

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def block_size_for(n: int) -> int:
    """Block size for block maxima of a series of ``n`` wake-ups: about :data:`N_BLOCKS` blocks, at least 10."""
    return max(MIN_BLOCK, n // N_BLOCKS)


def spread(index: np.ndarray, seed: int) -> np.ndarray:
    """Uniform in [-0.5, 0.5) per wake-up index: splitmix64 of ``(seed, index)``, the same in any batch order."""
    with np.errstate(over="ignore"):
        salt = np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        z = np.asarray(index, dtype=np.int64).astype(np.uint64) + salt
        z = (z + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53) - 0.5


@dataclass(frozen=True)
class TailSummary:
    """What a tail fit reads, from :meth:`TailAccumulator.result`.

    ``top_ns`` holds the largest values (spread over the clock resolution when
    that is above 1 ns) in descending order with their wake-up ``top_index``;
    ``maxima_ns`` the maxima of the complete blocks in order (spread likewise).
    """

    n: int
    resolution: float
    observed_max_ns: float
    top_ns: np.ndarray
    top_index: np.ndarray
    block_size: int
    maxima_ns: np.ndarray
    levels_ns: tuple[float, ...]
    above_levels: tuple[int, ...]


class TailAccumulator:
    """Bounded-memory summary of one thread's latencies in wake-up order (module docstring).

    Parameters
    ----------
    block_size : int
        Wake-ups per block for block maxima; :func:`block_size_for` of the expected length.
    levels_ns : tuple of float
        Levels whose exceedance count is kept (for P(latency > x) below the threshold).
    seed : int
        Seed of the tie-breaking spread of rounded values.
    """

    def __init__(self, block_size: int, levels_ns: tuple[float, ...] = (), seed: int = 0) -> None:
        if block_size < 1:
            raise AnalysisError(f"block size must be positive, not {block_size}")
        self.block_size = int(block_size)
        self.levels_ns = tuple(float(x) for x in levels_ns)
        self.seed = int(seed)
        self.n = 0
        self.observed_max = -np.inf
        self.multiple_of = dict.fromkeys(RESOLUTIONS, True)
        self.above = np.zeros(len(self.levels_ns), dtype=np.int64)
        self.blocks: dict[int, float] = {}
        self.top = np.empty(0, dtype=np.float64)
        self.top_index = np.empty(0, dtype=np.int64)

    def update(self, latency_ns: np.ndarray, start: int | None = None) -> TailAccumulator:
        """Add latencies of consecutive wake-ups ``start, start + 1, ...`` (default: right after the last ones)."""
        values = np.asarray(latency_ns)
        if values.ndim != 1:
            raise AnalysisError("a tail accumulator takes 1-D latency batches")
        if values.size == 0:
            return self
        first = self.n if start is None else int(start)
        self.n += values.size
        self.observed_max = max(self.observed_max, float(values.max()))
        self._update_resolution(values)
        for i, level in enumerate(self.levels_ns):
            self.above[i] += int(np.count_nonzero(values > level))
        self._update_blocks(values, first)
        self._update_top(values.astype(np.float64), first)
        return self

    def _update_resolution(self, values: np.ndarray) -> None:
        if not np.issubdtype(values.dtype, np.integer):
            if not np.all(values == np.round(values)):
                self.multiple_of = dict.fromkeys(RESOLUTIONS, False)
                return
            values = values.astype(np.int64)
        for r in RESOLUTIONS:
            if not self.multiple_of[r]:
                break
            self.multiple_of[r] = bool(np.all(values % r == 0))

    def _update_blocks(self, values: np.ndarray, first: int) -> None:
        size = self.block_size
        block_first = first // size
        block_last = (first + values.size - 1) // size
        cuts = np.arange(block_first + 1, block_last + 1) * size - first
        starts = np.concatenate([[0], cuts]).astype(np.int64)
        maxima = np.maximum.reduceat(values, starts)
        for block, value in zip(range(block_first, block_last + 1), maxima.tolist(), strict=True):
            old = self.blocks.get(block)
            self.blocks[block] = float(value) if old is None else max(old, float(value))

    def _update_top(self, values: np.ndarray, first: int) -> None:
        if self.top.size >= TOP_K:
            floor = self.top.min()
            picked = np.flatnonzero(values >= floor)
        elif values.size > TOP_K:
            floor = np.partition(values, values.size - TOP_K)[values.size - TOP_K]
            picked = np.flatnonzero(values >= floor)
        else:
            picked = np.arange(values.size)
        if picked.size == 0:
            return
        self._keep(np.concatenate([self.top, values[picked]]),
                   np.concatenate([self.top_index, picked.astype(np.int64) + first]))

    def _keep(self, values: np.ndarray, index: np.ndarray) -> None:
        """Keep the TOP_K largest by (value, spread of the index): the order of spread values at any resolution."""
        order = np.lexsort((spread(index, self.seed), values))[::-1][:TOP_K]
        self.top, self.top_index = values[order], index[order]

    def merge(self, other: TailAccumulator) -> TailAccumulator:
        """Combine with an accumulator of other wake-ups of the same thread (same block size, levels and seed)."""
        if (other.block_size, other.levels_ns, other.seed) != (self.block_size, self.levels_ns, self.seed):
            raise AnalysisError("tail accumulators with different block sizes, levels or seeds cannot be merged")
        self.n += other.n
        self.observed_max = max(self.observed_max, other.observed_max)
        self.multiple_of = {r: self.multiple_of[r] and other.multiple_of[r] for r in RESOLUTIONS}
        self.above = self.above + other.above
        for block, value in other.blocks.items():
            self.blocks[block] = max(self.blocks.get(block, value), value)
        self._keep(np.concatenate([self.top, other.top]), np.concatenate([self.top_index, other.top_index]))
        return self

    @property
    def resolution(self) -> float:
        """The largest power-of-ten step (ns) all values are multiples of, when at least 10 ns; else 1."""
        steps = [r for r in RESOLUTIONS if self.multiple_of[r]]
        return float(steps[-1]) if steps and self.n else 1.0

    def result(self) -> TailSummary:
        """The summary, with rounded values spread over their rounding interval."""
        resolution = self.resolution
        top = self.top.copy()
        n_blocks = self.n // self.block_size
        maxima = np.array([self.blocks.get(b, -np.inf) for b in range(n_blocks)], dtype=np.float64)
        if resolution > 1:
            top += resolution * spread(self.top_index, self.seed)
            maxima += resolution * spread(-1 - np.arange(n_blocks), self.seed)
        order = np.argsort(top, kind="stable")[::-1]
        return TailSummary(
            n=self.n, resolution=resolution, observed_max_ns=float(self.observed_max), top_ns=top[order],
            top_index=self.top_index[order], block_size=self.block_size, maxima_ns=maxima,
            levels_ns=self.levels_ns, above_levels=tuple(int(c) for c in self.above))


def summarize_series(latency_ns: np.ndarray, *, levels_ns: tuple[float, ...] = (), seed: int = 0) -> TailSummary:
    """:class:`TailSummary` of a whole in-memory series (one update)."""
    values = np.asarray(latency_ns)
    return TailAccumulator(block_size_for(values.size), levels_ns, seed).update(values).result()
