"""Event rates that know clustering: declustered counts and intervals that cover the rate of a clustered process."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.tails import clustered_interval, decluster, event_rates, intervals_estimator, poisson_interval


def _storms(rng: np.random.Generator, clusters_per_run: float, mean_size: float, span: float) -> np.ndarray:
    """Times of a compound Poisson process: storm starts Poisson over ``span``, each storm a geometric number
    of events (mean ``mean_size``) a few units apart."""
    starts = rng.uniform(0, span, rng.poisson(clusters_per_run))
    sizes = rng.geometric(1 / mean_size, starts.size)
    return np.sort(np.concatenate([s + np.cumsum(rng.uniform(1, 5, k)) for s, k in zip(starts, sizes, strict=True)])
                   if starts.size else np.zeros(0))


def test_independent_events_are_their_own_clusters() -> None:
    rng = np.random.default_rng(1)
    times = np.sort(rng.uniform(0, 1e6, 200))
    found = decluster(times)
    assert found.events == 200 and found.extremal_index > 0.85 and found.clusters >= 170
    # then the interval is (nearly) Garwood's
    low, high = clustered_interval(found.events, found.clusters, 0.95)
    garwood = poisson_interval(200, 0.95)
    assert high - low == pytest.approx(garwood[1] - garwood[0], rel=0.1)


def test_storms_are_counted_as_clusters_and_widen_the_interval() -> None:
    rng = np.random.default_rng(2)
    times = _storms(rng, 40, 5.0, 1e7)
    found = decluster(times)
    assert 30 <= found.clusters <= 50 and found.extremal_index < 0.35  # 40 storms of 5 events: θ ≈ 0.2
    low, high = clustered_interval(found.events, found.clusters, 0.95)
    g_low, g_high = poisson_interval(found.events, 0.95)
    assert (high - low) / (g_high - g_low) > 1.8  # about √5 wider than an interval that assumes independence


def test_cluster_aware_intervals_cover_a_clustered_rate() -> None:
    """400 runs of a stall-storm process (20 storms of mean size 4 expected): the cluster-aware 95 % interval
    covers the true mean count in most runs; Garwood's on the event count (the rule removed) does not."""
    rng = np.random.default_rng(3)
    truth = 20 * 4.0
    covered = garwood = 0
    runs = 400
    for _ in range(runs):
        times = _storms(rng, 20, 4.0, 1e7)
        found = decluster(times)
        low, high = clustered_interval(found.events, found.clusters, 0.95)
        covered += low <= truth <= high
        g_low, g_high = poisson_interval(found.events, 0.95)
        garwood += g_low <= truth <= g_high
    assert covered / runs >= 0.85, covered
    assert garwood / runs < 0.75, garwood  # the interval the rule replaces is far too narrow


def test_intervals_estimator_hand_computed() -> None:
    # gaps 1, 1, 10: 2 (12)² / (3 × 102) = 0.941; discrete form: 2 (0 + 0 + 9)² / (3 × (0 + 0 + 72)) = 0.75
    assert intervals_estimator(np.array([1.0, 1.0, 10.0]), discrete=False) == pytest.approx(288 / 306)
    assert intervals_estimator(np.array([1.0, 1.0, 10.0]), discrete=True) == pytest.approx(0.75)
    assert intervals_estimator(np.array([5.0]), discrete=False) == 1.0  # one gap: no estimate


def test_tail_event_rates_use_the_clusters() -> None:
    # 30 stalls of one wake-up each, in 6 storms of 5 stalls 20 wake-ups apart, storms 10^5 wake-ups apart
    positions = np.array([s * 100_000 + k * 20 for s in range(6) for k in range(5)], dtype=np.int64)
    values = np.full(positions.size, 2e6)
    (rate,) = event_rates(values, positions, n=600_000, rate_hz=1000.0, levels_ns=(1e6,), confidence=0.9)
    assert rate.events == 30  # 20 wake-ups apart: separate events (runs declustering joins 10 or fewer)
    # θ by the intervals estimator on the 29 gaps (24 of 20, 5 of 99,920 wake-ups): 0.3455, so 10 clusters
    # (the estimator's small-sample bias on so regular a pattern: it is not 6, but far from 30)
    theta = 2 * (24 * 19 + 5 * 99_919) ** 2 / (29 * (24 * 19 * 18 + 5 * 99_919 * 99_918))
    assert rate.extremal_index == pytest.approx(theta) and rate.clusters == round(theta * 30) == 10
    low, high = poisson_interval(10, 0.9)
    assert rate.per_hour_lower == pytest.approx(low * 3 / rate.hours)
    assert rate.per_hour_upper == pytest.approx(high * 3 / rate.hours)
