"""The p-values and quantiles compare needs, from ``scipy.special``: the same numbers as ``scipy.stats``, bit for bit.

Why not ``scipy.stats`` itself: importing it costs about 1 s of CPU (its decorators parse the docstring of every
function), four times what comparing two 20,000-wake-up runs takes (issue 26: ``compare`` of small runs in <= 1 s).
Each function here calls the ``scipy.special`` function that the ``scipy.stats`` one calls (loaded by
:func:`~jitterscope.summary.special_ufuncs`, without ``import scipy.special``'s 0.3 s), with the same argument
checks, support edges and clipping and in the same order of operations, so nothing compare prints changes;
tests/compare/test_pvalues.py holds each against ``scipy.stats`` on many cases (ties, small n, support edges).
Where ``scipy.stats`` runs an algorithm of its own (the Kolmogorov distribution's Durbin matrix and Pomeranz
recursion), it is ported here from scipy's source (``scipy/stats/_ksstats.py``, scipy 1.17), statement for
statement, so that no branch imports ``scipy.stats``. That source is Copyright (c) 2001-2002 Enthought, Inc. and
2003- SciPy Developers, under the 3-clause BSD license (scipy's LICENSE.txt), whose notice and conditions apply to
the ported functions (``_kolmogn_sf``, ``_kolmogn_dmtw``, ``_pomeranz_j1j2``, ``_kolmogn_pomeranz``,
``_kolmogn_pelz_good``, ``_log_nfactorial_div_n_pow_n``).
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


def _binom_tail(x: float, n: int, p: float, *, upper: bool) -> float:
    """``scipy.stats.binom.sf`` (P(X > x), ``upper``) or ``.cdf`` (P(X <= x)): the two differ only in which end
    of the support is 0 and which 1, and in the scipy.special function called."""
    if x < 0:
        return 1.0 if upper else 0.0
    if x >= n:
        return 0.0 if upper else 1.0
    tail = special._binom_sf if upper else special._binom_cdf
    return float(np.clip(tail(math.floor(x), n, p), 0.0, 1.0))


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
        pval = _binom_tail(k, n, p, upper=False) + _binom_tail(n - y, n, p, upper=True)
    else:
        ix = _search(lambda x1: _binom_pmf(x1, n, p), d * rerr, 0, np.floor(p * n))
        y = ix + 1
        pval = _binom_tail(y - 1, n, p, upper=False) + _binom_tail(k - 1, n, p, upper=True)
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
        Simard & L'Ecuyer's (2011) choice of method, as scipy makes it (``scipy.stats._ksstats._kolmogn``, ported
        with its arithmetic and its types, long double scaling included): Ruben-Gambino at the ends, twice
        Smirnov's one-sided tail (Miller) for large n·d², the Durbin matrix (Marsaglia-Tsang-Wang) near d = 0,
        Pomeranz's recursion between them for n <= 140, Pelz-Good's expansion for n > 10^5 or n·d^1.5 > 1.4.
    """
    if n < 1 or math.isnan(d):
        return math.nan
    if d <= 0.5 / n:  # the support's lower end (and below): Ruben-Gambino, n·d <= 1/2
        return 1.0
    if d >= 1.0:
        return 0.0
    # kstwo.sf stores _kolmogn's value (float64 or long double) into a float64 array: one rounding, here float()
    return float(np.float64(_kolmogn_sf(n, d)))


