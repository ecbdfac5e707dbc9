"""compare on binned data: histogram-kind runs, or a histogram run against a sample run (both binned).

A histogram keeps how many wake-ups fell in each bin and nothing about their
order, so :func:`compare_histograms` differs from the sample path of
:mod:`jitterscope.compare` in four ways, each stated in the result's notes:

* quantiles come from the bins (:class:`~jitterscope.histogram.HistogramResult`,
  bin midpoints, as ``jitterscope summary`` gives them for histogram datasets);
* intervals come from a **multinomial bootstrap of the bin counts**, which
  assumes independent wake-ups (there is no order left to resample blocks of)
  and so is optimistic, too narrow, when latency is autocorrelated; each
  resampled quantile is taken at both edges of its bin, as a binned value is
  only known to lie in its bin, so an interval is never narrower than the bins;
* the max and quantiles with fewer than :data:`~jitterscope.compare.MIN_ABOVE`
  wake-ups above them are given but *not judged*: there are no individual
  values to fit a tail to;
* rank and distribution tests (Mann-Whitney, KS, Anderson-Darling) are marked
  not available: with every value tied at a bin they test the binning as much
  as the runs.

A sample run compared with a histogram run is binned on the histogram's bin
width (``floor(latency / width) * width``) so both are treated alike.
Exceedance ratios count the bins whose midpoint lies above the baseline's
quantile.  Overflows (wake-ups past the last bin) go into one extra bin that
reaches to the source's maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..dataset import Dataset, Metadata, column_values, iter_thread_batches
from ..errors import AnalysisError
from ..format import format_change, format_us
from ..summary import HistogramResult
from .envdiff import diff_environments, readings_note
from .results import (
    EXCEEDANCE_LEVELS,
    HIST_BINS,
    MIN_ABOVE,
    PLOT_LEVELS,
    QUANTILE_METRICS,
    Comparison,
    ExceedanceRatio,
    MetricChange,
    PairComparison,
    RunSummary,
    TestResult,
    check_parameters,
    check_run_size,
    pair_notes,
    quantile_change,
)

BOOTSTRAP_NOTE = (
    "histogram data has lost the time order: intervals come from a multinomial bootstrap of the bin counts, "
    "which assumes independent wake-ups and so is optimistic (too narrow) for autocorrelated latency; "
    "they span whole bins, as a binned quantile is only known to lie in its bin"
)
NOT_JUDGED = "not judged"


@dataclass(frozen=True)
class BinnedRun:
    """One run as bins (pooled over threads), with the exact extremes where known."""

    label: str
    path: str
    metadata: Metadata
    histogram: HistogramResult
    wakeups_per_s: float
    note: str | None = None

    @property
    def middle(self) -> np.ndarray:
        """Representative value of each non-empty bin (midpoint, clipped to the exact extremes).

        Computed on each use, like :meth:`ends`: a run of millions of bins keeps only its bins.
        """
        return self.middle_at(slice(None))

    def middle_at(self, index: np.ndarray | slice) -> np.ndarray:
        """:attr:`middle` of the bins at ``index`` only."""
        h = self.histogram
        lower = np.asarray(h.bucket_lower_ns, dtype=np.float64)[index]
        top = np.asarray(h.bucket_upper_ns, dtype=np.float64)[index]
        if h.discrete:  # a discrete bucket [l, u) holds l … u-1
            top = top - 1
        return np.clip((lower + top) / 2, h.min_ns, h.max_ns)

    @cached_property
    def counts(self) -> np.ndarray:
        return np.asarray(self.histogram.bucket_counts, dtype=np.int64)

    def ends(self) -> np.ndarray:
        """Cumulated counts (computed on each call: kept, they would add a copy of the bins per run)."""
        return np.cumsum(self.counts)

    def percentiles(self, levels: Sequence[float] | np.ndarray) -> np.ndarray:
        """Quantiles at ``levels`` (in [0, 1]) as :meth:`HistogramResult.percentiles` gives them.

        From this run's own arrays: the histogram's cached copies of its bins would double the memory
        of a run with millions of bins.
        """
        h = self.histogram
        position = (h.count - 1) * np.asarray(levels, dtype=np.float64)
        below = np.floor(position)
        low, high = self._value_at_rank(below), self._value_at_rank(np.minimum(below + 1, h.count - 1))
        return low + (position - below) * (high - low)

    def _value_at_rank(self, ranks: np.ndarray) -> np.ndarray:
        h = self.histogram
        index = np.minimum(np.searchsorted(self.ends(), ranks, side="right"), self.counts.size - 1)
        values = np.where(ranks <= 0, h.min_ns, self.middle_at(index))
        return np.where(ranks >= h.count - 1, h.max_ns, values)


def read_bins(dataset: Dataset, label: str) -> BinnedRun:
    """The pooled bins of a histogram-kind dataset (overflows in one extra bin up to the recorded max).

    Raises
    ------
    AnalysisError
        The dataset has no bins (a summary-only source) or no counts.
    """
    lower, width, count = (_column(dataset, name, dtype) for name, dtype in (
        ("bin_start_ns", np.float64), ("bin_width_ns", np.float64), ("count", np.int64)))
    if count.sum() == 0:
        raise AnalysisError(f"{dataset.path}: the histogram dataset has no bin counts (summary-only source?); "
                            "compare needs a histogram (cyclictest -h) or per-wake-up samples")
    threads = dataset.metadata.threads
    maxes = [t.extra.get("max_ns") for t in threads if t.extra.get("max_ns") is not None]
    mins = [t.extra.get("min_ns") for t in threads if t.extra.get("min_ns") is not None]
    overflows = sum(int(t.extra.get("overflows") or 0) for t in threads)
    top = float(np.max(lower + width)) if lower.size < 1 << 20 else max(
        float(np.max(lower[i:i + (1 << 20)] + width[i:i + (1 << 20)])) for i in range(0, lower.size, 1 << 20))
    note = None
    if overflows:
        reach = max(maxes) if maxes else None
        if reach is None or reach <= top:
            raise AnalysisError(f"{dataset.path}: {overflows} wake-ups overflowed the last bin and the source gave no "
                                "maximum beyond it; re-run the source with a larger histogram (cyclictest -h)")
        lower, width, count = np.r_[lower, top], np.r_[width, reach - top], np.r_[count, overflows]
        note = f"{label}: {overflows} overflow wake-ups put in one bin {format_us(top)} … {format_us(reach)}"
    histogram = HistogramResult.from_bins(lower, width, count, min_ns=min(mins) if mins else None,
                                    max_ns=max(maxes) if maxes else None)
    rate = float(sum(1e9 / t.interval_ns for t in threads if t.interval_ns > 0))
    return BinnedRun(label, str(dataset.path), dataset.metadata, histogram, rate, note)


def _column(dataset: Dataset, name: str, dtype: type) -> np.ndarray:
    """One column as a numpy array, converted batch by batch (never an Arrow table of it next to its copy)."""
    pieces = [column_values(batch, 0).astype(dtype) for batch in dataset.iter_batches([name], threads=False)]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=dtype)


def bin_samples(dataset: Dataset, label: str, width_ns: float) -> BinnedRun:
    """A sample dataset's latencies (pooled) binned on ``width_ns`` bins starting at multiples of the width.

    Streamed: one pass in batches, holding one count per occupied bin.
    """
    if dataset.num_rows == 0:
        raise AnalysisError(f"{dataset.path}: dataset has no rows; capture for longer")
    bins = np.zeros(0, dtype=np.int64)
    totals = np.zeros(0, dtype=np.int64)
    low, high, threads = None, None, set()
    for info, batch in iter_thread_batches(dataset, ["expected_ns", "actual_ns"], check=False):
        values = column_values(batch, 1) - column_values(batch, 0)  # not to_numpy: it imports pandas
        if values.size == 0:
            continue
        threads.add(info.thread)
        low = int(values.min()) if low is None else min(low, int(values.min()))
        high = int(values.max()) if high is None else max(high, int(values.max()))
        index, count = np.unique(np.floor(values / width_ns).astype(np.int64), return_counts=True)
        bins, where = np.unique(np.concatenate([bins, index]), return_inverse=True)
        totals = np.bincount(where, weights=np.concatenate([totals, count]), minlength=bins.size).astype(np.int64)
    if low is None:
        raise AnalysisError(f"{dataset.path}: dataset has no rows; capture for longer")
    histogram = HistogramResult.from_bins(bins * width_ns, np.full(bins.size, width_ns), totals, min_ns=float(low),
                                    max_ns=float(high))
    note = f"{label}: per-wake-up samples binned on {width_ns / 1000:g} µs bins to compare with a histogram"
    rate = float(sum(1e9 / t.interval_ns for t in dataset.metadata.threads if t.thread in threads and t.interval_ns))
    return BinnedRun(label, str(dataset.path), dataset.metadata, histogram, rate, note)


def compare_histograms(
    datasets: Sequence[Dataset],
    labels: Sequence[str],
    *,
    noise: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    max_resample: int = 200_000,
) -> Comparison:
    """:func:`~jitterscope.compare.compare_runs` when any run is a histogram: every run compared as bins.

    Parameters are those of :func:`~jitterscope.compare.compare_runs`; ``max_resample`` caps the
    multinomial draw size (m-out-of-n, spread scaled by ``sqrt(m/n)``).

    Returns
    -------
    Comparison

    Raises
    ------
    AnalysisError
        A run has no bins or fewer than 100 wake-ups, or bad parameters.
    """
    check_parameters(noise, confidence, n_boot)
    binned = {i: read_bins(d, label) for i, (d, label) in enumerate(zip(datasets, labels, strict=True))
              if d.is_histogram}
    width = min(float(np.min(np.subtract(b.histogram.bucket_upper_ns, b.histogram.bucket_lower_ns)))
                for b in binned.values())
    runs = [binned[i] if i in binned else bin_samples(d, label, width)
            for i, (d, label) in enumerate(zip(datasets, labels, strict=True))]
    return compare_binned(runs, noise=noise, confidence=confidence, n_boot=n_boot, seed=seed,
                          max_resample=max_resample)


def compare_binned(
    runs: Sequence[BinnedRun],
    *,
    noise: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    max_resample: int = 200_000,
) -> Comparison:
    """Every run against the first, each given as bins: the verdict logic of :func:`compare_histograms`.

    For callers that already hold the bins, e.g. merged HDR histograms
    (:class:`~jitterscope.summary.HistogramResult`) of a fleet's runs: memory is
    O(``n_boot`` x bins) whatever the number of wake-ups behind them.

    Parameters
    ----------
    runs
        Two or more runs; the first is the baseline.
    noise, confidence, n_boot, seed, max_resample
        As for :func:`compare_histograms`.

    Returns
    -------
    Comparison

    Raises
    ------
    AnalysisError
        Fewer than two runs, a run with fewer than 100 wake-ups, or bad parameters.
    """
    check_parameters(noise, confidence, n_boot)
    if len(runs) < 2:
        raise AnalysisError("compare needs at least two runs (the first is the baseline)")
    for run in runs:
        check_run_size(run.label, run.histogram.count)
    rng = np.random.default_rng(seed)
    qs = np.array([q for _, q in QUANTILE_METRICS])
    thresholds = runs[0].percentiles([q for _, q in EXCEEDANCE_LEVELS])
    draws = [_multinomial_draws(run, qs, thresholds, n_boot, max_resample, rng) for run in runs]
    summaries = _summaries(runs, draws)
    pairs = tuple(_pair(runs[0], runs[i], draws[0], draws[i], summaries[0], summaries[i], thresholds,
                        noise=noise, confidence=confidence) for i in range(1, len(runs)))
    notes = (BOOTSTRAP_NOTE, *(r.note for r in runs if r.note),
             *(f"{s.label}: {s.n} wake-ups, bootstrapped m-out-of-n with m = {s.resample_length} and the spread "
               "scaled by sqrt(m/n)" for s in summaries if s.resample_length < s.n),
             "threads of each run are pooled; quantiles are per wake-up, from bin midpoints",
             "histograms keep no time order: episodes of exceedances and drift cannot be seen, so these intervals "
             "are too narrow for clustered stalls and know nothing of run-to-run variation (a run is the unit); "
             "for a verdict on configurations capture replicates with samples and compare A1 A2 A3 -- B1 B2 B3",
             *readings_note([r.metadata for r in runs]))
    method = (f"multinomial bootstrap of bin counts (time order lost; assumes independent wake-ups), {n_boot} "
              f"resamples per run, {confidence:.0%} percentile intervals; noise threshold ±{noise:.0%}; max and "
              f"quantiles with < {MIN_ABOVE} wake-ups above them not judged")
    return Comparison(summaries, pairs, diff_environments([r.metadata for r in runs]), notes, noise, confidence,
                      n_boot, method)


@dataclass(frozen=True)
class _Draws:
    m: int
    low: np.ndarray
    """(n_boot, len(qs)) quantiles of the resampled counts at their bins' lower edges, rescaled by sqrt(m/n)
    around the estimate at lower edges."""
    high: np.ndarray
    """The same at the bins' upper edges: a binned quantile is only known to lie in its bin."""
    exceed: np.ndarray
    """(n_boot, len(thresholds)) fraction above each threshold, rescaled likewise."""
    observed: np.ndarray
    """Fraction of the run's wake-ups above each threshold (bins whose midpoint lies above it)."""


