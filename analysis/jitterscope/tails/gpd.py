"""Generalised Pareto fits by profile likelihood: the numeric core of :mod:`jitterscope.tails`.

Pure functions on numpy arrays of exceedances ``y = x - u > 0``; nothing here knows
about datasets.  The likelihood is profiled over ``theta = xi / sigma`` (Grimshaw 1993):
for fixed ``theta`` the maximum over ``xi`` has the closed form
``xi(theta) = mean(log1p(theta * y))``, so one pass over a grid of ``theta`` gives the
whole profile, vectorised, also for many bootstrap samples at once.  Distribution
functions are scipy's (:data:`scipy.stats.genpareto`, whose ``c`` is our ``xi``); the survival function and the
chi-squared quantile the intervals use are the ``scipy.special`` functions those call (:func:`genpareto_sf`,
:func:`chi2_ppf_1`: the same numbers, tested), so that ``compare``, which needs only them, does not import
``scipy.stats`` (about 1 s of CPU); nor does the fit import ``scipy.optimize`` (:func:`bounded_minimum`);
``scipy.stats`` is imported where it is used.

The peaks-over-threshold model used for tail probabilities (Coles 2001, ch. 4):
``P(X > x) = zeta * (1 + xi (x - u) / sigma) ** (-1 / xi)`` for ``x > u``, with the
threshold exceedance rate ``zeta`` binomial.  Confidence intervals for ``P(X > x)`` and
for return levels are profile-likelihood intervals of the joint (binomial x GPD)
likelihood, computed on grids with the interval ends interpolated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..summary import special_ufuncs

special = special_ufuncs()  # scipy.special's functions without its import's 0.3 s

XI_MIN = -1.0
"""Below ``xi = -1`` the GPD likelihood is unbounded; the fit is restricted to ``xi >= -1``."""

_S_GRID = np.concatenate([np.linspace(-12.0, -3.0, 60, endpoint=False),
                          np.linspace(-3.0, 6.0, 540, endpoint=False) + 0.0083,
                          np.linspace(6.0, 40.0, 160)])
# s = log1p(theta * y_max): theta spans (-1/y_max, inf); the offset keeps theta = 0 off the grid.


@dataclass(frozen=True)
class GpdFit:
    """Maximum-likelihood GPD fit of exceedances over a threshold."""

    xi: float
    sigma: float
    n: int
    loglik: float
    xi_se: float

    def sf(self, y: np.ndarray | float) -> np.ndarray:
        """P(Y > y) for exceedance sizes ``y``."""
        return genpareto_sf(y, self.xi, self.sigma)

    def isf(self, p: np.ndarray | float) -> np.ndarray:
        """Exceedance size with P(Y > y) = p."""
        from scipy import stats

        return stats.genpareto.isf(p, self.xi, loc=0.0, scale=self.sigma)


def genpareto_sf(y: np.ndarray | float, xi: float, sigma: float) -> np.ndarray | float:
    """``scipy.stats.genpareto.sf(y, xi, loc=0, scale=sigma)``: ``inv_boxcox(-y/sigma, -xi)`` inside the support.

    1 at and below 0, 0 at and beyond the upper end point ``-sigma/xi`` (``xi < 0``), NaN for NaN ``y``, a
    non-finite ``xi`` or ``sigma <= 0``; a scalar for a scalar, as scipy returns.
    """
    x = np.asarray(y)
    with np.errstate(divide="ignore", invalid="ignore"):  # sigma <= 0 gives NaN below, as scipy's does
        x = np.asarray((x - 0.0) / np.asarray(sigma), dtype=np.promote_types(x.dtype, np.float64))
    out = np.zeros(x.shape)
    if not (np.isfinite(xi) and sigma > 0):
        out[...] = np.nan
        return out[()] if out.ndim == 0 else out
    upper = -1.0 / xi if xi < 0 else np.inf
    out[np.isnan(x)] = np.nan
    out[x <= 0] = 1.0
    inside = (x > 0) & (x < upper)
    out[inside] = special.inv_boxcox(-x[inside], -xi)
    return out[()] if out.ndim == 0 else out


def chi2_ppf_1(q: float) -> float:
    """``scipy.stats.chi2.ppf(q, 1)``: ``2 gammaincinv(1/2, q)``; 0 and inf at the ends, NaN outside [0, 1]."""
    if not 0.0 <= q <= 1.0:
        return float("nan")
    if q == 0.0:
        return 0.0
    if q == 1.0:
        return float("inf")
    return float(2 * special.gammaincinv(0.5, q)) * 1.0 + 0.0


def _theta_grid(y_max: np.ndarray | float, s: np.ndarray = _S_GRID) -> np.ndarray:
    return np.expm1(s) / np.asarray(y_max)[..., None] if np.ndim(y_max) else np.expm1(s) / y_max


def _profile_xi(y: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (xi(theta), profile loglik(theta)) for one sample ``y`` and a vector of ``theta``."""
    n = y.size
    logs = np.log1p(theta[:, None] * y[None, :]).sum(axis=1)
    xi = logs / n
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = -n * np.log(xi / theta) - logs - n
    ll = np.where((xi >= XI_MIN) & np.isfinite(ll), ll, -np.inf)
    return xi, ll


