"""The assumptions behind a tail fit, checked: independence and stationarity of extremes.

Each check is a :class:`Check` with a plain sentence; :mod:`jitterscope.tails` states
them next to its numbers and gates the result on them.  One rule for every check with
a p-value: it fails when ``p < ALPHA`` and passes otherwise (several checks at 1 % give a
false alarm on about 4 % of perfectly i.i.d. runs; the sentence says which check fired).
A check without a p-value (extremal index, QQ correlation, threshold stability)
compares its statistic with a stated bound.  Tests whose null assumes independence are
run on declustered exceedances when the exceedances cluster, or say that they assume it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..format import format_p, format_resampled_p
from .rates import DECLUSTER_GAP, cluster_starts, decluster

ALPHA = 0.01
EXTREMAL_INDEX_MIN = 0.7
"""Extremal index below this means exceedances come in clusters (mean cluster size > 1.4)."""


@dataclass(frozen=True)
class Check:
    """One diagnostic: what was tested, the statistic and p-value (None where not a test), pass/fail, a sentence."""

    name: str
    statistic: float
    p_value: float | None
    passed: bool
    sentence: str
    resamples: int | None = None
    """B of a resampling p-value (its floor is 1/(B + 1)); None for an analytic one."""

    def __post_init__(self) -> None:
        # the one rule: a p-value decides pass/fail at ALPHA (a check may fail for a stated bound as well,
        # never pass below ALPHA nor fail above it on its p-value alone)
        if self.p_value is not None and self.p_value == self.p_value and self.passed != (self.p_value >= ALPHA):
            raise ValueError(f"check {self.name!r}: p = {self.p_value} but passed = {self.passed} (α = {ALPHA})")

    @property
    def p_text(self) -> str:
        """The p-value as printed everywhere: "p = 0.034", "p < 1e-12", "p ≤ 0.005 (floor, B = 199)", or "-"."""
        if self.p_value is None:
            return "-"
        return format_resampled_p(self.p_value, self.resamples) if self.resamples else format_p(self.p_value)

    @property
    def result(self) -> str:
        """"pass" or "FAIL", with the rule that decided it."""
        if self.p_value is not None:
            return f"pass (p ≥ {ALPHA:g})" if self.passed else f"FAIL (p < {ALPHA:g})"
        return "pass" if self.passed else "FAIL"


def ljung_box(acf: np.ndarray, n: int) -> tuple[float, float]:
    """Ljung-Box Q for autocorrelations ``acf[0..L-1]`` at lags 1..L of a series of length ``n``; (Q, p).

    Notes
    -----
    ``Q = n (n + 2) sum_h r_h^2 / (n - h)``, chi-squared with L degrees of freedom under
    independence (Ljung & Box 1978).
    """
    lags = np.arange(1, acf.size + 1)
    q = float(n * (n + 2) * np.sum(acf**2 / (n - lags)))
    return q, float(stats.chi2.sf(q, acf.size))


def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation at lags 1..max_lag (biased estimator, FFT)."""
    x = np.asarray(x, dtype=float) - np.mean(x)
    n = x.size
    size = 1 << int(np.ceil(np.log2(2 * n)))
    spec = np.fft.rfft(x, size)
    acov = np.fft.irfft(spec * np.conj(spec), size)[: max_lag + 1]
    return acov[1:] / acov[0] if acov[0] > 0 else np.zeros(max_lag)


def indicator_autocorrelation(positions: np.ndarray, n: int, max_lag: int) -> np.ndarray:
    """Autocorrelation at lags 1..max_lag of the 0/1 series that is 1 at ``positions`` (sorted) of ``n``.

    Computed from the exceedance positions alone (pairs at each distance), exactly.
    """
    k = positions.size
    p = k / n
    denom = k - k * k / n
    out = np.zeros(max_lag)
    if denom <= 0:
        return out
    for h in range(1, max_lag + 1):
        pairs = np.count_nonzero(np.isin(positions + h, positions, assume_unique=True))
        head = np.count_nonzero(positions < n - h)
        tail = np.count_nonzero(positions >= h)
        out[h - 1] = (pairs - p * (head + tail) + (n - h) * p * p) / denom
    return out


