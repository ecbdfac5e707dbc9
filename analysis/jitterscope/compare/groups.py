"""Two groups of runs compared by their between-run variation: a run is the unit of replication.

``jitterscope compare A1 A2 A3 -- B1 B2 B3``: each run is read once (:func:`~.streamed.stream_run`) for its
p50, p99, p99.9, p99.99 and max; per metric, the two groups' log values are compared by Welch's t
(unequal variances, Welch-Satterthwaite degrees of freedom).  The interval of the ratio of geometric means
is ``exp(d ± t se)`` with ``d`` the difference of the mean logs; the verdict rule is that of a pair (the
whole interval beyond ``±noise``: regressed or improved; inside: within noise; else inconclusive).

Whatever moves a run's tail from one run to the next (stalls it caught, the host's load, the boot) is in
the spread between runs, so nothing about the dependence of wake-ups within a run has to be modelled.
Each metric's interval is at ``1 - (1 - confidence) / 5`` (Bonferroni over the five metrics): with identical
settings the chance that any metric's interval lies wholly beyond ``±noise`` is at most ``1 - confidence``, so a
``--fail-if regressed`` gate fires on noise at most that often; ``benchmarks/compare_null.py`` checks it on real
captures.

What differs: only metadata keys that are the same in every run of a side and differ between the sides
(a key that differs within a side, like a clock reading or a count, cannot explain the difference).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..dataset import Dataset
from ..derive import require_wakeups
from ..errors import AnalysisError
from ..format import format_us, jsonable
from .envdiff import EnvironmentDifference, diff_groups
from .results import QUANTILE_METRICS, MetricChange, RunSummary, check_run_size, quantile_change
from .streamed import _summary, stream_run

MIN_RUNS = 2
"""Runs a side needs for a between-run variance."""
GROUP_METRICS = (*(name for name, _ in QUANTILE_METRICS), "max")


@dataclass(frozen=True)
class GroupComparison:
    """Side B's runs against side A's: one change per metric from the between-run variation."""

    baseline_label: str
    candidate_label: str
    baseline: tuple[RunSummary, ...]
    candidate: tuple[RunSummary, ...]
    metrics: tuple[MetricChange, ...]
    environment: tuple[EnvironmentDifference, ...]
    """Keys constant within each side that differ between the sides; values (side A, side B)."""
    varying: tuple[str, ...]
    """Keys that differ between runs of one side (left out of ``environment``)."""
    noise: float
    confidence: float
    method: str
    notes: tuple[str, ...] = ()

    @property
    def runs(self) -> tuple[RunSummary, ...]:
        return (*self.baseline, *self.candidate)

    def verdict(self, metric: str) -> str:
        return next(m.verdict for m in self.metrics if m.metric == metric)

    def to_json(self) -> dict[str, Any]:
        from .headline import group_headline  # text built from this result

        out = jsonable(dataclasses.asdict(self))
        out["runs_per_side"] = [len(self.baseline), len(self.candidate)]
        out["headline"] = group_headline(self)
        return out


def compare_groups(
    baseline: Sequence[Dataset], candidate: Sequence[Dataset], *, labels: Sequence[str] | None = None,
    sides: tuple[str, str] = ("A", "B"), noise: float = 0.05, confidence: float = 0.95, seed: int = 0,
) -> GroupComparison:
    """Compare two groups of sample runs by their between-run variation (see the module).

    Parameters
    ----------
    baseline, candidate : sequence of Dataset
        At least :data:`MIN_RUNS` runs each (opened sample datasets).
    labels : sequence of str, optional
        Names of the runs, baseline's first (default: the file names).
    sides : (str, str)
        Names of the two groups.
    noise, confidence, seed
        As for :func:`~.samples.compare_runs` (the seed only fixes the streams' internal draws).

    Raises
    ------
    AnalysisError
        A side with fewer than two runs, a histogram run, an empty run, or bad parameters.
    """
    if len(baseline) < MIN_RUNS or len(candidate) < MIN_RUNS:
        raise AnalysisError(f"a group comparison needs at least {MIN_RUNS} runs per side ({len(baseline)} and "
                            f"{len(candidate)} given); with one run per side use 'compare A B'")
    if not 0 < confidence < 1 or noise < 0:
        raise AnalysisError("need 0 < confidence < 1 and noise >= 0")
    datasets = [*baseline, *candidate]
    for dataset in datasets:
        require_wakeups(dataset, "a group comparison of latency")
    if any(d.is_histogram for d in datasets):
        raise AnalysisError("a group comparison needs sample datasets (histogram runs have no per-run tail to "
                            "compare); compare histogram runs one against another")
    labels = list(labels) if labels is not None else [f"{i}:{d.path.name}" for i, d in enumerate(datasets)]
    if len(labels) != len(datasets):
        raise AnalysisError(f"{len(labels)} labels for {len(datasets)} datasets; give one label per dataset")
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="jitterscope-compare") as pool:
        # no bootstrap (n_boot 1, cheap): the runs themselves are the replicates
        futures = [pool.submit(stream_run, d, index=i, n_boot=1, seed=seed, max_resample=d.num_rows or 1)
                   for i, d in enumerate(datasets)]
        runs = [f.result() for f in futures]
    for label, run in zip(labels, runs, strict=True):
        check_run_size(label, run.count)
    summaries = []
    for d, run, label in zip(datasets, runs, labels, strict=True):
        rate = float(sum(1e9 / t.interval_ns for t in d.metadata.threads if t.thread in run.threads and t.interval_ns))
        summaries.append(_summary(run, d.metadata, label, str(d.path), rate, runs))
    k = len(baseline)
    values = np.array([[dict((*s.metrics_ns,))[m] for m in GROUP_METRICS] for s in summaries])
    metrics = group_changes(values[:k], values[k:], noise, confidence)
    environment, varying = diff_groups([d.metadata for d in baseline], [d.metadata for d in candidate])
    method = (f"between-run variation: per metric, Welch's t on the runs' log values ({k} vs {len(candidate)} "
              f"runs), {metric_confidence(confidence):.0%} interval of the ratio of geometric means (Bonferroni over "
              f"the {len(GROUP_METRICS)} metrics); noise threshold ±{noise:.0%}; when nothing changed, a claim on "
              f"any metric (what a --fail-if gate reads) at most {1 - confidence:.0%}")
    notes = ["a run is the unit of replication: wake-ups within a run are not independent, so the spread "
             "between runs, not within them, decides",
             f"{len(varying)} metadata keys differ between runs of one side (readings, counts, pids, times) and "
             "are left out of what differs" if varying else "no metadata key differs within a side"]
    return GroupComparison(sides[0], sides[1], tuple(summaries[:k]), tuple(summaries[k:]), metrics, environment,
                           varying, noise, confidence, method, tuple(notes))


def metric_confidence(confidence: float) -> float:
    """The level of each metric's interval: Bonferroni over :data:`GROUP_METRICS`, so that the comparison as a whole
    claims a change that is not there with probability at most ``1 - confidence``."""
    return 1 - (1 - confidence) / len(GROUP_METRICS)


def group_changes(a: np.ndarray, b: np.ndarray, noise: float, confidence: float) -> tuple[MetricChange, ...]:
    """Every metric's change from per-run values ``a`` (runs x :data:`GROUP_METRICS`) to ``b``, each interval at
    :func:`metric_confidence` so that a false claim on any metric has probability at most ``1 - confidence``.

    Without the correction five metrics at 95 % each claim a change on real identical-setting runs in about one
    comparison of ten (``benchmarks/compare_null.py``): a ``--fail-if regressed`` gate would fire on noise.
    """
    level = metric_confidence(confidence)
    return tuple(group_change(name, a[:, j], b[:, j], noise, level) for j, name in enumerate(GROUP_METRICS))


def group_change(name: str, a: np.ndarray, b: np.ndarray, noise: float, confidence: float, *, logs: bool | None = None,
                 unit: str = "runs", show: Callable[[float], str] = format_us,
                 floor: float | None = None) -> MetricChange:
    """Change of one metric between two groups of per-run values (Welch on logs; arithmetic if any value <= 0).

    ``logs`` False compares arithmetic means whatever the values (a rate's mean over equal windows is the rate
    itself); ``unit`` names the replicates (runs, or a poll run's blocks of seconds) and ``show`` formats a value;
    ``floor``: the least value the metric can take (0 for a rate), below which an arithmetic interval is cut (a
    rate cannot fall by more than 100 %; the verdict is the same, since it needs the whole interval beyond ±noise).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    alpha = 1 - confidence
    logs = bool(np.all(a > 0) and np.all(b > 0)) if logs is None else logs and bool(np.all(a > 0) and np.all(b > 0))
    xa, xb = (np.log(a), np.log(b)) if logs else (a, b)
    d = float(xb.mean() - xa.mean())
    va, vb = float(xa.var(ddof=1)) / a.size, float(xb.var(ddof=1)) / b.size
    se = math.sqrt(va + vb)
    if se > 0:
        df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
        half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    else:
        half = 0.0  # every run of both sides gave the same value: no spread to widen the interval
    if logs:
        centre_a, centre_b = math.exp(float(xa.mean())), math.exp(float(xb.mean()))
        relative, r_lo, r_hi = math.expm1(d), math.expm1(d - half), math.expm1(d + half)
        lo, hi = centre_a * r_lo, centre_a * r_hi
    else:
        centre_a, centre_b = float(a.mean()), float(b.mean())
        scale = abs(centre_a) if centre_a else math.nan
        relative, r_lo, r_hi = d / scale, (d - half) / scale, (d + half) / scale
        lo, hi = d - half, d + half
        if floor is not None and centre_a + lo < floor:  # the candidate's mean cannot lie below the floor
            lo = floor - centre_a
            r_lo = lo / scale
    change = quantile_change(name, centre_a, centre_b, lo, hi, relative, r_lo, r_hi, noise, confidence, show=show,
                             more=unit)
    what = "geometric means" if logs else "means"
    between = "between-run" if unit == "runs" else f"between {unit}"
    sentence = change.sentence + f" ({between}: {what} of {a.size} and {b.size} {unit}, Welch t)"
    return dataclasses.replace(change, sentence=sentence)
