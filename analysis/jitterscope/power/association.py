"""Numeric building blocks of the correlation analysis: arrays in, numbers out.

Exceedance risk ratios with Katz log confidence intervals and Fisher's exact
test, the Mann-Whitney test with Cliff's delta, Holm's step-down correction,
the smallest risk ratio a test could detect, event-triggered averages against
circular-shift surrogates, and lagged rank cross-correlation.  Nothing here
knows about datasets, CPUs or counters (:mod:`jitterscope.correlate` does).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import AnalysisError
from ..summary import special_ufuncs

special = special_ufuncs()  # scipy.special's ndtr without its import's 0.3 s; scipy.stats: see _stats


def _stats():
    """``scipy.stats``, imported on first use: ~1 s of CPU that ``compare`` (rank_test_binned only) does without."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class RiskRatio:
    """Exceedance counts in two groups and their risk ratio (in / out).

    ``p_value`` is Fisher's exact test, one-sided (exceedance more likely inside).
    """

    exceed_in: int
    n_in: int
    exceed_out: int
    n_out: int
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RankTest:
    """Mann-Whitney U (one-sided: inside stochastically greater) and Cliff's delta.

    ``method`` says how U was counted: ``"exact"`` from the values, or ``"histogram"`` from two
    histograms on the same buckets (:func:`rank_test_binned`), where pairs in one bucket count
    as ties; ``u_bound`` is then the most U can differ from the exact value (0 for exact).
    """

    u: float
    p_value: float
    cliffs_delta: float
    method: str = "exact"
    u_bound: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EventAverage:
    """Mean of a series around events, and a pointwise surrogate band from circular shifts.

    ``p_value`` tests the largest mean within ±``peak_halfwidth`` lags against the same
    statistic of the surrogates (a global test, not one per lag).
    """

    lags: tuple[int, ...]
    mean: tuple[float, ...]
    band_low: tuple[float, ...]
    band_high: tuple[float, ...]
    n_events: int
    n_surrogates: int
    peak_halfwidth: int
    p_value: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CrossCorrelation:
    """Spearman correlation of ``x[t]`` with ``y[t + lag]`` per lag, and the ±1.96/√n null band."""

    lags: tuple[int, ...]
    r: tuple[float, ...]
    n: tuple[int, ...]
    null_band: tuple[float, ...]
    sample: str | None = None  # which wake-ups, when not all of them (a streamed pass's RankSample)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def risk_ratio(exceed_in: int, n_in: int, exceed_out: int, n_out: int, *, level: float = 0.95) -> RiskRatio:
    """Risk ratio of exceedance inside vs outside a condition, Katz log CI and Fisher's exact p.

    Parameters
    ----------
    exceed_in, n_in, exceed_out, n_out : int
        Exceedances and group sizes.
    level : float
        Confidence level of the interval.

    Returns
    -------
    RiskRatio

    Raises
    ------
    AnalysisError
        An empty group or counts outside 0..n.

    Notes
    -----
    Katz et al. (1978): log RR ± z·sqrt(1/a − 1/n1 + 1/c − 1/n2); with a zero cell, 0.5 is
    added to every cell (Haldane-Anscombe) for the ratio and its interval.  The p-value is
    ``scipy.stats.fisher_exact(..., alternative="greater")`` on the 2×2 table.
    """
    stats = _stats()
    if n_in <= 0 or n_out <= 0:
        raise AnalysisError("risk ratio needs wake-ups both inside and outside the condition")
    if not (0 <= exceed_in <= n_in and 0 <= exceed_out <= n_out):
        raise AnalysisError("exceedance counts must lie between 0 and the group sizes")
    a, n1, c, n2 = float(exceed_in), float(n_in), float(exceed_out), float(n_out)
    if a == 0 or c == 0:
        a, c, n1, n2 = a + 0.5, c + 0.5, n1 + 1.0, n2 + 1.0
    ratio = (a / n1) / (c / n2)
    se = np.sqrt(max(1 / a - 1 / n1 + 1 / c - 1 / n2, 0.0))
    z = stats.norm.ppf(0.5 + level / 2)
    table = [[exceed_in, n_in - exceed_in], [exceed_out, n_out - exceed_out]]
    p = float(stats.fisher_exact(table, alternative="greater").pvalue)
    return RiskRatio(exceed_in=int(exceed_in), n_in=int(n_in), exceed_out=int(exceed_out), n_out=int(n_out),
                     ratio=float(ratio), ci_low=float(ratio * np.exp(-z * se)),
                     ci_high=float(ratio * np.exp(z * se)), p_value=min(p, 1.0))


