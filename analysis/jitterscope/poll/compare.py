"""Comparing busy-poll runs, per CPU: interruptions per second by size class, the noise, the worst interruption.

The metrics of each polled CPU (the CPUs both runs polled; a run of one CPU against another of one CPU pairs
them, with a note): interruptions per second (every gap at or above the threshold), the same per size class
(:func:`~.summary.size_classes`: decades of ns), the noise (% of the CPU lost to interruptions, as osnoise
reports it) and the largest interruption.  Higher is worse for all of them, so the timer comparison's verdicts
apply as they are (:func:`jitterscope.compare.quantile_change`): *regressed* when the whole interval of the
relative change lies above ``+noise``, *improved* below ``-noise``, *within noise* inside ``±noise``, else
*inconclusive*.

Two forms, as ``compare`` of timer runs:

* **one run per side** (:func:`compare_poll`, every run against the first): the interruptions of one second
  are not independent draws (a burst brings several, an IRQ storm many), whole seconds nearly are.  Each
  metric's per-second series is cut into consecutive blocks of ``b`` seconds, ``b`` the Politis-White length
  of the two runs' series (1 when seconds are not correlated; longer when the load drifted, so that a slow
  drift counts once), and the two runs' block means are compared by Welch's t on arithmetic means (a rate's
  mean over whole seconds is the rate): the between-block machinery of the replicate comparison
  (:func:`jitterscope.compare.group_change`) with blocks of seconds as the units.  The largest interruption
  has no interval (a sample maximum has no consistent one): it is held against the other run's tail
  (:func:`jitterscope.compare.tail_change`: a GPD on its largest interruptions), as the timer max is.
  One run per side knows the seconds' variation within each run, not what differs from one run to the next
  (the boot, the host): replicates say that.
* **groups of replicate runs** (:func:`compare_poll_groups`): per metric, Welch's t on the runs' values (a run
  is the unit), as timer groups, on arithmetic means (a log scale with two or three runs a side gives intervals
  of ×10^18 when a rare class's rate varies; the verdicts would be the same).

A class with no interruption in the baseline has no relative change: *regressed* when the interval of the
difference lies wholly above zero, else *inconclusive*; none on either side is *within noise*.  Every
interval is at ``1 - (1 - confidence) / m`` for the ``m`` metrics compared (Bonferroni over every CPU's), so
with nothing changed a claim on any metric (what ``--fail-if regressed`` reads) has probability at most
``1 - confidence``; seeded simulations with identical settings check it (tests/poll/test_compare.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compare import (
    TAIL_FIT_TOP,
    MetricChange,
    diff_environments,
    diff_groups,
    group_change,
    largest,
    optimal_block_length,
    tail_change,
)
from ..dataset import Dataset
from ..errors import AnalysisError
from ..format import format_change, jsonable
from .read import PollData, PollThread, read_poll
from .summary import (
    MIN_WINDOWS,
    ThreadNoise,
    _class_counts_histogram,
    _class_counts_rows,
    size_classes,
    summarize_thread,
)
from .text import format_gap

RATE, PERCENT, DURATION = "/s", "%", "ns"
MIN_BLOCKS = 2
"""Blocks of seconds a run needs per side for a between-block variance."""


@dataclass(frozen=True)
class PollRun:
    """One compared run: where it is, what it polled, and its summary per CPU."""

    label: str
    path: str
    threshold_ns: int
    cpus: tuple[int, ...]
    runtime_s: float
    whole_seconds: int
    """Whole one-second windows of its shortest-polled CPU (the units of a one-run-per-side comparison)."""
    from_rows: bool
    noise: tuple[ThreadNoise, ...]


@dataclass(frozen=True)
class PollChange:
    """One metric of one CPU: the change and its verdict (values in ``unit``: /s, % or ns)."""

    cpu: int
    candidate_cpu: int
    metric: str
    unit: str
    change: MetricChange
    block_seconds: int | None = None
    """Seconds per block of a one-run-per-side comparison (None: runs are the units, or no interval)."""

    @property
    def verdict(self) -> str:
        return self.change.verdict

    @property
    def name(self) -> str:
        return f"CPU {self.cpu} {self.metric}" if self.cpu == self.candidate_cpu else \
            f"CPU {self.cpu}→{self.candidate_cpu} {self.metric}"


@dataclass(frozen=True)
class PollPair:
    """The candidate (a run, or the candidate group) against the baseline: every CPU's metrics."""

    baseline: str
    candidate: str
    changes: tuple[PollChange, ...]
    notes: tuple[str, ...]

    def verdict(self, name: str) -> str:
        """The verdict of ``name`` as :attr:`PollChange.name` spells it ("CPU 1 CPU lost %")."""
        return next(c.verdict for c in self.changes if c.name == name)


