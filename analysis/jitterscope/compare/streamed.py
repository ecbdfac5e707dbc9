"""compare of sample runs in bounded memory: each run streamed once into a :class:`~.stream.CompareStream`.

:func:`stream_run` reads a sample dataset in batches (one pass, plus the first
:data:`~.bootstrap.MAX_ACF_SAMPLES` wake-ups for the block length) and
:func:`compare_streams` judges the runs from what the streams hold, with the
verdict rules of :mod:`.samples`.  What is exact and what is bounded (the
:data:`METHODS` table, also in the result, its JSON and the compare PDF):

* quantiles: the HDR grid's bucket middle, within ±``RELATIVE_ERROR / 2`` (0.05 %) of
  the exact order statistic; exact below 1024 ns, for the smallest value and the
  :data:`~.stream.TOP_VALUES` largest (so p99.99 of a 10^6-wake-up run is exact);
* intervals: Poisson block bootstrap (blocks of the Politis-White length, m-out-of-n
  with the spread scaled by sqrt(m/n) for runs longer than ``max_resample``), each
  replicate's quantiles on the grid (same bound);
* exceedance counts above the baseline's p99 … p99.99: exact counts above the top of
  the grid bucket holding the baseline's quantile (at most 0.1 % above it; the
  threshold printed is the one used);
* max and tail levels: exact (the largest values are kept), judged against a GPD fit
  to the exact top :data:`~.samples.TAIL_FIT_TOP` values, as in memory;
* Mann-Whitney from the two grid histograms: U exact within ±``u_bound`` (pairs in one
  bucket counted as ½-ties), P(candidate > baseline) within ±``u_bound / (n_a n_b)``;
* Kolmogorov-Smirnov: D at the bucket edges; the exact D lies in ``[D, D + d_bound]``
  with ``d_bound`` the largest share of either run in one bucket;
* Anderson-Darling k-sample (midrank form, Scholz & Stephens 1987) on the grid, values
  in one bucket taken as ties: an approximation without a closed-form bound.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..dataset import Dataset, Metadata, column_values, iter_thread_batches
from ..errors import AnalysisError
from ..format import format_p
from ..power import rank_test_binned
from .bootstrap import MAX_ACF_SAMPLES, BlockLength
from .envdiff import diff_environments, readings_note
from .episodes import RECORD_LEVEL, Drift, ExceedanceRecorder, segment_drift, structured_block_length
from .pvalues import kstwo_sf, kstwobign_sf
from .results import (
    EXCEEDANCE_LEVELS,
    HIST_BINS,
    MIN_ABOVE,
    PLOT_LEVELS,
    QUANTILE_METRICS,
    TAIL_FIT_TOP,
    Comparison,
    ExceedanceRatio,
    PairComparison,
    RunSummary,
    TestResult,
    check_parameters,
    check_run_size,
    drift_rule,
    episode_rule,
    pair_notes,
    quantile_change,
    run_notes,
    tail_change,
)
from .stream import RELATIVE_ERROR, TOP_VALUES, CompareStream, StreamedRun, grid_keys, key_bounds

MIN_BLOCKS_DRAWN = 20
"""An m-out-of-n replicate draws at least about this many blocks (per thread)."""
METHODS: tuple[tuple[str, str], ...] = (
    ("quantiles", f"HDR grid (buckets ≤ {RELATIVE_ERROR:.2%} of their value wide): bucket middle within "
                  f"±{RELATIVE_ERROR / 2:.2%} of the exact value; exact below 1024 ns, for the min and the "
                  f"{TOP_VALUES} largest values"),
    ("intervals", "Poisson block bootstrap of the stream, every thread's block b weighted alike (blocks: the "
                  "longest of Politis-White, twice the longest episode above p99, one of 20 segments when they "
                  "differ; m-out-of-n, spread scaled by sqrt(m/n), for long runs); replicate quantiles on the same "
                  "grid (same bound)"),
    ("tail verdicts", "a tail change is shown only when the two runs' independent episodes above the lower value "
                      "(exceedances within 10 intervals on any CPU are one) differ beyond chance (binomial test at "
                      "1 - confidence); else inconclusive, with the counts"),
    ("exceedances", "exact counts above the top of the grid bucket holding the baseline's quantile "
                    f"(≤ {RELATIVE_ERROR:.2%} above it; the threshold shown is the one used)"),
    ("max, tail levels", f"exact values; judged against a GPD fit to the exact top {TAIL_FIT_TOP} values"),
    ("Mann-Whitney", "from the merged grid histograms: U exact within ±u_bound (pairs in one bucket as ½-ties)"),
    ("Kolmogorov-Smirnov", "D at the grid's bucket edges: exact D in [D, D + d_bound], d_bound = largest share "
                           "of either run in one bucket"),
    ("Anderson-Darling k-sample", "midrank form on the grid, values in one bucket as ties: approximate, no "
                                  "closed-form bound"),
)
"""What each part of a streamed comparison is: exact, or within which bound."""


def prefix_block_length(dataset: Dataset) -> BlockLength:
    """The bootstrap block length of a dataset from its first wake-ups (:func:`prefix_structure`)."""
    return prefix_structure(dataset)[0]


def prefix_structure(dataset: Dataset) -> tuple[BlockLength, float, Drift | None]:
    """Block length (:func:`~.episodes.structured_block_length`) and exceedance-record floor of a dataset.

    Both from the first :data:`MAX_ACF_SAMPLES` wake-ups (threads pooled in thread order): reads only
    until one thread has that many wake-ups (or the dataset ends).  The floor is their
    :data:`~.episodes.RECORD_LEVEL` quantile; the drift from their segments (:func:`~.episodes.segment_drift`).
    """
    pieces: dict[int, list[np.ndarray]] = {}
    held: dict[int, int] = {}
    batches = iter_thread_batches(dataset, ["expected_ns", "actual_ns"], check=False)
    try:
        for info, batch in batches:
            latency = column_values(batch, 1) - column_values(batch, 0)  # not to_numpy: it imports pandas
            pieces.setdefault(info.thread, []).append(latency)
            held[info.thread] = held.get(info.thread, 0) + latency.size
            if held[info.thread] >= MAX_ACF_SAMPLES:
                break
    finally:
        batches.close()
    threads = [np.concatenate(pieces[t]) for t in sorted(pieces)]
    series = np.concatenate(threads) if threads else np.zeros(0)
    share = MAX_ACF_SAMPLES / max(series.size, 1)
    heads = [t[:max(1, int(t.size * min(1.0, share)))] for t in threads]
    drift = segment_drift(heads)
    block = structured_block_length(heads, drift)
    floor = float(np.quantile(series, RECORD_LEVEL)) if series.size else 0.0
    if series.size > MAX_ACF_SAMPLES or (held and max(held.values()) >= MAX_ACF_SAMPLES):
        return BlockLength(block.length, f"{block.reason} (rule applied to the first {MAX_ACF_SAMPLES:,} "
                                         "wake-ups)"), floor, drift
    return block, floor, drift


def stream_run(dataset: Dataset, *, index: int, n_boot: int, seed: int, max_resample: int) -> StreamedRun:
    """One pass over a sample dataset into a :class:`CompareStream` (run ``index`` of its comparison).

    Raises
    ------
    AnalysisError
        A histogram dataset, no rows, or rows out of ``seq`` order.
    """
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: histogram-only dataset has no wake-up series")
    if dataset.num_rows == 0:
        raise AnalysisError(f"{dataset.path}: dataset has no rows; capture for longer")
    block, floor, drift = prefix_structure(dataset)
    interval = min((t.interval_ns for t in dataset.metadata.threads), default=0)
    # m-out-of-n for long runs, but never so few blocks per replicate that segment-level blocks degenerate
    per_thread = dataset.num_rows / max(1, len(dataset.metadata.threads))
    fraction = min(1.0, max(max_resample / dataset.num_rows, MIN_BLOCKS_DRAWN * block.length / per_thread))
    stream = CompareStream(n_boot=n_boot, block_length=block.length, seed=seed, run=index, late_ns=interval,
                           resample_fraction=fraction)
    recorder = ExceedanceRecorder(floor, interval or 1)
    for info, batch in iter_thread_batches(dataset, ["seq", "expected_ns", "actual_ns"], check=False):
        seq, expected, actual = (column_values(batch, i) for i in range(3))
        stream.update(info.thread, seq, actual - expected)
        recorder.update(expected, actual - expected)
    try:
        run = stream.result()
    except AnalysisError:
        raise AnalysisError(f"{dataset.path}: dataset has no rows; capture for longer") from None
    return dataclasses.replace(run, block_reason=block.reason, exceedances=recorder.result(), drift=drift)


def compare_datasets_streamed(
    datasets: Sequence[Dataset], labels: Sequence[str], *, noise: float, confidence: float, n_boot: int, seed: int,
    max_resample: int,
) -> Comparison:
    """:func:`~.samples.compare_runs` on sample datasets: every run streamed (two at a time), then judged."""
    check_parameters(noise, confidence, n_boot)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="jitterscope-compare") as pool:
        futures = [pool.submit(stream_run, d, index=i, n_boot=n_boot, seed=seed, max_resample=max_resample)
                   for i, d in enumerate(datasets)]
        runs = [f.result() for f in futures]
    metadatas = [d.metadata for d in datasets]
    rates = [float(sum(1e9 / t.interval_ns for t in d.metadata.threads if t.thread in r.threads and t.interval_ns))
             for d, r in zip(datasets, runs, strict=True)]
    return compare_streams(runs, metadatas, labels, paths=[str(d.path) for d in datasets], wakeups_per_s=rates,
                           noise=noise, confidence=confidence)


def compare_streams(
    runs: Sequence[StreamedRun], metadatas: Sequence[Metadata], labels: Sequence[str], *,
    paths: Sequence[str] | None = None, wakeups_per_s: Sequence[float] | None = None, noise: float = 0.05,
    confidence: float = 0.95,
) -> Comparison:
    """Every streamed run against the first: the verdicts of :func:`~.samples.compare_samples` from the streams.

    Parameters
    ----------
    runs
        Results of :class:`CompareStream` (same ``n_boot``; distinct ``run`` indices for independent draws).
    metadatas, labels, paths, wakeups_per_s, noise, confidence
        As for :func:`~.samples.compare_samples`.

    Returns
    -------
    Comparison
        With ``methods`` saying what is exact and what is bounded (:data:`METHODS`).
    """
    if len(runs) < 2:
        raise AnalysisError("compare needs at least two runs (the first is the baseline)")
    n_boot = runs[0].replicates.shape[0]
    check_parameters(noise, confidence, n_boot)
    if any(run.replicates.shape[0] != n_boot for run in runs):
        raise AnalysisError("compare_streams needs every run streamed with the same n_boot")
    for label, run in zip(labels, runs, strict=True):
        check_run_size(label, run.count)
    paths = list(paths) if paths is not None else list(labels)
    rates = list(wakeups_per_s) if wakeups_per_s is not None else [
        sum(1e9 / t.interval_ns for t in m.threads) for m in metadatas]
    qs = np.array([q for _, q in QUANTILE_METRICS])
    estimates = [run.quantiles(qs) for run in runs]
    threshold_keys = grid_keys(np.floor(runs[0].quantiles(np.array([q for _, q in EXCEEDANCE_LEVELS]))))
    thresholds = key_bounds(threshold_keys)[1] - 1.0  # the top value of the bucket: counts are of values above it
    draws = [_draws(run, qs, threshold_keys) for run in runs]
    summaries = tuple(_summary(run, meta, label, path, rate, runs)
                      for run, meta, label, path, rate in zip(runs, metadatas, labels, paths, rates, strict=True))
    pairs = tuple(_pair(runs[0], runs[i], estimates[0], estimates[i], draws[0], draws[i], summaries[0], summaries[i],
                        thresholds, noise=noise, confidence=confidence) for i in range(1, len(runs)))
    method = (f"streamed: Poisson block bootstrap, {n_boot} resamples per run, {confidence:.0%} percentile "
              f"intervals; quantiles on an HDR grid within ±{RELATIVE_ERROR / 2:.2%}; noise threshold ±{noise:.0%}; "
              f"max (and quantiles with < {MIN_ABOVE} wake-ups above them) judged against the other run's fitted tail")
    notes = (*run_notes(summaries), *readings_note(metadatas),
             "each run read once in batches (memory bounded whatever its size); the bootstrap weights each block of "
             "consecutive wake-ups with a Poisson draw, the same for every thread's block at that place",
             "one run per side: a tail change needs more independent episodes than chance gives, and a drifting "
             "run's p50/p99 interval is widened by its segments' spread; for a verdict on configurations, compare "
             "replicates (compare A1 A2 A3 -- B1 B2 B3)")
    return Comparison(summaries, pairs, diff_environments(metadatas), notes, noise, confidence, n_boot, method,
                      methods=METHODS)


class _Draws:
    """A run's bootstrap replicates reduced to quantiles and exceedance fractions (rescaled for m-out-of-n)."""

    def __init__(self, quantiles: np.ndarray, exceed: np.ndarray, above: np.ndarray) -> None:
        self.quantiles, self.exceed, self.above = quantiles, exceed, above