def rank_test(inside: np.ndarray, outside: np.ndarray) -> RankTest:
    """One-sided Mann-Whitney U test (inside greater) with Cliff's delta = 2U/(n1·n2) − 1.

    Raises
    ------
    AnalysisError
        An empty group.
    """
    stats = _stats()
    x, y = np.asarray(inside, dtype=np.float64), np.asarray(outside, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        raise AnalysisError("rank test needs values both inside and outside the condition")
    result = stats.mannwhitneyu(x, y, alternative="greater", method="asymptotic")
    u = float(result.statistic)
    return RankTest(u=u, p_value=float(result.pvalue), cliffs_delta=2.0 * u / (x.size * y.size) - 1.0)


def rank_test_binned(lower_in: np.ndarray, counts_in: np.ndarray, lower_out: np.ndarray,
                     counts_out: np.ndarray) -> RankTest:
    """:func:`rank_test` from two histograms on one bucket grid (mergeable, any sample size).

    Parameters
    ----------
    lower_in, counts_in, lower_out, counts_out : numpy.ndarray
        Lower bucket edges (the same grid for both groups: edges either share or do not
        overlap) and counts of the two groups.

    Returns
    -------
    RankTest
        ``method="histogram"`` and ``u_bound`` = ½·Σ_b n_in[b]·n_out[b]: a pair in one bucket
        counts ½ here and 0, ½ or 1 exactly, so the exact U lies within ±``u_bound``.

    Raises
    ------
    AnalysisError
        An empty group.

    Notes
    -----
    U = Σ_b n_in[b]·(N_out below b + ½·n_out[b]); the p-value is scipy's asymptotic one
    (normal approximation with tie correction over buckets and continuity correction).
    """
    edges = np.union1d(np.asarray(lower_in, dtype=np.float64), np.asarray(lower_out, dtype=np.float64))
    a = np.zeros(edges.size)
    b = np.zeros(edges.size)
    np.add.at(a, np.searchsorted(edges, lower_in), np.asarray(counts_in, dtype=np.float64))
    np.add.at(b, np.searchsorted(edges, lower_out), np.asarray(counts_out, dtype=np.float64))
    n1, n2 = a.sum(), b.sum()
    if n1 == 0 or n2 == 0:
        raise AnalysisError("rank test needs values both inside and outside the condition")
    below = np.cumsum(b) - b
    u = float(np.sum(a * (below + 0.5 * b)))
    n = n1 + n2
    t = a + b
    tie = float(np.sum(t ** 3 - t))
    sigma = np.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie / (n * (n - 1)))) if n > 1 else 0.0
    z = (u - n1 * n2 / 2.0 - 0.5) / sigma if sigma > 0 else float("nan")
    p = float(special.ndtr(-z)) if np.isfinite(z) else 1.0  # scipy.stats.norm.sf(z), bit for bit
    return RankTest(u=u, p_value=p, cliffs_delta=2.0 * u / (n1 * n2) - 1.0, method="histogram",
                    u_bound=float(0.5 * np.sum(a * b)))


def holm(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979), same order as given.

    Adjusted p_(i) = max over j ≤ i of min(1, (m − j + 1)·p_(j)) with p sorted ascending.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return p
    order = np.argsort(p, kind="stable")
    m = p.size
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