@dataclass(frozen=True)
class PollComparison:
    """Poll runs compared: one pair per candidate run, or one pair of two groups (``runs_per_side``)."""

    runs: tuple[PollRun, ...]
    pairs: tuple[PollPair, ...]
    environment: tuple[Any, ...]
    """Metadata keys that differ (pairs: between any runs; groups: constant within each side, differing between)."""
    noise: float
    confidence: float
    metric_confidence: float
    """The level of each interval: Bonferroni over the metrics compared."""
    method: str
    notes: tuple[str, ...]
    runs_per_side: tuple[int, int] | None = None
    sides: tuple[str, str] | None = None

    @property
    def candidates(self) -> tuple[PollRun, ...]:
        """The runs judged against the baseline (a group comparison: the candidate group's)."""
        return self.runs[self.runs_per_side[0]:] if self.runs_per_side else self.runs[1:]

    def to_json(self) -> dict[str, Any]:
        from .compare_tables import poll_compare_headlines  # text built from this result

        # an infinite relative change is an answer here (from none to some), not a missing value
        out = jsonable(dataclasses.asdict(self), inf_as_string=True)
        out["kind"] = "poll"
        for pair, changes in zip(out["pairs"], self.pairs, strict=True):
            for item, change in zip(pair["changes"], changes.changes, strict=True):
                item["name"] = change.name
        out["headlines"] = poll_compare_headlines(self)
        return out


def compare_poll(datasets: Sequence[Dataset | PollData], *, labels: Sequence[str] | None = None,
                 noise: float = 0.05, confidence: float = 0.95) -> PollComparison:
    """Every poll run against the first, per CPU, by blocks of seconds (see the module).

    Raises
    ------
    AnalysisError
        Fewer than two runs, a run that is not a poll dataset, different thresholds, no CPU to compare, fewer
        than :data:`MIN_WINDOWS` whole seconds, or bad parameters.
    """
    if len(datasets) < 2:
        raise AnalysisError("compare needs at least two datasets (the first is the baseline)")
    data, labels = _read(datasets, labels, noise, confidence)
    runs = [_run(d, label) for d, label in zip(data, labels, strict=True)]
    for run in runs:
        if run.whole_seconds < MIN_WINDOWS:
            raise AnalysisError(f"run {run.label!r} has {run.whole_seconds} whole second(s) of polling; a poll "
                                f"comparison needs at least {MIN_WINDOWS} per run (capture for longer)")
    matched = [_match(data[0], d, labels[0], label) for d, label in zip(data[1:], labels[1:], strict=True)]
    count = sum(len(pairs) * _metrics_per_cpu(data[0]) for pairs, _ in matched)
    level = 1 - (1 - confidence) / max(count, 1)
    pairs = tuple(
        PollPair(labels[0], label, tuple(c for a, b in cpus for c in _pair_changes(data[0], a, d, b, noise, level)),
                 notes)
        for d, label, (cpus, notes) in zip(data[1:], labels[1:], matched, strict=True))
    method = (f"one run per side: per CPU and metric, the per-second series in blocks of seconds (Politis-White "
              f"length), Welch t on the two runs' block means, {level:.2%} intervals (Bonferroni over the {count} "
              f"metrics compared); max held against the other run's fitted tail (GPD on its {TAIL_FIT_TOP} largest "
              f"interruptions); noise threshold ±{noise:.0%}")
    notes = ("one run per side: the intervals know how the seconds of each run vary, not how runs vary (the boot, "
             "the host, what else ran); compare replicates (A1 A2 -- B1 B2) to judge that",
             "higher is worse for every metric: more interruptions, more CPU lost, a longer worst interruption")
    return PollComparison(tuple(runs), pairs, diff_environments([d.dataset.metadata for d in data]), noise,
                          confidence, level, method, notes)


