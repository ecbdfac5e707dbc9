"""How tail checks say what they found: one p-value rule, declustered or caveated tests, floors of resampled and
modelled probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.format import format_resampled_p, model_probability
from jitterscope.tails import fit_tail, tail_checks_table, tail_levels_table
from jitterscope.tails.checks import ALPHA, Check, check_block_maxima, check_exceedances
from jitterscope.tails.fit import TailsReport
from scipy import stats


def test_a_p_value_decides_pass_or_fail_by_one_rule() -> None:
    with pytest.raises(ValueError, match="passed"):
        Check("goodness of fit", 1.0, 0.32, False, "")  # "p = 0.32 FAIL": refused
    with pytest.raises(ValueError, match="passed"):
        Check("exceedance autocorrelation", 1.0, 0.004, True, "")
    assert Check("x", 1.0, 0.044, True, "").result == f"pass (p ≥ {ALPHA:g})"
    assert Check("x", 1.0, 0.004, False, "").result == f"FAIL (p < {ALPHA:g})"
    assert Check("extremal index", 0.4, None, False, "").result == "FAIL"


def test_a_fit_prints_each_check_by_its_own_rule() -> None:
    """A body plus rare stalls: the QQ correlation fails on its bound, Anderson-Darling is judged by its p-value
    alone, and every printed p-value agrees with its pass/fail."""
    rng = np.random.default_rng(11)
    x = 5000 * np.exp(0.3 * rng.standard_normal(30_000))
    x[rng.choice(x.size, 15, replace=False)] += rng.uniform(1e6, 5e6, 15)
    fit = fit_tail(x, interval_ns=1_000_000)
    checks = {c.name: c for c in fit.checks}
    assert {"goodness of fit", "QQ correlation"} <= set(checks)
    assert checks["QQ correlation"].p_value is None
    for row in tail_checks_table(fit).rows:
        name, _, p_text, result = row
        check = checks[name]
        if check.p_value is not None:
            assert result.startswith("pass") == (check.p_value >= ALPHA), row
            assert p_text == check.p_text
        else:
            assert p_text == "-"


def test_a_passing_anderson_darling_beside_a_failing_qq_correlation() -> None:
    """The issue's "p = 0.32 FAIL" beside "p = 0.044 pass": a normal body plus 300 heavy-tailed stalls, where
    Anderson-Darling passes (p ≈ 0.045 ≥ 0.01) and the QQ correlation fails (0.91 < 0.95); the two are two
    checks, each with its own rule, so no p-value is printed beside a verdict it did not give."""
    rng = np.random.default_rng(1)
    x = 15000 + 3000 * rng.standard_normal(15000).clip(-3, 3)
    stalls = rng.choice(x.size, 300, replace=False)
    x[stalls] = 25000 + stats.genpareto.rvs(1.1, scale=10000, size=300, random_state=rng)
    fit = fit_tail(x, interval_ns=1_000_000)
    checks = {c.name: c for c in fit.checks}
    gof, qq = checks["goodness of fit"], checks["QQ correlation"]
    assert gof.p_value >= ALPHA and gof.passed and gof.result == f"pass (p ≥ {ALPHA:g})"
    assert qq.statistic < 0.95 and not qq.passed and qq.p_value is None
    assert not fit.extrapolated and "QQ correlation" in fit.withheld


def test_a_resampled_p_value_at_its_floor_says_so() -> None:
    assert format_resampled_p(1 / 200, 199) == "p ≤ 0.005 (floor, B = 199)"
    assert format_resampled_p(1 / 201, 200) == "p ≤ 0.005 (floor, B = 200)"  # not "p = 0.00498"
    assert format_resampled_p(3 / 200, 199) == "p = 0.015"
    check = Check("goodness of fit", 9.0, 1 / 200, False, "", resamples=199)
    assert check.p_text == "p ≤ 0.005 (floor, B = 199)"


def test_model_probabilities_below_one_in_a_million_are_not_printed_as_numbers() -> None:
    assert model_probability(5.5e-290) == "< 1e-6 (model)"
    assert model_probability(2e-6) == pytest.approx(2e-6)
    # a fit that extrapolates: a level whose modelled P(> level) is below 1e-6 is printed as such, not as 3e-9
    x = 20_000 + stats.genpareto.rvs(0.1, scale=2000, size=20_000, random_state=np.random.default_rng(5))
    levels = tuple(float(v) for v in np.geomspace(x.max() * 1.05, x.max() * 3, 8))
    fit = fit_tail(x, interval_ns=1_000_000, levels_ns=levels)
    assert fit.extrapolated
    known = dict(fit.exceedance_probabilities)
    tiny = [level for level in levels if level in known and known[level].estimate < 1e-6]
    assert tiny, "no modelled probability below 1e-6 among the levels"
    report = TailsReport("x", (fit,), (), levels_ns=levels)
    rows = {row[2]: row for row in tail_levels_table(report).rows}
    for level in tiny:
        assert rows[level / 1000][3] == "< 1e-6 (model)"


def test_exceedance_halves_are_tested_on_clusters_when_exceedances_cluster() -> None:
    # 10 storms of 20 exceedances (1 wake-up apart), 6 storms in the first half and 4 in the second: 120 vs 80
    # exceedances reject a constant rate (binomial p ≈ 0.006), 6 vs 4 independent storms do not
    n = 1_000_000
    starts = [50_000, 120_000, 210_000, 300_000, 390_000, 450_000, 600_000, 700_000, 800_000, 900_000]
    positions = np.array([s + k for s in starts for k in range(20)], dtype=np.int64)
    assert stats.binomtest(120, 200, 0.5).pvalue < ALPHA
    _, ei, halves = check_exceedances(positions, n)
    assert not ei.passed  # clustered: θ well below 0.7
    assert halves.passed and "clusters of exceedances (10 declustered from 200)" in halves.sentence
    assert halves.p_value == pytest.approx(stats.binomtest(6, 10, 0.5).pvalue)


def test_tests_on_correlated_block_maxima_say_they_are_indicative() -> None:
    # a slow drift makes neighbouring block maxima correlated: Ljung-Box fails, and the Mann-Whitney and the
    # Gumbel LR test, which assume independent maxima, say their p-values are too small
    rng = np.random.default_rng(7)
    drift = np.repeat(np.cumsum(rng.standard_normal(200)), 100)
    x = 50_000 + 5000 * drift + 3000 * rng.standard_exponential(20_000)
    maxima = x.reshape(200, 100).max(axis=1)
    lb, shift = check_block_maxima(maxima)
    assert not lb.passed and "assumes independent block maxima" in shift.sentence
    fit = fit_tail(x, interval_ns=1_000_000)
    assert fit.block_maxima is not None and not fit.block_maxima.independent
    assert "LR test assumes independent block maxima" in fit.block_maxima.sentence