def extremal_index(positions: np.ndarray) -> float:
    """Ferro & Segers (2003) intervals estimator of the extremal index from exceedance positions.

    1 means isolated exceedances; 1/theta is the mean cluster size.
    """
    gaps = np.diff(np.sort(positions)).astype(float)
    if gaps.size < 2:
        return 1.0
    if gaps.max() <= 2:
        theta = 2 * gaps.sum() ** 2 / (gaps.size * np.sum(gaps**2))
    else:
        theta = 2 * np.sum(gaps - 1) ** 2 / (gaps.size * np.sum((gaps - 1) * (gaps - 2)))
    return float(min(1.0, theta))


def check_exceedances(positions: np.ndarray, n: int, max_lag: int = 10) -> tuple[Check, Check, Check]:
    """Independence (Ljung-Box on indicators, extremal index) and stationarity (halves) of threshold exceedances."""
    acf = indicator_autocorrelation(positions, n, max_lag)
    q, p = ljung_box(acf, n)
    lb = Check(
        "exceedance autocorrelation", q, p, p >= ALPHA,
        f"Ljung-Box on exceedance indicators, lags 1-{max_lag}: Q = {q:.1f}, {format_p(p)} — "
        + ("no sign of exceedances following each other" if p >= ALPHA
           else "exceedances follow each other more often than chance: they are not independent"),
    )
    theta = extremal_index(positions)
    ei = Check(
        "extremal index", theta, None, theta >= EXTREMAL_INDEX_MIN,
        f"extremal index θ = {theta:.2f} (1 = isolated exceedances; mean cluster size {1 / theta:.1f}) — "
        + ("clusters are small" if theta >= EXTREMAL_INDEX_MIN
           else f"exceedances come in clusters (θ < {EXTREMAL_INDEX_MIN}): intervals are too narrow"),
    )
    half = n // 2
    # the binomial test assumes independent exceedances: with clusters it is run on the clusters' starts
    # (declustered: runs within DECLUSTER_GAP wake-ups, then the extremal index's clusters)
    counted, what = positions, "exceedances"
    if theta < EXTREMAL_INDEX_MIN and positions.size > 2:
        ordered = np.sort(positions)
        runs = ordered[np.concatenate([[True], np.diff(ordered) > DECLUSTER_GAP])]
        counted = cluster_starts(runs, decluster(runs, discrete=True).clusters)
        what = f"clusters of exceedances ({counted.size} declustered from {positions.size})"
    first = int(np.count_nonzero(counted < half))
    test = stats.binomtest(first, max(counted.size, 1), half / n) if counted.size else None
    p_half = float(test.pvalue) if test is not None else 1.0
    halves = Check(
        "exceedance rate, first vs second half", first / max(counted.size, 1), p_half,
        p_half >= ALPHA,
        f"{what} in first/second half: {first}/{counted.size - first} (binomial {format_p(p_half)}) — "
        + ("rate steady" if p_half >= ALPHA else "the tail changed during the capture: not stationary"),
    )
    return lb, ei, halves


INDEPENDENCE_CAVEAT = ("assumes independent block maxima, which the block-maximum autocorrelation check "
                       "rejects: the p-value is too small, indicative only")
"""Said of a test on block maxima whose neighbours are correlated: its null distribution is not the one used."""


def check_block_maxima(maxima: np.ndarray) -> tuple[Check, Check]:
    """Independence (Ljung-Box) and stationarity (Mann-Whitney, first vs second half) of block maxima.

    Mann-Whitney assumes independent maxima: when the Ljung-Box check fails its sentence says so.
    """
    lags = max(1, min(10, maxima.size // 5))
    q, p = ljung_box(autocorrelation(maxima, lags), maxima.size)
    lb = Check(
        "block-maximum autocorrelation", q, p, p >= ALPHA,
        f"Ljung-Box on {maxima.size} block maxima, lags 1-{lags}: Q = {q:.1f}, {format_p(p)} — "
        + ("no slow drift or memory seen" if p >= ALPHA else "maxima of neighbouring blocks are correlated"),
    )
    half = maxima.size // 2
    mw = stats.mannwhitneyu(maxima[:half], maxima[half:], alternative="two-sided")
    shift = Check(
        "block maxima, first vs second half", float(mw.statistic), float(mw.pvalue), mw.pvalue >= ALPHA,
        f"block maxima first vs second half: Mann-Whitney {format_p(mw.pvalue)} — "
        + ("same level" if mw.pvalue >= ALPHA else "the level changed during the capture: not stationary")
        + ("" if lb.passed else f" (the test {INDEPENDENCE_CAVEAT})"),
    )
    return lb, shift


