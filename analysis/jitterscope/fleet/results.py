"""What a fleet analysis returns: frozen dataclasses that serialise to JSON (:meth:`Fleet.to_json`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..format import jsonable
from .tasks import SkippedDataset


@dataclass(frozen=True)
class QuantileEstimate:
    """A quantile of merged wake-ups with its distribution-free interval (ns).

    ``low_ns``/``high_ns`` are the values at the binomial order-statistic ranks
    around ``q (n-1)`` (independent wake-ups assumed); ``open_above`` says the upper
    rank reached the largest wake-up, so fewer wake-ups lie above than the interval
    needs and ``high_ns`` is only the max.
    """

    level: str
    value_ns: float
    low_ns: float
    high_ns: float
    open_above: bool


@dataclass(frozen=True)
class GroupStats:
    """The merged wake-ups of one group (a machine, a kernel, …)."""

    value: str
    runs: int
    hosts: int
    n: int
    min_ns: int
    max_ns: int
    mean_ns: float
    std_ns: float
    quantiles: tuple[QuantileEstimate, ...]

    def quantile(self, level: str) -> QuantileEstimate:
        return next(q for q in self.quantiles if q.level == level)


@dataclass(frozen=True)
class RunChange:
    """One run against the machine's previous run: the compare verdict per metric (binned path)."""

    baseline: str
    metrics: tuple[tuple[str, str, float, float | None, float | None], ...]
    """(metric, verdict, relative change, interval low, interval high) for p50 … p99.99 and max."""
    regressed: tuple[str, ...]
    """Metrics whose verdict is "regressed" (the whole interval above the noise threshold)."""

    @property
    def flagged(self) -> bool:
        return bool(self.regressed)


@dataclass(frozen=True)
class HistoryPoint:
    """One run in a machine's history."""

    path: str
    start_ns: int | None
    n: int
    max_ns: int
    quantiles_ns: tuple[tuple[str, float], ...]
    change: RunChange | None
    """None for the machine's first run."""


@dataclass(frozen=True)
class MachineHistory:
    host: str
    points: tuple[HistoryPoint, ...]
    ordered_by: str
    """"start time" or, when a run lacks ``clock.realtime_ns``, "path"."""

    @property
    def flagged(self) -> tuple[HistoryPoint, ...]:
        return tuple(p for p in self.points if p.change is not None and p.change.flagged)


@dataclass(frozen=True)
class KeyValueStats:
    """One value of an environment key: its runs merged, and the per-unit tail values behind the test."""

    value: str
    stats: GroupStats
    unit_tails_ns: tuple[float, ...]
    """Median per-run tail metric of each (machine, value) unit."""


@dataclass(frozen=True)
class KeySeparation:
    """How well one configuration key separates the worst tails from the best."""

    key: str
    values: tuple[KeyValueStats, ...]
    """Worst first (by the group's tail metric)."""
    units: int
    statistic: float
    p_value: float
    p_holm: float
    worst_to_best: float
    """Group tail metric of the worst value over that of the best."""
    significant: bool


@dataclass(frozen=True)
class Fleet:
    """A fleet of runs: groups ranked, machine histories with flagged regressions, the key table, skips."""

    by: str
    groups: tuple[GroupStats, ...]
    """Worst first: by p99.99, then max."""
    histories: tuple[MachineHistory, ...]
    keys: tuple[KeySeparation, ...]
    """Most separating first."""
    skipped: tuple[SkippedDataset, ...]
    runs: int
    wakeups: int
    tail_metric: str
    """The per-run quantile the key table's test uses: the highest with >= 10 wake-ups above in every run."""
    noise: float
    confidence: float
    execution: dict[str, Any]
    notes: tuple[str, ...]

    @property
    def flagged(self) -> tuple[tuple[str, HistoryPoint], ...]:
        return tuple((h.host, p) for h in self.histories for p in h.flagged)

    def to_json(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self))
