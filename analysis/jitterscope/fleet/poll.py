"""A fleet of busy-poll captures (kind ``poll``): each machine's interruptions, ranked, with its history.

The same shape as a timer fleet, on the poll analyses:

* **the unit of work** (:func:`summarize_poll_run`, a Dask task as :func:`~.tasks.summarize_run` is, which hands
  poll datasets to it): one dataset read once into its per-CPU summary (:func:`jitterscope.poll.summarize_poll`),
  kept as counts and times that merge by addition: interruptions by size class, noise time, CPU-seconds polled,
  the largest interruption;
* **groups** (by host, kernel, governor, an env key or a cmdline parameter) merge their runs by those sums
  and are ranked worst first by the share of CPU lost to interruptions, then the largest one.  The share's
  interval is Student-t over the group's runs (a run is the unit: its seconds are not independent of each
  other, runs of a group nearly are), when the group has at least 3 runs;
* **histories**: each machine's runs by capture start time, each compared with the previous one by
  :func:`jitterscope.poll.compare_poll` (per CPU, blocks of seconds, Bonferroni over the metrics); a run is
  flagged when any metric of any CPU regressed.

Poll and timer datasets measure different things (a loop's interruptions, a sleeper's wake-up latency): a
fleet of both is refused (:func:`check_one_kind`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import resource
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..dataset import Dataset, Metadata
from ..errors import AnalysisError, JitterscopeError
from ..format import jsonable
from .keys import GroupKey, configuration_keys, runs_by_host, start_time_ns
from .results import RunChange

MIN_RUNS_FOR_INTERVAL = 3


@dataclass(frozen=True)
class PollRunRecord:
    """One poll run's sums over its polled CPUs (they merge by addition) and its machine's metadata."""

    path: str
    host: str
    start_ns: int | None
    metadata: Metadata
    configuration: dict[str, str]
    threshold_ns: int
    cpus: tuple[int, ...]
    cpu_seconds: float
    """Seconds polled, summed over the CPUs."""
    interruptions: int
    classes: tuple[tuple[str, int], ...]
    """(size class label, interruptions of that size), summed over the CPUs."""
    noise_ns: int
    max_ns: int
    worker_pid: int
    peak_rss_bytes: int

    @property
    def lost_percent(self) -> float:
        return 100.0 * self.noise_ns / (self.cpu_seconds * 1e9) if self.cpu_seconds else math.nan

    @property
    def per_second(self) -> float:
        """Interruptions per CPU-second polled."""
        return self.interruptions / self.cpu_seconds if self.cpu_seconds else math.nan


@dataclass(frozen=True)
class PollGroupStats:
    """One group's runs merged: rates per CPU-second, the CPU lost, the worst interruption."""

    value: str
    runs: int
    hosts: int
    cpu_seconds: float
    interruptions: int
    per_second: float
    classes_per_second: tuple[tuple[str, float], ...]
    lost_percent: float
    lost_percent_ci: tuple[float, float] | None
    """Student-t over the group's runs (at least :data:`MIN_RUNS_FOR_INTERVAL`), else None."""
    max_ns: int
    max_path: str


@dataclass(frozen=True)
class PollHistoryPoint:
    path: str
    start_ns: int | None
    interruptions: int
    lost_percent: float
    max_ns: int
    change: RunChange | None


@dataclass(frozen=True)
class PollMachineHistory:
    host: str
    points: tuple[PollHistoryPoint, ...]
    ordered_by: str

    @property
    def flagged(self) -> tuple[PollHistoryPoint, ...]:
        return tuple(p for p in self.points if p.change is not None and p.change.flagged)


@dataclass(frozen=True)
class PollFleet:
    """A fleet of poll runs: groups ranked worst first, each machine's history, what was skipped."""

    by: str
    groups: tuple[PollGroupStats, ...]
    histories: tuple[PollMachineHistory, ...]
    skipped: tuple[Any, ...]
    runs: int
    threshold_ns: tuple[int, ...]
    noise: float
    confidence: float
    execution: dict[str, Any]
    notes: tuple[str, ...]
    kind: str = "poll"

    def to_json(self) -> dict[str, Any]:
        out = jsonable(dataclasses.asdict(self))
        out["skipped"] = [s.to_json() for s in self.skipped]
        return out