DRAW_CELLS = 1 << 22
"""Resampled counts held at once (replicates x bins): 32 MiB of int64 whatever the number of bins."""


def _multinomial_draws(run: BinnedRun, qs: np.ndarray, thresholds: np.ndarray, n_boot: int, max_resample: int,
                       rng: np.random.Generator) -> _Draws:
    n = run.histogram.count
    m = min(n, max_resample)
    h = run.histogram
    # the edges as held (no copies of millions of bins); the quantiles taken at them are clipped to the extremes
    lower = np.asarray(h.bucket_lower_ns, dtype=float)
    upper = np.asarray(h.bucket_upper_ns, dtype=float)

    def at_edges(cum: np.ndarray, edge: np.ndarray, size: int) -> np.ndarray:
        return np.clip(_bin_quantiles(cum, edge, size, qs), h.min_ns, h.max_ns)

    scale = np.sqrt(m / n)
    estimates = [at_edges(run.ends()[None, :], edge, n)[0] for edge in (lower, upper)]
    # bins are sorted, so the bins whose middle lies above a threshold are a suffix of them
    above = np.searchsorted(run.middle, thresholds, side="right")
    observed = np.array([run.counts[start:].sum() / n for start in above])
    p = run.counts / n
    # the replicates in chunks: 1000 replicates of a 3-million-bin histogram at once would be 24 GB
    per_chunk = max(1, DRAW_CELLS // max(p.size, 1))
    bounds: list[list[np.ndarray]] = [[], []]
    exceed: list[np.ndarray] = []
    for start in range(0, n_boot, per_chunk):
        counts = rng.multinomial(m, p, size=min(per_chunk, n_boot - start))
        cum = np.cumsum(counts, axis=1, out=counts)  # in place: the counts themselves are not needed again
        for side, (edge, estimate) in enumerate(zip((lower, upper), estimates, strict=True)):
            bounds[side].append(estimate + scale * (at_edges(cum, edge, m) - estimate))
        chunk = np.empty((counts.shape[0], len(above)))
        for j, start in enumerate(above):  # wake-ups in the bins from ``start`` on
            chunk[:, j] = (m - (cum[:, start - 1] if start > 0 else 0)) / m
        exceed.append(observed + scale * (chunk - observed))
        del counts, cum
    return _Draws(m, np.concatenate(bounds[0]), np.concatenate(bounds[1]), np.concatenate(exceed), observed)


def _bin_quantiles(cum: np.ndarray, middle: np.ndarray, m: int, qs: np.ndarray) -> np.ndarray:
    """Quantiles of each row of cumulated counts, order statistics valued ``middle[bin]`` (linear in between)."""
    out = np.empty((cum.shape[0], qs.size))
    for j, q in enumerate(qs):
        position = (m - 1) * q
        below = np.floor(position)
        low = middle[np.minimum(np.sum(cum <= below, axis=1), middle.size - 1)]
        high = middle[np.minimum(np.sum(cum <= min(below + 1, m - 1), axis=1), middle.size - 1)]
        out[:, j] = low + (position - below) * (high - low)
    return out


def _pair(a: BinnedRun, b: BinnedRun, da: _Draws, db: _Draws, sa: RunSummary, sb: RunSummary,
          thresholds: np.ndarray, *, noise: float, confidence: float) -> PairComparison:
    alpha = 1 - confidence
    est_a, est_b = dict(sa.metrics_ns), dict(sb.metrics_ns)
    metrics = []
    for j, (name, q) in enumerate(QUANTILE_METRICS):
        x, y = est_a[name], est_b[name]
        if min(sa.n, sb.n) * (1 - q) < MIN_ABOVE:
            metrics.append(_not_judged(name, x, y, f"fewer than {MIN_ABOVE} wake-ups above {name}"))
            continue
        # widest reading of the bins: candidate at its bin's lower edge against baseline at its upper, and back
        lo = np.quantile(db.low[:, j] - da.high[:, j], alpha / 2)
        hi = np.quantile(db.high[:, j] - da.low[:, j], 1 - alpha / 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_lo, rel_hi = db.low[:, j] / da.high[:, j] - 1, db.high[:, j] / da.low[:, j] - 1
        finite = np.isfinite(rel_lo) & np.isfinite(rel_hi) & (da.low[:, j] > 0)
        r_lo, r_hi = ((np.quantile(rel_lo[finite], alpha / 2), np.quantile(rel_hi[finite], 1 - alpha / 2))
                      if finite.any() else (np.nan, np.nan))
        relative = y / x - 1 if x > 0 else np.nan
        metrics.append(quantile_change(name, x, y, lo, hi, relative, r_lo, r_hi, noise, confidence))
    metrics.append(_not_judged("max", est_a["max"], est_b["max"], "a maximum has no bootstrap"))
    unavailable = TestResult(
        "rank and distribution tests", float("nan"), float("nan"),
        "not available on binned data: every value is tied at its bin, so Mann-Whitney, Kolmogorov-Smirnov and "
        "Anderson-Darling would test the binning as much as the runs")
    notes = (*pair_notes(sa, sb), "compared as histograms: " + BOOTSTRAP_NOTE)
    return PairComparison(baseline=a.label, candidate=b.label, metrics=tuple(metrics), tests=(unavailable,),
                          exceedance_ratios=_ratios(da, db, sa, sb, thresholds, alpha), notes=notes,
                          qq_ns=_qq(a, b))


def _not_judged(name: str, a: float, b: float, why: str) -> MetricChange:
    relative = b / a - 1 if a > 0 else float("nan")
    sentence = (f"{name}: {NOT_JUDGED} — {format_us(a)} → {format_us(b)} ({format_change(relative)}); "
                f"{why}, and binned data has no individual values to fit a tail to")
    return MetricChange(name, float(a), float(b), float(b - a), None, None, float(relative), None, None, NOT_JUDGED,
                        sentence)


def _ratios(da: _Draws, db: _Draws, sa: RunSummary, sb: RunSummary, thresholds: np.ndarray,
            alpha: float) -> tuple[ExceedanceRatio, ...]:
    out = []
    for j, (name, _) in enumerate(EXCEEDANCE_LEVELS):
        ra, rb = da.observed[j], db.observed[j]
        ka, kb = ra * sa.n, rb * sb.n
        ratio = ((kb + 0.5) / (sb.n + 0.5)) / ((ka + 0.5) / (sa.n + 0.5))
        boot = (db.exceed[:, j] + 0.5 / sb.n) / (da.exceed[:, j] + 0.5 / sa.n)
        lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        out.append(ExceedanceRatio(
            level=f"baseline {name}", threshold_ns=float(thresholds[j]), baseline_rate=float(ra),
            candidate_rate=float(rb), ratio=float(ratio), ratio_low=float(min(lo, ratio)),
            ratio_high=float(max(hi, ratio)), baseline_per_s=float(ra * sa.wakeups_per_s),
            candidate_per_s=float(rb * sb.wakeups_per_s)))
    return tuple(out)


def _qq(a: BinnedRun, b: BinnedRun) -> tuple[tuple[float, float], ...]:
    n = min(a.histogram.count, b.histogram.count)
    levels = np.unique(np.r_[np.linspace(0.0, 0.99, 100), 1 - np.logspace(-2, -np.log10(n), 60)])
    return tuple(zip(a.percentiles(levels).tolist(), b.percentiles(levels).tolist(), strict=True))


def _summaries(runs: Sequence[BinnedRun], draws: Sequence[_Draws]) -> tuple[RunSummary, ...]:
    lo = min(float(r.histogram.min_ns) for r in runs)
    hi = max(float(r.histogram.max_ns) for r in runs)
    edges = np.geomspace(lo, hi * 1.0001, HIST_BINS + 1) if lo > 0 else np.linspace(lo, hi + 1, HIST_BINS + 1)
    out = []
    for run, d in zip(runs, draws, strict=True):
        h, meta = run.histogram, run.metadata
        levels = 1 - np.logspace(np.log10(0.5), -np.log10(h.count), PLOT_LEVELS)
        metrics = run.percentiles([q for _, q in QUANTILE_METRICS]).tolist()
        # bins sorted by middle: the wake-ups between two edges from the cumulated counts (np.histogram would
        # sort copies of millions of bins)
        interval = min((t.interval_ns for t in meta.threads), default=0)
        middle = run.middle
        cum = np.r_[0, run.ends()]
        counts = np.diff(cum[np.searchsorted(middle, edges, side="left")])
        late = int(cum[-1] - cum[np.searchsorted(middle, interval, side="right")]) if interval > 0 else 0
        del middle, cum
        out.append(RunSummary(
            label=run.label, path=run.path, kind=meta.kind, n=h.count, threads=len(meta.threads),
            cpus=tuple(t.cpu for t in meta.threads),
            intervals_ns=tuple(sorted({t.interval_ns for t in meta.threads})), wakeups_per_s=run.wakeups_per_s,
            max_ns=float(h.max_ns),
            metrics_ns=(*zip([m for m, _ in QUANTILE_METRICS], metrics, strict=True),
                        ("max", float(h.max_ns))),
            block_length=1, block_reason="bins: time order lost, multinomial bootstrap (independence assumed)",
            resample_length=d.m, quantile_levels=tuple(levels.tolist()),
            quantiles_ns=tuple(run.percentiles(levels).tolist()), hist_edges_ns=tuple(edges.tolist()),
            hist_fraction=tuple((counts / h.count).tolist()),
            # bins whose middle is beyond one interval (a bin straddling it is counted by its middle)
            late_wakeups=late,
            missed_periods=sum(t.overruns for t in meta.threads)))
    return tuple(out)