def _kolmogn_sf(n: int, x: float):
    """scipy's ``_kolmogn(n, x, cdf=False)`` for 1/2n < x < 1; a float64 or long double (the Durbin branch)."""
    t = n * x
    if t <= 1.0:  # Ruben-Gambino: 1/2n < x <= 1/n
        if n <= 140:
            prob = np.prod(np.arange(1, n + 1) * (1.0 / n) * (2 * t - 1))
        else:
            prob = np.exp(_log_nfactorial_div_n_pow_n(n) + n * np.log(2 * t - 1))
        return _clip(1.0 - prob)
    if t >= n - 1:  # Ruben-Gambino
        return _clip(2 * (1.0 - x) ** n)
    if x >= 0.5:  # exact: twice the one-sided tail
        return _clip(2 * special.smirnov(n, x))
    nxsquared = t * x
    if n <= 140:
        if nxsquared <= 0.754693:
            cdfprob = _kolmogn_dmtw(n, x)
        elif nxsquared <= 4:
            cdfprob = _kolmogn_pomeranz(n, x)
        else:  # Miller's approximation, twice Smirnov's tail
            return _clip(2 * special.smirnov(n, x))
        return _clip(1.0 - cdfprob)
    if nxsquared >= 370.0:
        return 0.0
    if nxsquared >= 2.2:
        return _clip(2 * special.smirnov(n, x))
    if n <= 100000 and n * x ** 1.5 <= 1.4:  # (scipy's n·x² >= 18 case is its CDF's: never here, below 2.2)
        cdfprob = _kolmogn_dmtw(n, x)
    else:
        cdfprob = _kolmogn_pelz_good(n, x)
    return _clip(1.0 - cdfprob)


def _clip(p):
    """scipy's ``_select_and_clip_prob`` with the selection made: ``np.clip`` to [0, 1], keeping long double."""
    return np.clip(p, 0.0, 1.0)


_E128 = 128
_EP128 = np.ldexp(np.longdouble(1), _E128)
_EM128 = np.ldexp(np.longdouble(1), -_E128)
"""scipy's scaling constants, long double as there: a scaled intermediate becomes long double, and the digits
that carries are part of the p-value scipy gives."""


def _kolmogn_dmtw(n: int, d: float):
    """P(D_n <= d) by the Durbin matrix (Durbin 1968; Marsaglia, Tsang & Wang 2003): scipy's ``_kolmogn_DMTW``.

    With d = (k - h)/n, k a positive integer and 0 <= h < 1: the (k, k) entry of (n!/n^n) H^n for an
    m x m matrix H, m = 2k - 1, by repeated squaring, scaled by 2^128 when it grows, then n steps of i/n
    (memory O(m²), time O(m³ log n + n): ~20 ms at n = 10^4; m is small on this branch, n·d^1.5 <= 1.4 or
    n·d² <= 0.75).
    """
    nd = n * d
    k = int(np.ceil(nd))
    h = k - nd
    m = 2 * k - 1
    H = np.zeros([m, m])
    intm = np.arange(1, m + 1)
    v = 1.0 - h ** intm  # the first column and (reversed) the last row: (1 - h^j)/j!, but the corner
    w = np.empty(m)  # 1/j!
    fac = 1.0
    for j in intm:
        w[j - 1] = fac
        fac /= j  # may underflow: harmless
        v[j - 1] *= fac
    tt = max(2 * h - 1.0, 0) ** m - 2 * h ** m
    v[-1] = (1.0 + tt) * fac
    for i in range(1, m):
        H[i - 1:, i] = w[:m - i + 1]
    H[:, 0] = v
    H[-1, :] = np.flip(v, axis=0)
    Hpwr = np.eye(np.shape(H)[0])
    nn = n
    expnt = 0  # the scaling of Hpwr
    Hexpnt = 0  # of H
    while nn > 0:
        if nn % 2:
            Hpwr = np.matmul(Hpwr, H)
            expnt += Hexpnt
        H = np.matmul(H, H)
        Hexpnt *= 2
        if np.abs(H[k - 1, k - 1]) > _EP128:
            H /= _EP128
            Hexpnt += _E128
        nn = nn // 2
    p = Hpwr[k - 1, k - 1]
    for i in range(1, n + 1):  # times n!/n^n
        p = i * p / n
        if np.abs(p) < _EM128:
            p *= _EP128
            expnt -= _E128
    if expnt != 0:
        p = np.ldexp(p, expnt)
    return _clip(np.where(True, p, 1.0 - p))