def fit_gpd(y: np.ndarray) -> GpdFit:
    """Fit a GPD to exceedances ``y > 0`` by maximum likelihood.

    Parameters
    ----------
    y : ndarray
        Exceedance sizes over the threshold, all > 0, at least 10 of them.

    Returns
    -------
    GpdFit
        Shape ``xi``, scale ``sigma``, log-likelihood and the asymptotic standard error
        ``(1 + xi) / sqrt(n)`` of ``xi`` (Smith 1985; valid for ``xi > -0.5``).

    Raises
    ------
    ValueError
        Fewer than 10 exceedances, or non-positive ones.

    Notes
    -----
    Profile over ``theta`` on a grid, refined with a bounded scalar search around the
    best grid point.  Agrees with ``scipy.stats.genpareto.fit(y, floc=0)`` (tested) and
    is ~50x faster.
    """
    y = np.asarray(y, dtype=float)
    if y.size < 10 or not np.all(y > 0):
        raise ValueError("fit_gpd needs at least 10 exceedances, all > 0")
    y_max = float(y.max())
    theta = _theta_grid(y_max)
    _, ll = _profile_xi(y, theta)
    best = int(np.argmax(ll))
    lo, hi = _S_GRID[max(best - 1, 0)], _S_GRID[min(best + 1, _S_GRID.size - 1)]

    def neg(s: float) -> float:
        t = np.array([np.expm1(s) / y_max])
        value = _profile_xi(y, t)[1][0]
        return -value if np.isfinite(value) else 1e300

    x_min, f_min = bounded_minimum(neg, lo, hi, xatol=1e-10)
    s_hat = float(x_min) if -f_min >= ll[best] else float(_S_GRID[best])
    t_hat = np.array([np.expm1(s_hat) / y_max])
    xi_arr, ll_arr = _profile_xi(y, t_hat)
    xi_hat = float(xi_arr[0])
    sigma = xi_hat / float(t_hat[0])
    return GpdFit(xi=xi_hat, sigma=sigma, n=int(y.size), loglik=float(ll_arr[0]),
                  xi_se=float((1.0 + max(xi_hat, -0.5)) / np.sqrt(y.size)))


def bounded_minimum(func: Callable[[float], float], lower: float, upper: float, *, xatol: float = 1e-5,
                    maxiter: int = 500) -> tuple[float, float]:
    """``scipy.optimize.minimize_scalar(func, bounds=(lower, upper), method="bounded")``: (x, func(x)), the same.

    Parameters
    ----------
    func : callable
        A function of one float returning a float.
    lower, upper : float
        Finite bounds, ``lower <= upper``.
    xatol : float
        Absolute tolerance in x.
    maxiter : int
        Most evaluations of ``func``.

    Returns
    -------
    (x, f)
        The minimum found and the function's value there.

    Raises
    ------
    ValueError
        Bounds not finite or in the wrong order.

    Notes
    -----
    Brent's (1973) golden-section search with parabolic interpolation, as scipy's ``_minimize_scalar_bounded``
    writes it (Forsythe, Malcolm & Moler's ``fmin``), step for step: the same points, so the same numbers
    (tests/tails/test_gpd.py). Here, not scipy's: ``import scipy.optimize`` costs ~0.5 s of CPU (it brings
    scipy.sparse, scipy.linalg and scipy.special whole), and ``compare`` of small runs fits a tail whenever a max
    moves by more than the noise threshold.
    """
    if not (np.isfinite(lower) and np.isfinite(upper)):
        raise ValueError("Optimization bounds must be finite scalars.")
    if lower > upper:
        raise ValueError("The lower bound exceeds the upper bound.")
    sqrt_eps = np.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - np.sqrt(5.0))
    a, b = lower, upper
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = func(x)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while np.abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = True
        if np.abs(e) > tol1:  # try a parabolic step through the three best points
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = np.abs(q)
            r = e
            e = rat
            if (np.abs(p) < np.abs(0.5 * q * r)) and (p > q * (a - xf)) and (p < q * (b - xf)):
                rat = (p + 0.0) / q
                x = xf + rat
                if ((x - a) < tol2) or ((b - x) < tol2):
                    si = np.sign(xm - xf) + ((xm - xf) == 0)
                    rat = tol1 * si
            else:
                golden = True
        if golden:
            e = a - xf if xf >= xm else b - xf
            rat = golden_mean * e
        si = np.sign(rat) + (rat == 0)
        x = xf + si * np.maximum(np.abs(rat), tol1)
        fu = func(x)
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if (fu <= fnfc) or (nfc == xf):
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif (fu <= ffulc) or (fulc == xf) or (fulc == nfc):
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxiter:
            break
    return float(np.asarray(xf)[()]), float(np.asarray(fx)[()])


