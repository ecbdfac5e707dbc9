"""Null distributions of an averaged periodogram divided by the true noise level (Gaussian noise).

Mean of K Welch segments: chi-squared with the equivalent degrees of freedom
nu of overlapping windowed segments, divided by nu (Percival & Walden,
*Spectral Analysis for Physical Applications*, 1993, eq. 292b).  Median of K
independent segments: the ceil(K/2)-th order statistic of K unit exponentials,
whose CDF is a regularised incomplete beta function of 1 - exp(-x).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class NullDistribution:
    """Distribution of ``scale * X`` where X is chi2(dof)/dof (``kind="mean"``) or an exponential order statistic."""

    kind: str
    dof: float  # mean: equivalent degrees of freedom; median: number of segments K
    order: int  # median: which order statistic (1-based); unused for mean
    scale: float = 1.0

    def sf(self, x: np.ndarray | float) -> np.ndarray:
        """P(null > x)."""
        z = np.asarray(x, dtype=np.float64) / self.scale
        if self.kind == "mean":
            return stats.chi2.sf(z * self.dof, self.dof)
        k, total = self.order, int(self.dof)
        # P(X_(k) > z) = P(Beta(k, K-k+1) > F(z)) = P(Beta(K-k+1, k) < exp(-z))
        return stats.beta.cdf(np.exp(-np.maximum(z, 0.0)), total - k + 1, k)

    def isf(self, probability: np.ndarray | float) -> np.ndarray:
        """The x with P(null > x) = probability."""
        q = np.asarray(probability, dtype=np.float64)
        if self.kind == "mean":
            return stats.chi2.isf(q, self.dof) / self.dof * self.scale
        k, total = self.order, int(self.dof)
        return -np.log(stats.beta.ppf(q, total - k + 1, k)) * self.scale

    @property
    def median(self) -> float:
        if self.kind == "mean":
            return float(stats.chi2.median(self.dof) / self.dof * self.scale)
        k, total = self.order, int(self.dof)
        return float(-np.log(stats.beta.ppf(0.5, total - k + 1, k)) * self.scale)

    @property
    def mean(self) -> float:
        if self.kind == "mean":
            return self.scale
        k, total = self.order, int(self.dof)
        return float(np.sum(1.0 / np.arange(total - k + 1, total + 1)) * self.scale)

    def rescaled(self, factor: float) -> NullDistribution:
        return NullDistribution(self.kind, self.dof, self.order, self.scale * factor)

    def to_json(self) -> dict:
        return {"kind": self.kind, "dof": self.dof, "order": self.order, "scale": self.scale}


def mean_null(segments: int, window: np.ndarray, step: int) -> NullDistribution:
    """Null of the mean of ``segments`` windowed periodograms that start ``step`` samples apart."""
    nperseg = window.size
    energy = np.sum(window**2)
    lags = np.arange(1, min(segments, -(-nperseg // step)))
    rho = np.array([np.sum(window[m * step:] * window[: nperseg - m * step]) / energy for m in lags])
    inflation = 1.0 + 2.0 * np.sum((1.0 - lags / segments) * rho**2)
    return NullDistribution("mean", dof=2.0 * segments / inflation, order=0)


def median_null(segments: int) -> NullDistribution:
    """Null of the ceil(K/2)-th smallest of ``segments`` independent periodograms."""
    return NullDistribution("median", dof=float(segments), order=(segments + 1) // 2)
