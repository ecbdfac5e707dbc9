"""From run records to a :class:`~jitterscope.fleet.results.Fleet`: groups, histories, the key table.

* **Groups** merge their runs' HDR histograms and moments (exact count, min, max,
  mean; quantiles within the histogram's relative error) and are ranked worst first
  by p99.99, then max.  Quantile intervals are distribution-free: the values at the
  binomial order-statistic ranks (independent wake-ups assumed, so optimistic for
  autocorrelated latency).
* **Histories**: each machine's runs by capture start time; each run is compared
  with the previous one by the compare machinery on bins
  (:func:`~jitterscope.compare.compare_binned`: multinomial bootstrap of the
  histogram counts, verdict against a noise threshold; quantiles with fewer than
  10 wake-ups above them are not judged).  A run is flagged when a metric regressed.
* **Keys**: for each configuration key with two or more values, the runs of each
  value merged, and a one-way ANOVA (F test) of the log per-run tail metric across values.
  The unit is a (machine, value) pair, its median run, so a machine's many nights
  count once (runs of one machine are not independent); p-values are Holm-corrected
  over the keys tested.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from ..compare import BinnedRun, compare_binned
from ..errors import AnalysisError
from ..summary import HistogramResult, LatencyHistogram, Moments
from .keys import ABSENT, UNKNOWN, GroupKey, runs_by_host
from .results import (
    Fleet,
    GroupStats,
    HistoryPoint,
    KeySeparation,
    KeyValueStats,
    MachineHistory,
    QuantileEstimate,
    RunChange,
)
from .tasks import RunRecord, SkippedDataset

GROUP_LEVELS: tuple[tuple[str, float], ...] = (("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99))
MIN_ABOVE = 10
"""A per-run quantile is a usable tail metric when every run has at least this many wake-ups above it."""
ALPHA = 0.05
COMPARE_BIN_WIDTH = 0.01
"""Relative width of the bins consecutive runs are compared on (a fifth of the 5 % noise threshold)."""


def merge_group(value: str, records: Sequence[RunRecord], confidence: float = 0.95) -> GroupStats:
    """Merge runs' accumulators into one group's statistics.

    Parameters
    ----------
    value
        The group's name.
    records
        Its runs (at least one).
    confidence
        Level of the quantile intervals.

    Returns
    -------
    GroupStats
    """
    if not records:
        raise AnalysisError(f"group {value!r} has no runs")
    histogram, moments = LatencyHistogram(), Moments()
    for record in records:
        histogram.merge(record.histogram)
        moments.merge(record.moments)
    result, total = histogram.result(), moments.result()
    return GroupStats(value=value, runs=len(records), hosts=len({r.host for r in records}), n=total.n,
                      min_ns=total.min_ns, max_ns=total.max_ns, mean_ns=total.mean_ns, std_ns=total.std_ns,
                      quantiles=quantile_intervals(result, confidence))


def quantile_intervals(histogram: HistogramResult, confidence: float = 0.95) -> tuple[QuantileEstimate, ...]:
    """p50 … p99.99 of a :class:`~jitterscope.summary.HistogramResult` with order-statistic intervals.

    For the q-quantile of n independent values, ``[X(l), X(u)]`` (1-based order statistics) with
    ``l = B^-1(alpha/2)`` and ``u = B^-1(1 - alpha/2) + 1``, ``B ~ Binomial(n, q)``, covers it with
    probability >= ``confidence`` (e.g. Hahn & Meeker, *Statistical Intervals*, 1991, ch. 5).  Each
    order statistic is read from the histogram (its bucket's midpoint; exact at min and max).  When
    ``u`` exceeds n the interval is open above and reaches only to the max.
    """
    n = int(histogram.count)
    alpha = 1 - confidence
    denominator = max(n - 1, 1)
    out = []
    for level, q in GROUP_LEVELS:
        low_index = max(int(stats.binom.ppf(alpha / 2, n, q / 100)) - 1, 0)  # 0-based l - 1
        high_index = int(stats.binom.ppf(1 - alpha / 2, n, q / 100))  # 0-based u - 1
        open_above = high_index > n - 1
        high_index = min(high_index, n - 1)
        positions = (q, 100 * low_index / denominator, 100 * high_index / denominator)
        values = histogram.percentiles(positions)
        value, low, high = (values[float(p)] for p in positions)
        out.append(QuantileEstimate(level, float(value), float(min(low, value)), float(max(high, value)),
                                    bool(open_above)))
    return tuple(out)


def compare_consecutive(previous: RunRecord, current: RunRecord, *, noise: float = 0.05, confidence: float = 0.95,
                        n_boot: int = 1000, seed: int = 0) -> RunChange:
    """The compare verdicts of ``current`` against ``previous`` (the same machine's earlier run), on their bins.

    The HDR buckets (0.1 % wide) are first merged into bins :data:`COMPARE_BIN_WIDTH` wide
    (:func:`coarsen`): the bootstrap's cost is O(``n_boot`` x bins), and intervals that span whole
    bins widen by at most that width, a fifth of the default noise threshold.  Memory is
    O(``n_boot`` x bins), independent of the wake-ups behind the histograms.
    """
    runs = [BinnedRun(label=r.path, path=r.path, metadata=r.metadata, histogram=coarsen(r.histogram.result()),
                      wakeups_per_s=r.wakeups_per_s) for r in (previous, current)]
    comparison = compare_binned(runs, noise=noise, confidence=confidence, n_boot=n_boot, seed=seed)
    pair = comparison.pairs[0]
    metrics = tuple((m.metric, m.verdict, m.relative, m.relative_low, m.relative_high) for m in pair.metrics)
    return RunChange(baseline=previous.path, metrics=metrics,
                     regressed=tuple(m.metric for m in pair.metrics if m.verdict == "regressed"))


def coarsen(histogram: HistogramResult, relative_width: float | None = None) -> HistogramResult:
    """Merge adjacent buckets into bins about ``relative_width`` wide (bins below ``1/relative_width`` ns keep
    their width); count, min and max are unchanged.

    Parameters
    ----------
    histogram
        A histogram result (e.g. an HDR histogram's).
    relative_width
        Target relative bin width (default :data:`COMPARE_BIN_WIDTH`).

    Returns
    -------
    HistogramResult
        Continuous bins (``discrete=False``) that exactly tile the original buckets.
    """
    width = COMPARE_BIN_WIDTH if relative_width is None else relative_width
    lower = np.asarray(histogram.bucket_lower_ns, dtype=np.float64)
    upper = np.asarray(histogram.bucket_upper_ns, dtype=np.float64)
    counts = np.asarray(histogram.bucket_counts, dtype=np.int64)
    magnitude = np.maximum(np.abs(lower), 1.0)
    key = np.sign(lower) * np.floor(np.log(magnitude) / math.log1p(width))
    # a new bin starts where the key changes (buckets are sorted, so equal keys are adjacent)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], key.size] - 1
    merged = np.add.reduceat(counts, starts)
    return HistogramResult.from_bins(lower[starts], upper[ends] - lower[starts], merged,
                                     min_ns=histogram.min_ns, max_ns=histogram.max_ns)


def consecutive_pairs(records: Sequence[RunRecord]) -> list[tuple[RunRecord, RunRecord]]:
    """(previous, current) for every machine's consecutive runs, in history order."""
    pairs = []
    for runs in runs_by_host(records).values():
        pairs += list(itertools.pairwise(runs))
    return pairs


def analyze_fleet(
    records: Sequence[RunRecord],
    skipped: Sequence[SkippedDataset],
    *,
    by: GroupKey,
    changes: dict[tuple[str, str], RunChange] | None = None,
    compare: Callable[[RunRecord, RunRecord], RunChange] | None = None,
    noise: float = 0.05,
    confidence: float = 0.95,
    execution: dict[str, object] | None = None,
) -> Fleet:
    """Rank groups, build histories and the key table from the runs' records.

    Parameters
    ----------
    records, skipped
        What the tasks returned (:func:`~jitterscope.fleet.tasks.summarize_run`).
    by
        Grouping key of the ranking.
    changes
        ``{(previous path, current path): RunChange}`` already computed (e.g. as Dask tasks);
        pairs missing from it are compared here with ``compare`` (default
        :func:`compare_consecutive` with ``noise`` and ``confidence``).
    noise, confidence
        As for the compare machinery.
    execution
        How the runs were computed (scheduler, workers, peak memory), kept in the result.

    Returns
    -------
    Fleet

    Raises
    ------
    AnalysisError
        No run could be used (every dataset was skipped, or none was given).
    """
    if not records:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in list(skipped)[:3])
        raise AnalysisError("no usable dataset in the fleet" + (f" ({len(skipped)} skipped: {reasons})"
                                                                 if skipped else ""))
    paths = [r.path for r in records]
    if len(set(paths)) != len(paths):
        raise AnalysisError("a dataset is given twice; give each dataset once")
    grouped: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        grouped[by.value(record.metadata)].append(record)
    groups = sorted((merge_group(value, runs, confidence) for value, runs in grouped.items()),
                    key=lambda g: (-g.quantile("p99.99").value_ns, -g.max_ns, g.value))
    compare = compare or (lambda a, b: compare_consecutive(a, b, noise=noise, confidence=confidence))
    changes = dict(changes or {})
    histories = []
    for host, runs in sorted(runs_by_host(records).items()):
        points = []
        for i, run in enumerate(runs):
            change = None
            if i:
                key = (runs[i - 1].path, run.path)
                change = changes[key] if key in changes else compare(runs[i - 1], run)
            points.append(HistoryPoint(run.path, run.start_ns, run.n, run.max_ns,
                                       tuple((f"p{q:g}", v) for q, v in run.quantiles_ns.items()), change))
        ordered = "start time" if all(r.start_ns is not None for r in runs) else "path"
        histories.append(MachineHistory(host, tuple(points), ordered))
    tail_metric = _tail_metric(records)
    keys = _key_table(records, tail_metric, confidence)
    notes = _notes(records, histories, tail_metric)
    return Fleet(by=by.label, groups=tuple(groups), histories=tuple(histories), keys=keys, skipped=tuple(skipped),
                 runs=len(records), wakeups=sum(r.n for r in records), tail_metric=tail_metric, noise=noise,
                 confidence=confidence, execution=dict(execution or {}), notes=notes)


def _tail_metric(records: Sequence[RunRecord]) -> str:
    smallest = min(r.n for r in records)
    for level, q in reversed(GROUP_LEVELS):
        if round(smallest * (100 - q) / 100, 6) >= MIN_ABOVE:  # rounded: 10000 x 0.1 % is 10, not 9.999…
            return level
    return "p50"


def _key_table(records: Sequence[RunRecord], tail_metric: str, confidence: float) -> tuple[KeySeparation, ...]:
    q = dict(GROUP_LEVELS)[tail_metric]
    labels = sorted({label for r in records for label in r.configuration})
    tested = []
    for label in labels:
        values: dict[str, list[RunRecord]] = defaultdict(list)
        for record in records:
            default = ABSENT if label.startswith("cmdline ") and isinstance(
                (record.metadata.environment or {}).get("cmdline"), str) else UNKNOWN
            values[record.configuration.get(label, default)].append(record)
        if len(values) < 2:
            continue
        stats_by_value = []
        for value, runs in values.items():
            units: dict[str, list[float]] = defaultdict(list)
            for run in runs:
                units[run.host].append(run.quantiles_ns[q])
            stats_by_value.append(KeyValueStats(value, merge_group(value, runs, confidence),
                                                tuple(float(np.median(v)) for _, v in sorted(units.items()))))
        stats_by_value.sort(key=lambda v: -v.stats.quantile(tail_metric).value_ns)
        samples = [np.log(np.maximum(v.unit_tails_ns, 1.0)) for v in stats_by_value]
        units = sum(len(s) for s in samples)
        if units <= len(samples) or np.ptp(np.concatenate(samples)) == 0:
            statistic, p = math.nan, 1.0  # one unit per value (or no spread): nothing to test
        else:
            statistic, p = (float(x) for x in stats.f_oneway(*samples))
            if not math.isfinite(p):  # no spread within every value: F is infinite or undefined
                statistic, p = math.nan, 1.0
        worst, best = (stats_by_value[i].stats.quantile(tail_metric).value_ns for i in (0, -1))
        tested.append((label, tuple(stats_by_value), units, statistic, p, worst / best if best > 0 else math.inf))
    adjusted = _holm([t[4] for t in tested])
    table = [KeySeparation(label, values, units, statistic, p, p_adj, ratio, bool(p_adj < ALPHA))
             for (label, values, units, statistic, p, ratio), p_adj in zip(tested, adjusted, strict=True)]
    table.sort(key=lambda k: (k.p_holm, -k.worst_to_best, k.key))
    return tuple(table)


def _holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (controls the family-wise error rate)."""
    order = np.argsort(p_values, kind="stable")
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        p = p_values[index]
        running = max(running, min(1.0, (m - rank) * (p if math.isfinite(p) else 1.0)))
        adjusted[index] = running
    return adjusted


def _notes(records: Sequence[RunRecord], histories: Sequence[MachineHistory], tail_metric: str) -> tuple[str, ...]:
    notes = [
        "quantiles come from merged HDR histograms (relative error <= 0.05 %); counts, min, max and mean are exact",
        "quantile intervals are distribution-free order-statistic intervals assuming independent wake-ups, so "
        "optimistic (too narrow) for autocorrelated latency; 'open' marks an interval whose upper rank is the max",
        f"the key table tests the per-run {tail_metric} (the highest quantile with >= {MIN_ABOVE} wake-ups above it "
        "in every run) across each key's values: one-way ANOVA (F test) of its logarithm, one unit per (machine, "
        "value) valued by its median run (a machine's nights are not independent), so a fleet of few machines gives "
        "weak p-values; p-values Holm-corrected over the keys; keys confounded with each other separate alike",
        "regressions: each run against the same machine's previous run, compare on bins (multinomial bootstrap, "
        "independent wake-ups assumed); a run is flagged when a judged metric regressed",
    ]
    unordered = [h.host for h in histories if h.ordered_by != "start time"]
    if unordered:
        notes.append(f"{len(unordered)} machine(s) have runs without a start time and are ordered by path: "
                     + ", ".join(unordered[:5]))
    unknown = sorted({r.path for r in records if r.host == UNKNOWN})
    if unknown:
        notes.append(f"{len(unknown)} run(s) record no hostname and form the machine 'unknown'")
    return tuple(notes)
