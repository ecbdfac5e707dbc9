"""Rates of large latency events, counted in the data: what a tail fit gives when it may not extrapolate.

A model-free companion of the GPD fit.  Exceedances of a level that follow each other
within :data:`DECLUSTER_GAP` wake-ups (a stall and its catch-up wake-ups) count as one
event (runs declustering, Coles 2001 §5.3.2).  Events themselves come in clusters (stall
storms: an extremal index well below 1), and a Poisson interval of a clustered count is
too narrow, by about the square root of the mean cluster size.  So the events are
declustered once more by :func:`decluster` (Ferro & Segers 2003: the extremal index by
the intervals estimator, the events split into that many clusters at the longest gaps),
and the rate's interval is the Poisson (Garwood) interval of the *cluster* count times
the mean cluster size (:func:`clustered_interval`): approximate, and exact only when
the events are independent.  Nothing here reaches beyond the largest value recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..summary import special_ufuncs

DECLUSTER_GAP = 10
"""Exceedances at most this many wake-ups after the previous one belong to the same event."""
RATE_LEVELS_NS = (100_000.0, 1_000_000.0, 10_000_000.0)
"""Levels (100 µs, 1 ms, 10 ms) whose event rates are given when the recorded values reach down to them."""


@dataclass(frozen=True)
class EventRate:
    """Events above ``level_ns`` in the capture: count, wake-ups, and the rate per hour with its interval."""

    level_ns: float
    events: int
    wakeups: int
    hours: float
    per_hour: float
    per_hour_lower: float
    per_hour_upper: float
    confidence: float
    clusters: int = 0
    """Independent clusters the events form (:func:`decluster`); the interval is the clusters' one."""
    extremal_index: float = 1.0


def poisson_interval(count: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) two-sided interval of a Poisson mean from one ``count``.

    Notes
    -----
    ``lower = chi2.ppf(a/2, 2k) / 2`` (0 for k = 0), ``upper = chi2.ppf(1 - a/2, 2k + 2) / 2``
    with ``a = 1 - confidence``; coverage is at least ``confidence`` for every mean.  ``chi2.ppf(q, 2k) / 2`` is
    what scipy.stats computes as ``gammaincinv(k, q)``: taken from scipy.special's compiled module, without
    importing scipy.stats (0.35 s of CPU, of a small report's 5 s).
    """
    alpha = 1 - confidence
    special = special_ufuncs()
    lower = 0.0 if count == 0 else float(special.gammaincinv(float(count), alpha / 2))
    return lower, float(special.gammaincinv(float(count + 1), 1 - alpha / 2))


@dataclass(frozen=True)
class Clusters:
    """Events declustered: how many, in how many independent clusters, and the extremal index."""

    events: int
    clusters: int
    extremal_index: float


def intervals_estimator(gaps: np.ndarray, *, discrete: bool) -> float:
    """Ferro & Segers (2003) intervals estimator of the extremal index from the gaps between exceedances.

    ``discrete``: gaps are counts of steps (wake-ups), and the bias-corrected form is used when a gap
    exceeds 2; times in continuous units use ``2 (Σ T)² / ((N − 1) Σ T²)``.  1 with fewer than two gaps.
    """
    gaps = np.asarray(gaps, dtype=float)
    if gaps.size < 2 or not np.any(gaps > 0):
        return 1.0
    if discrete and gaps.max() > 2:
        theta = 2 * np.sum(gaps - 1) ** 2 / (gaps.size * np.sum((gaps - 1) * (gaps - 2)))
    else:
        theta = 2 * gaps.sum() ** 2 / (gaps.size * np.sum(gaps**2))
    return float(min(1.0, theta))


def decluster(times: np.ndarray, *, discrete: bool = False) -> Clusters:
    """Clusters of events at ``times``: ``C = round(θ N)`` (at least 1), split at the ``C − 1`` longest gaps.

    Notes
    -----
    Ferro & Segers (2003) §5: with the extremal index θ from the intervals estimator, the
    ``θ N`` largest inter-event times are taken as the gaps between independent clusters.
    Poisson events give θ ≈ 1 (every event its own cluster); storms of stalls give θ < 1.
    """
    times = np.sort(np.asarray(times, dtype=float))
    n = int(times.size)
    if n < 3:  # fewer than two gaps: no estimate, every event counts as its own cluster
        return Clusters(events=n, clusters=n, extremal_index=1.0)
    theta = intervals_estimator(np.diff(times), discrete=discrete)
    return Clusters(events=n, clusters=max(1, min(n, round(theta * n))), extremal_index=theta)


def cluster_starts(times: np.ndarray, clusters: int) -> np.ndarray:
    """The first time of each of ``clusters`` clusters: ``times`` split at the ``clusters − 1`` longest gaps."""
    times = np.sort(np.asarray(times))
    if clusters >= times.size or times.size < 2:
        return times
    gaps = np.diff(times)
    cuts = np.sort(np.argsort(gaps, kind="stable")[::-1][: max(clusters - 1, 0)])
    return np.concatenate([times[:1], times[cuts + 1]])


def clustered_interval(events: int, clusters: int, confidence: float) -> tuple[float, float]:
    """Interval of the expected event count: the Poisson interval of ``clusters`` times the mean cluster size.

    Compound Poisson with the cluster size fixed at its observed mean; equals the Garwood interval of
    ``events`` when every event is its own cluster.
    """
    if clusters <= 0:
        return poisson_interval(0, confidence)
    lower, upper = poisson_interval(clusters, confidence)
    size = events / clusters
    return lower * size, upper * size


def count_events(positions: np.ndarray, gap: int = DECLUSTER_GAP) -> int:
    """Number of runs among sorted exceedance ``positions`` (wake-up indices) separated by more than ``gap``."""
    if positions.size == 0:
        return 0
    return int(1 + np.count_nonzero(np.diff(np.sort(positions)) > gap))


def event_rates(
    values_ns: np.ndarray, positions: np.ndarray, *, n: int, rate_hz: float, levels_ns: tuple[float, ...],
    confidence: float,
) -> tuple[EventRate, ...]:
    """Rate of declustered events above each level, from values ``values_ns`` at wake-up ``positions``.

    ``values_ns`` must hold every wake-up above each level asked for (the caller passes only
    levels at or above the smallest value it kept).
    """
    hours = n / rate_hz / 3600.0
    rates = []
    for level in sorted(set(levels_ns)):
        above = np.sort(positions[values_ns > level])
        starts = above[np.concatenate([[True], np.diff(above) > DECLUSTER_GAP])] if above.size else above
        events = int(starts.size)  # = count_events(above)
        found = decluster(starts, discrete=True)
        lower, upper = clustered_interval(events, found.clusters, confidence)
        rates.append(EventRate(
            level_ns=float(level), events=events, wakeups=int(above.size), hours=hours, per_hour=events / hours,
            per_hour_lower=lower / hours, per_hour_upper=upper / hours, confidence=confidence,
            clusters=found.clusters, extremal_index=found.extremal_index))
    return tuple(rates)