def _pomeranz_j1j2(i: int, n: int, ll: int, ceilf: int, roundf: int) -> tuple[int, int]:
    """The ends of row i's non-zero entries: scipy's ``_pomeranz_compute_j1j2``."""
    if i == 0:
        j1, j2 = -ll - ceilf - 1, ll + ceilf - 1
    else:
        ip1div2, ip1mod2 = divmod(i + 1, 2)
        if ip1mod2 == 0:  # i odd
            if ip1div2 == n + 1:
                j1, j2 = n - ll - ceilf - 1, n + ll + ceilf - 1
            else:
                j1, j2 = ip1div2 - 1 - ll - roundf - 1, ip1div2 + ll - 1 + ceilf - 1
        else:
            j1, j2 = ip1div2 - 1 - ll - 1, ip1div2 + ll + roundf - 1
    return max(j1 + 2, 0), min(j2, n)


def _kolmogn_pomeranz(n: int, x: float):
    """P(D_n <= x) by Pomeranz's (1974) recursion: scipy's ``_kolmogn_Pomeranz``.

    2n + 1 rows, each the previous one convolved with (almost) Poisson probabilities of three kinds; only two
    rows are held, and only their few contiguous non-zero entries; the answer is n! times the last entry.
    """
    t = n * x
    ll = int(np.floor(t))
    f = 1.0 * (t - ll)
    g = min(f, 1.0 - f)
    ceilf = 1 if f > 0 else 0
    roundf = 1 if f > 0.5 else 0
    npwrs = 2 * (ll + 1)
    gpower = np.empty(npwrs)  # (g/n)^m/m!
    twogpower = np.empty(npwrs)  # (2g/n)^m/m!
    onem2gpower = np.empty(npwrs)  # ((1-2g)/n)^m/m!
    gpower[0] = 1.0
    twogpower[0] = 1.0
    onem2gpower[0] = 1.0
    expnt = 0
    g_over_n, two_g_over_n, one_minus_two_g_over_n = g / n, 2 * g / n, (1 - 2 * g) / n
    for m in range(1, npwrs):
        gpower[m] = gpower[m - 1] * g_over_n / m
        twogpower[m] = twogpower[m - 1] * two_g_over_n / m
        onem2gpower[m] = onem2gpower[m - 1] * one_minus_two_g_over_n / m
    V0 = np.zeros([npwrs])
    V1 = np.zeros([npwrs])
    V1[0] = 1
    V0s, V1s = 0, 0  # where each row starts
    j1, j2 = _pomeranz_j1j2(0, n, ll, ceilf, roundf)
    for i in range(1, 2 * n + 2):
        k1 = j1
        V0, V1 = V1, V0
        V0s, V1s = V1s, V0s
        V1.fill(0.0)
        j1, j2 = _pomeranz_j1j2(i, n, ll, ceilf, roundf)
        if i == 1 or i == 2 * n + 1:
            pwrs = gpower
        else:
            pwrs = twogpower if i % 2 else onem2gpower
        ln2 = j2 - k1 + 1
        if ln2 > 0:
            conv = np.convolve(V0[k1 - V0s:k1 - V0s + ln2], pwrs[:ln2])
            conv_start = j1 - k1
            conv_len = j2 - j1 + 1
            V1[:conv_len] = conv[conv_start:conv_start + conv_len]
            if 0 < np.max(V1) < _EM128:  # against underflow
                V1 *= _EP128
                expnt -= _E128
            V1s = V0s + j1 - k1
    ans = V1[n - V1s]
    for m in range(1, n + 1):  # times n!
        if np.abs(ans) > _EP128:
            ans *= _EM128
            expnt += _E128
        ans *= m
    if expnt != 0:
        ans = np.ldexp(ans, expnt)
    return _clip(np.where(True, ans, 1.0 - ans))


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