def _draws(run: StreamedRun, qs: np.ndarray, threshold_keys: np.ndarray) -> _Draws:
    middle = run.middle()
    estimate = _grid_quantiles(run.counts[None, :], middle, qs)[0]
    columns = np.clip(threshold_keys - run.low_key + 1, 0, run.counts.size)
    above = np.array([run.counts[c:].sum() for c in columns], dtype=np.int64)
    quantiles = np.empty((run.replicates.shape[0], qs.size))
    exceed = np.empty((run.replicates.shape[0], columns.size))
    step = 64  # replicates at a time: the cumulated counts are (step, keys) int64
    for start in range(0, run.replicates.shape[0], step):
        chunk = run.replicates[start:start + step]
        totals = chunk.sum(axis=1)
        quantiles[start:start + step] = _grid_quantiles(chunk, middle, qs)
        with np.errstate(invalid="ignore", divide="ignore"):
            exceed[start:start + step] = np.stack([chunk[:, c:].sum(axis=1) for c in columns], axis=1) / totals[:,
                                                                                                                None]
    scale = math.sqrt(run.resample_fraction)
    observed = above / run.count
    if scale < 1:
        quantiles = estimate + scale * (quantiles - estimate)
        exceed = observed + scale * (exceed - observed)
    return _Draws(quantiles, exceed, above)


