"""A/B comparison of runs: quantile differences with block-bootstrap intervals, verdicts, tests, environment diff.

:func:`compare_runs` compares every run against the first (the baseline).  Per pair:

* **p50, p99, p99.9, p99.99**: difference and relative change with a
  ``confidence`` interval from the circular block bootstrap of each run
  (:mod:`.bootstrap`; block length by Politis-White, stated per run);
  runs longer than ``max_resample`` wake-ups are bootstrapped m-out-of-n.
* **max** (and a quantile with fewer than :data:`MIN_ABOVE` wake-ups above it,
  such as p99.99 of a 10^4-wake-up run): a sample maximum has no consistent
  bootstrap, so no interval is claimed.  Instead the level is held against the
  other run's fitted tail (GPD on its :data:`TAIL_FIT_TOP` largest values): is
  it plausible that as many of this run's wake-ups reached it?
* **Verdict** per metric, in the spirit of criterion: *regressed* when the whole
  interval of the relative change lies above ``+noise``, *improved* when it lies
  below ``-noise``, *within noise* when it lies inside ``±noise``, otherwise
  *inconclusive* (it holds both no change and a change beyond the threshold);
  for the max, *regressed* when it is more than ``noise`` higher and the
  baseline's tail puts the chance of reaching it at under ``ALPHA_MAX`` (Poisson
  count, from the upper 98 % profile bound of the exceedance probability),
  *inconclusive* when it is more than ``noise`` higher but chance could explain
  it, *within noise* when it moved by less than ``noise``.
* A rank test (Mann-Whitney; effect size P(candidate > baseline)) and two
  distribution tests (Kolmogorov-Smirnov, Anderson-Darling k-sample), whose
  p-values assume independent wake-ups and are given as context, not verdicts.
* Exceedance-rate ratios at the baseline's p99, p99.9 and p99.99, with
  bootstrap intervals (Haldane's +1/2 so a zero count gives a finite ratio).

Threads of one run are pooled (concatenated in thread order).  Runs with
different intervals or CPU counts are compared as they are, with a note.

Two implementations judge alike: :func:`compare_runs` streams each dataset once in
batches (:mod:`.streamed`: Poisson block bootstrap into replicate histograms, tests
from the merged histograms; memory bounded whatever the size, what is exact and what
is bounded in the result's ``methods``), and :func:`compare_samples` holds the series
in memory (exact order statistics, circular block bootstrap, exact tests on a
subsample): the reference the streamed path is tested against.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ..dataset import Dataset, Metadata
from ..derive import require_wakeups
from ..errors import AnalysisError
from ..format import format_p
from .binned import compare_histograms
from .bootstrap import BootstrapDraws, bootstrap_series
from .envdiff import diff_environments, readings_note
from .episodes import Drift, Exceedances, exceedances_of, segment_drift, structured_block_length
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
    largest,
    pair_notes,
    quantile_change,
    run_notes,
    tail_change,
)
from .streamed import compare_datasets_streamed

MAX_TEST_SAMPLES = 100_000
"""Rank and distribution tests run on a random subsample of at most this many wake-ups per run."""
EXACT_METHODS: tuple[tuple[str, str], ...] = (
    ("quantiles", "exact order statistics (numpy's linear rule) of the values in memory"),
    ("intervals", "circular block bootstrap of the whole series (blocks: the longest of Politis-White, twice the "
                  "longest episode above p99, one of 20 segments when they differ; m-out-of-n, spread scaled by "
                  "sqrt(m/n), for long runs)"),
    ("tail verdicts", "a tail change is shown only when the two runs' independent episodes above the lower value "
                      "differ beyond chance (binomial test at 1 - confidence); else inconclusive"),
    ("exceedances", "exact counts above the baseline's quantile"),
    ("max, tail levels", f"exact values; judged against a GPD fit to the top {TAIL_FIT_TOP} values"),
    ("Mann-Whitney, Kolmogorov-Smirnov", f"exact, on a random subsample of at most {MAX_TEST_SAMPLES:,} wake-ups "
                                         "per run"),
    ("Anderson-Darling k-sample", "exact, on the first 20,000 wake-ups of that subsample per run"),
)
"""What each part of an in-memory comparison (:func:`compare_samples`) is."""


def compare_runs(
    datasets: Sequence[Dataset],
    *,
    labels: Sequence[str] | None = None,
    noise: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    max_resample: int = 200_000,
) -> Comparison:
    """Compare runs against the first one.

    Parameters
    ----------
    datasets : sequence of Dataset
        Two or more opened sample datasets; the first is the baseline.
    labels : sequence of str, optional
        Names of the runs in the output (default: the file names).
    noise : float
        Noise threshold, relative (0.05 = 5 %): changes whose interval reaches inside
        ``±noise`` are "within noise".
    confidence : float
        Level of the bootstrap intervals.
    n_boot : int
        Bootstrap resamples per run.
    seed : int
        Seed of the resampling; the same inputs and seed give the same result.
    max_resample : int
        Longer runs are bootstrapped m-out-of-n with ``m = max_resample``.

    Returns
    -------
    Comparison

    Raises
    ------
    AnalysisError
        Fewer than two runs, an empty run or one without bins (summary-only), or bad parameters.

    Notes
    -----
    Sample datasets are streamed (:func:`~.streamed.compare_datasets_streamed`): each read once in
    batches, two at a time, into replicate histograms; the result's ``methods`` says which parts are
    exact and which within a stated bound.  When any run is histogram-kind, every run is compared as bins
    (:func:`jitterscope.compare_binned.compare_histograms`: multinomial bootstrap of the
    counts, which assumes independent wake-ups; max not judged; tests not available).
    """
    if len(datasets) < 2:
        raise AnalysisError("compare needs at least two datasets (the first is the baseline)")
    labels = list(labels) if labels is not None else _default_labels(datasets)
    if len(labels) != len(datasets):
        raise AnalysisError(f"{len(labels)} labels for {len(datasets)} datasets; give one label per dataset")
    for dataset in datasets:
        require_wakeups(dataset, "a latency comparison")
    if any(d.is_histogram for d in datasets):

        return compare_histograms(datasets, labels, noise=noise, confidence=confidence, n_boot=n_boot, seed=seed,
                                  max_resample=max_resample)
    return compare_datasets_streamed(datasets, labels, noise=noise, confidence=confidence, n_boot=n_boot, seed=seed,
                                     max_resample=max_resample)


def compare_samples(
    runs_latency: Sequence[np.ndarray],
    metadatas: Sequence[Metadata],
    labels: Sequence[str],
    *,
    paths: Sequence[str] | None = None,
    wakeups_per_s: Sequence[float] | None = None,
    noise: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    max_resample: int = 200_000,
    times_ns: Sequence[np.ndarray] | None = None,
) -> Comparison:
    """:func:`compare_runs` on latency arrays (ns, wake-up order) held in memory: exact quantiles and tests.

    The in-memory reference of the streamed path (parameters as for :func:`compare_runs`).  ``times_ns``:
    each wake-up's time, for counting episodes of exceedances across threads (default: its index times the
    shortest interval, as if the threads were one series).
    """
    check_parameters(noise, confidence, n_boot)
    values = [np.asarray(v, dtype=np.int64) for v in runs_latency]
    for label, v in zip(labels, values, strict=True):
        check_run_size(label, v.size)
    paths = list(paths) if paths is not None else list(labels)
    rates = list(wakeups_per_s) if wakeups_per_s is not None else [
        sum(1e9 / t.interval_ns for t in m.threads) for m in metadatas]
    qs = np.array([q for _, q in QUANTILE_METRICS])
    thresholds = np.quantile(values[0], [q for _, q in EXCEEDANCE_LEVELS])
    drifts = [segment_drift([v]) for v in values]
    draws = [bootstrap_series(v, qs, thresholds, n_boot=n_boot, seed=seed + 7919 * i, max_resample=max_resample,
                              block=structured_block_length([v], drift))
             for i, (v, drift) in enumerate(zip(values, drifts, strict=True))]
    intervals = [min((t.interval_ns for t in m.threads), default=1) or 1 for m in metadatas]
    times = list(times_ns) if times_ns is not None else [np.arange(v.size) * iv for v, iv in zip(values, intervals,
                                                                                                   strict=True)]
    exceed = [exceedances_of(t, v, iv) for t, v, iv in zip(times, values, intervals, strict=True)]
    summaries = _run_summaries(values, metadatas, labels, paths, rates, draws)
    pairs = tuple(
        _compare_pair(values[0], values[i], draws[0], draws[i], summaries[0], summaries[i], thresholds,
                      noise=noise, confidence=confidence, seed=seed, episodes=(exceed[0], exceed[i]),
                      drifts=(drifts[0], drifts[i]))
        for i in range(1, len(values)))
    method = (f"circular block bootstrap, {n_boot} resamples per run, {confidence:.0%} percentile intervals; "
              f"noise threshold ±{noise:.0%}; max (and quantiles with < {MIN_ABOVE} wake-ups above them) judged "
              "against the other run's fitted tail")
    return Comparison(summaries, pairs, diff_environments(metadatas),
                      (*run_notes(summaries), *readings_note(metadatas)), noise, confidence,
                      n_boot, method, methods=EXACT_METHODS)


def _compare_pair(
    base: np.ndarray, cand: np.ndarray, draws_a: BootstrapDraws, draws_b: BootstrapDraws,
    run_a: RunSummary, run_b: RunSummary, thresholds: np.ndarray, *, noise: float, confidence: float, seed: int,
    episodes: tuple[Exceedances, Exceedances], drifts: tuple[Drift | None, Drift | None] = (None, None),
) -> PairComparison:
    alpha = 1 - confidence
    top_a, top_b = largest(base, 2 * TAIL_FIT_TOP), largest(cand, 2 * TAIL_FIT_TOP)
    est_a = np.quantile(base, [q for _, q in QUANTILE_METRICS])
    est_b = np.quantile(cand, [q for _, q in QUANTILE_METRICS])
    metrics = []
    for j, (name, q) in enumerate(QUANTILE_METRICS):
        if min(base.size, cand.size) * (1 - q) < MIN_ABOVE:
            metrics.append(tail_change(name, top_a, base.size, top_b, cand.size, est_a[j], est_b[j], noise,
                                       f"fewer than {MIN_ABOVE} wake-ups above {name}: no bootstrap interval"))
            continue
        diff = draws_b.quantiles[:, j] - draws_a.quantiles[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = draws_b.quantiles[:, j] / draws_a.quantiles[:, j] - 1
        rel = rel[np.isfinite(rel)]
        lo, hi = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
        r_lo, r_hi = np.quantile(rel, [alpha / 2, 1 - alpha / 2]) if rel.size else (np.nan, np.nan)
        relative = est_b[j] / est_a[j] - 1 if est_a[j] > 0 else np.nan
        metrics.append(quantile_change(name, est_a[j], est_b[j], lo, hi, relative, r_lo, r_hi, noise, confidence))
    metrics.append(tail_change("max", top_a, base.size, top_b, cand.size, float(base.max()), float(cand.max()), noise,
                               "no interval: a sample maximum has no consistent bootstrap"))
    metrics = drift_rule(metrics, drifts[0], drifts[1], noise, confidence)
    metrics = episode_rule(metrics, episodes[0], base.size, episodes[1], cand.size, alpha)
    return PairComparison(
        baseline=run_a.label, candidate=run_b.label, metrics=tuple(metrics),
        tests=_tests(base, cand, seed), exceedance_ratios=_ratios(base, cand, draws_a, draws_b, thresholds,
                                                                  run_a, run_b, alpha),
        notes=pair_notes(run_a, run_b), qq_ns=_qq(base, cand))


def _tests(base: np.ndarray, cand: np.ndarray, seed: int) -> tuple[TestResult, ...]:
    # here, not at the top: compare_runs (the command) streams and needs none of scipy.stats (~1 s to import)
    from scipy import stats

    rng = np.random.default_rng(seed)
    a = _subsample(base, rng)
    b = _subsample(cand, rng)
    mw = stats.mannwhitneyu(b, a, alternative="two-sided")
    ps = float(mw.statistic) / (a.size * b.size)
    lean = ("candidate latencies tend to be larger" if ps > 0.52 else
            "candidate latencies tend to be smaller" if ps < 0.48 else "neither run tends to be larger")
    ks = stats.ks_2samp(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad = stats.anderson_ksamp([a[:20_000], b[:20_000]])
    caveat = "p-values assume independent wake-ups"
    return (
        TestResult("Mann-Whitney", ps, float(mw.pvalue),
                   f"P(candidate > baseline) = {ps:.3f}: {lean} (Mann-Whitney {format_p(mw.pvalue)}; {caveat})"),
        TestResult("Kolmogorov-Smirnov", float(ks.statistic), float(ks.pvalue),
                   f"largest gap between the two CDFs D = {ks.statistic:.3f} (KS {format_p(ks.pvalue)}; {caveat})"),
        TestResult("Anderson-Darling k-sample", float(ad.statistic), float(ad.pvalue),
                   f"Anderson-Darling k-sample A² = {ad.statistic:.2f} ({format_p(ad.pvalue, floor=0.001, cap=0.25)}; "
                   f"on ≤ 20000 wake-ups per run)"),
    )


def _ratios(base: np.ndarray, cand: np.ndarray, draws_a: BootstrapDraws, draws_b: BootstrapDraws,
            thresholds: np.ndarray, run_a: RunSummary, run_b: RunSummary, alpha: float) -> tuple[ExceedanceRatio, ...]:
    out = []
    for j, (name, _) in enumerate(EXCEEDANCE_LEVELS):
        ka, kb = np.count_nonzero(base > thresholds[j]), np.count_nonzero(cand > thresholds[j])
        ratio = ((kb + 0.5) / (cand.size + 0.5)) / ((ka + 0.5) / (base.size + 0.5))
        boot = (draws_b.exceed[:, j] + 0.5 / cand.size) / (draws_a.exceed[:, j] + 0.5 / base.size)
        lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        out.append(ExceedanceRatio(
            level=f"baseline {name}", threshold_ns=float(thresholds[j]), baseline_rate=ka / base.size,
            candidate_rate=kb / cand.size, ratio=float(ratio), ratio_low=float(min(lo, ratio)),
            ratio_high=float(max(hi, ratio)), baseline_per_s=ka / base.size * run_a.wakeups_per_s,
            candidate_per_s=kb / cand.size * run_b.wakeups_per_s))
    return tuple(out)


def _qq(base: np.ndarray, cand: np.ndarray) -> tuple[tuple[float, float], ...]:
    n = min(base.size, cand.size)
    levels = np.unique(np.r_[np.linspace(0.0, 0.99, 100), 1 - np.logspace(-2, -np.log10(n), 60)])
    return tuple(zip(np.quantile(base, levels).tolist(), np.quantile(cand, levels).tolist(), strict=True))


def _run_summaries(values: list[np.ndarray], metadatas: Sequence[Metadata], labels: Sequence[str],
                   paths: Sequence[str], rates: Sequence[float], draws: list[BootstrapDraws]) -> tuple[RunSummary, ...]:
    lo = min(float(v.min()) for v in values)
    hi = max(float(v.max()) for v in values)
    if lo > 0:
        edges = np.geomspace(lo, hi * 1.0001, HIST_BINS + 1)
    else:
        edges = np.linspace(lo, hi + 1, HIST_BINS + 1)
    out = []
    qs = [q for _, q in QUANTILE_METRICS]
    for label, path, meta, v, rate, d in zip(labels, paths, metadatas, values, rates, draws, strict=True):
        levels = 1 - np.logspace(np.log10(0.5), -np.log10(v.size), PLOT_LEVELS)
        counts = np.histogram(v, edges)[0]
        interval = min((t.interval_ns for t in meta.threads), default=0)
        out.append(RunSummary(
            label=label, path=path, kind=meta.kind, n=int(v.size), threads=len(meta.threads),
            cpus=tuple(t.cpu for t in meta.threads), intervals_ns=tuple(sorted({t.interval_ns for t in meta.threads})),
            wakeups_per_s=float(rate), max_ns=float(v.max()),
            metrics_ns=(*zip([m for m, _ in QUANTILE_METRICS], np.quantile(v, qs).tolist(), strict=True),
                        ("max", float(v.max()))),
            block_length=d.block.length,
            block_reason=d.block.reason, resample_length=d.resample_length,
            quantile_levels=tuple(levels.tolist()), quantiles_ns=tuple(np.quantile(v, levels).tolist()),
            hist_edges_ns=tuple(edges.tolist()), hist_fraction=tuple((counts / v.size).tolist()),
            late_wakeups=int(np.count_nonzero(v > interval)) if interval > 0 else 0,
            missed_periods=sum(t.overruns for t in meta.threads)))
    return tuple(out)


def _default_labels(datasets: Sequence[Dataset]) -> list[str]:
    names = [d.path.name for d in datasets]
    return [f"{i}:{name}" if names.count(name) > 1 else name for i, name in enumerate(names)]


def _subsample(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return x if x.size <= MAX_TEST_SAMPLES else rng.choice(x, MAX_TEST_SAMPLES, replace=False)