def fit_gpd_many(samples: np.ndarray, *, refine: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised MLE of many samples at once (rows of ``samples``); returns (xi, sigma).

    A coarse grid over ``theta`` brackets each row's maximum, then ``refine`` golden-section
    steps narrow it, all rows together.  Used by the parametric bootstrap of the
    goodness-of-fit test.
    """
    samples = np.asarray(samples, dtype=float)
    n = samples.shape[1]
    y_max = samples.max(axis=1)
    s_grid = _S_GRID[::2]

    def profile(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        theta = np.expm1(s) / y_max  # (B,)
        xi = np.log1p(theta[:, None] * samples).sum(axis=1) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = -n * np.log(xi / theta) - n * xi - n
        return xi, np.where((xi >= XI_MIN) & np.isfinite(ll), ll, -np.inf)

    grid_ll = np.column_stack([profile(np.full(samples.shape[0], s))[1] for s in s_grid])
    best = np.argmax(grid_ll, axis=1)
    lo = s_grid[np.maximum(best - 1, 0)]
    hi = s_grid[np.minimum(best + 1, s_grid.size - 1)]
    ratio = (np.sqrt(5.0) - 1) / 2
    for _ in range(refine):
        a = hi - ratio * (hi - lo)
        b = lo + ratio * (hi - lo)
        left_better = profile(a)[1] >= profile(b)[1]
        hi = np.where(left_better, b, hi)
        lo = np.where(left_better, lo, a)
    s_hat = (lo + hi) / 2
    xi_hat, _ = profile(s_hat)
    return xi_hat, xi_hat / (np.expm1(s_hat) / y_max)


def anderson_darling(y: np.ndarray, xi: float, sigma: float) -> float:
    """Anderson-Darling statistic A² of ``y`` against GPD(xi, sigma); rows of a 2-D ``y`` each get one."""
    from scipy import stats

    y = np.sort(np.asarray(y, dtype=float), axis=-1)
    n = y.shape[-1]
    cdf = np.clip(stats.genpareto.cdf(y, np.asarray(xi)[..., None] if np.ndim(xi) else xi,
                                      scale=np.asarray(sigma)[..., None] if np.ndim(sigma) else sigma),
                  1e-300, 1 - 1e-16)
    i = np.arange(1, n + 1)
    terms = (2 * i - 1) * (np.log(cdf) + np.log1p(-cdf[..., ::-1]))
    return -n - terms.sum(axis=-1) / n


def gof_pvalue(y: np.ndarray, fit: GpdFit, *, n_boot: int = 199, seed: int = 0) -> tuple[float, float]:
    """Anderson-Darling statistic and its parametric-bootstrap p-value (parameters re-estimated each time).

    Give at most a few thousand exceedances (cost is ``n_boot`` refits of ``len(y)``).

    Notes
    -----
    Stute, Manteiga & Quindimil (1993): with estimated parameters the null distribution
    of A² depends on them, so samples are drawn from the fitted GPD, refitted, and
    their A² compared with the observed one.
    """
    from scipy import stats

    a2 = float(anderson_darling(y, fit.xi, fit.sigma))
    rng = np.random.default_rng(seed)
    sims = stats.genpareto.ppf(rng.random((n_boot, fit.n)), fit.xi, scale=fit.sigma)
    sims = np.maximum(sims, np.finfo(float).tiny)
    xi_b, sigma_b = fit_gpd_many(sims)
    a2_b = anderson_darling(sims, xi_b, sigma_b)
    return a2, float((1 + np.sum(a2_b >= a2)) / (n_boot + 1))


def _binomial_grid(k: int, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid of threshold-exceedance rates zeta around k/total, and their binomial log-likelihoods."""
    zeta_hat = k / total
    rel = np.sqrt((1 - zeta_hat) / k)
    zeta = zeta_hat * np.exp(np.linspace(-5 * rel, 5 * rel, 25))
    zeta = zeta[zeta < 1]
    ll = k * np.log(zeta) + (total - k) * np.log1p(-zeta)
    return zeta, ll - ll.max()


_PROFILE_CELLS = 1 << 18
"""(theta, q, zeta) cells the joint profile evaluates at once: 2 MiB a float64 buffer, four of them. The whole grid
at once (761 x 281 x 25 for :func:`exceedance_ci`) took ~43 MB a temporary and ~200 MB at its peak, whatever the
data (issue 26: compare of two 20,000-wake-up runs peaked near 400 MB)."""


def _joint_profile(y: np.ndarray, k_total: int, n_total: int, y0: np.ndarray, log_q: np.ndarray,
                   theta_hat: float) -> np.ndarray:
    """Profile log-likelihood of P(X > u + y0) = q for every pair (y0[i], log_q[j]), shape (len(y0), len(log_q)).

    Maximised over theta (grid) and zeta (grid); GPD part relative to nothing (absolute),
    binomial part relative to its maximum. The theta grid is taken in blocks of :data:`_PROFILE_CELLS` cells,
    into buffers made once, skipping the theta with 1 + theta y0 <= 0 (outside the model: -inf); every other cell
    takes the same operations in the same order as over the whole grid at once, and a maximum of maxima is the
    maximum, so the values are the same bit for bit (tests/tails/test_gpd.py) in a few MiB, 3x faster.
    """
    n = y.size
    theta = np.union1d(_theta_grid(float(y.max())), [theta_hat])  # the MLE on the grid: profile max == loglik
    logs = np.log1p(theta[:, None] * y[None, :]).sum(axis=1)  # (T,)
    zeta, ll_b = _binomial_grid(k_total, n_total)  # (Z,)
    log_p = log_q[None, :, None] - np.log(zeta)[None, None, :]  # (1, Q, Z)
    rows = max(1, _PROFILE_CELLS // (log_q.size * zeta.size))
    shape = (min(rows, theta.size), log_q.size, zeta.size)
    xi, sigma, ll, term = (np.empty(shape) for _ in range(4))  # reused by every block: no allocation per block
    drop, check = np.empty(shape, dtype=bool), np.empty(shape, dtype=bool)
    negative_p = log_p < 0
    out = np.full((y0.size, log_q.size), -np.inf)
    for i, y_i in enumerate(y0):
        valid = np.flatnonzero(theta * y_i > -1)  # the others' cells are -inf: not computed
        a = np.log1p(np.maximum(theta[valid] * y_i, -1 + 1e-12))  # log(1 + theta y0)
        for start in range(0, valid.size, rows):
            t = valid[start:start + rows]
            c = t.size
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                # the operations of -n log(sigma) - (1 + 1/xi) logs + ll_b, in that order, in place
                np.divide(-a[start:start + c, None, None], log_p, out=xi[:c])  # (rows, Q, Z)
                np.divide(xi[:c], theta[t, None, None], out=sigma[:c])
                np.log(sigma[:c], out=ll[:c])
                np.multiply(-n, ll[:c], out=ll[:c])
                np.divide(1.0, xi[:c], out=term[:c])
                np.add(1.0, term[:c], out=term[:c])
                np.multiply(term[:c], logs[t, None, None], out=term[:c])
                np.subtract(ll[:c], term[:c], out=ll[:c])
                np.add(ll[:c], ll_b[None, None, :], out=ll[:c])
            # a cell counts where p < 1, xi >= XI_MIN, sigma > 0 and the log-likelihood is finite; -inf elsewhere
            np.greater_equal(xi[:c], XI_MIN, out=drop[:c])
            np.logical_and(drop[:c], negative_p, out=drop[:c])
            np.greater(sigma[:c], 0, out=check[:c])
            np.logical_and(drop[:c], check[:c], out=drop[:c])
            np.isfinite(ll[:c], out=check[:c])
            np.logical_and(drop[:c], check[:c], out=drop[:c])
            np.logical_not(drop[:c], out=drop[:c])
            np.copyto(ll[:c], -np.inf, where=drop[:c])
            np.maximum(out[i], ll[:c].max(axis=(0, 2)), out=out[i])
    return out


def _interval_from_deviance(grid: np.ndarray, dev: np.ndarray, cut: float) -> tuple[float, float]:
    """Ends of {grid : dev <= cut}, linearly interpolated; +-inf when the set reaches a grid edge."""
    inside = np.flatnonzero(dev <= cut)
    if inside.size == 0:
        best = int(np.argmin(dev))
        return float(grid[best]), float(grid[best])
    first, last = inside[0], inside[-1]

    def cross(i_in: int, i_out: int) -> float:
        d_in, d_out = dev[i_in], dev[i_out]
        if not np.isfinite(d_out):
            return float(grid[i_in])
        w = (cut - d_in) / (d_out - d_in)
        return float(grid[i_in] + w * (grid[i_out] - grid[i_in]))

    lo = -np.inf if first == 0 else cross(first, first - 1)
    hi = np.inf if last == grid.size - 1 else cross(last, last + 1)
    return lo, hi


def exceedance_ci(y: np.ndarray, k_total: int, n_total: int, y0: float, level: float = 0.90,
                  fit: GpdFit | None = None) -> tuple[float, float, float]:
    """P(X > u + y0) per observation with a profile-likelihood interval.

    Parameters
    ----------
    y : ndarray
        Exceedances over the threshold ``u``.
    k_total, n_total : int
        Number of exceedances and of observations (``zeta = k/n``).
    y0 : float
        Level above the threshold, > 0.
    level : float
        Confidence level of the interval.

    Returns
    -------
    (estimate, lower, upper)
        Lower is 0 when the data cannot exclude an upper end point below the level.
    """
    fit = fit or fit_gpd(y)
    zeta_hat = k_total / n_total
    est = float(zeta_hat * fit.sf(y0))
    log_q = np.log(zeta_hat) + np.linspace(-70.0, 0.0, 281)
    prof = _joint_profile(np.asarray(y, float), k_total, n_total, np.array([float(y0)]), log_q,
                          fit.xi / fit.sigma)[0]
    cut = chi2_ppf_1(level) / 2.0
    dev = fit.loglik - prof
    lo, hi = _interval_from_deviance(log_q, dev, cut)
    lower = 0.0 if lo == -np.inf else float(np.exp(lo))
    upper = float(min(np.exp(hi), 1.0)) if np.isfinite(hi) else zeta_hat
    if est > 0:
        lower, upper = min(lower, est), max(upper, est)
    return est, lower, upper


def return_level_ci(y: np.ndarray, k_total: int, n_total: int, q: float, level: float = 0.90,
                    fit: GpdFit | None = None) -> tuple[float, float, float]:
    """Exceedance size ``y0`` above the threshold with P(X > u + y0) = q, with a profile-likelihood interval.

    The interval is the set of levels at which ``q`` lies inside the exceedance
    probability's profile interval (test inversion).  Upper is ``inf`` when the data
    cannot bound it.  Requires ``q < k_total / n_total``.
    """
    fit = fit or fit_gpd(y)
    zeta_hat = k_total / n_total
    if not q < zeta_hat:
        raise ValueError("return level below the threshold: q must be smaller than the exceedance rate")
    est = float(fit.isf(q / zeta_hat))
    center = est if np.isfinite(est) and est > 0 else float(np.max(y))
    y0 = center * np.exp(np.linspace(-6.0, 8.0, 281))
    prof = _joint_profile(np.asarray(y, float), k_total, n_total, y0, np.array([np.log(q)]),
                          fit.xi / fit.sigma)[:, 0]
    cut = chi2_ppf_1(level) / 2.0
    dev = fit.loglik - prof
    lo, hi = _interval_from_deviance(np.log(y0), dev, cut)
    lower = 0.0 if lo == -np.inf else float(np.exp(lo))
    upper = float(np.exp(hi)) if np.isfinite(hi) else np.inf
    return est, min(lower, est), max(upper, est)