def _grid_quantiles(counts: np.ndarray, middle: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Quantiles (numpy's linear rule) of each row of grid counts, order statistics valued at their key's middle."""
    cum = np.cumsum(counts, axis=1)
    totals = cum[:, -1]
    rows, keys = cum.shape
    # each row of cum ascends, so the number of its entries <= v is a binary search; each row is lifted past the
    # previous one's values (a stride above the largest total) so that one search of all rows answers every row.
    # The bounds below are whole numbers from -1 up: the very counts that comparing every entry gave, faster.
    stride = int(totals.max(initial=0)) + 2
    lift = np.arange(rows, dtype=np.int64) * stride
    flat = (cum + lift[:, None]).ravel()
    first = np.arange(rows, dtype=np.int64) * keys
    out = np.full((rows, qs.size), np.nan)
    for j, q in enumerate(qs):
        position = (totals - 1) * q
        below = np.floor(position)
        at_most = np.searchsorted(flat, below.astype(np.int64) + lift, side="right") - first
        low = np.minimum(at_most, middle.size - 1)
        at_most = np.searchsorted(flat, np.minimum(below + 1, totals - 1).astype(np.int64) + lift, side="right") - first
        high = np.minimum(at_most, middle.size - 1)
        out[:, j] = middle[low] + (position - below) * (middle[high] - middle[low])
    out[totals < 1] = np.nan
    return out


def _pair(a: StreamedRun, b: StreamedRun, est_a: np.ndarray, est_b: np.ndarray, da: _Draws, db: _Draws,
          sa: RunSummary, sb: RunSummary, thresholds: np.ndarray, *, noise: float,
          confidence: float) -> PairComparison:
    alpha = 1 - confidence
    metrics = []
    for j, (name, q) in enumerate(QUANTILE_METRICS):
        if min(a.count, b.count) * (1 - q) < MIN_ABOVE:
            metrics.append(tail_change(name, a.top_ns, a.count, b.top_ns, b.count, float(est_a[j]), float(est_b[j]),
                                       noise, f"fewer than {MIN_ABOVE} wake-ups above {name}: no bootstrap interval"))
            continue
        diff = db.quantiles[:, j] - da.quantiles[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = db.quantiles[:, j] / da.quantiles[:, j] - 1
        diff, rel = diff[np.isfinite(diff)], rel[np.isfinite(rel)]
        lo, hi = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
        r_lo, r_hi = np.quantile(rel, [alpha / 2, 1 - alpha / 2]) if rel.size else (np.nan, np.nan)
        relative = est_b[j] / est_a[j] - 1 if est_a[j] > 0 else np.nan
        metrics.append(quantile_change(name, est_a[j], est_b[j], lo, hi, relative, r_lo, r_hi, noise, confidence))
    metrics.append(tail_change("max", a.top_ns, a.count, b.top_ns, b.count, float(a.max_ns), float(b.max_ns), noise,
                               "no interval: a sample maximum has no consistent bootstrap"))
    metrics = drift_rule(metrics, a.drift, b.drift, noise, confidence)
    if a.exceedances is not None and b.exceedances is not None:
        metrics = episode_rule(metrics, a.exceedances, a.count, b.exceedances, b.count, alpha)
    return PairComparison(
        baseline=sa.label, candidate=sb.label, metrics=tuple(metrics), tests=histogram_tests(a, b),
        exceedance_ratios=_ratios(a, b, da, db, thresholds, sa, sb, alpha), notes=pair_notes(sa, sb),
        qq_ns=_qq(a, b))


def _aligned(a: StreamedRun, b: StreamedRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both runs' counts on one key range, and the lower value of each key's bucket."""
    low = min(a.low_key, b.low_key)
    high = max(a.low_key + a.counts.size, b.low_key + b.counts.size)
    out = []
    for run in (a, b):
        counts = np.zeros(high - low, dtype=np.int64)
        counts[run.low_key - low: run.low_key - low + run.counts.size] = run.counts
        out.append(counts)
    return out[0], out[1], key_bounds(low + np.arange(high - low))[0].astype(np.float64)


def histogram_tests(base: StreamedRun, cand: StreamedRun) -> tuple[TestResult, ...]:
    """Mann-Whitney, Kolmogorov-Smirnov and Anderson-Darling from the two runs' grid histograms (see METHODS)."""
    ca, cb, lower = _aligned(base, cand)
    na, nb = base.count, cand.count
    greater = rank_test_binned(lower, cb, lower, ca)  # one-sided: candidate larger
    smaller = rank_test_binned(lower, ca, lower, cb)
    p_mw = min(1.0, 2 * min(greater.p_value, smaller.p_value))
    ps = greater.u / (na * nb)
    ps_bound = greater.u_bound / (na * nb)
    lean = ("candidate latencies tend to be larger" if ps > 0.52 else
            "candidate latencies tend to be smaller" if ps < 0.48 else "neither run tends to be larger")
    fa, fb = np.cumsum(ca) / na, np.cumsum(cb) / nb
    d = float(np.max(np.abs(fa - fb)))
    d_bound = float(max((ca / na).max(), (cb / nb).max()))
    en = na * nb / (na + nb)
    p_ks = kstwo_sf(d, round(en)) if en < 1e5 else kstwobign_sf(d * math.sqrt(en))
    ad, p_ad = anderson_darling_binned(ca, cb)
    caveat = "p-values assume independent wake-ups"
    return (
        TestResult("Mann-Whitney", ps, p_mw,
                   f"P(candidate > baseline) = {ps:.3f} ± {ps_bound:.2g} (grid buckets): {lean} "
                   f"(Mann-Whitney {format_p(p_mw)}; {caveat})", bound=ps_bound),
        TestResult("Kolmogorov-Smirnov", d, p_ks,
                   f"largest gap between the two CDFs D = {d:.3f} (exact D ≤ {min(1.0, d + d_bound):.3f}; "
                   f"KS {format_p(p_ks)}; {caveat})", bound=d_bound),
        TestResult("Anderson-Darling k-sample", ad, p_ad,
                   f"Anderson-Darling k-sample A² = {ad:.2f} ({format_p(p_ad, floor=0.001, cap=0.25)}; on the grid "
                   "histograms, values in one bucket as ties: approximate)"),
    )


def anderson_darling_binned(ca: np.ndarray, cb: np.ndarray) -> tuple[float, float]:
    """Standardised Anderson-Darling k-sample statistic (k = 2) and p-value from counts on shared distinct values.

    The midrank form ``A2akN`` of Scholz & Stephens (1987), as ``scipy.stats.anderson_ksamp`` computes it
    with ties, standardised and interpolated like it (p capped to [0.001, 0.25]).  For more than 10^6
    wake-ups the variance's harmonic sums use their asymptotic values (relative error < 10^-5).
    """
    keep = (ca + cb) > 0
    ca, cb = ca[keep].astype(np.float64), cb[keep].astype(np.float64)
    n = np.array([ca.sum(), cb.sum()])
    total = float(n.sum())
    lj = ca + cb
    bj = np.cumsum(lj) - lj / 2.0
    statistic = 0.0
    for counts, size in zip((ca, cb), n, strict=True):
        mij = np.cumsum(counts) - counts / 2.0
        denominator = bj * (total - bj) - total * lj / 4.0
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = np.where(denominator > 0, lj / total * (total * mij - bj * size) ** 2 / denominator, 0.0)
        statistic += inner.sum() / size
    statistic *= (total - 1.0) / total
    k = 2
    harmonic_n = float((1.0 / n).sum())
    if total <= 1e6:
        hs_cs = np.cumsum(1.0 / np.arange(total - 1, 1, -1))
        h = hs_cs[-1] + 1
        g = float((hs_cs / np.arange(2, total)).sum())
    else:
        h = math.log(total - 1) + np.euler_gamma + 1 / (2 * (total - 1))
        g = math.pi ** 2 / 6
    a = (4 * g - 6) * (k - 1) + (10 - 6 * g) * harmonic_n
    b = (2 * g - 4) * k ** 2 + 8 * h * k + (2 * g - 14 * h - 4) * harmonic_n - 8 * h + 4 * g - 6
    c = (6 * h + 2 * g - 2) * k ** 2 + (4 * h - 4 * g + 6) * k + (2 * h - 6) * harmonic_n + 4 * h
    d = (2 * h + 6) * k ** 2 - 4 * h * k
    sigma_sq = (a * total ** 3 + b * total ** 2 + c * total + d) / ((total - 1) * (total - 2) * (total - 3))
    m = k - 1
    standard = (statistic - m) / math.sqrt(sigma_sq)
    b0 = np.array([0.675, 1.281, 1.645, 1.96, 2.326, 2.573, 3.085])
    b1 = np.array([-0.245, 0.25, 0.678, 1.149, 1.822, 2.364, 3.615])
    b2 = np.array([-0.105, -0.305, -0.362, -0.396, -0.452, -0.484, -0.65])
    critical = b0 + b1 / math.sqrt(m) + b2 / m
    sig = np.array([0.25, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001])
    if standard < critical.min():
        p = 0.25
    elif standard > critical.max():
        p = 0.001
    else:
        p = float(np.exp(np.polyval(np.polyfit(critical, np.log(sig), 2), standard)))
    return float(standard), float(min(max(p, 0.001), 0.25))


def _ratios(a: StreamedRun, b: StreamedRun, da: _Draws, db: _Draws, thresholds: np.ndarray, sa: RunSummary,
            sb: RunSummary, alpha: float) -> tuple[ExceedanceRatio, ...]:
    out = []
    for j, (name, _) in enumerate(EXCEEDANCE_LEVELS):
        ka, kb = int(da.above[j]), int(db.above[j])
        ratio = ((kb + 0.5) / (b.count + 0.5)) / ((ka + 0.5) / (a.count + 0.5))
        boot = (db.exceed[:, j] + 0.5 / b.count) / (da.exceed[:, j] + 0.5 / a.count)
        boot = boot[np.isfinite(boot)]
        lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2]) if boot.size else (ratio, ratio)
        out.append(ExceedanceRatio(
            level=f"baseline {name}", threshold_ns=float(thresholds[j]), baseline_rate=ka / a.count,
            candidate_rate=kb / b.count, ratio=float(ratio), ratio_low=float(min(lo, ratio)),
            ratio_high=float(max(hi, ratio)), baseline_per_s=ka / a.count * sa.wakeups_per_s,
            candidate_per_s=kb / b.count * sb.wakeups_per_s))
    return tuple(out)