def detectable_ratio(base_rate: float, n_in: int, n_out: int, *, alpha: float, power: float = 0.8) -> float:
    """Smallest risk ratio a one-sided two-proportion z-test detects with ``power`` at ``alpha``.

    Returns ``inf`` when even certain exceedance inside would not be detected, and
    ``nan`` when the base rate is 0 (nothing exceeded the threshold).

    Notes
    -----
    Unpooled normal approximation: power = Φ((p1 − p0)/√(p1(1−p1)/n1 + p0(1−p0)/n2) − z_{1−α});
    solved for p1 = RR·p0 by bisection.
    """
    stats = _stats()
    if not 0 < base_rate < 1 or n_in <= 0 or n_out <= 0:
        return float("nan")
    z_alpha, z_power = stats.norm.ppf(1 - alpha), stats.norm.ppf(power)

    def reached(ratio: float) -> bool:
        p1 = min(ratio * base_rate, 1.0)
        se = np.sqrt(p1 * (1 - p1) / n_in + base_rate * (1 - base_rate) / n_out)
        return (p1 - base_rate) / se - z_alpha >= z_power if se > 0 else p1 > base_rate

    high = 1.0 / base_rate
    if not reached(high):
        return float("inf")
    low = 1.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (low, mid) if reached(mid) else (mid, high)
    return float(high)


def event_average(values: np.ndarray, events: np.ndarray, *, max_lag: int, peak_halfwidth: int,
                  n_surrogates: int, rng: np.random.Generator, level: float = 0.95) -> EventAverage:
    """Mean of ``values`` at ``events + lag`` for lags −max_lag..max_lag, with surrogate band.

    Parameters
    ----------
    values : numpy.ndarray
        The series (NaN entries are left out of the means).
    events : numpy.ndarray
        Integer positions of the events in ``values``.
    max_lag, peak_halfwidth : int
        Lags shown, and the half-width around lag 0 in which the peak is tested.
    n_surrogates : int
        Circular shifts of the whole event train by a uniform random offset of at least
        ``2·max_lag + 1`` positions; they keep the events' spacing and the series'
        autocorrelation and break only their alignment.
    rng : numpy.random.Generator
    level : float
        Coverage of the pointwise band.

    Raises
    ------
    AnalysisError
        No events, or a series too short to shift.
    """
    x = np.asarray(values, dtype=np.float64)
    ev = np.asarray(events, dtype=np.int64)
    n = x.size
    if ev.size == 0:
        raise AnalysisError("event-triggered average needs at least one event")
    min_shift = 2 * max_lag + 1
    if n <= 2 * min_shift:
        raise AnalysisError(f"series of {n} values is too short for lags of ±{max_lag}")
    shifts = rng.integers(min_shift, n - min_shift, size=n_surrogates)
    sums = event_sums(x, 0, n, ev, max_lag=max_lag, shifts=shifts)
    return event_average_from_sums(sums, n_events=int(ev.size), max_lag=max_lag, peak_halfwidth=peak_halfwidth,
                                   level=level)


