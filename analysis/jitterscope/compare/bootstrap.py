"""Block bootstrap of latency series: block length by Politis-White, resampled quantiles, vectorised.

Latency series are autocorrelated (periodic disturbances, frequency phases, SMI
storms), so resampling single wake-ups would understate the uncertainty.  The
circular moving-block bootstrap (Künsch 1989; Politis & Romano 1992) resamples
blocks of consecutive wake-ups; the block length comes from the autocorrelation
decay by the rule of Politis & White (2004) with the correction of Patton,
Politis & White (2009).

Long series are bootstrapped *m out of n*: resamples of length ``m`` and the
spread of the resampled statistic around the estimate scaled by ``sqrt(m / n)``,
valid for quantiles (root-n statistics), not for the maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ACF_SAMPLES = 1_000_000
"""The block-length rule looks at most at this many leading wake-ups of a series."""


@dataclass(frozen=True)
class BlockLength:
    """A block length and why it was chosen."""

    length: int
    reason: str


def optimal_block_length(x: np.ndarray) -> BlockLength:
    """Circular-block-bootstrap block length by Politis & White (2004), as corrected in 2009.

    Parameters
    ----------
    x : ndarray
        The series (at most its first :data:`MAX_ACF_SAMPLES` values are used).

    Returns
    -------
    BlockLength
        At least 1 and at most ``n / 10``; 1 for a series without significant autocorrelation.

    Notes
    -----
    ``m`` = the smallest lag after which ``K_N = max(5, sqrt(log10 n))`` consecutive
    autocorrelations are all below ``2 sqrt(log10 n / n)``; ``M = 2 m``; with the flat-top
    window ``lambda``, ``G = sum lambda(k/M) |k| R(k)``, ``D = 4/3 g(0)^2`` with
    ``g(0) = sum lambda(k/M) R(k)``; ``b = (2 G^2 / D)^(1/3) n^(1/3)``.
    """
    x = np.asarray(x, dtype=float)[:MAX_ACF_SAMPLES]
    n = x.size
    if n < 20 or np.ptp(x) == 0:
        return BlockLength(1, "series too short or constant: single wake-ups resampled")
    max_lag = int(min(n - 1, max(5 * np.sqrt(np.log10(n)) + 1, np.ceil(np.sqrt(n)) + 5, 100)))
    xc = x - x.mean()
    size = 1 << int(np.ceil(np.log2(2 * n)))
    spec = np.fft.rfft(xc, size)
    acov = np.fft.irfft(spec * np.conj(spec), size)[: max_lag + 1] / n
    rho = acov[1:] / acov[0]
    k_n = max(5, int(np.sqrt(np.log10(n))))
    bound = 2 * np.sqrt(np.log10(n) / n)
    small = np.abs(rho) < bound
    m = max_lag
    for lag in range(0, max_lag - k_n + 1):
        if np.all(small[lag:lag + k_n]):
            m = lag
            break
    big_m = min(2 * max(m, 1), max_lag)
    k = np.arange(-big_m, big_m + 1)
    t = np.abs(k) / big_m
    window = np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2 * (1 - t), 0.0))
    r = acov[np.abs(k)]
    g = np.sum(window * np.abs(k) * r)
    g0 = np.sum(window * r)
    d = 4.0 / 3.0 * g0**2
    b = (2 * g**2 / d) ** (1 / 3) * n ** (1 / 3) if d > 0 else 1.0
    length = int(np.clip(np.ceil(b), 1, max(1, n // 10)))
    if m == 0:
        reason = "no significant autocorrelation (Politis-White): single wake-ups resampled" if length == 1 else (
            f"Politis-White rule from the autocorrelation decay: {length} wake-ups")
    else:
        reason = (f"Politis-White rule: autocorrelation significant up to lag {m}, "
                  f"optimal circular block {length} wake-ups")
    return BlockLength(length, reason)


def block_indices(rng: np.random.Generator, n: int, m: int, block: int, count: int) -> np.ndarray:
    """``count`` circular-block resamples of length ``m`` from a series of length ``n``: indices (count, m)."""
    n_blocks = -(-m // block)
    starts = rng.integers(0, n, size=(count, n_blocks))
    idx = (starts[:, :, None] + np.arange(block)[None, None, :]) % n
    return idx.reshape(count, n_blocks * block)[:, :m]


@dataclass(frozen=True)
class BootstrapDraws:
    """Resampled quantiles and exceedance fractions of one series, already rescaled for m-out-of-n."""

    quantiles: np.ndarray
    """(n_boot, len(qs)) quantiles, rescaled around the estimate when m < n."""
    exceed: np.ndarray
    """(n_boot, len(thresholds)) fraction of resampled wake-ups above each threshold."""
    resample_length: int
    block: BlockLength


def bootstrap_series(
    x: np.ndarray, qs: np.ndarray, thresholds: np.ndarray, *, n_boot: int, seed: int,
    max_resample: int = 200_000, block: BlockLength | None = None, chunk_elements: int = 4_000_000,
) -> BootstrapDraws:
    """Circular-block bootstrap of quantiles ``qs`` (in [0, 1]) and exceedance fractions at ``thresholds``.

    Resamples are drawn in chunks of about ``chunk_elements`` values so memory stays bounded.
    """
    x = np.asarray(x)
    n = x.size
    block = block or optimal_block_length(x)
    m = min(n, max_resample)
    rng = np.random.default_rng(seed)
    quant = np.empty((n_boot, qs.size))
    exceed = np.empty((n_boot, thresholds.size))
    per_chunk = max(1, chunk_elements // m)
    for start in range(0, n_boot, per_chunk):
        count = min(per_chunk, n_boot - start)
        values = x[block_indices(rng, n, m, block.length, count)]
        quant[start:start + count] = np.quantile(values, qs, axis=1).T
        exceed[start:start + count] = (values[:, :, None] > thresholds[None, None, :]).mean(axis=1) if (
            thresholds.size) else np.empty((count, 0))
    if m < n:
        estimate = np.quantile(x, qs)
        quant = estimate + np.sqrt(m / n) * (quant - estimate)
        observed = (x[:, None] > thresholds[None, :]).mean(axis=0)
        exceed = observed + np.sqrt(m / n) * (exceed - observed)
    return BootstrapDraws(quant, exceed, m, block)
