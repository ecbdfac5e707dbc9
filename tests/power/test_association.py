"""association.py: risk ratio, rank test, Holm, power, event averages, lagged correlation on known cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from jitterscope.errors import AnalysisError
from jitterscope.power import detectable_ratio, event_average, holm, lagged_correlation, rank_test, risk_ratio
from scipy import stats


def test_risk_ratio_hand_computed():
    rr = risk_ratio(30, 100, 10, 400)
    assert rr.ratio == pytest.approx(0.30 / 0.025)
    se = math.sqrt(1 / 30 - 1 / 100 + 1 / 10 - 1 / 400)
    assert rr.ci_low == pytest.approx(12 * math.exp(-1.959964 * se), rel=1e-5)
    assert rr.ci_high == pytest.approx(12 * math.exp(1.959964 * se), rel=1e-5)
    # Fisher's one-sided p is the hypergeometric upper tail
    p = stats.hypergeom.sf(29, 500, 40, 100)
    assert rr.p_value == pytest.approx(p, rel=1e-6)


def test_risk_ratio_zero_cell_uses_haldane_and_bad_input_raises():
    rr = risk_ratio(5, 50, 0, 50)
    assert rr.ratio == pytest.approx((5.5 / 51) / (0.5 / 51))
    assert rr.ci_low < rr.ratio < rr.ci_high
    with pytest.raises(AnalysisError):
        risk_ratio(1, 0, 1, 10)
    with pytest.raises(AnalysisError):
        risk_ratio(11, 10, 1, 10)


def test_rank_test_cliffs_delta_brute_force():
    rng = np.random.default_rng(3)
    x, y = rng.normal(1, 1, 40), rng.normal(0, 1, 60)
    brute = (np.sum(x[:, None] > y[None, :]) - np.sum(x[:, None] < y[None, :])) / (40 * 60)
    result = rank_test(x, y)
    assert result.cliffs_delta == pytest.approx(brute)
    assert result.p_value < 1e-4
    assert rank_test(y, x).p_value > 0.99


def test_holm_known_values():
    # hand computed: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06, 0.5
    np.testing.assert_allclose(holm([0.03, 0.01, 0.5, 0.02]), [0.06, 0.04, 0.5, 0.06])
    assert holm([]).size == 0
    assert holm([0.9, 0.8]).max() == 1.0


def test_detectable_ratio_is_where_power_reaches_80_percent():
    ratio = detectable_ratio(0.01, 2000, 20000, alpha=0.01)
    p1 = ratio * 0.01
    z = (p1 - 0.01) / math.sqrt(p1 * (1 - p1) / 2000 + 0.01 * 0.99 / 20000)
    assert stats.norm.cdf(z - stats.norm.ppf(0.99)) == pytest.approx(0.8, abs=1e-6)
    assert detectable_ratio(0.01, 20000, 200000, alpha=0.01) < ratio  # more data, finer detection
    assert math.isnan(detectable_ratio(0.0, 10, 10, alpha=0.01))
    assert detectable_ratio(0.3, 2, 2, alpha=0.001) == math.inf


def test_event_average_finds_planted_response_and_not_a_null():
    rng = np.random.default_rng(7)
    x = rng.exponential(5.0, 20000)
    events = np.sort(rng.choice(np.arange(50, 19950), 300, replace=False))
    x_planted = x.copy()
    x_planted[events + 1] += 40.0
    found = event_average(x_planted, events, max_lag=5, peak_halfwidth=2, n_surrogates=199, rng=rng)
    assert found.lags[6] == 1 and found.mean[6] == pytest.approx(45, abs=2)
    assert found.mean[6] > found.band_high[6] and found.p_value == pytest.approx(0.005)
    null = event_average(x, events, max_lag=5, peak_halfwidth=2, n_surrogates=199, rng=rng)
    assert null.p_value > 0.01
    assert all(lo <= hi for lo, hi in zip(null.band_low, null.band_high, strict=True))


def test_event_average_guards():
    rng = np.random.default_rng(0)
    with pytest.raises(AnalysisError, match="at least one event"):
        event_average(np.ones(100), np.array([], dtype=int), max_lag=3, peak_halfwidth=1, n_surrogates=5, rng=rng)
    with pytest.raises(AnalysisError, match="too short"):
        event_average(np.ones(10), np.array([3]), max_lag=3, peak_halfwidth=1, n_surrogates=5, rng=rng)


def test_lagged_correlation_peaks_at_the_planted_lag():
    rng = np.random.default_rng(5)
    y = rng.normal(size=5000)
    x = np.roll(y, 3) + 0.5 * rng.normal(size=5000)  # x[t] follows y[t - 3]
    x[100] = np.nan
    cc = lagged_correlation(x, y, max_lag=5)
    best = cc.lags[int(np.nanargmax(cc.r))]
    assert best == -3 and max(cc.r) > 0.8
    others = [abs(r) for lag, r in zip(cc.lags, cc.r, strict=True) if lag != -3]
    assert max(others) < 3 * cc.null_band[0]
    assert cc.n[cc.lags.index(0)] == 4999
