"""The structure a one-run-per-side comparison must respect: episodes of exceedances and slow drift.

Wake-ups of one run are not independent: a stall makes a run of late wake-ups (on every CPU it stops),
and a host drifts over seconds.  Two consequences for comparing two runs:

* **Episodes decide tails.**  Above a high level the information is the number of independent
  *episodes* (exceedances closer than :data:`EPISODE_GAP_INTERVALS` intervals to the previous one, on
  any CPU, are one episode; runs declustering, Coles 2001 §5.3.2, in time so that a stall of both CPUs
  is one), not the number of wake-ups.  A tail metric whose two runs differ by a handful of episodes is
  not shown to differ: :func:`episode_test` holds the episode counts above the lower of the two values
  against the runs' lengths (a binomial test of where the episodes fell), and a change it cannot
  show is "inconclusive", with the counts said.
* **Blocks follow the structure.**  :func:`structured_block_length` makes the bootstrap's blocks at
  least twice the longest episode above the run's p99 (so an episode is resampled whole) and, when
  the run drifts (its :data:`DRIFT_SEGMENTS` segments differ by a Kruskal-Wallis test at
  :data:`DRIFT_ALPHA`), one segment long (segment-level resampling), besides the Politis-White
  length from the autocorrelation of all wake-ups, which misses both (a few 40 ms stall clusters
  leave the autocorrelation of 10^4 wake-ups insignificant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..format import format_p, format_us
from .bootstrap import BlockLength, optimal_block_length
from .pvalues import binomtest_pvalue, kruskal_pvalue

EPISODE_GAP_INTERVALS = 10
"""Exceedances at most this many wake-up intervals after the previous one (any CPU) are one episode, as the
tails' event rates decluster (``tails.rates.DECLUSTER_GAP`` wake-ups)."""
EPISODE_LEVEL = 0.99
"""The blocks keep whole the episodes above this quantile of the run (the lowest tail metric judged)."""
DRIFT_SEGMENTS = 20
"""Segments of a run whose differences (Kruskal-Wallis) call for segment-level resampling."""
DRIFT_ALPHA = 1e-3
"""Kruskal-Wallis p-value below which a run drifts."""
MIN_SEGMENT = 50
"""Wake-ups per thread and segment below which drift is not tested (too few to tell)."""
RECORD_LEVEL = 0.98
"""A streamed run keeps the time and value of every wake-up above this quantile of its first wake-ups."""
MAX_RECORDS = 2_000_000
"""Most exceedance records a streamed run keeps; beyond, the floor rises (the lower half is dropped)."""


@dataclass(frozen=True)
class Exceedances:
    """Wake-ups of one run above ``floor_ns``: times (ns, every thread, ascending) and values, for episodes."""

    times_ns: np.ndarray
    values_ns: np.ndarray
    floor_ns: float
    """Every wake-up above this is held; episodes above a lower level cannot be counted."""
    gap_ns: float
    """Exceedances at most this far apart are one episode."""

    def episodes_above(self, level_ns: float) -> int | None:
        """Independent episodes above ``level_ns`` (None: the level is below what was kept)."""
        if level_ns < self.floor_ns:
            return None
        times = np.sort(self.times_ns[self.values_ns > level_ns])
        if times.size == 0:
            return 0
        return int(1 + np.count_nonzero(np.diff(times) > self.gap_ns))


def exceedances_of(times_ns: np.ndarray, values_ns: np.ndarray, interval_ns: float,
                   level: float = RECORD_LEVEL) -> Exceedances:
    """The :class:`Exceedances` of a run held in memory (``times_ns`` and ``values_ns`` of every wake-up)."""
    values = np.asarray(values_ns, dtype=np.float64)
    floor = float(np.quantile(values, level)) if values.size else 0.0
    keep = values > floor
    order = np.argsort(np.asarray(times_ns)[keep], kind="stable")
    return Exceedances(np.asarray(times_ns)[keep][order], values[keep][order], floor,
                       EPISODE_GAP_INTERVALS * float(interval_ns))


