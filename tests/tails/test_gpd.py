"""GPD maximum likelihood and profile-likelihood intervals (jitterscope.gpd) on data with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.tails import gpd
from scipy import stats


@pytest.mark.parametrize("xi", [-0.3, 0.0, 0.2, 0.5])
def test_fit_matches_scipy_maximum_likelihood(xi: float) -> None:
    y = stats.genpareto.rvs(xi, scale=2.0, size=800, random_state=np.random.default_rng(1))
    fit = gpd.fit_gpd(y)
    c, _, scale = stats.genpareto.fit(y, floc=0)
    ll_scipy = stats.genpareto.logpdf(y, c, scale=scale).sum()
    ll_ours = stats.genpareto.logpdf(y, fit.xi, scale=fit.sigma).sum()
    assert fit.loglik == pytest.approx(ll_ours, abs=1e-6)
    assert ll_ours >= ll_scipy - 1e-6  # at least as good an optimum as scipy's
    assert fit.xi == pytest.approx(c, abs=2e-3)
    assert fit.sigma == pytest.approx(scale, rel=2e-3)
    assert abs(fit.xi - xi) < 4 * fit.xi_se  # and near the truth


def test_vectorised_fits_agree_with_single_fits() -> None:
    rng = np.random.default_rng(2)
    samples = stats.genpareto.rvs(0.25, scale=3.0, size=(5, 400), random_state=rng)
    xi, sigma = gpd.fit_gpd_many(samples)
    for row, x, s in zip(samples, xi, sigma, strict=True):
        single = gpd.fit_gpd(row)
        assert x == pytest.approx(single.xi, abs=0.02)
        assert s == pytest.approx(single.sigma, rel=0.02)


def test_anderson_darling_by_hand() -> None:
    y = np.array([0.5, 1.0, 2.0, 4.0])
    f = stats.genpareto.cdf(np.sort(y), 0.1, scale=1.5)
    n = 4
    i = np.arange(1, n + 1)
    expected = -n - np.sum((2 * i - 1) * (np.log(f) + np.log(1 - f[::-1]))) / n
    assert gpd.anderson_darling(y, 0.1, 1.5) == pytest.approx(expected)


def test_goodness_of_fit_accepts_gpd_and_rejects_a_two_component_mixture() -> None:
    rng = np.random.default_rng(3)
    good = stats.genpareto.rvs(0.1, scale=1.0, size=400, random_state=rng)
    assert gpd.gof_pvalue(good, gpd.fit_gpd(good), seed=1)[1] > 0.05
    bad = np.concatenate([rng.uniform(0.0, 0.2, 300), rng.uniform(5.0, 6.0, 100)])
    assert gpd.gof_pvalue(bad, gpd.fit_gpd(bad), seed=1)[1] < 0.01


def test_exceedance_interval_covers_truth_and_is_informative() -> None:
    """Fixed threshold: 30 trials of P(X > x) at a level 10x rarer than 1/n; the 90% interval covers >= 24."""
    rng = np.random.default_rng(4)
    n, xi = 4000, 0.2
    truth = 1 / (10 * n)
    level = stats.genpareto.isf(truth, xi)
    covered, ratios = 0, []
    for _ in range(30):
        x = stats.genpareto.rvs(xi, size=n, random_state=rng)
        u = np.quantile(x, 0.9)
        y = x[x > u] - u
        est, lo, hi = gpd.exceedance_ci(y, y.size, n, level - u, 0.90)
        assert lo <= est <= hi
        covered += lo <= truth <= hi
        ratios.append(hi / lo)
    assert covered >= 24
    assert np.median(ratios) < 200  # an interval spanning everything would cover trivially


def test_return_level_is_the_inverse_of_the_exceedance_probability() -> None:
    rng = np.random.default_rng(5)
    y = stats.genpareto.rvs(0.1, scale=2.0, size=1000, random_state=rng)
    fit = gpd.fit_gpd(y)
    est, lo, hi = gpd.return_level_ci(y, 1000, 10_000, 1e-6, 0.90, fit)
    assert float(fit.sf(est)) == pytest.approx(1e-6 / (1000 / 10_000), rel=1e-6)  # P(X > u + est) = zeta * sf
    assert lo < est < hi
    p_est = gpd.exceedance_ci(y, 1000, 10_000, est, 0.90, fit)[0]
    assert p_est == pytest.approx(1e-6, rel=1e-6)
    # test inversion: the level's interval ends are where 1e-6 leaves the probability's interval
    assert gpd.exceedance_ci(y, 1000, 10_000, lo * 0.98, 0.90, fit)[1] > 1e-6
    assert gpd.exceedance_ci(y, 1000, 10_000, hi * 1.02, 0.90, fit)[2] < 1e-6


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="at least 10"):
        gpd.fit_gpd(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="all > 0"):
        gpd.fit_gpd(np.r_[np.ones(20), 0.0])
    y = np.arange(1.0, 101.0)
    with pytest.raises(ValueError, match="below the threshold"):
        gpd.return_level_ci(y, 100, 1000, 0.5)


def test_survival_function_and_chi2_quantile_equal_scipy_stats() -> None:
    """genpareto_sf and chi2_ppf_1 are the scipy.special functions scipy.stats calls (compare imports no
    scipy.stats): the same numbers bit for bit, at and beyond the support's ends, for arrays and scalars."""
    from jitterscope.tails.gpd import chi2_ppf_1, genpareto_sf

    rng = np.random.default_rng(8)
    y = np.concatenate([[-1.0, 0.0, 1e-300, 1e-9, 0.5, 2.0, 4.0, 4.0 * (1 - 1e-12), 10.0, 1e6, np.inf, -np.inf,
                         np.nan], rng.exponential(3.0, 300)])
    for xi in (-1.0, -0.5, -0.25, -1e-9, 0.0, 1e-9, 0.1, 0.5, 2.0, np.inf, np.nan):
        for sigma in (1.0, 2.0, 0.37, 0.0, -1.0):
            with np.errstate(all="ignore"):
                expected = stats.genpareto.sf(y, xi, loc=0.0, scale=sigma)
            assert np.array_equal(genpareto_sf(y, xi, sigma), expected, equal_nan=True), (xi, sigma)
            for scalar in (0.0, 1.5, 5.0):
                with np.errstate(all="ignore"):
                    theirs = stats.genpareto.sf(scalar, xi, loc=0.0, scale=sigma)
                ours = genpareto_sf(scalar, xi, sigma)
                assert np.ndim(ours) == 0 and (ours == theirs or (np.isnan(ours) and np.isnan(theirs)))
    for q in (0.0, 1e-12, 0.5, 0.9, 0.95, 0.96, 0.99, 1 - 1e-12, 1.0, -0.5, 1.5):
        expected = stats.chi2.ppf(q, 1)
        assert chi2_ppf_1(q) == expected or (np.isnan(chi2_ppf_1(q)) and np.isnan(expected)), q


