"""The p-values and quantiles compare needs, from ``scipy.special``: the same numbers as ``scipy.stats``, bit for bit.

Why not ``scipy.stats`` itself: importing it costs about 1 s of CPU (its decorators parse the docstring of every
function), four times what comparing two 20,000-wake-up runs takes (issue 26: ``compare`` of small runs in <= 1 s).
Each function here calls the ``scipy.special`` function that the ``scipy.stats`` one calls (loaded by
:func:`~jitterscope.summary.special_ufuncs`, without ``import scipy.special``'s 0.3 s), with the same argument
checks, support edges and clipping and in the same order of operations, so nothing compare prints changes;
tests/compare/test_pvalues.py holds each against ``scipy.stats`` on many cases (ties, small n, support edges).
Where ``scipy.stats`` runs an algorithm of its own that is not needed for runs of a few thousand wake-ups or more
(the exact Kolmogorov distribution for n <= 140, the Durbin matrix for D near 0), it is imported on that branch only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..summary import special_ufuncs

special = special_ufuncs()
"""scipy.special's compiled functions, without its import's 0.3 s (the binomial ones are private there)."""


def norm_ppf(q: float) -> float:
    """``scipy.stats.norm.ppf(q)``: ``ndtri``, with 0 and 1 mapped to -inf and inf and nan outside [0, 1]."""
    if not 0.0 <= q <= 1.0:
        return math.nan
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    return float(special.ndtri(q)) * 1.0 + 0.0  # scale and loc, as rv_continuous applies them (-0.0 -> 0.0)


def norm_sf(z: float) -> float:
    """``scipy.stats.norm.sf(z)``: ``ndtr(-z)``."""
    if math.isnan(z):
        return math.nan
    if z == -math.inf:
        return 1.0
    if z == math.inf:
        return 0.0
    return float(special.ndtr(-z))


def poisson_sf(k: float, mu: float) -> float:
    """``scipy.stats.poisson.sf(k, mu)``: P(X > k) = ``pdtrc(floor(k), mu)``, 1 below the support."""
    if not mu >= 0 or math.isnan(k):
        return math.nan
    if k < 0:
        return 1.0
    if k == math.inf:
        return 0.0
    return float(np.clip(special.pdtrc(math.floor(k), mu), 0.0, 1.0))


def _binom_pmf(x: float, n: int, p: float) -> float:
    """``scipy.stats.binom.pmf``: 0 off the integers 0..n."""
    if not (0 <= x <= n and x == math.floor(x)):
        return 0.0
    return float(np.clip(special._binom_pmf(x, n, p), 0.0, 1.0))


def _binom_cdf(x: float, n: int, p: float) -> float:
    """``scipy.stats.binom.cdf``: P(X <= x)."""
    if x < 0:
        return 0.0
    if x >= n:
        return 1.0
    return float(np.clip(special._binom_cdf(math.floor(x), n, p), 0.0, 1.0))


def _binom_sf(x: float, n: int, p: float) -> float:
    """``scipy.stats.binom.sf``: P(X > x)."""
    if x < 0:
        return 1.0
    if x >= n:
        return 0.0
    return float(np.clip(special._binom_sf(math.floor(x), n, p), 0.0, 1.0))


def binomtest_pvalue(k: int, n: int, p: float) -> float:
    """``scipy.stats.binomtest(k, n, p).pvalue``, two-sided.

    Parameters
    ----------
    k, n : int
        Successes and trials, ``0 <= k <= n``, ``n >= 1``.
    p : float
        Success probability under the null, in [0, 1].

    Returns
    -------
    float
        The probability, under the null, of an outcome at most as likely as ``k`` (both tails).

    Raises
    ------
    ValueError
        Arguments out of range (as scipy raises).

    Notes
    -----
    The tail on the other side of the mode is found by binary search over the probability mass, with scipy's
    relative tolerance of 1e-7 for outcomes as likely as ``k`` (its ``_binary_search_for_binom_tst``).
    """
    if n < 1 or not 0 <= k <= n or not 0.0 <= p <= 1.0:
        raise ValueError(f"binomial test needs 0 <= k <= n, n >= 1 and p in [0, 1] (k {k}, n {n}, p {p})")
    d = _binom_pmf(k, n, p)
    rerr = 1 + 1e-7
    if k == p * n:
        return 1.0
    if k < p * n:
        ix = _search(lambda x1: -_binom_pmf(x1, n, p), -d * rerr, np.ceil(p * n), n)
        y = n - ix + int(d * rerr == _binom_pmf(ix, n, p))
        pval = _binom_cdf(k, n, p) + _binom_sf(n - y, n, p)
    else:
        ix = _search(lambda x1: _binom_pmf(x1, n, p), d * rerr, 0, np.floor(p * n))
        y = ix + 1
        pval = _binom_cdf(y - 1, n, p) + _binom_sf(k - 1, n, p)
    return float(min(1.0, pval))


def _search(a, d, lo, hi):
    """The index i in [lo, hi] with a(i) <= d < a(i + 1), a ascending over that range."""
    while lo < hi:
        mid = lo + (hi - lo) // 2
        midval = a(mid)
        if midval < d:
            lo = mid + 1
        elif midval > d:
            hi = mid - 1
        else:
            return mid
    return lo if a(lo) <= d else lo - 1


def kruskal_pvalue(samples: Sequence[np.ndarray]) -> float:
    """``scipy.stats.kruskal(*samples).pvalue``: Kruskal-Wallis H with tie correction, chi-squared tail.

    Parameters
    ----------
    samples : sequence of numpy.ndarray
        Two or more non-empty one-dimensional samples without NaN.

    Returns
    -------
    float
        ``chdtrc(k - 1, H)``.

    Raises
    ------
    ValueError
        Fewer than two samples, an empty one or a NaN (scipy would give NaN for the last).

    Notes
    -----
    Average ranks of the pooled values; rank sums and tie counts are integers or halves, exact in float64 in any
    order of summation, and the rest is scipy's arithmetic in scipy's order.
    """
    samples = [np.asarray(s, dtype=np.float64) for s in samples]
    if len(samples) < 2 or any(s.ndim != 1 or s.size == 0 for s in samples):
        raise ValueError("Kruskal-Wallis needs two or more non-empty one-dimensional samples")
    n = [s.size for s in samples]
    totaln = sum(n)
    pooled = np.concatenate(samples)
    if np.isnan(pooled).any():
        raise ValueError("Kruskal-Wallis of samples with NaN")
    order = np.argsort(pooled, kind="stable")
    ordered = pooled[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, totaln))
    ranks_sorted = np.repeat(starts + 1 + (counts.astype(np.float64) - 1) / 2, counts)
    group = np.repeat(np.arange(len(samples)), n)[order]
    rank_sums = np.bincount(group, weights=ranks_sorted, minlength=len(samples))
    t = counts.astype(np.float64)
    ties = 1 - np.sum(t ** 3 - t) / (totaln ** 3 - totaln)
    ssbn = sum(rank_sums[i] ** 2 / n[i] for i in range(len(samples)))
    h = 12.0 / (totaln * (totaln + 1)) * ssbn - 3 * (totaln + 1)
    h /= ties
    return float(special.chdtrc(np.float64(len(samples) - 1), h))


def kstwo_sf(d: float, n: int) -> float:
    """``scipy.stats.kstwo.sf(d, n)``: P(D_n >= d) of the two-sided one-sample Kolmogorov-Smirnov statistic.

    Parameters
    ----------
    d : float
        The statistic, in [0, 1].
    n : int
        Sample size, >= 1.

    Returns
    -------
    float
        Simard & L'Ecuyer's (2011) choice of method, as scipy makes it (``scipy.stats._ksstats._kolmogn``):
        Ruben-Gambino at the ends, twice Smirnov's one-sided tail (Miller) for large n·d², Pelz-Good's
        expansion for n > 10^5 or n·d^1.5 > 1.4. The exact methods for n <= 140 and the Durbin matrix for
        n·d^1.5 <= 1.4 (p near 1) are scipy.stats', imported on that branch only.
    """
    if n < 1 or math.isnan(d):
        return math.nan
    if d <= 0.5 / n:  # the support's lower end (and below): Ruben-Gambino, n·d <= 1/2
        return 1.0
    if d >= 1.0:
        return 0.0
    t = n * d
    nxsquared = t * d
    if n <= 140 or (t > 1.0 and t < n - 1 and d < 0.5 and nxsquared < 2.2 and n <= 100000 and n * d ** 1.5 <= 1.4):
        from scipy import stats  # exact small-n and Durbin-matrix branches: ~1 s of import, rarely taken

        return float(stats.kstwo.sf(d, n))
    if t <= 1.0:  # Ruben-Gambino: 1/2n < d <= 1/n
        prob = np.exp(_log_nfactorial_div_n_pow_n(n) + n * np.log(2 * t - 1))
        return float(np.clip(1.0 - prob, 0.0, 1.0))
    if t >= n - 1:  # Ruben-Gambino
        return float(np.clip(2 * (1.0 - d) ** n, 0.0, 1.0))
    if d >= 0.5:  # exact: twice the one-sided tail
        return float(np.clip(2 * special.smirnov(n, d), 0.0, 1.0))
    if nxsquared >= 370.0:
        return 0.0
    if nxsquared >= 2.2:
        return float(np.clip(2 * special.smirnov(n, d), 0.0, 1.0))
    cdfprob = 1.0 if nxsquared >= 18.0 else _kolmogn_pelz_good(n, d)
    return float(np.clip(1.0 - cdfprob, 0.0, 1.0))


def kstwobign_sf(x: float) -> float:
    """``scipy.stats.kstwobign.sf(x)``: Kolmogorov's limiting distribution of sqrt(n)·D_n, ``kolmogorov(x)``."""
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    if x == math.inf:
        return 0.0
    return float(special.kolmogorov(x))


