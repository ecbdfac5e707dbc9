"""Null distributions of an averaged periodogram divided by the true noise level (Gaussian noise).

Mean of K Welch segments: a weighted sum of exponentials, the weights being
the eigenvalues of the segments' correlation matrix (overlapping windows are
correlated, Percival & Walden, *Spectral Analysis for Physical Applications*,
1993, sec. 6.17).  Its tail is heavier than the chi2 of equal variance
("equivalent dof"), which made a 1 % test reject 1.7 % of pure noise; so it is
approximated by Pearson's three-moment shifted chi2, ``shift + b chi2(d)``,
with the power sums of the eigenvalues from the Toeplitz symbol (Szegő).  Median of K
independent segments: the ceil(K/2)-th order statistic of K unit exponentials,
whose CDF is a regularised incomplete beta function of 1 - exp(-x).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..summary import special_ufuncs

# the chi2 functions scipy.stats calls, from scipy.special's compiled module: not scipy.stats (0.4 s more to
# import) nor scipy.special's package (0.3 s of its array-API layer), a third of `spectrum --json` at 10^7
special = special_ufuncs()


@dataclass(frozen=True)
class NullDistribution:
    """Distribution of ``shift + scale * X``: X is chi2(dof) (``kind="mean"``) or an exponential order statistic.

    For the median, ``dof`` is the number of segments K and ``order`` the order statistic (1-based).
    """

    kind: str
    dof: float
    order: int
    scale: float = 1.0
    shift: float = 0.0

    def sf(self, x: np.ndarray | float) -> np.ndarray:
        """P(null > x)."""
        z = (np.asarray(x, dtype=np.float64) - self.shift) / self.scale
        if self.kind == "mean":
            return special.chdtrc(self.dof, np.maximum(z, 0.0))  # stats.chi2.sf: 1 at and below 0
        from scipy import stats

        k, total = self.order, int(self.dof)
        # P(X_(k) > z) = P(Beta(k, K-k+1) > F(z)) = P(Beta(K-k+1, k) < exp(-z))
        return stats.beta.cdf(np.exp(-np.maximum(z, 0.0)), total - k + 1, k)

    def isf(self, probability: np.ndarray | float) -> np.ndarray:
        """The x with P(null > x) = probability."""
        q = np.asarray(probability, dtype=np.float64)
        if self.kind == "mean":
            return self.shift + special.chdtri(self.dof, q) * self.scale  # stats.chi2.isf
        from scipy import stats

        k, total = self.order, int(self.dof)
        return self.shift - np.log(stats.beta.ppf(q, total - k + 1, k)) * self.scale

    @property
    def median(self) -> float:
        if self.kind == "mean":
            return float(self.shift + 2 * special.gammaincinv(self.dof / 2, 0.5) * self.scale)  # stats.chi2.median
        from scipy import stats

        k, total = self.order, int(self.dof)
        return float(self.shift - np.log(stats.beta.ppf(0.5, total - k + 1, k)) * self.scale)

    @property
    def mean(self) -> float:
        if self.kind == "mean":
            return float(self.shift + self.dof * self.scale)
        k, total = self.order, int(self.dof)
        return float(self.shift + np.sum(1.0 / np.arange(total - k + 1, total + 1)) * self.scale)

    @property
    def variance(self) -> float:
        if self.kind == "mean":
            return float(2.0 * self.dof * self.scale**2)
        k, total = self.order, int(self.dof)
        return float(np.sum(1.0 / np.arange(total - k + 1, total + 1) ** 2) * self.scale**2)

    def rescaled(self, factor: float) -> NullDistribution:
        return NullDistribution(self.kind, self.dof, self.order, self.scale * factor, self.shift * factor)

    def to_json(self) -> dict:
        return {"kind": self.kind, "dof": self.dof, "order": self.order, "scale": self.scale, "shift": self.shift}


def mean_null(segments: int, window: np.ndarray, step: int, *,
              equivalent_segments: float | None = None) -> NullDistribution:
    """Null of the mean of ``segments`` windowed periodograms that start ``step`` samples apart (mean 1).

    ``equivalent_segments`` (Satterthwaite: (sum L)^2 / sum L^2 over the
    segments' levels L) lowers the effective count when the segments' noise
    levels differ; by default all levels are equal.
    """
    nperseg = window.size
    energy = np.sum(window**2)
    lags = np.arange(1, min(segments, -(-nperseg // step)))
    rho = np.array([np.sum(window[m * step:] * window[: nperseg - m * step]) / energy for m in lags])
    # eigenvalues of the segments' correlation matrix ~ its symbol 1 + 2 sum rho_m cos(m theta)
    theta = np.linspace(0.0, np.pi, 4097)
    symbol = 1.0 + 2.0 * np.sum(rho[:, None] * np.cos(lags[:, None] * theta[None, :]), axis=0) if lags.size else 1.0
    power2, power3 = np.mean(np.square(symbol)), np.mean(np.power(symbol, 3))
    effective = float(segments if equivalent_segments is None else equivalent_segments)
    # cumulants of the mean of the segments, each an exponential weighted by an eigenvalue
    k2, k3 = power2 / effective, 2.0 * power3 / effective**2
    dof = 8.0 * k2**3 / k3**2
    scale = k3 / (4.0 * k2)
    return NullDistribution("mean", dof=float(dof), order=0, scale=float(scale), shift=float(1.0 - scale * dof))


def median_null(segments: int) -> NullDistribution:
    """Null of the ceil(K/2)-th smallest of ``segments`` independent periodograms."""
    return NullDistribution("median", dof=float(segments), order=(segments + 1) // 2)