def event_sums(x: np.ndarray, left: int, length: int, events: np.ndarray, *, max_lag: int,
               shifts: np.ndarray, wrapped: np.ndarray | None = None,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sums and counts behind an event-triggered average, for one block of a series.

    ``x`` holds the block at ``x[left:left + length]`` with up to ``max_lag`` neighbours on either
    side (so that events near the block's edges see their true neighbours).  ``events`` are
    positions inside the block (0-based from its start).  Returns ``(observed_sum,
    observed_count, surrogate_sum, surrogate_count)``: the first two per lag, summed over events
    of ``x[event + lag]`` where that exists; the last two per (shift, lag), with the events moved
    circularly within the block by each of ``shifts``.  Sums over blocks add up (mergeable).  ``wrapped``: the
    block with its last and first ``max_lag`` values on either side, when the caller has built it already.
    """
    lags = np.arange(-max_lag, max_lag + 1)
    ev = np.asarray(events, dtype=np.int64)
    pos = ev[:, None] + left + lags[None, :]
    inside = (pos >= 0) & (pos < x.size)
    taken = np.where(inside, x[np.clip(pos, 0, x.size - 1)], np.nan)
    observed_sum, observed_count = np.nansum(taken, axis=0), np.sum(np.isfinite(taken), axis=0)
    block = x[left:left + length]
    shifts = np.asarray(shifts, dtype=np.int64)
    surrogate_sum = np.zeros((shifts.size, lags.size))
    surrogate_count = np.zeros((shifts.size, lags.size), dtype=np.int64)
    if ev.size and shifts.size:
        # the block wrapped by max_lag on either side: the lags of a shifted event are one contiguous window
        # of it, (e + shift + lag) mod length for every lag, so each (shift, event) gathers one row of 2·max_lag+1
        if wrapped is None:
            wrapped = np.concatenate([block[length - max_lag:], block, block[:max_lag]]) if max_lag else block
        finite = bool(np.isfinite(block).all())
        # chunks of surrogates keep the (surrogates, events) positions near 2^18 values whatever the event count:
        # small arrays, gathered once per lag (a (surrogates, events, lags) block of megabytes cost more, in
        # fresh pages, than the 2·max_lag + 1 passes)
        chunk = max(1, (1 << 18) // ev.size)
        for i in range(0, shifts.size, chunk):
            start = (ev[None, :] + shifts[i:i + chunk, None]) % length  # position of lag -max_lag in wrapped
            for k in range(lags.size):
                taken = wrapped[start + k]
                if finite:  # the usual case (latency is never missing): plain sums, every pair counted
                    surrogate_sum[i:i + chunk, k] = taken.sum(axis=1)
                    surrogate_count[i:i + chunk, k] = ev.size
                else:
                    surrogate_sum[i:i + chunk, k] = np.nansum(taken, axis=1)
                    surrogate_count[i:i + chunk, k] = np.sum(np.isfinite(taken), axis=1)
    return observed_sum, observed_count, surrogate_sum, surrogate_count


def event_average_from_sums(sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], *, n_events: int,
                            max_lag: int, peak_halfwidth: int, level: float = 0.95) -> EventAverage:
    """The :class:`EventAverage` of sums from :func:`event_sums` (added over blocks)."""
    observed_sum, observed_count, surrogate_sum, surrogate_count = sums
    lags = np.arange(-max_lag, max_lag + 1)
    n_surrogates = surrogate_sum.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.where(observed_count > 0, observed_sum / np.maximum(observed_count, 1), np.nan)
        surrogate = np.where(surrogate_count > 0, surrogate_sum / np.maximum(surrogate_count, 1), np.nan)
    centre = np.abs(lags) <= peak_halfwidth
    peak = np.nanmax(observed[centre])
    peaks = np.nanmax(surrogate[:, centre], axis=1) if n_surrogates else np.empty(0)
    p = (1.0 + np.sum(peaks >= peak)) / (n_surrogates + 1.0) if n_surrogates else float("nan")
    tail = (1 - level) / 2
    low, high = (np.nanquantile(surrogate, [tail, 1 - tail], axis=0) if n_surrogates
                 else (np.full(lags.size, np.nan), np.full(lags.size, np.nan)))
    return EventAverage(lags=tuple(int(v) for v in lags), mean=tuple(float(v) for v in observed),
                        band_low=tuple(float(v) for v in low), band_high=tuple(float(v) for v in high),
                        n_events=int(n_events), n_surrogates=int(n_surrogates), peak_halfwidth=peak_halfwidth,
                        p_value=float(p))


def lagged_correlation(x: np.ndarray, y: np.ndarray, *, max_lag: int) -> CrossCorrelation:
    """Spearman correlation of ``x[t]`` with ``y[t + lag]`` for lags −max_lag..max_lag.

    NaN in either series leaves that pair out.  Ranks are taken once over each whole
    series (average ranks for ties), then Pearson's r of the ranks per lag.
    """
    stats = _stats()
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.size != b.size:
        raise AnalysisError("cross-correlation needs two series of the same length")
    ra = np.where(np.isfinite(a), stats.rankdata(np.where(np.isfinite(a), a, np.inf)), np.nan)
    rb = np.where(np.isfinite(b), stats.rankdata(np.where(np.isfinite(b), b, np.inf)), np.nan)
    lags = np.arange(-max_lag, max_lag + 1)
    r, n = [], []
    for lag in lags:
        first, second = (ra[: a.size - lag], rb[lag:]) if lag >= 0 else (ra[-lag:], rb[: a.size + lag])
        both = np.isfinite(first) & np.isfinite(second)
        n.append(int(both.sum()))
        r.append(_pearson(first[both], second[both]))
    band = [1.96 / np.sqrt(k) if k > 3 else float("nan") for k in n]
    return CrossCorrelation(lags=tuple(int(v) for v in lags), r=tuple(r), n=tuple(n),
                            null_band=tuple(float(v) for v in band))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 3:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    denom = np.sqrt(np.dot(da, da) * np.dot(db, db))
    return float(np.dot(da, db) / denom) if denom > 0 else float("nan")