_LOG_2PI = np.log(2 * np.pi)
_SQRT2PI = np.sqrt(2 * np.pi)
_MIN_LOG = -708
_SQRT3 = np.sqrt(3)
_PI_SQUARED = np.pi ** 2
_PI_FOUR = np.pi ** 4
_PI_SIX = np.pi ** 6
_STIRLING_COEFFS = [-2.955065359477124183e-2, 6.4102564102564102564e-3,
                    -1.9175269175269175269e-3, 8.4175084175084175084e-4,
                    -5.952380952380952381e-4, 7.9365079365079365079e-4,
                    -2.7777777777777777778e-3, 8.3333333333333333333e-2]
"""Stirling's series coefficients B_2j / (2j (2j - 1)), j = 8 … 1 (scipy's ``_ksstats``)."""


def _log_nfactorial_div_n_pow_n(n: int) -> float:
    """log(n! / n^n) by Stirling's series with n log n taken out first (no cancellation)."""
    rn = 1.0 / n
    return np.log(n) / 2 - n + _LOG_2PI / 2 + rn * np.polyval(_STIRLING_COEFFS, rn / n)


def _kolmogn_pelz_good(n: int, x: float) -> float:
    """Pelz & Good's (1976) approximation of P(D_n <= x), 0 < x < 1: scipy's ``_kolmogn_PelzGood``, as written.

    Li-Chien and Korolyuk's expansion K0(z) + K1(z)/sqrt(n) + K2(z)/n + K3(z)/n^1.5 with z = x sqrt(n), each
    term turned by Jacobi's theta identities into sums that converge fast for small z.
    """
    z = np.sqrt(n) * x
    zsquared, zthree, zfour, zsix = z ** 2, z ** 3, z ** 4, z ** 6
    qlog = -_PI_SQUARED / 8 / zsquared
    if qlog < _MIN_LOG:  # z < ~0.0417: the CDF underflows to 0
        return 0.0
    q = np.exp(qlog)
    k1a = -zsquared
    k1b = _PI_SQUARED / 4
    k2a = 6 * zsix + 2 * zfour
    k2b = (2 * zfour - 5 * zsquared) * _PI_SQUARED / 4
    k2c = _PI_FOUR * (1 - 2 * zsquared) / 16
    k3d = _PI_SIX * (5 - 30 * zsquared) / 64
    k3c = _PI_FOUR * (-60 * zsquared + 212 * zfour) / 16
    k3b = _PI_SQUARED * (135 * zfour - 96 * zsix) / 4
    k3a = -30 * zsix - 90 * z ** 8
    terms = np.zeros(4)
    maxk = int(np.ceil(16 * z / np.pi))
    for k in range(maxk, 0, -1):  # Horner's scheme over the odd m = 2k - 1 of sum c_m q^(m^2)
        m = 2 * k - 1
        msquared, mfour, msix = m ** 2, m ** 4, m ** 6
        qpower = np.power(q, 8 * k)
        coeffs = np.array([1.0, k1a + k1b * msquared, k2a + k2b * msquared + k2c * mfour,
                           k3a + k3b * msquared + k3c * mfour + k3d * msix])
        terms *= qpower
        terms += coeffs
    terms *= q
    terms *= _SQRT2PI
    terms /= np.array([z, 6 * zfour, 72 * z ** 7, 6480 * z ** 10])
    q = np.exp(-_PI_SQUARED / 2 / zsquared)  # the sums over all integers k of K2 and K3
    ks = np.arange(maxk, 0, -1)
    ksquared = ks ** 2
    sqrt3z = _SQRT3 * z
    kspi = np.pi * ks
    qpwers = q ** ksquared
    k2extra = np.sum(ksquared * qpwers)
    k2extra *= _PI_SQUARED * _SQRT2PI / (-36 * zthree)
    terms[2] += k2extra
    k3extra = np.sum((sqrt3z + kspi) * (sqrt3z - kspi) * ksquared * qpwers)
    k3extra *= _PI_SQUARED * _SQRT2PI / (216 * zsix)
    terms[3] += k3extra
    terms /= np.power(n * 1.0, np.arange(len(terms)) / 2.0)
    return sum(terms)