def _qq(a: StreamedRun, b: StreamedRun) -> tuple[tuple[float, float], ...]:
    n = min(a.count, b.count)
    levels = np.unique(np.r_[np.linspace(0.0, 0.99, 100), 1 - np.logspace(-2, -np.log10(n), 60)])
    return tuple(zip(a.quantiles(levels).tolist(), b.quantiles(levels).tolist(), strict=True))


def _summary(run: StreamedRun, meta: Metadata, label: str, path: str, rate: float,
             runs: Sequence[StreamedRun]) -> RunSummary:
    lo = min(float(r.min_ns) for r in runs)
    hi = max(float(r.max_ns) for r in runs)
    edges = np.geomspace(lo, hi * 1.0001, HIST_BINS + 1) if lo > 0 else np.linspace(lo, hi + 1, HIST_BINS + 1)
    levels = 1 - np.logspace(np.log10(0.5), -np.log10(run.count), PLOT_LEVELS)
    counts = np.histogram(run.middle(), edges, weights=run.counts)[0]
    qs = np.array([q for _, q in QUANTILE_METRICS])
    block = BlockLength(run.block_length, run.block_reason or f"blocks of {run.block_length} wake-ups")
    return RunSummary(
        label=label, path=path, kind=meta.kind, n=run.count, threads=len(meta.threads),
        cpus=tuple(t.cpu for t in meta.threads), intervals_ns=tuple(sorted({t.interval_ns for t in meta.threads})),
        wakeups_per_s=float(rate), max_ns=float(run.max_ns),
        metrics_ns=(*zip([m for m, _ in QUANTILE_METRICS], run.quantiles(qs).tolist(), strict=True),
                    ("max", float(run.max_ns))),
        block_length=block.length, block_reason=block.reason,
        resample_length=round(run.resample_fraction * run.count),
        quantile_levels=tuple(levels.tolist()), quantiles_ns=tuple(run.quantiles(levels).tolist()),
        hist_edges_ns=tuple(edges.tolist()), hist_fraction=tuple((counts / run.count).tolist()),
        late_wakeups=run.late_wakeups, missed_periods=sum(t.overruns for t in meta.threads))
