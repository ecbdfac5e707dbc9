"""Independence and stationarity checks of jitterscope.tailchecks, against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.tails import checks as tailchecks
from scipy import stats


def test_ljung_box_by_hand() -> None:
    acf = np.array([0.2, -0.1])
    n = 50
    q = n * (n + 2) * (0.04 / 49 + 0.01 / 48)
    assert tailchecks.ljung_box(acf, n) == pytest.approx((q, stats.chi2.sf(q, 2)))


def test_autocorrelation_matches_direct_sum() -> None:
    x = np.random.default_rng(1).normal(size=300)
    xc = x - x.mean()
    direct = [np.sum(xc[:-h] * xc[h:]) / np.sum(xc * xc) for h in range(1, 6)]
    np.testing.assert_allclose(tailchecks.autocorrelation(x, 5), direct, atol=1e-12)


def test_indicator_autocorrelation_from_positions_equals_the_dense_series() -> None:
    rng = np.random.default_rng(2)
    n = 1000
    indicator = (rng.random(n) < 0.05).astype(float)
    indicator[500:503] = 1  # a cluster
    positions = np.flatnonzero(indicator)
    np.testing.assert_allclose(tailchecks.indicator_autocorrelation(positions, n, 8),
                               tailchecks.autocorrelation(indicator, 8), atol=1e-12)


def test_extremal_index() -> None:
    # the intervals estimator assumes Poisson-like (random) times between clusters
    rng = np.random.default_rng(3)
    isolated = np.sort(rng.choice(1_000_000, 1000, replace=False))
    assert tailchecks.extremal_index(isolated) > 0.9
    starts = np.sort(rng.choice(np.arange(0, 1_000_000, 10), 500, replace=False))
    clusters = (starts[:, None] + np.arange(4)[None, :]).ravel()  # clusters of 4: theta = 1/4
    assert tailchecks.extremal_index(clusters) == pytest.approx(0.25, abs=0.03)


def test_checks_pass_on_iid_and_fail_on_clusters_and_shifts() -> None:
    rng = np.random.default_rng(4)
    n = 20_000
    iid = np.sort(rng.choice(n, 400, replace=False))
    assert all(c.passed for c in tailchecks.check_exceedances(iid, n))
    clustered = np.unique((rng.choice(n - 10, 80, replace=False)[:, None] + np.arange(5)).ravel())
    lb, ei, _ = tailchecks.check_exceedances(clustered, n)
    assert not lb.passed and not ei.passed
    assert "not independent" in lb.sentence
    late = np.sort(rng.choice(np.arange(n // 2, n), 300, replace=False))
    early = np.sort(rng.choice(n // 2, 100, replace=False))
    halves = tailchecks.check_exceedances(np.r_[early, late], n)[2]
    assert not halves.passed and "not stationary" in halves.sentence
    maxima = np.r_[rng.normal(10, 1, 50), rng.normal(13, 1, 50)]
    assert not tailchecks.check_block_maxima(maxima)[1].passed
    assert all(c.passed for c in tailchecks.check_block_maxima(rng.normal(10, 1, 100)))