def compare_poll_groups(baseline: Sequence[Dataset | PollData], candidate: Sequence[Dataset | PollData], *,
                        labels: Sequence[str] | None = None, sides: tuple[str, str] = ("A", "B"),
                        noise: float = 0.05, confidence: float = 0.95) -> PollComparison:
    """Two groups of replicate poll runs, per CPU, by their between-run variation (see the module).

    Raises
    ------
    AnalysisError
        A side with fewer than two runs, or as :func:`compare_poll`.
    """
    if len(baseline) < 2 or len(candidate) < 2:
        raise AnalysisError(f"a group comparison needs at least 2 runs per side ({len(baseline)} and "
                            f"{len(candidate)} given); with one run per side use 'compare A B'")
    data, labels = _read([*baseline, *candidate], labels, noise, confidence)
    runs = [_run(d, label) for d, label in zip(data, labels, strict=True)]
    k = len(baseline)
    matched = [_match(data[0], d, labels[0], label) for d, label in zip(data[1:], labels[1:], strict=True)]
    cpus = [a.cpu for a, _ in matched[0][0]] if matched else []
    common = [c for c in cpus if all(any(a.cpu == c for a, _ in m) for m, _ in matched)]
    if not common:
        raise AnalysisError("no polled CPU is in every run; compare runs that polled the same CPUs")
    threads = {label: {a.cpu: b for a, b in pairs} for label, (pairs, _) in zip(labels[1:], matched, strict=True)}
    threads[labels[0]] = {t.cpu: t for t in data[0].threads}
    count = len(common) * _metrics_per_cpu(data[0])
    level = 1 - (1 - confidence) / count
    changes = []
    for cpu in common:
        noise_of = [summarize_thread(d, threads[label][cpu]) for d, label in zip(data, labels, strict=True)]
        other = noise_of[k].cpu
        for metric, unit, values, show in _run_metrics(noise_of):
            change = _change(metric, values[:k], values[k:], noise, level, logs=False, unit="runs", show=show)
            changes.append(PollChange(cpu, other, metric, unit, change))
    environment, varying = diff_groups([d.dataset.metadata for d in data[:k]], [d.dataset.metadata for d in data[k:]])
    notes = [n for _, m in matched for n in m]
    pair = PollPair(f"{sides[0]} ({k} runs)", f"{sides[1]} ({len(candidate)} runs)", tuple(changes),
                    tuple(dict.fromkeys(notes)))
    method = (f"between-run variation: per CPU and metric, Welch t on the runs' values ({k} vs {len(candidate)} "
              f"runs; arithmetic means, intervals cut at zero), {level:.2%} intervals (Bonferroni over the "
              f"{count} metrics); noise threshold ±{noise:.0%}; when nothing changed, a claim on any metric at most "
              f"{1 - confidence:.0%}")
    notes_out = ("a run is the unit of replication: the spread between runs, not within them, decides",
                 f"{len(varying)} metadata keys differ between runs of one side and are left out of what differs"
                 if varying else "no metadata key differs within a side")
    return PollComparison(tuple(runs), (pair,), environment, noise, confidence, level, method, notes_out,
                          runs_per_side=(k, len(candidate)), sides=sides)


def _read(datasets: Sequence[Dataset | PollData], labels: Sequence[str] | None, noise: float,
          confidence: float) -> tuple[list[PollData], list[str]]:
    if not 0 < confidence < 1 or noise < 0:
        raise AnalysisError("need 0 < confidence < 1 and noise >= 0")
    data = [d if isinstance(d, PollData) else read_poll(d) for d in datasets]
    if labels is None:
        names = [d.dataset.path.name for d in data]
        labels = [f"{i}:{name}" if names.count(name) > 1 else name for i, name in enumerate(names)]
    labels = list(labels)
    if len(labels) != len(data):
        raise AnalysisError(f"{len(labels)} labels for {len(data)} datasets; give one label per dataset")
    thresholds = {d.threshold_ns for d in data}
    if len(thresholds) > 1:
        shown = " vs ".join(f"{d.threshold_ns} ns" for d in data)
        raise AnalysisError(f"the runs' poll thresholds differ ({shown}): they do not count the same gaps as "
                            "interruptions; capture every run with the same --poll-threshold")
    return data, labels