def test_bounded_minimum_takes_scipy_optimize_bounded_steps() -> None:
    """bounded_minimum is scipy's bounded Brent search step for step (fit_gpd no longer imports scipy.optimize):
    the same x and f, on the fit's own profile likelihoods and on flat, monotone, kinked and noisy functions."""
    from jitterscope.tails.gpd import _S_GRID, _profile_xi, bounded_minimum
    from scipy import optimize

    rng = np.random.default_rng(9)
    functions = [lambda s: (s - 0.3) ** 2, lambda s: 1.0, lambda s: s, lambda s: -s, lambda s: abs(s - 1.7),
                 lambda s: np.cos(3 * s) + 0.1 * s, lambda s: 1e300 if s > 0.5 else (s - 0.4) ** 2]
    bounds = [(-1.0, 1.0), (0.0, 2.0), (-12.0, 40.0), (0.2, 0.2), (5.0, 5.0 + 1e-12)]
    for _ in range(60):  # fit_gpd's refinement of a profile likelihood, bracketed as it brackets
        y = stats.genpareto.rvs(rng.uniform(-0.4, 0.6), scale=2.0, size=int(rng.integers(10, 300)), random_state=rng)
        y_max, best = float(y.max()), int(rng.integers(1, _S_GRID.size - 1))

        def neg(s: float, y=y, y_max=y_max) -> float:
            value = _profile_xi(y, np.array([np.expm1(s) / y_max]))[1][0]
            return -value if np.isfinite(value) else 1e300
        functions.append(neg)
        bounds.append((float(_S_GRID[best - 1]), float(_S_GRID[best + 1])))
    for i, func in enumerate(functions):
        for lo, hi in bounds if i < 7 else [bounds[i - 7 + 5]]:
            for xatol in (1e-10, 1e-5):
                res = optimize.minimize_scalar(func, bounds=(lo, hi), method="bounded", options={"xatol": xatol})
                assert bounded_minimum(func, lo, hi, xatol=xatol) == (float(res.x), float(res.fun)), (i, lo, hi)
    with pytest.raises(ValueError):
        bounded_minimum(functions[0], 1.0, 0.0)


