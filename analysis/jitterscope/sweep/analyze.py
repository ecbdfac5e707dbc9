"""The comparison of a sweep's conditions, with a run as the unit of replication.

Each run gives one number per metric (p50 ... p99.99 and max of its wake-up latencies after the warm-up, from a
streaming HDR histogram).  Wake-ups within a run are not independent (stalls cluster, the host drifts), so every
interval comes from the spread between runs of one condition, never from pooled wake-ups.

Effects are contrasts of condition means on the log scale (a cell-means model of the full factorial, the
variance pooled over the conditions' replicates, ``df = runs - conditions``): a level's effect is its ratio to
the factor's reference (first) level averaged over the other factors' levels; the interaction of two factors is
the ratio of ratios.  Intervals and p-values are Student t; the p-values are adjusted by Holm over every effect
and metric tested.  Verdicts: see :data:`~.results.VERDICTS`.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ..dataset import iter_thread_batches, open_dataset
from ..errors import AnalysisError, JitterscopeError
from ..events import find_events
from ..summary import LatencyHistogram
from .journal import read_journal
from .results import (
    METRICS,
    VERDICT_EFFECT,
    VERDICT_INCONCLUSIVE,
    VERDICT_NONE,
    ConditionStats,
    Effect,
    Estimate,
    RunMetrics,
    SweepAnalysis,
)

CCDF_POINTS = 200
EVENT_THRESHOLD_NS = 100_000.0
"""One threshold for every run's events (a per-run default would move with the condition being compared)."""


def run_events(path: str | Path, warmup_ns: int, threshold_ns: float) -> tuple[int, float, dict[str, int]]:
    """(events, seconds measured, events per cause kind) of a run after its warm-up."""
    found = find_events(open_dataset(path), threshold_ns=threshold_ns)
    start = found.first_expected_ns + warmup_ns
    causes: dict[str, int] = {}
    kept = 0
    for event in found.events:
        if event.start_ns < start:
            continue
        kept += 1
        for kind in sorted({cause.kind for cause in event.causes}) or ["unexplained"]:
            causes[kind] = causes.get(kind, 0) + 1
    return kept, max(found.observed_s - warmup_ns / 1e9, 0.0), causes


def run_histogram(path: str | Path, warmup_ns: int = 0) -> tuple[LatencyHistogram, int]:
    """The latency histogram of a run's wake-ups after its warm-up (per thread, from its first expected wake-up),
    and the number of warm-up wake-ups left out."""
    dataset = open_dataset(path)
    histogram = LatencyHistogram()
    first: dict[int, int] = {}
    skipped = 0
    for info, batch in iter_thread_batches(dataset, ["expected_ns", "actual_ns"]):
        expected = batch.column("expected_ns").to_numpy()
        actual = batch.column("actual_ns").to_numpy()
        if not len(expected):
            continue
        start = first.setdefault(info.thread, int(expected[0]))
        keep = expected >= start + warmup_ns
        skipped += int(len(keep) - keep.sum())
        if keep.any():
            histogram.update(actual[keep] - expected[keep])
    return histogram, skipped


def histogram_metrics(histogram: LatencyHistogram) -> dict[str, float]:
    """The run's metrics (ns) from its histogram."""
    result = histogram.result()
    values = result.percentiles([q for _, q in METRICS if q is not None])
    out = {name: values[q] for name, q in METRICS if q is not None}
    out["max"] = float(histogram.max_ns)
    return out