class ExceedanceRecorder:
    """Keeps the wake-ups of a streamed run above a floor (raised when more than :data:`MAX_RECORDS` are held)."""

    def __init__(self, floor_ns: float, interval_ns: float) -> None:
        self.floor = float(floor_ns)
        self.gap = EPISODE_GAP_INTERVALS * float(interval_ns)
        self._times: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._held = 0

    def update(self, times_ns: np.ndarray, values_ns: np.ndarray) -> None:
        keep = values_ns > self.floor
        if not keep.any():
            return
        self._times.append(np.asarray(times_ns)[keep].astype(np.int64))
        self._values.append(np.asarray(values_ns)[keep].astype(np.float64))
        self._held += int(np.count_nonzero(keep))
        if self._held > MAX_RECORDS:
            times, values = np.concatenate(self._times), np.concatenate(self._values)
            self.floor = float(np.median(values))
            keep = values > self.floor
            self._times, self._values, self._held = [times[keep]], [values[keep]], int(np.count_nonzero(keep))

    def result(self) -> Exceedances:
        times = np.concatenate(self._times) if self._times else np.zeros(0, dtype=np.int64)
        values = np.concatenate(self._values) if self._values else np.zeros(0)
        order = np.argsort(times, kind="stable")
        return Exceedances(times[order], values[order], self.floor, self.gap)


@dataclass(frozen=True)
class EpisodeCheck:
    """Episodes of both runs above the lower of their two values of a metric, and whether they tell them apart."""

    level_ns: float
    baseline: int
    candidate: int
    p_value: float
    shown: bool

    def text(self) -> str:
        return (f"{self.baseline} and {self.candidate} independent episodes above {format_us(self.level_ns)} "
                f"(baseline, candidate; binomial {format_p(self.p_value)})")


def episode_test(a: Exceedances, n_a: int, b: Exceedances, n_b: int, level_ns: float,
                 alpha: float) -> EpisodeCheck | None:
    """Do the two runs' episodes above ``level_ns`` differ by more than chance?

    Under "same process", the ``k_a + k_b`` independent episodes fall in the candidate with probability
    ``n_b / (n_a + n_b)`` each; the two-sided binomial test of ``k_b`` must reject at ``alpha`` for a
    tail change to be shown.  Fewer than six episodes in all can never show one (0.5^5 x 2 > 0.05).
    None when either run did not keep wake-ups down to ``level_ns``.
    """
    k_a, k_b = a.episodes_above(level_ns), b.episodes_above(level_ns)
    if k_a is None or k_b is None:
        return None
    total = k_a + k_b
    p = 1.0 if total == 0 else binomtest_pvalue(k_b, total, n_b / (n_a + n_b))
    return EpisodeCheck(float(level_ns), k_a, k_b, p, p < alpha)


@dataclass(frozen=True)
class Drift:
    """How much a run's :data:`DRIFT_SEGMENTS` segments differ: the run-to-run spread its drift implies."""

    p_value: float
    """Kruskal-Wallis across the segments."""
    log_sd: tuple[tuple[str, float], ...]
    """(metric, standard deviation of the log of that metric across segments), for p50 and p99."""

    @property
    def drifting(self) -> bool:
        return self.p_value < DRIFT_ALPHA

    def sd(self, metric: str) -> float:
        return dict(self.log_sd).get(metric, 0.0) if self.drifting else 0.0


DRIFT_METRICS = (("p50", 0.5), ("p99", 0.99))
"""Metrics whose one-run-per-side interval a drifting run widens by its segments' spread."""