def _run(data: PollData, label: str) -> PollRun:
    window_ns = int(data.info.get("window_ns") or 1_000_000_000)
    whole = min(int(np.count_nonzero(t.windows["window_ns"] >= window_ns)) for t in data.threads)
    return PollRun(label=label, path=str(data.dataset.path), threshold_ns=data.threshold_ns,
                   cpus=tuple(t.cpu for t in data.threads),
                   runtime_s=max(t.runtime_ns for t in data.threads) / 1e9, whole_seconds=whole,
                   from_rows=data.has_rows, noise=tuple(summarize_thread(data, t) for t in data.threads))


def _match(base: PollData, cand: PollData, base_label: str,
           cand_label: str) -> tuple[list[tuple[PollThread, PollThread]], tuple[str, ...]]:
    """The CPUs compared: those both polled; two runs of one CPU each are compared whatever their CPUs."""
    theirs = {t.cpu: t for t in cand.threads}
    pairs = [(t, theirs[t.cpu]) for t in base.threads if t.cpu in theirs]
    notes = []
    if not pairs and len(base.threads) == 1 and len(cand.threads) == 1:
        pairs = [(base.threads[0], cand.threads[0])]
        notes.append(f"{cand_label} polled CPU {cand.threads[0].cpu}, {base_label} CPU {base.threads[0].cpu}: "
                     "compared as one CPU against the other")
    if not pairs:
        raise AnalysisError(f"{cand_label} polled CPU(s) {','.join(str(t.cpu) for t in cand.threads)} and "
                            f"{base_label} {','.join(str(t.cpu) for t in base.threads)}: no CPU in common to "
                            "compare; poll the same CPUs")
    left = sorted({t.cpu for t in base.threads} ^ {t.cpu for t in cand.threads})
    if left and len(pairs) > 0 and not notes:
        notes.append(f"CPU(s) {','.join(map(str, left))} polled in only one of {base_label} and {cand_label}: "
                     "not compared")
    return pairs, tuple(notes)


def _metrics_per_cpu(data: PollData) -> int:
    return len(size_classes(data.threshold_ns)) + 3  # all interruptions, each class, noise, max


def class_metric(low: int, high: int | None) -> str:
    """A size class as a metric name: "1–10 µs/s", "0.1–1 ms/s", "≥ 1 ms/s" (interruptions of that size per s)."""
    scale, name = (1e6, "ms") if (high if high is not None else low) >= 1_000_000 else (1e3, "µs")
    if high is None:
        return f"≥ {low / scale:g} {name}/s"
    return f"{low / scale:g}–{high / scale:g} {name}/s"


def _rate(x: float) -> str:
    return f"{x:,.4g}/s"


def _percent(x: float) -> str:
    return f"{x:.3g} %"


def _seconds(data: PollData, thread: PollThread) -> list[tuple[str, str, np.ndarray, Callable[[float], str]]]:
    """Each metric's per-second series over the whole windows of one CPU (max excepted)."""
    w = thread.windows
    window_ns = int(data.info.get("window_ns") or 1_000_000_000)
    whole = w["window_ns"] >= window_ns
    seconds = w["window_ns"][whole] / 1e9
    classes = size_classes(data.threshold_ns)
    counted = (_class_counts_rows(thread, classes, whole) if data.has_rows
               else _class_counts_histogram(thread, data.edges_ns, classes, whole))
    total = np.sum([per_window for _, per_window in counted], axis=0)
    out = [("interruptions/s", RATE, total / seconds, _rate)]
    out += [(class_metric(low, high), RATE, per_window / seconds, _rate)
            for (_, low, high), (_, per_window) in zip(classes, counted, strict=True)]
    out.append(("CPU lost %", PERCENT, 100.0 * w["noise_ns"][whole] / w["window_ns"][whole], _percent))
    return out


def _run_metrics(noise_of: Sequence[ThreadNoise]) -> list[tuple[str, str, np.ndarray, Callable[[float], str]]]:
    """Each metric's value per run (one CPU of each), in the order of :func:`_seconds`, max last."""
    out = [("interruptions/s", RATE, np.array([t.per_second for t in noise_of]), _rate)]
    for j, size in enumerate(noise_of[0].classes):
        out.append((class_metric(size.low_ns, size.high_ns), RATE,
                    np.array([t.classes[j].per_second for t in noise_of]), _rate))
    out.append(("CPU lost %", PERCENT, np.array([t.lost_percent for t in noise_of]), _percent))
    out.append(("max", DURATION, np.array([float(t.max_ns) for t in noise_of]), format_gap))
    return out