def summarize_poll_run(dataset: Dataset) -> PollRunRecord:
    """One poll dataset's record (the fleet's task for kind poll; :func:`~.tasks.summarize_run` calls it).

    Raises
    ------
    JitterscopeError
        The dataset cannot be read as a poll dataset (the task turns it into a skipped dataset).
    """
    from ..poll import read_poll, summarize_poll
    data = read_poll(dataset)
    summary = summarize_poll(data)
    if not summary.threads or not any(t.runtime_ns for t in summary.threads):
        raise JitterscopeError(f"{dataset.path}: the poll dataset has no polled time (no per-second windows)")
    labels = [c.label for c in summary.threads[0].classes]
    counts = [sum(t.classes[j].count for t in summary.threads) for j in range(len(labels))]
    meta = dataset.metadata
    return PollRunRecord(
        path=str(dataset.path), host=GroupKey("host").value(meta), start_ns=start_time_ns(meta), metadata=meta,
        configuration=configuration_keys(meta), threshold_ns=data.threshold_ns,
        cpus=tuple(t.cpu for t in summary.threads), cpu_seconds=sum(t.runtime_ns for t in summary.threads) / 1e9,
        interruptions=sum(t.interruptions for t in summary.threads),
        classes=tuple(zip(labels, counts, strict=True)), noise_ns=sum(t.noise_ns for t in summary.threads),
        max_ns=max(t.max_ns for t in summary.threads), worker_pid=os.getpid(),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def check_one_kind(timer: Sequence[Any], poll: Sequence[PollRunRecord]) -> None:
    """Refuse a fleet of both timer and poll runs, naming one of each.

    Raises
    ------
    JitterscopeError
        Both kinds are among the usable runs.
    """
    if timer and poll:
        raise JitterscopeError(f"the fleet mixes busy-poll datasets (kind poll, e.g. {poll[0].path}) and timer "
                               f"datasets (e.g. {timer[0].path}): interruptions and wake-up latencies do not merge; "
                               "run one fleet per kind")


def compare_poll_consecutive(previous: str, current: str, *, noise: float = 0.05,
                             confidence: float = 0.95) -> RunChange:
    """The poll compare verdicts of ``current`` against ``previous`` (the same machine's earlier run)."""
    from ..poll import compare_poll
    comparison = compare_poll([previous, current], labels=[previous, current], noise=noise, confidence=confidence)
    changes = comparison.pairs[0].changes
    metrics = tuple((c.name, c.verdict, c.change.relative, c.change.relative_low, c.change.relative_high)
                    for c in changes)
    return RunChange(baseline=previous, metrics=metrics,
                     regressed=tuple(c.name for c in changes if c.verdict == "regressed"))


def poll_consecutive_pairs(records: Sequence[PollRunRecord]) -> list[tuple[PollRunRecord, PollRunRecord]]:
    """(previous, current) for every machine's consecutive runs, in history order."""
    return [pair for runs in runs_by_host(records).values() for pair in itertools.pairwise(runs)]


def merge_poll_group(value: str, records: Sequence[PollRunRecord], confidence: float = 0.95) -> PollGroupStats:
    """Merge a group's runs by their sums (see the module)."""
    if not records:
        raise AnalysisError(f"group {value!r} has no runs")
    seconds = sum(r.cpu_seconds for r in records)
    labels = [label for label, _ in records[0].classes]
    classes = tuple((label, sum(dict(r.classes).get(label, 0) for r in records) / seconds) for label in labels)
    lost = np.array([r.lost_percent for r in records])
    interval = None
    if lost.size >= MIN_RUNS_FOR_INTERVAL:
        half = float(stats.t.ppf(0.5 + confidence / 2, lost.size - 1)) * float(lost.std(ddof=1)) / math.sqrt(lost.size)
        interval = (max(float(lost.mean()) - half, 0.0), float(lost.mean()) + half)
    worst = max(records, key=lambda r: (r.max_ns, r.path))
    return PollGroupStats(
        value=value, runs=len(records), hosts=len({r.host for r in records}), cpu_seconds=seconds,
        interruptions=sum(r.interruptions for r in records), per_second=sum(r.interruptions for r in records) / seconds,
        classes_per_second=classes, lost_percent=100.0 * sum(r.noise_ns for r in records) / (seconds * 1e9),
        lost_percent_ci=interval, max_ns=worst.max_ns, max_path=worst.path)


def analyze_poll_fleet(records: Sequence[PollRunRecord], skipped: Sequence[Any], *, by: GroupKey,
                       changes: dict[tuple[str, str], RunChange] | None = None, noise: float = 0.05,
                       confidence: float = 0.95, execution: dict[str, Any] | None = None) -> PollFleet:
    """Rank the groups and build each machine's history from the poll runs' records.

    ``changes``: ``{(previous path, current path): RunChange}`` already computed (Dask tasks); missing pairs are
    compared here.

    Raises
    ------
    AnalysisError
        No usable run, a run given twice, or runs with different poll thresholds (they do not count the same gaps).
    """
    if not records:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in list(skipped)[:3])
        raise AnalysisError("no usable dataset in the fleet" + (f" ({len(skipped)} skipped: {reasons})"
                                                                 if skipped else ""))
    if len({r.path for r in records}) != len(records):
        raise AnalysisError("a dataset is given twice; give each dataset once")
    thresholds = sorted({r.threshold_ns for r in records})
    if len(thresholds) > 1:
        shown = ", ".join(f"{t} ns" for t in thresholds)
        raise AnalysisError(f"the fleet's poll runs have different thresholds ({shown}): they do not count the same "
                            "gaps; run one fleet per --poll-threshold")
    grouped: dict[str, list[PollRunRecord]] = defaultdict(list)
    for record in records:
        grouped[by.value(record.metadata)].append(record)
    groups = sorted((merge_poll_group(value, runs, confidence) for value, runs in grouped.items()),
                    key=lambda g: (-g.lost_percent, -g.max_ns, g.value))
    changes = dict(changes or {})
    histories, uncompared = [], []
    for host, runs in sorted(runs_by_host(records).items()):
        points = []
        for i, run in enumerate(runs):
            change = None
            if i:
                key = (runs[i - 1].path, run.path)
                try:
                    change = changes[key] if key in changes else compare_poll_consecutive(
                        runs[i - 1].path, run.path, noise=noise, confidence=confidence)
                except AnalysisError as exc:  # e.g. the machine polled other CPUs that night: said, not fatal
                    uncompared.append(f"{run.path} not compared with {runs[i - 1].path}: {exc}")
            points.append(PollHistoryPoint(run.path, run.start_ns, run.interruptions, run.lost_percent, run.max_ns,
                                           change))
        ordered = "start time" if all(r.start_ns is not None for r in runs) else "path"
        histories.append(PollMachineHistory(host, tuple(points), ordered))
    notes = (
        "rates are per CPU-second polled (a run of two CPUs polls two CPU-seconds a second); CPU lost = noise time "
        "over time polled, as osnoise reports it; counts, noise and max are exact sums and maxima of the runs",
        f"the CPU-lost interval is Student-t over a group's runs (a run is the unit), given from "
        f"{MIN_RUNS_FOR_INTERVAL} runs on",
        "regressions: each run against the same machine's previous run by the poll comparison (per CPU, blocks of "
        "seconds, Bonferroni over the metrics); a run is flagged when a metric of a CPU regressed",
        "no key table for poll runs (which setting separates the noisy machines): group by a key (--by) instead",
        *uncompared,
    )
    return PollFleet(by=by.label, groups=tuple(groups), histories=tuple(histories), skipped=tuple(skipped),
                     runs=len(records), threshold_ns=tuple(thresholds), noise=noise, confidence=confidence,
                     execution=dict(execution or {}), notes=notes)