def segment_drift(threads: Sequence[np.ndarray]) -> Drift | None:
    """Kruskal-Wallis across :data:`DRIFT_SEGMENTS` segments (every thread's same stretch pooled) and the spread
    of log p50 and log p99 across them; None for runs too short (fewer than :data:`MIN_SEGMENT` wake-ups per
    thread and segment) or constant.

    Why the spread and not its standard error: a run that drifts could have been captured in any of its
    segments' conditions, so two runs can differ by as much as two segments do even when nothing changed.
    """
    threads = [np.asarray(t, dtype=np.float64) for t in threads if np.asarray(t).size]
    if not threads:
        return None
    shortest = min(t.size for t in threads)
    pooled = np.concatenate(threads)
    if shortest < DRIFT_SEGMENTS * MIN_SEGMENT or np.ptp(pooled) == 0:
        return None
    per = shortest // DRIFT_SEGMENTS
    segments = [np.concatenate([t[s * per:(s + 1) * per] for t in threads]) for s in range(DRIFT_SEGMENTS)]
    p = kruskal_pvalue(segments)
    spreads = []
    for name, q in DRIFT_METRICS:
        values = np.array([np.quantile(seg, q) for seg in segments])
        spreads.append((name, float(np.std(np.log(values), ddof=1)) if np.all(values > 0) else 0.0))
    return Drift(p, tuple(spreads))


def structured_block_length(threads: Sequence[np.ndarray], drift: Drift | bool | None = True) -> BlockLength:
    """Block length (wake-ups of each thread) from episodes, drift and autocorrelation: the longest of three.

    ``threads``: each thread's latencies in wake-up order (the first wake-ups of a long run).
    Politis-White on all wake-ups pooled; twice the longest episode above the pooled p99 (so the
    resampling keeps episodes whole); one of :data:`DRIFT_SEGMENTS` segments when the segments
    differ (Kruskal-Wallis p < :data:`DRIFT_ALPHA`).  At most a tenth of the shortest thread.  ``drift``: the
    threads' :func:`segment_drift` when the caller has it already (True: compute it here).
    """
    threads = [np.asarray(t, dtype=np.float64) for t in threads if np.asarray(t).size]
    if not threads:
        return BlockLength(1, "no wake-ups")
    pooled = np.concatenate(threads)
    pw = optimal_block_length(pooled)
    shortest = min(t.size for t in threads)
    cap = max(1, shortest // 10)
    level = float(np.quantile(pooled, EPISODE_LEVEL))
    longest, episodes = 0, 0
    for t in threads:
        positions = np.flatnonzero(t > level)
        if positions.size == 0:
            continue
        breaks = np.flatnonzero(np.diff(positions) > EPISODE_GAP_INTERVALS)
        first = np.r_[positions[0], positions[breaks + 1]]
        last = np.r_[positions[breaks], positions[-1]]
        longest = max(longest, int((last - first).max()) + 1)
        episodes += first.size
    episode_length = 2 * longest
    if drift is True:
        drift = segment_drift(threads)
    drift_p = drift.p_value if drift is not None else None
    drift_length = shortest // DRIFT_SEGMENTS if drift is not None and drift.drifting else 0
    length = int(min(max(pw.length, episode_length, drift_length), cap))
    reasons = [f"Politis-White {pw.length}",
               f"episodes above p99: {episodes}, the longest {longest} wake-ups (blocks of twice that)"]
    if drift_p is not None:
        reasons.append(f"{DRIFT_SEGMENTS} segments {'differ' if drift_length else 'agree'} (Kruskal-Wallis "
                       f"{format_p(drift_p)}" + (f": segment-level blocks of {drift_length})" if drift_length else ")"))
    decided = ("segments (drift)" if length == drift_length and drift_length else
               "episodes" if length == episode_length and episode_length > pw.length else "autocorrelation")
    capped = " (capped at a tenth of the run)" if length == cap and max(pw.length, episode_length,
                                                                         drift_length) > cap else ""
    return BlockLength(max(1, length), f"{length} wake-ups, set by {decided}{capped}: " + "; ".join(reasons))
