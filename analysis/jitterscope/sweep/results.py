"""The results of ``jitterscope sweep report``: frozen, JSON-ready nouns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..format import jsonable

METRICS: tuple[tuple[str, float | None], ...] = (
    ("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99), ("max", None),
)
"""The metrics of every run: latency percentiles and the maximum (None), after the warm-up."""
METRIC_NAMES = tuple(name for name, _ in METRICS)
VERDICT_EFFECT = "effect"
VERDICT_NONE = "no effect beyond the stated noise"
VERDICT_INCONCLUSIVE = "inconclusive"
VERDICTS = (VERDICT_EFFECT, VERDICT_NONE, VERDICT_INCONCLUSIVE)
"""*effect*: Holm-adjusted p below 1 - confidence; *no effect beyond the stated noise*: the whole interval of the
ratio lies inside [1/(1 + noise), 1 + noise]; *inconclusive*: neither (too few replicates, or too noisy)."""


@dataclass(frozen=True)
class RunMetrics:
    """One run of the sweep: its condition, its place in the order, its latency metrics after the warm-up."""

    id: str
    position: int
    replicate: int
    condition: int
    levels: Mapping[str, Any]
    samples: int
    """Wake-ups after the warm-up (all threads)."""
    warmup_samples: int
    metrics_ns: Mapping[str, float]
    ccdf_us: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    """(latency in µs, fraction of wake-ups later) after the warm-up, thinned for plotting."""
    events: int | None = None
    """Latency spike events after the warm-up (``jitterscope events`` at the sweep's fixed threshold)."""
    measured_s: float | None = None
    causes: Mapping[str, int] = field(default_factory=dict)
    """Events per cause kind (``unexplained`` for events without one)."""

    def to_json(self) -> dict[str, Any]:
        return jsonable({"id": self.id, "position": self.position, "replicate": self.replicate,
                         "condition": self.condition, "levels": dict(self.levels), "samples": self.samples,
                         "warmup_samples": self.warmup_samples, "metrics_ns": dict(self.metrics_ns),
                         "events": self.events, "measured_s": self.measured_s, "causes": dict(self.causes)})


@dataclass(frozen=True)
class Estimate:
    """A condition's metric: geometric mean over its runs, with a t interval from their spread (log scale)."""

    value_ns: float
    low_ns: float | None
    high_ns: float | None
    runs: int

    def to_json(self) -> dict[str, Any]:
        return jsonable({"value_ns": self.value_ns, "low_ns": self.low_ns, "high_ns": self.high_ns,
                         "runs": self.runs})


@dataclass(frozen=True)
class ConditionStats:
    index: int
    label: str
    levels: Mapping[str, Any]
    runs: tuple[str, ...]
    metrics: Mapping[str, Estimate]
    ccdf_us: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    """Pooled over the condition's runs (for the overlay only: the statistics use runs as units)."""

    def to_json(self) -> dict[str, Any]:
        return jsonable({"index": self.index, "label": self.label, "levels": dict(self.levels),
                         "runs": list(self.runs), "metrics": {k: v.to_json() for k, v in self.metrics.items()}})


@dataclass(frozen=True)
class Effect:
    """A factor's effect on a metric: the ratio of a level to the reference level, averaged over the other factors
    (a contrast of condition means on the log scale); for an interaction, the ratio of ratios."""

    kind: str
    """``main`` or ``interaction``."""
    factor: str
    level: Any
    reference: Any
    metric: str
    ratio: float
    low: float | None
    high: float | None
    p: float | None
    p_holm: float | None
    verdict: str
    df: int
    other_factor: str | None = None
    other_level: Any = None
    other_reference: Any = None

    @property
    def label(self) -> str:
        main = f"{self.factor}: {_text(self.level)} vs {_text(self.reference)}"
        if self.kind == "interaction":
            return f"{main} x {self.other_factor}: {_text(self.other_level)} vs {_text(self.other_reference)}"
        return main

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "factor": self.factor, "level": self.level, "reference": self.reference,
               "metric": self.metric, "ratio": self.ratio, "low": self.low, "high": self.high, "p": self.p,
               "p_holm": self.p_holm, "verdict": self.verdict, "df": self.df, "label": self.label}
        if self.kind == "interaction":
            out.update({"other_factor": self.other_factor, "other_level": self.other_level,
                        "other_reference": self.other_reference})
        return jsonable(out)


@dataclass(frozen=True)
class SweepAnalysis:
    """A sweep compared: its runs, its conditions, the factors' effects and the two-factor interaction."""

    directory: str
    factors: Mapping[str, tuple[Any, ...]]
    design: Mapping[str, Any]
    runs: tuple[RunMetrics, ...]
    conditions: tuple[ConditionStats, ...]
    effects: tuple[Effect, ...]
    interactions: tuple[Effect, ...]
    noise: float
    confidence: float
    restored: tuple[str, ...] = ()
    """The settings the sweep changed and put back (from the journal)."""
    missing: tuple[str, ...] = field(default=())
    """Runs of the design that are not complete (id: reason)."""
    capture: Mapping[str, Any] = field(default_factory=dict)
    loads: Mapping[str, Any] = field(default_factory=dict)
    """Load command -> where it ran."""
    event_threshold_ns: float | None = None

    def to_json(self) -> dict[str, Any]:
        return jsonable({
            "directory": self.directory, "factors": {k: list(v) for k, v in self.factors.items()},
            "design": dict(self.design), "noise": self.noise, "confidence": self.confidence,
            "runs": [r.to_json() for r in self.runs], "conditions": [c.to_json() for c in self.conditions],
            "effects": [e.to_json() for e in self.effects],
            "interactions": [e.to_json() for e in self.interactions],
            "restored": list(self.restored), "missing": list(self.missing), "capture": dict(self.capture),
            "loads": dict(self.loads), "event_threshold_ns": self.event_threshold_ns,
        })


def _text(level: Any) -> str:
    return level if isinstance(level, str) else str(level)
