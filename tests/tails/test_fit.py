"""Peaks-over-threshold tail analysis (jitterscope.tails) on synthetic data with known tails and planted violations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.errors import AnalysisError
from jitterscope.io import BaseLatency, SimulationSpec, write_simulation
from jitterscope.tails import analyze_tails, choose_threshold, clock_resolution, fit_tail
from scipy import stats

XI = 0.2
SCALE_NS = 1000.0
OFFSET_NS = 5000.0


def _gpd_series(rng: np.random.Generator, n: int) -> np.ndarray:
    return OFFSET_NS + stats.genpareto.rvs(XI, scale=SCALE_NS, size=n, random_state=rng)


def test_exceedance_interval_beyond_the_maximum_covers_the_truth() -> None:
    """Must show 3 (reduced: 20 trials here, 100 in benchmarks/compare_power.py)."""
    rng = np.random.default_rng(2024)
    n = 5000
    truth = 1 / (10 * n)  # ten times rarer than anything a run of n wake-ups is expected to show
    level = OFFSET_NS + stats.genpareto.isf(truth, XI, scale=SCALE_NS)
    covered, beyond_max = 0, 0
    for _ in range(20):
        x = _gpd_series(rng, n)
        fit = fit_tail(x, interval_ns=1_000_000, levels_ns=(level,))
        interval = dict(fit.exceedance_probabilities)[level]
        beyond_max += level > fit.observed_max_ns
        covered += interval.lower <= truth <= interval.upper
        assert interval.upper < 100 * truth  # informative where it matters: the upper end is bounded
    assert beyond_max >= 15
    assert covered >= 16


def test_fit_recovers_shape_and_states_its_parts() -> None:
    x = _gpd_series(np.random.default_rng(1), 20_000)
    fit = fit_tail(x, interval_ns=500_000)
    assert abs(fit.xi - XI) < 3 * fit.xi_se
    assert fit.rate_hz == 2000.0
    assert fit.assumptions_ok, fit.verdict
    assert fit.ad_p_value > 0.01 and fit.qq_correlation > 0.99
    hour, day = fit.return_levels
    assert (hour.period, day.period) == ("hour", "day")
    assert hour.wakeups == 2000 * 3600
    true_hour = OFFSET_NS + stats.genpareto.isf(1 / hour.wakeups, XI, scale=SCALE_NS)
    assert hour.level_ns.lower <= true_hour <= hour.level_ns.upper
    assert hour.level_ns.estimate < day.level_ns.estimate
    assert hour.extrapolation == pytest.approx(hour.wakeups / 20_000)
    bm = fit.block_maxima
    assert bm is not None and len(bm.maxima_ns) == 100
    assert abs(bm.gev_xi - XI) < 3 * bm.gev_xi_se
    assert "agrees with the GPD shape" in bm.sentence
    json.dumps(fit.to_json())


def test_gumbel_not_rejected_for_an_exponential_tail() -> None:
    x = np.random.default_rng(2).exponential(1000.0, 20_000)
    fit = fit_tail(x, interval_ns=1_000_000)
    assert abs(fit.xi) < 3 * fit.xi_se
    assert fit.block_maxima is not None and fit.block_maxima.lr_p_value > 0.01


def test_threshold_rule_skips_a_body_that_is_not_gpd() -> None:
    """Uniform body below 10 µs (90 %), GPD above: the rule must not pick a threshold well inside the body."""
    rng = np.random.default_rng(3)
    n = 20_000
    body = rng.random(n) < 0.9
    x = np.where(body, rng.uniform(0, 10_000, n), 10_000 + stats.genpareto.rvs(0.1, scale=2000, size=n,
                                                                                 random_state=rng))
    candidates, chosen = choose_threshold(x)
    assert candidates[0].threshold_ns < 9000  # the lowest candidates do reach into the body
    assert candidates[chosen].threshold_ns > 9900


def test_strong_autocorrelation_is_reported() -> None:
    rng = np.random.default_rng(4)
    n, phi = 20_000, 0.97
    e = np.empty(n)
    e[0] = 0.0
    z = rng.standard_normal(n) * np.sqrt(1 - phi**2)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + z[i]
    fit = fit_tail(3000 * np.exp(0.5 * e), interval_ns=1_000_000)
    assert not fit.assumptions_ok
    failed = {c.name for c in fit.checks if not c.passed}
    assert {"exceedance autocorrelation", "extremal index"} <= failed
    assert fit.verdict.startswith("ASSUMPTIONS NOT MET")


def test_level_shift_half_way_is_reported() -> None:
    rng = np.random.default_rng(5)
    x = 3000 * np.exp(0.3 * rng.standard_normal(20_000))
    x[10_000:] *= 1.3
    fit = fit_tail(x, interval_ns=1_000_000)
    failed = {c.name for c in fit.checks if not c.passed}
    assert {"exceedance rate, first vs second half", "block maxima, first vs second half"} <= failed
    assert any("not stationary" in c.sentence for c in fit.checks)


def test_iid_lognormal_passes_the_checks() -> None:
    x = 3000 * np.exp(0.3 * np.random.default_rng(6).standard_normal(20_000))
    fit = fit_tail(x, interval_ns=1_000_000)
    assert fit.assumptions_ok, [c.sentence for c in fit.checks if not c.passed]


def test_too_short_and_bad_parameters() -> None:
    with pytest.raises(AnalysisError, match="too few for a tail fit"):
        fit_tail(np.arange(100.0), interval_ns=1000)
    with pytest.raises(AnalysisError, match="confidence"):
        fit_tail(np.arange(1000.0), interval_ns=1000, confidence=1.5)


def test_analyze_tails_on_a_simulated_dataset(tmp_path: Path) -> None:
    spec = SimulationSpec(threads=2, samples=5000, base=BaseLatency(spread=0.4))
    report = analyze_tails(open_dataset(write_simulation(spec, tmp_path / "sim.parquet", seed=3)))
    assert [f.thread for f in report.threads] == [0, 1]
    assert all(f.n == 5000 for f in report.threads)
    assert "cannot promise" in report.promise
    text = json.dumps(report.to_json())
    assert "return_levels" in text


def test_analyze_tails_refuses_histogram_data(tmp_path: Path) -> None:
    table = pa.table({"thread": [0], "cpu": [0], "bin_start_ns": [0], "bin_width_ns": [1000], "count": [5]})
    meta = Metadata(kind="histogram", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1000),))
    path = write_dataset(table, meta, tmp_path / "h.parquet")
    with pytest.raises(AnalysisError, match="histogram-only"):
        analyze_tails(open_dataset(path))


def test_rounded_clock_values_are_spread_and_said_so() -> None:
    rng = np.random.default_rng(7)
    x = OFFSET_NS + stats.genpareto.rvs(XI, scale=20 * SCALE_NS, size=20_000, random_state=rng)
    rounded = (np.round(x / 1000) * 1000).astype(np.int64)  # whole µs, as cyclictest prints them
    assert clock_resolution(rounded) == 1000 and clock_resolution(x.astype(np.int64) + 1) == 1
    fit = fit_tail(rounded, interval_ns=1_000_000)
    assert fit.observed_max_ns == rounded.max()
    assert "multiples of 1000 ns" in fit.checks[0].sentence
    assert abs(fit.xi - XI) < 3 * fit.xi_se