def _profile_cases() -> list[tuple[np.ndarray, int, int, np.ndarray, np.ndarray]]:
    """compare's call (one level, 281 exceedance rates over 200 exceedances) and return_level_ci's (281 levels,
    one rate), on light, exponential and heavy tails and a bounded one (invalid theta cells)."""
    rng = np.random.default_rng(9)
    cases = []
    for xi in (-0.4, 0.0, 0.3, 0.8):
        y = stats.genpareto.rvs(xi, scale=1500.0, size=200, random_state=rng)
        zeta = 200 / 20_000
        cases.append((y, 200, 20_000, np.array([float(y.max()) * 1.3]), np.log(zeta) + np.linspace(-70.0, 0.0, 281)))
        cases.append((y, 200, 20_000, float(np.median(y)) * np.exp(np.linspace(-6.0, 8.0, 281)), np.log([1e-6])))
    return cases


def _whole_grid_profile(y: np.ndarray, k_total: int, n_total: int, y0: np.ndarray, log_q: np.ndarray,
                        theta_hat: float) -> np.ndarray:
    """The joint profile as one expression over the whole (theta, q, zeta) grid: gpd's before blocks (issue 26)."""
    n = y.size
    theta = np.union1d(gpd._theta_grid(float(y.max())), [theta_hat])
    logs = np.log1p(theta[:, None] * y[None, :]).sum(axis=1)
    zeta, ll_b = gpd._binomial_grid(k_total, n_total)
    out = np.full((y0.size, log_q.size), -np.inf)
    for i, y_i in enumerate(y0):
        a = np.log1p(np.maximum(theta * y_i, -1 + 1e-12))
        valid_t = theta * y_i > -1
        log_p = log_q[None, :, None] - np.log(zeta)[None, None, :]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            xi = -a[:, None, None] / log_p
            sigma = xi / theta[:, None, None]
            ll = -n * np.log(sigma) - (1.0 + 1.0 / xi) * logs[:, None, None] + ll_b[None, None, :]
        ok = valid_t[:, None, None] & (log_p < 0) & (xi >= gpd.XI_MIN) & (sigma > 0) & np.isfinite(ll)
        out[i] = np.where(ok, ll, -np.inf).max(axis=(0, 2))
    return out


def test_the_joint_profile_in_blocks_equals_the_whole_grid_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of the theta grid, invalid rows skipped, operations in place (bounded memory, 3x faster): the
    very numbers of the whole grid at once, in blocks of the default size and in odd ones."""
    cases = [(y, k, n, y0, log_q, gpd.fit_gpd(y).xi / gpd.fit_gpd(y).sigma) for y, k, n, y0, log_q in _profile_cases()]
    whole = [_whole_grid_profile(*case) for case in cases]
    assert all(np.isfinite(w).any() for w in whole)  # profiles, not all -inf
    for cells in (gpd._PROFILE_CELLS, 7 * 281 * 25 + 3, 1):  # default; 7 rows and a ragged last block; one row
        monkeypatch.setattr(gpd, "_PROFILE_CELLS", cells)
        for case, w in zip(cases, whole, strict=True):
            assert np.array_equal(gpd._joint_profile(*case), w), cells


def test_an_exceedance_interval_holds_a_few_mib_whatever_its_grid() -> None:
    """compare's tail judgement on 200 exceedances (issue 26): the whole profile grid at once peaked near 300 MB."""
    import tracemalloc

    y = stats.genpareto.rvs(0.2, scale=1500.0, size=200, random_state=np.random.default_rng(10))
    fit = gpd.fit_gpd(y)
    tracemalloc.start()
    try:
        est, lo, hi = gpd.exceedance_ci(y, 200, 20_000, float(y.max()) * 1.5, 0.98, fit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 0 < lo <= est <= hi < 1
    assert peak < 16 << 20, peak >> 20