def thin_ccdf(histogram: LatencyHistogram, points: int = CCDF_POINTS) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The CCDF (µs, fraction later) at about ``points`` log-spaced latencies, ending at the last wake-up."""
    x, p = histogram.result().ccdf()
    keep = p > 0
    x, p = x[keep], p[keep]
    x = np.append(x, float(histogram.max_ns))
    p = np.append(p, 1.0 / histogram.count)
    if len(x) > points:
        index = np.unique(np.linspace(0, len(x) - 1, points).round().astype(int))
        x, p = x[index], p[index]
    return tuple(float(v) / 1e3 for v in x), tuple(float(v) for v in p)


def estimate(values_ns: Sequence[float], confidence: float) -> Estimate:
    """Geometric mean of a condition's runs with a t interval of the log values (none from one run)."""
    logs = np.log(np.asarray(values_ns, dtype=float))
    centre = float(np.exp(logs.mean()))
    if len(logs) < 2:
        return Estimate(centre, None, None, len(logs))
    half = stats.t.ppf(0.5 + confidence / 2, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    return Estimate(centre, float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half)), len(logs))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values that are not None (None stays None)."""
    indexed = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(indexed)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def verdict(p_holm: float | None, low: float | None, high: float | None, *, noise: float, alpha: float) -> str:
    if p_holm is not None and p_holm < alpha:
        return VERDICT_EFFECT
    if low is not None and high is not None and low >= 1 / (1 + noise) and high <= 1 + noise:
        return VERDICT_NONE
    return VERDICT_INCONCLUSIVE


def compare_conditions(
    runs: Sequence[RunMetrics], factors: Mapping[str, Sequence[Any]], *, noise: float = 0.10,
    confidence: float = 0.95,
) -> tuple[tuple[ConditionStats, ...], tuple[Effect, ...], tuple[Effect, ...]]:
    """Conditions, main effects and two-factor interactions of ``runs`` (one :class:`RunMetrics` per run).

    Raises
    ------
    AnalysisError
        No runs, or parameters out of range.
    """
    if not runs:
        raise AnalysisError("the sweep has no complete runs to compare")
    if not 0 < confidence < 1 or noise < 0:
        raise AnalysisError("need 0 < confidence < 1 and noise >= 0")
    names = list(factors)
    cells: dict[tuple[Any, ...], list[RunMetrics]] = {}
    for run in runs:
        cells.setdefault(tuple(_key(run.levels[name]) for name in names), []).append(run)
    conditions = []
    for index, combo in enumerate(itertools.product(*(factors[name] for name in names))):
        members = cells.get(tuple(_key(level) for level in combo), [])
        if not members:
            continue
        metrics = {metric: estimate([r.metrics_ns[metric] for r in members], confidence) for metric, _ in METRICS}
        conditions.append(ConditionStats(index=index, label=", ".join(f"{n}={_show(v)}" for n, v in
                                                                       zip(names, combo, strict=True)),
                                         levels=dict(zip(names, combo, strict=True)),
                                         runs=tuple(r.id for r in members), metrics=metrics))
    alpha = 1 - confidence
    raw: list[dict[str, Any]] = []
    for metric, _ in METRICS:
        logs = {cell: np.log([r.metrics_ns[metric] for r in members]) for cell, members in cells.items()}
        df = sum(len(v) for v in logs.values()) - len(logs)
        pooled = (sum(float(((v - v.mean()) ** 2).sum()) for v in logs.values()) / df) if df > 0 else float("nan")
        for contrast in _contrasts(factors):
            raw.append({"metric": metric, **contrast, **_test(contrast["weights"], logs, pooled, df, confidence)})
    adjusted = holm([r["p"] for r in raw])
    effects, interactions = [], []
    for item, p_holm in zip(raw, adjusted, strict=True):
        effect = Effect(kind=item["kind"], factor=item["factor"], level=item["level"], reference=item["reference"],
                        metric=item["metric"], ratio=item["ratio"], low=item["low"], high=item["high"], p=item["p"],
                        p_holm=p_holm, df=item["df"],
                        verdict=verdict(p_holm, item["low"], item["high"], noise=noise, alpha=alpha),
                        other_factor=item.get("other_factor"), other_level=item.get("other_level"),
                        other_reference=item.get("other_reference"))
        (interactions if effect.kind == "interaction" else effects).append(effect)
    return tuple(conditions), tuple(effects), tuple(interactions)


def _key(level: Any) -> str:
    return json.dumps(level, sort_keys=True)


def _show(level: Any) -> str:
    return level if isinstance(level, str) else str(level)


def _contrasts(factors: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every main-effect contrast (level vs the first level of each factor) and every two-factor interaction
    contrast, as weights on the cells (tuples of level keys), averaged over the other factors' levels."""
    names = list(factors)
    combos = list(itertools.product(*(factors[name] for name in names)))
    out = []
    for f, name in enumerate(names):
        reference = factors[name][0]
        others = len(combos) // len(factors[name])
        for level in factors[name][1:]:
            weights: dict[tuple[str, ...], float] = {}
            for combo in combos:
                if combo[f] == level or combo[f] == reference:
                    sign = 1.0 if combo[f] == level else -1.0
                    weights[tuple(_key(v) for v in combo)] = sign / others
            out.append({"kind": "main", "factor": name, "level": level, "reference": reference,
                        "weights": weights})
    for (f, a), (g, b) in itertools.combinations(enumerate(names), 2):
        others = len(combos) // (len(factors[a]) * len(factors[b]))
        for level_a in factors[a][1:]:
            for level_b in factors[b][1:]:
                weights = {}
                for combo in combos:
                    if combo[f] not in (level_a, factors[a][0]) or combo[g] not in (level_b, factors[b][0]):
                        continue
                    sign = (1.0 if combo[f] == level_a else -1.0) * (1.0 if combo[g] == level_b else -1.0)
                    weights[tuple(_key(v) for v in combo)] = sign / others
                out.append({"kind": "interaction", "factor": a, "level": level_a, "reference": factors[a][0],
                            "other_factor": b, "other_level": level_b, "other_reference": factors[b][0],
                            "weights": weights})
    return out