def _blocks(series: np.ndarray, length: int) -> np.ndarray:
    """Means of consecutive blocks of ``length`` seconds (a last, shorter block is left out)."""
    count = series.size // length
    return series[:count * length].reshape(count, length).mean(axis=1)


def _pair_changes(base: PollData, a: PollThread, cand: PollData, b: PollThread, noise: float,
                  level: float) -> list[PollChange]:
    out = []
    for (metric, unit, xa, show), (_, _, xb, _) in zip(_seconds(base, a), _seconds(cand, b), strict=True):
        length = max(optimal_block_length(xa).length, optimal_block_length(xb).length)
        # at least two blocks a side for a variance: a drift as long as the run leaves two halves
        length = max(1, min(length, xa.size // MIN_BLOCKS, xb.size // MIN_BLOCKS))
        change = _change(metric, _blocks(xa, length), _blocks(xb, length), noise, level, logs=False,
                         unit=f"blocks of {length} s", show=show)
        out.append(PollChange(a.cpu, b.cpu, metric, unit, change, block_seconds=length))
    out.append(PollChange(a.cpu, b.cpu, "max", DURATION, _max_change(base, a, cand, b, noise)))
    return out


def _max_change(base: PollData, a: PollThread, cand: PollData, b: PollThread, noise: float) -> MetricChange:
    if not (base.has_rows and cand.has_rows) or not a.duration_ns.size or not b.duration_ns.size:
        va = int(a.windows["max_gap_ns"].max()) if a.windows["max_gap_ns"].size else 0
        vb = int(b.windows["max_gap_ns"].max()) if b.windows["max_gap_ns"].size else 0
        relative = vb / va - 1 if va else math.nan
        return MetricChange("max", float(va), float(vb), float(vb - va), None, None, relative, None, None,
                            "not judged", f"max: not judged — {format_gap(va)} → {format_gap(vb)} "
                            f"({format_change(relative)}); a run without interruption rows (a histogram import) "
                            "has no tail to hold the other max against")
    da, db = a.duration_ns, b.duration_ns
    return tail_change("max", largest(da, 2 * TAIL_FIT_TOP), da.size, largest(db, 2 * TAIL_FIT_TOP), db.size,
                       float(da.max()), float(db.max()), noise,
                       "no interval: a sample maximum has no consistent one", what="interruptions", show=format_gap)


def _change(metric: str, a: np.ndarray, b: np.ndarray, noise: float, level: float, *, logs: bool | None,
            unit: str, show: Callable[[float], str]) -> MetricChange:
    """:func:`jitterscope.compare.group_change`, and the verdict of a metric the baseline has none of."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if metric == "max":
        return group_change(metric, a, b, noise, level, logs=logs, unit=unit, show=show, floor=0.0)
    base, cand = float(a.mean()), float(b.mean())
    if base == 0 and cand == 0:
        return MetricChange(metric, 0.0, 0.0, 0.0, None, None, 0.0, None, None, "within noise",
                            f"{metric}: within noise — none on either side")
    change = group_change(metric, a, b, noise, level, logs=logs if base > 0 else False, unit=unit, show=show,
                          floor=0.0)
    if base > 0:
        return change
    # from none to some: no relative change exists, the difference's interval decides
    low = change.ci_low_ns if change.ci_low_ns is not None else math.nan
    verdict = "regressed" if low > 0 else "inconclusive"
    why = (f"the whole {level:.2%} interval of the difference lies above zero" if verdict == "regressed" else
           f"the {level:.2%} interval of the difference reaches zero: more {unit} would decide")
    return dataclasses.replace(
        change, relative=math.inf, relative_low=math.inf if verdict == "regressed" else math.nan,
        relative_high=math.inf, verdict=verdict,
        sentence=f"{metric}: {verdict} — none → {show(cand)} (difference [{show(low)} … {show(change.ci_high_ns)}]); "
                 f"{why} ({unit}, Welch t)")
