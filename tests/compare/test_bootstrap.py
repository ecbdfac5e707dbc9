"""Block bootstrap (jitterscope.resample): indices, Politis-White block length, spread against Monte Carlo truth."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.compare import BlockLength, block_indices, bootstrap_series, optimal_block_length
from scipy import signal


def _ar1(rng: np.random.Generator, n: int, phi: float, count: int = 1) -> np.ndarray:
    z = rng.standard_normal((count, n + 200))
    return signal.lfilter([1.0], [1.0, -phi], z, axis=1)[:, 200:]


def test_block_indices_are_circular_runs() -> None:
    idx = block_indices(np.random.default_rng(1), n=50, m=47, block=5, count=3)
    assert idx.shape == (3, 47)
    assert idx.min() >= 0 and idx.max() < 50
    runs = idx[:, :45].reshape(3, 9, 5)
    assert np.all(np.diff(runs, axis=2) % 50 == 1)


def test_block_length_rule() -> None:
    rng = np.random.default_rng(2)
    assert optimal_block_length(rng.standard_normal(20_000)).length <= 3
    ar = optimal_block_length(_ar1(rng, 20_000, 0.9)[0])
    assert 10 <= ar.length <= 2000
    assert "Politis-White" in ar.reason and "lag" in ar.reason
    assert optimal_block_length(np.full(1000, 7.0)).length == 1


def test_bootstrap_spread_of_the_median_matches_theory_for_iid() -> None:
    x = np.random.default_rng(3).standard_normal(10_000)
    draws = bootstrap_series(x, np.array([0.5]), np.array([1.0]), n_boot=600, seed=1, block=BlockLength(1, "iid"))
    assert draws.quantiles[:, 0].std() == pytest.approx(np.sqrt(np.pi / 2) / 100, rel=0.15)
    # exceedance fraction above 1: binomial spread
    p = float(np.mean(x > 1.0))
    assert draws.exceed[:, 0].std() == pytest.approx(np.sqrt(p * (1 - p) / 10_000), rel=0.15)


def test_block_bootstrap_captures_autocorrelation_that_single_draws_miss() -> None:
    rng = np.random.default_rng(4)
    replicas = _ar1(rng, 10_000, 0.9, count=300)
    true_sd = np.median(replicas, axis=1).std()  # Monte Carlo truth of the median's spread
    x = replicas[0]
    block = bootstrap_series(x, np.array([0.5]), np.empty(0), n_boot=400, seed=2)
    naive = bootstrap_series(x, np.array([0.5]), np.empty(0), n_boot=400, seed=2, block=BlockLength(1, "iid"))
    assert block.block.length >= 10
    assert block.quantiles[:, 0].std() == pytest.approx(true_sd, rel=0.35)
    assert naive.quantiles[:, 0].std() < 0.5 * true_sd


def test_m_out_of_n_rescales_the_spread() -> None:
    x = np.random.default_rng(5).standard_normal(40_000)
    full = bootstrap_series(x, np.array([0.9]), np.empty(0), n_boot=400, seed=3, block=BlockLength(1, "iid"))
    sub = bootstrap_series(x, np.array([0.9]), np.empty(0), n_boot=400, seed=3, block=BlockLength(1, "iid"),
                           max_resample=4_000)
    assert sub.resample_length == 4_000
    assert sub.quantiles[:, 0].std() == pytest.approx(full.quantiles[:, 0].std(), rel=0.2)
    assert np.median(sub.quantiles[:, 0]) == pytest.approx(np.quantile(x, 0.9), abs=0.02)