def _test(weights: Mapping[tuple[str, ...], float], logs: Mapping[tuple[str, ...], np.ndarray], pooled: float,
          df: int, confidence: float) -> dict[str, Any]:
    """The contrast's ratio, interval and two-sided p (None where a condition has no run or df is 0)."""
    if any(cell not in logs for cell in weights):
        return {"ratio": float("nan"), "low": None, "high": None, "p": None, "df": df}
    value = sum(w * float(logs[cell].mean()) for cell, w in weights.items())
    if df <= 0 or not np.isfinite(pooled):
        return {"ratio": math.exp(value), "low": None, "high": None, "p": None, "df": df}
    se = math.sqrt(pooled * sum(w * w / len(logs[cell]) for cell, w in weights.items()))
    if se == 0:
        return {"ratio": math.exp(value), "low": None, "high": None, "p": None, "df": df}
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    p = float(2 * stats.t.sf(abs(value) / se, df))
    return {"ratio": math.exp(value), "low": math.exp(value - half), "high": math.exp(value + half), "p": p,
            "df": df}


def analyze_sweep(directory: str | Path, *, noise: float = 0.10, confidence: float = 0.95,
                  event_threshold_ns: float = EVENT_THRESHOLD_NS) -> SweepAnalysis:
    """Read a sweep's manifest and complete runs and compare its conditions.

    Raises
    ------
    JitterscopeError
        ``directory`` is not a sweep (no readable manifest) or has no complete run.
    """
    directory = Path(directory)
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        raise JitterscopeError(f"{directory} has no readable manifest.json; give the output directory of "
                               "'jitterscope sweep run'") from None
    factors = {name: tuple(levels) for name, levels in manifest["factors"].items()}
    runs: list[RunMetrics] = []
    histograms: dict[int, LatencyHistogram] = {}
    missing = []
    loads: dict[str, Any] = {}
    for entry in manifest["runs"]:
        if entry.get("status") != "complete":
            missing.append(f"{entry['id']}: {entry.get('status')}{': ' + entry['error'] if entry.get('error') else ''}")
            continue
        path = directory / "runs" / entry["id"]
        dataset = open_dataset(path)
        experiment = dict(dataset.metadata.experiment or {})
        histogram, skipped = run_histogram(path, int(experiment.get("warmup_ns", 0)))
        if histogram.count == 0:
            missing.append(f"{entry['id']}: no wake-ups after the warm-up")
            continue
        levels = experiment.get("levels", entry["levels"])
        if isinstance(experiment.get("load"), dict):
            loads[" ".join(experiment["load"]["command"])] = experiment["load"].get("cpus")
        warmup_ns = int(experiment.get("warmup_ns", 0))
        events, measured_s, causes = run_events(path, warmup_ns, event_threshold_ns)
        runs.append(RunMetrics(id=entry["id"], position=entry["position"], replicate=entry["block"] + 1,
                               condition=entry["condition"], levels=levels, samples=histogram.count,
                               warmup_samples=skipped, metrics_ns=histogram_metrics(histogram),
                               ccdf_us=thin_ccdf(histogram), events=events, measured_s=measured_s, causes=causes))
        if entry["condition"] in histograms:
            histograms[entry["condition"]].merge(histogram)
        else:
            histograms[entry["condition"]] = histogram
    conditions, effects, interactions = compare_conditions(runs, factors, noise=noise, confidence=confidence)
    conditions = tuple(ConditionStats(c.index, c.label, c.levels, c.runs, c.metrics,
                                      thin_ccdf(histograms[c.index]) if c.index in histograms else ((), ()))
                       for c in conditions)
    journal = read_journal(directory)
    restored = tuple(sorted({knob for knob, _ in journal.originals.values()}))
    return SweepAnalysis(directory=str(directory), factors=factors, design=manifest["design"], runs=tuple(runs),
                         conditions=conditions, effects=effects, interactions=interactions, noise=noise,
                         confidence=confidence, restored=restored, missing=tuple(missing),
                         capture=manifest.get("capture", {}), loads=loads, event_threshold_ns=event_threshold_ns)
