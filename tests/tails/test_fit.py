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
    """Must show 3 (reduced: 40 trials here, 100 in benchmarks/compare_power.py).

    A trial whose fit withholds extrapolation (a model check firing by chance) or the level (rarer than once per
    day even at its interval's upper end) counts as not covering:
    the gate on mixtures must not cost the coverage on a tail the GPD does describe.
    """
    rng = np.random.default_rng(2024)
    n = 5000
    truth = 1 / (10 * n)  # ten times rarer than anything a run of n wake-ups is expected to show
    level = OFFSET_NS + stats.genpareto.isf(truth, XI, scale=SCALE_NS)
    covered, beyond_max, trials = 0, 0, 40
    for _ in range(trials):
        x = _gpd_series(rng, n)
        fit = fit_tail(x, interval_ns=1_000_000, levels_ns=(level,))
        beyond_max += level > fit.observed_max_ns
        interval = dict(fit.exceedance_probabilities).get(level)
        if interval is None:
            # withheld: the fit does not extrapolate, or its whole interval is rarer than once per day (a fit whose
            # end point lies below the level); either way it counts as not covering
            assert (not fit.extrapolated and fit.withheld) or level > fit.observed_max_ns
            continue
        covered += interval.lower <= truth <= interval.upper
        assert interval.upper < 100 * truth  # informative where it matters: the upper end is bounded
    assert beyond_max >= 0.75 * trials
    assert covered >= 0.85 * trials


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


def _mixture(rng: np.random.Generator, n: int, stalls: int) -> np.ndarray:
    """A lognormal body around 5 µs plus ``stalls`` rare 1-5 ms stalls at random wake-ups: two mechanisms."""
    x = 5000 * np.exp(0.3 * rng.standard_normal(n))
    x[rng.choice(n, stalls, replace=False)] += rng.uniform(1e6, 5e6, stalls)
    return x


def test_a_two_mechanism_tail_gives_nothing_beyond_the_data_and_counts_the_stalls() -> None:
    """Must show 3: a body plus rare millisecond stalls — no return level, no P(> x) beyond the maximum."""
    rng = np.random.default_rng(11)
    x = _mixture(rng, 30_000, 15)
    beyond = float(x.max()) * 10
    fit = fit_tail(x, interval_ns=1_000_000, levels_ns=(2e6, beyond))
    assert not fit.extrapolated
    assert "mixes mechanisms" in fit.withheld and "mixes mechanisms" in fit.verdict
    assert fit.return_levels == () and fit.return_curve == ()
    probabilities = dict(fit.exceedance_probabilities)
    assert beyond not in probabilities  # beyond the data: not given at all
    assert max(probabilities) == fit.observed_max_ns
    # within the data: the recorded fraction with a Clopper-Pearson interval around it
    at_2ms = probabilities[2e6]
    recorded = np.count_nonzero(x > 2e6) / x.size
    assert at_2ms.estimate == pytest.approx(recorded)
    assert at_2ms.lower < recorded < at_2ms.upper
    assert probabilities[fit.observed_max_ns].estimate == 0.0
    # the rate of the large events instead: 15 stalls above 1 ms in 30 s, i.e. 1800 per hour
    rates = {r.level_ns: r for r in fit.large_events}
    one_ms = rates[1e6]
    assert (one_ms.events, one_ms.wakeups) == (15, 15)
    assert one_ms.hours == pytest.approx(30 / 3600)
    assert one_ms.per_hour == pytest.approx(1800)
    assert one_ms.per_hour_lower < 1800 < one_ms.per_hour_upper
    assert rates[1e7].events == 0 and rates[1e7].per_hour_upper > 0  # the first level above the maximum
    assert max(rates) == 1e7


def test_a_large_shape_alone_withholds_extrapolation() -> None:
    """A pure GPD with xi = 0.8 passes the model checks, but at xi >= XI_MAX nothing is extrapolated."""
    from jitterscope.tails import XI_MAX
    x = OFFSET_NS + stats.genpareto.rvs(0.8, scale=SCALE_NS, size=20_000, random_state=np.random.default_rng(12))
    fit = fit_tail(x, interval_ns=1_000_000)
    assert fit.xi >= XI_MAX
    assert not fit.extrapolated and f"≥ {XI_MAX}" in fit.withheld
    assert fit.return_levels == ()


def test_an_undefined_standard_error_is_said_in_words() -> None:
    from jitterscope.tails import shape_text
    assert shape_text(0.2134, 0.0412) == "ξ = 0.213 ± 0.041"
    text = shape_text(-0.846, float("nan"))
    assert "nan" not in text and "undefined" in text and "−0.5" in text


def test_event_rates_by_hand() -> None:
    from jitterscope.tails import count_events, event_rates, poisson_interval
    # wake-ups 5-7 are one stall with its catch-up, 30 is another, 100 and 105 are one (gap 5 <= 10)
    positions = np.array([5, 6, 7, 30, 100, 105])
    assert count_events(positions) == 3
    assert count_events(positions, gap=0) == 6
    assert count_events(np.array([], dtype=int)) == 0
    low, high = poisson_interval(0, 0.90)
    assert low == 0 and high == pytest.approx(-np.log(0.05))  # P(0 | mu) = 0.05 at the upper end
    low, high = poisson_interval(3, 0.90)
    assert stats.poisson.sf(2, low) == pytest.approx(0.05) and stats.poisson.cdf(3, high) == pytest.approx(0.05)
    values = np.array([2e6, 1.5e6, 3e6, 5e5, 4e6, 2e5])
    (rate,) = event_rates(values, positions, n=3_600_000, rate_hz=1000.0, levels_ns=(1e6,), confidence=0.9)
    assert (rate.events, rate.wakeups, rate.hours) == (2, 4, 1.0)  # 5-7 (three wake-ups) and 100
    assert rate.per_hour == 2.0
