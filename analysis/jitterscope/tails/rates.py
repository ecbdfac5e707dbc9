"""Rates of large latency events, counted in the data: what a tail fit gives when it may not extrapolate.

A model-free companion of the GPD fit.  Exceedances of a level that follow each other
within :data:`DECLUSTER_GAP` wake-ups (a stall and its catch-up wake-ups) count as one
event (runs declustering, Coles 2001 §5.3.2); the event count over the capture's length
gives a rate per hour with an exact Poisson (Garwood 1936) interval.  Nothing here
reaches beyond the largest value recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

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


def poisson_interval(count: int, confidence: float) -> tuple[float, float]:
    """Exact (Garwood) two-sided interval of a Poisson mean from one ``count``.

    Notes
    -----
    ``lower = chi2.ppf(a/2, 2k) / 2`` (0 for k = 0), ``upper = chi2.ppf(1 - a/2, 2k + 2) / 2``
    with ``a = 1 - confidence``; coverage is at least ``confidence`` for every mean.
    """
    alpha = 1 - confidence
    lower = 0.0 if count == 0 else float(stats.chi2.ppf(alpha / 2, 2 * count)) / 2
    return lower, float(stats.chi2.ppf(1 - alpha / 2, 2 * count + 2)) / 2


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
        above = positions[values_ns > level]
        events = count_events(above)
        lower, upper = poisson_interval(events, confidence)
        rates.append(EventRate(
            level_ns=float(level), events=events, wakeups=int(above.size), hours=hours, per_hour=events / hours,
            per_hour_lower=lower / hours, per_hour_upper=upper / hours, confidence=confidence))
    return tuple(rates)
