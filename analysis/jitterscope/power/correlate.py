"""Which latency spikes did the CPU's power management cause?  Conditioning, tests and a verdict.

Latency is conditioned, per CPU and over all CPUs, on

(a) a frequency transition within ±``window`` wake-ups (:mod:`jitterscope.cpufreq`),
(b) an SMI in the interval before the wake-up (ΔSMI > 0),
(c) the C0 residency of the interval before the wake-up, in bins (idle depth).

Each condition is tested on wake-ups free of the *other* events: transitions on
SMI-free wake-ups, SMIs away from transitions, C0 bins away from both.  That is
what lets spikes caused by SMIs that happen to cluster around transitions be
attributed to the SMIs and not to the transitions.

For every (scope, condition): conditional quantiles; at each exceedance
threshold a risk ratio with a Katz 95 % CI and Fisher's exact one-sided p; a
Mann-Whitney test with Cliff's delta; Holm's correction over all scopes,
conditions and thresholds (Fisher and rank tests corrected as separate
families).  A condition is *attributed* when some Holm-adjusted Fisher p is
below ``alpha`` with a risk ratio above 1.  Around events: the event-triggered
average of latency against circular-shift surrogates; lagged rank correlation
of latency with |Δf_eff| and with C0; the share of spikes attributable to SMIs.
The verdicts say it in plain words, and when nothing is found they say which
risk ratio would have been detected.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..derive import CounterSeries, CounterSet, read_counters
from ..errors import AnalysisError
from ..format import format_p, format_percent, format_us, jsonable
from .association import (
    CrossCorrelation,
    EventAverage,
    RankTest,
    RiskRatio,
    detectable_ratio,
    event_average,
    holm,
    lagged_correlation,
    rank_test,
    risk_ratio,
)
from .cpufreq import FrequencyAnalysis, Transitions, analyse_frequency
from .defaults import DEFAULT_C0_EDGES, DEFAULT_MIN_DWELL, DEFAULT_THRESHOLD
from .turbostat import TimelineCounters, timeline_counters

TRANSITION = "transition"
SMI = "smi"
C0_PREFIX = "c0 "
QUANTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("max", 100.0))
POWER = 0.8


@dataclass(frozen=True)
class Exceedance:
    """Risk of exceeding one latency threshold inside vs outside a condition."""

    threshold_ns: float
    risk: RiskRatio
    p_holm: float
    share_of_spikes: float
    share_of_all: float
    detectable_ratio: float


@dataclass(frozen=True)
class ConditionTest:
    """Latency inside vs outside one condition, in one scope ("cpu N" or "all")."""

    scope: str
    cpu: int | None
    condition: str
    label: str
    n_in: int
    n_out: int
    quantiles_in_ns: Mapping[str, float]
    quantiles_out_ns: Mapping[str, float]
    rank: RankTest
    rank_p_holm: float
    exceedance: tuple[Exceedance, ...]


@dataclass(frozen=True)
class EventTrigger:
    """Event-triggered average of latency (ns) around one kind of event on one CPU."""

    cpu: int
    event: str
    average: EventAverage


@dataclass(frozen=True)
class LaggedLink:
    """Lagged rank correlation of latency with |Δf_eff| or with C0 residency on one CPU."""

    cpu: int
    other: str
    correlation: CrossCorrelation


@dataclass(frozen=True)
class SmiShare:
    """Spikes (latency above the threshold) that coincide with an SMI, and the share caused by it.

    With RR the risk ratio of a spike in an interval with an SMI against one without,
    ``attributable_among_coinciding`` = (RR − 1)/RR is the share of the spikes *that coincide
    with an SMI* that the SMIs caused (the attributable fraction among the exposed), and
    ``attributable_fraction`` = ``spikes_with_smi``/``spikes`` · (RR − 1)/RR is the share of
    *all* spikes they caused (Miettinen's population attributable fraction).  Both are 0 when
    RR ≤ 1.
    """

    scope: str
    threshold_ns: float
    spikes: int
    spikes_with_smi: int
    share_of_wakeups_with_smi: float
    attributable_fraction: float
    attributable_among_coinciding: float


@dataclass(frozen=True)
class Correlation:
    """Everything :func:`correlate` found; ``verdicts`` says it in plain words."""

    available: bool
    reason: str
    alpha: float
    window: int
    relative_threshold: float
    min_dwell: int
    thresholds_ns: tuple[float, ...]
    attributed: Mapping[str, bool]
    verdicts: tuple[str, ...]
    notes: tuple[str, ...]
    tests: tuple[ConditionTest, ...] = ()
    event_averages: tuple[EventTrigger, ...] = ()
    cross_correlations: tuple[LaggedLink, ...] = ()
    smi_shares: tuple[SmiShare, ...] = ()
    counter_quality: tuple[Mapping[str, Any], ...] = ()
    frequency: FrequencyAnalysis | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; NaN and infinities become null."""
        return jsonable(asdict(self))


def correlate_dataset(dataset: Dataset, **params: Any) -> tuple[Correlation, CounterSet]:
    """Read the counters of ``dataset`` and :func:`correlate` them; returns the series too (for plots).

    Keyword arguments are those of :func:`correlate` plus ``read_k`` (see
    :func:`jitterscope.counters.derive_counters`) and ``threads`` (thread indices to
    analyse; default all, see :func:`jitterscope.counters.read_counters`).
    """
    threads = params.pop("threads", None)
    if threads is not None:
        known = {t.thread for t in dataset.metadata.threads}
        unknown = sorted(set(threads) - known)
        if unknown:
            raise AnalysisError(f"no thread {', '.join(map(str, unknown))} in {dataset.path}; "
                                f"threads are {', '.join(map(str, sorted(known)))}")
    counters = read_counters(dataset, read_k=params.pop("read_k", 10.0), threads=threads)
    if dataset.metadata.timeline is not None and not any(s.has_frequency for s in counters.series):
        timeline = timeline_counters(dataset, relative_threshold=params.get("relative_threshold", DEFAULT_THRESHOLD),
                                     threads=threads)
        if timeline is not None and timeline.counters.available:
            return correlate(timeline.counters, dataset.metadata.environment, timeline=timeline,
                             **params), timeline.counters
    return correlate(counters, dataset.metadata.environment, **params), counters


def correlate(
    counters: CounterSet,
    environment: Mapping[str, Any] | None = None,
    *,
    thresholds_ns: Sequence[float] | None = None,
    window: int = 2,
    alpha: float = 0.01,
    relative_threshold: float = DEFAULT_THRESHOLD,
    min_dwell: int = DEFAULT_MIN_DWELL,
    c0_edges: Sequence[float] = DEFAULT_C0_EDGES,
    max_lag: int = 10,
    n_surrogates: int = 200,
    seed: int = 0,
    timeline: TimelineCounters | None = None,
) -> Correlation:
    """Attribute latency spikes to frequency transitions, SMIs and idle depth.

    Parameters
    ----------
    counters : CounterSet
        From :func:`jitterscope.counters.read_counters`.
    environment : Mapping or None
        The dataset's environment metadata (for the cpufreq claim check).
    thresholds_ns : sequence of float or None
        Exceedance thresholds in ns; the first is the one the verdicts use.  Default:
        the 99th percentile of all wake-ups' latency.
    window : int
        A wake-up is near a transition when within ±window wake-ups (periods) of it.
    alpha : float
        Family-wise error rate (Holm) for attribution.
    relative_threshold, min_dwell : float, int
        Transition detection, see :func:`jitterscope.cpufreq.detect_transitions`.
    c0_edges : sequence of float
        Bin edges of C0 residency (fractions, increasing, from 0 to 1).
    max_lag : int
        Lags (wake-ups) of the event-triggered averages and cross-correlations.
    n_surrogates : int
        Circular-shift surrogates per event-triggered average (0 skips the bands).
    seed : int
        Seed of the surrogate shifts (results are reproducible).
    timeline : TimelineCounters or None
        When ``counters`` come from a turbostat timeline (:func:`jitterscope.timeline_join.timeline_counters`):
        a wake-up is near a transition when it lies in either turbostat interval of a frequency change, the
        event-triggered averages and lagged correlations (wake-up resolution) are skipped, and the verdicts
        start with the interval resolution.

    Returns
    -------
    Correlation
        With ``available`` False and the reason in ``verdicts`` when no counters were recorded.

    Raises
    ------
    AnalysisError
        Bad parameters, or no wake-ups at all.
    """
    _check_params(thresholds_ns, window, alpha, c0_edges, max_lag, n_surrogates)
    params = {"window": window, "alpha": alpha, "relative_threshold": relative_threshold, "min_dwell": min_dwell,
              "c0_edges": list(c0_edges), "max_lag": max_lag, "n_surrogates": n_surrogates, "seed": seed,
              "frequency_source": "counters" if timeline is None else f"turbostat timeline {timeline.file}",
              "resolution_s": None if timeline is None else timeline.interval_s}
    series = counters.series
    if not series or sum(s.seq.size for s in series) == 0:
        raise AnalysisError("no wake-ups to correlate")
    latency = np.concatenate([s.latency_ns for s in series]).astype(np.float64)
    thresholds = tuple(float(t) for t in thresholds_ns) if thresholds_ns else (default_threshold(latency),)
    base = dict(alpha=alpha, window=window, relative_threshold=relative_threshold, min_dwell=min_dwell,
                thresholds_ns=thresholds, counter_quality=tuple(s.to_json() for s in series), params=params)
    if not counters.available:
        return Correlation(available=False, reason=counters.reason, attributed={}, verdicts=(counters.reason,),
                           notes=(), **base)
    frequency = analyse_frequency(counters, environment, relative_threshold=relative_threshold, min_dwell=min_dwell)
    by_thread = {t.thread: t for t in frequency.transitions}
    near = [None] * len(series) if timeline is None else list(timeline.near_transition)
    groups = [_groups(s, by_thread.get(s.thread), window, c0_edges, n) for s, n in zip(series, near, strict=True)]
    tests = _adjust(_tests(series, groups, thresholds, window, c0_edges, alpha))
    rng = np.random.default_rng(seed)
    triggers = () if timeline is not None else tuple(
        t for s in series for t in _event_triggers(s, by_thread.get(s.thread), max_lag, window, n_surrogates, rng))
    links = () if timeline is not None else tuple(link for s in series for link in _links(s, max_lag))
    shares = _smi_shares(series, thresholds[0])
    attributed = _attributed(tests, alpha)
    verdicts = _verdicts(tests, attributed, series, frequency, shares, thresholds[0], alpha, window,
                         None if timeline is None else timeline.smi_total)
    if timeline is not None:
        verdicts = (timeline.resolution_note, *verdicts)
    notes = tuple(c.message for c in frequency.claims) + tuple(_quality_note(s) for s in series)
    return Correlation(available=True, reason="", attributed=attributed, verdicts=verdicts, notes=notes, tests=tests,
                       event_averages=triggers, cross_correlations=links, smi_shares=shares, frequency=frequency,
                       **base)


def default_threshold(latency_ns: np.ndarray) -> float:
    """The spike threshold used when none is given: min(p99, median + 10·1.4826·MAD).

    The 99th percentile, unless more than 1 % of wake-ups lie beyond ten robust
    standard deviations above the median (planted or real spikes): then that
    robust limit, so that all such spikes count as spikes.
    """
    values = np.asarray(latency_ns, dtype=np.float64)
    median = float(np.median(values))
    mad = float(np.median(np.abs(values - median)))
    p99 = float(np.percentile(values, 99))
    return min(p99, median + 10 * 1.4826 * mad) if mad > 0 else p99


def _check_params(thresholds: Sequence[float] | None, window: int, alpha: float, edges: Sequence[float],
                  max_lag: int, n_surrogates: int) -> None:
    if window < 0:
        raise AnalysisError(f"window {window} is negative; give the ± wake-ups around a transition, e.g. 2")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha {alpha} is not in (0, 1); use e.g. 0.01")
    if thresholds is not None and any(not math.isfinite(t) for t in thresholds):
        raise AnalysisError("latency thresholds must be finite numbers of ns")
    e = np.asarray(edges, dtype=np.float64)
    if e.size < 2 or np.any(np.diff(e) <= 0) or e[0] < 0 or e[-1] > 1:
        raise AnalysisError(f"C0 bin edges {list(edges)} must increase from ≥ 0 to ≤ 1, e.g. 0,0.05,0.5,1")
    if max_lag < 1 or n_surrogates < 0:
        raise AnalysisError("max lag must be ≥ 1 and the surrogate count ≥ 0")


def _near(series: CounterSeries, transitions: Transitions | None, window: int) -> np.ndarray:
    """Rows within ±window wake-ups (by seq) of a transition."""
    if transitions is None or transitions.count == 0:
        return np.zeros(series.seq.size, dtype=bool)
    marks = np.sort(np.asarray(transitions.seq, dtype=np.int64))
    right = np.clip(np.searchsorted(marks, series.seq), 0, marks.size - 1)
    left = np.clip(right - 1, 0, marks.size - 1)
    distance = np.minimum(np.abs(series.seq - marks[right]), np.abs(series.seq - marks[left]))
    return distance <= window


def _groups(series: CounterSeries, transitions: Transitions | None, window: int,
            edges: Sequence[float], near: np.ndarray | None = None) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Condition -> (label, inside mask, outside mask), each away from the other events.

    ``near`` (turbostat timeline): the wake-ups near a transition, instead of ±window around detected ones.
    """
    label = "in a turbostat interval on either side of a frequency change"
    if near is None:
        near = _near(series, transitions, window)
        periods = "period" if window == 1 else "periods"
        label = f"within {window} {periods} of a frequency transition"
        transitions_found = transitions is not None and transitions.count > 0
        known = np.ones(series.seq.size, dtype=bool)
    else:
        transitions_found = bool(near.any())
        known = np.isfinite(series.f_eff_hz)  # wake-ups outside the turbostat timeline are neither
    smi_known = np.isfinite(series.smi_delta)
    smi = smi_known & (np.nan_to_num(series.smi_delta) > 0)
    out: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    if transitions_found:
        out[TRANSITION] = (label, near & ~smi, known & ~near & ~smi)
    if smi.any():
        out[SMI] = ("in an interval with an SMI", smi & ~near, smi_known & ~smi & ~near)
    if series.has_c0:
        eligible = np.isfinite(series.c0) & ~smi & ~near
        for low, high in itertools.pairwise(edges):
            last = high == edges[-1]
            inside = eligible & (series.c0 >= low) & ((series.c0 <= high) if last else (series.c0 < high))
            label = f"after an interval with C0 residency {low:.0%}–{high:.0%}"
            out[f"{C0_PREFIX}{low:g}-{high:g}"] = (label, inside, eligible & ~inside)
    return out


def _tests(series: Sequence[CounterSeries], groups: Sequence[Mapping[str, tuple[str, np.ndarray, np.ndarray]]],
           thresholds: Sequence[float], window: int, edges: Sequence[float], alpha: float) -> list[ConditionTest]:
    raw: list[ConditionTest] = []
    conditions = sorted({c for g in groups for c in g}, key=_condition_order)
    for condition in conditions:
        pooled_in, pooled_out, label = [], [], ""
        for s, g in zip(series, groups, strict=True):
            if condition not in g:
                continue
            label, inside, outside = g[condition]
            latency = s.latency_ns.astype(np.float64)
            pooled_in.append(latency[inside])
            pooled_out.append(latency[outside])
            raw.extend(_test(f"cpu {s.cpu}", s.cpu, condition, label, latency[inside], latency[outside], thresholds))
        if len(pooled_in) > 1:
            raw.extend(_test("all", None, condition, label, np.concatenate(pooled_in), np.concatenate(pooled_out),
                             thresholds))
    # the detectable ratio is at Bonferroni's level alpha/m, the first step of Holm's procedure
    m = sum(len(t.exceedance) for t in raw)
    return [replace(t, exceedance=tuple(replace(e, detectable_ratio=detectable_ratio(
        (e.risk.exceed_in + e.risk.exceed_out) / (t.n_in + t.n_out), t.n_in, t.n_out, alpha=alpha / max(m, 1),
        power=POWER)) for e in t.exceedance)) for t in raw]


def _test(scope: str, cpu: int | None, condition: str, label: str, inside: np.ndarray, outside: np.ndarray,
          thresholds: Sequence[float]) -> list[ConditionTest]:
    if inside.size == 0 or outside.size == 0:
        return []
    rows = []
    for threshold in thresholds:
        a, c = int(np.sum(inside > threshold)), int(np.sum(outside > threshold))
        risk = risk_ratio(a, inside.size, c, outside.size)
        rows.append(Exceedance(threshold_ns=threshold, risk=risk, p_holm=float("nan"),
                               share_of_spikes=a / (a + c) if a + c else float("nan"),
                               share_of_all=inside.size / (inside.size + outside.size),
                               detectable_ratio=float("nan")))
    return [ConditionTest(scope=scope, cpu=cpu, condition=condition, label=label, n_in=int(inside.size),
                          n_out=int(outside.size), quantiles_in_ns=_quantiles(inside),
                          quantiles_out_ns=_quantiles(outside), rank=rank_test(inside, outside),
                          rank_p_holm=float("nan"), exceedance=tuple(rows))]


def _quantiles(values: np.ndarray) -> dict[str, float]:
    return {name: float(v) for (name, _), v in zip(QUANTILES, np.percentile(values, [q for _, q in QUANTILES]),
                                                   strict=True)}


def _adjust(tests: list[ConditionTest]) -> tuple[ConditionTest, ...]:
    """Holm over every Fisher test, and separately over every rank test."""
    fisher = holm([e.risk.p_value for t in tests for e in t.exceedance])
    ranks = holm([t.rank.p_value for t in tests])
    out, k = [], 0
    for i, t in enumerate(tests):
        rows = []
        for e in t.exceedance:
            rows.append(replace(e, p_holm=float(fisher[k])))
            k += 1
        out.append(replace(t, exceedance=tuple(rows), rank_p_holm=float(ranks[i])))
    return tuple(out)


def _attributed(tests: Sequence[ConditionTest], alpha: float) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for t in tests:
        hit = any(e.p_holm < alpha and e.risk.ratio > 1 for e in t.exceedance)
        found[t.condition] = found.get(t.condition, False) or hit
    return found


def _event_triggers(series: CounterSeries, transitions: Transitions | None, max_lag: int, window: int,
                    n_surrogates: int, rng: np.random.Generator) -> list[EventTrigger]:
    latency = series.latency_ns.astype(np.float64)
    events = []
    if transitions is not None and transitions.count:
        events.append((TRANSITION, np.asarray(transitions.index, dtype=np.int64)))
    smi = np.flatnonzero(np.nan_to_num(series.smi_delta) > 0)
    if smi.size:
        events.append((SMI, smi))
    out = []
    for name, positions in events:
        if latency.size <= 2 * (2 * max_lag + 1):
            continue
        average = event_average(latency, positions, max_lag=max_lag, peak_halfwidth=window,
                                n_surrogates=n_surrogates, rng=rng)
        out.append(EventTrigger(cpu=series.cpu, event=name, average=average))
    return out


def _links(series: CounterSeries, max_lag: int) -> list[LaggedLink]:
    latency = series.latency_ns.astype(np.float64)
    out = []
    if series.has_frequency:
        change = np.full(latency.size, np.nan)
        change[1:] = np.abs(np.diff(series.f_eff_hz))
        out.append(LaggedLink(series.cpu, "|Δf_eff|", lagged_correlation(latency, change, max_lag=max_lag)))
    if series.has_c0:
        out.append(LaggedLink(series.cpu, "C0 residency", lagged_correlation(latency, series.c0, max_lag=max_lag)))
    return out


def _smi_shares(series: Sequence[CounterSeries], threshold: float) -> tuple[SmiShare, ...]:
    rows = []
    scopes = [(f"cpu {s.cpu}", [s]) for s in series if s.has_smi]
    if len(scopes) > 1:
        scopes.append(("all", [s for s in series if s.has_smi]))
    for scope, members in scopes:
        known = [np.isfinite(s.smi_delta) for s in members]
        latency = np.concatenate([s.latency_ns[k] for s, k in zip(members, known, strict=True)])
        smi = np.concatenate([s.smi_delta[k] > 0 for s, k in zip(members, known, strict=True)])
        spike = latency > threshold
        n_spikes, with_smi = int(spike.sum()), int((spike & smi).sum())
        among = 0.0
        if with_smi and (~smi).any():
            ratio = (with_smi / smi.sum()) / max((n_spikes - with_smi) / (~smi).sum(), 1e-300)
            among = (ratio - 1) / ratio if ratio > 1 else 0.0
        fraction = with_smi / n_spikes * among if n_spikes else 0.0
        rows.append(SmiShare(scope=scope, threshold_ns=threshold, spikes=n_spikes, spikes_with_smi=with_smi,
                             share_of_wakeups_with_smi=float(smi.mean()), attributable_fraction=float(fraction),
                             attributable_among_coinciding=float(among)))
    return tuple(rows)


def _verdicts(tests: Sequence[ConditionTest], attributed: Mapping[str, bool], series: Sequence[CounterSeries],
              frequency: FrequencyAnalysis, shares: Sequence[SmiShare], threshold: float, alpha: float,
              window: int, smi_total: int | None = None) -> tuple[str, ...]:
    """Transitions first, then SMIs (and the share of spikes they explain), then idle depth."""
    primary = [t for t in tests if t.exceedance]

    def sentence(condition: str) -> str:
        mine = [t for t in primary if t.condition == condition]
        return _sentence(_pick(mine, alpha, attributed[condition]), attributed[condition], threshold)

    lines = []
    if not any(s.has_frequency for s in series):
        lines.append(f"Frequency transitions: no effective frequency measured ({_why_no_frequency(series)}).")
    elif TRANSITION in attributed:
        lines.append(sentence(TRANSITION))
    else:
        lines.append(f"Frequency transitions: none detected on any CPU (relative threshold "
                     f"{frequency.transitions[0].relative_threshold:.0%}, minimum dwell "
                     f"{frequency.transitions[0].min_dwell} wake-ups), so no latency is attributed to them.")
    lines += [f"Claimed vs measured: {c.message.split(': ', 1)[1]}" + ("." if len(series) == 1 else f" (cpu {c.cpu}).")
              for c in frequency.claims if c.disagree]
    smi_count = smi_total if smi_total is not None else int(
        sum(np.nansum(np.where(s.smi_delta > 0, s.smi_delta, 0)) for s in series if s.has_smi))
    if not any(s.has_smi for s in series):
        lines.append("SMIs: SMI counter not recorded, so no latency can be attributed to SMIs.")
    elif SMI in attributed:
        lines.append(sentence(SMI))
        share = next((s for s in shares if s.scope == "all"), shares[0] if shares else None)
        if attributed[SMI] and share is not None and share.spikes:
            lines.append(_share_sentence(share, threshold))
    elif smi_count:
        where = f"±{window} wake-ups of" if smi_total is None else "the turbostat intervals around"
        lines.append(f"SMIs: {smi_count} counted, all within {where} frequency transitions, so their "
                     "effect cannot be told apart from the transitions'.")
    else:
        lines.append("SMIs: none counted during the capture, so none of the latency is due to SMIs.")
    idle = sorted((c for c in attributed if c.startswith(C0_PREFIX)), key=_condition_order)
    shown = [c for c in idle if attributed[c]]
    if idle and not shown:
        # one line for idle depth when no bin stands out: the bin closest to significance
        shown = [min(idle, key=lambda c: min(t.exceedance[0].p_holm for t in primary if t.condition == c))]
    lines += [sentence(c) for c in shown]
    return tuple(lines)


def _share_sentence(share: SmiShare, threshold: float) -> str:
    """How many of the spikes that coincide with an SMI the SMIs caused, and their share of all spikes."""
    caused = share.attributable_among_coinciding * share.spikes_with_smi
    return (f"{share.spikes_with_smi} of {share.spikes} wake-ups later than {format_us(threshold)} coincide "
            f"with an SMI; about {caused:.0f} of those {share.spikes_with_smi} "
            f"({format_percent(share.attributable_among_coinciding)}) "
            f"are attributable to SMIs, {format_percent(share.attributable_fraction)} of all wake-ups later than "
            f"{format_us(threshold)}.")


def _why_no_frequency(series: Sequence[CounterSeries]) -> str:
    missing = {name: why for s in series for name, why in s.quality.missing.items() if name in ("aperf", "mperf")}
    if missing:
        return "; ".join(f"{name}: {why}" for name, why in sorted(missing.items()))
    counts: dict[str, int] = {}
    for s in series:
        for why, count in s.quality.discarded.items():
            counts[why] = counts.get(why, 0) + count
    rows = sum(s.quality.rows for s in series)
    if not counts:
        return "APERF/MPERF unusable"
    worst = max(counts, key=lambda k: counts[k])
    return f"APERF/MPERF deltas discarded, mostly for {worst}: {counts[worst]} of {rows} wake-ups"


def _pick(tests: Sequence[ConditionTest], alpha: float, attributed: bool) -> ConditionTest:
    """The test a verdict quotes: the pooled one unless only one CPU is significant."""
    pooled = [t for t in tests if t.scope == "all"]
    if attributed:
        significant = [t for t in tests if t.exceedance[0].p_holm < alpha and t.exceedance[0].risk.ratio > 1]
        if pooled and pooled[0] in significant:
            return pooled[0]
        if significant:
            return min(significant, key=lambda t: t.exceedance[0].p_holm)
        return min(tests, key=lambda t: min(e.p_holm for e in t.exceedance))
    return pooled[0] if pooled else min(tests, key=lambda t: t.exceedance[0].p_holm)


def _sentence(test: ConditionTest, attributed: bool, threshold: float) -> str:
    e = test.exceedance[0]
    where = "" if test.scope == "all" else f" on {test.scope}"
    numbers = (f"risk ratio {e.risk.ratio:.1f}, 95% CI {e.risk.ci_low:.1f}–{e.risk.ci_high:.1f}, "
               f"{format_p(e.p_holm)} Holm-adjusted; Cliff's delta {test.rank.cliffs_delta:+.2f}")
    if e.risk.exceed_in + e.risk.exceed_out == 0:
        return (f"No wake-up{where} was later than {format_us(e.threshold_ns)}, so nothing can be attributed "
                f"to wake-ups {test.label}; choose a lower --threshold-us to test smaller delays.")
    share = format_percent(e.share_of_spikes)
    if attributed:
        return (f"{share} of wake-ups later than {format_us(e.threshold_ns)} fall {test.label}{where}, against "
                f"{format_percent(e.share_of_all)} of all wake-ups ({numbers}).")
    power = ("no risk ratio would have been detectable" if not math.isfinite(e.detectable_ratio)
             else f"a risk ratio of {e.detectable_ratio:.1f} or more would have been detected with "
                  f"{POWER:.0%} power")
    return (f"No link found{where} between wake-ups later than {format_us(e.threshold_ns)} and wake-ups "
            f"{test.label}: {share} of them fall there, against {format_percent(e.share_of_all)} of all wake-ups "
            f"({numbers}); {power}.")


def _quality_note(series: CounterSeries) -> str:
    q = series.quality
    dropped = "; ".join(f"{count} {why}" for why, count in q.discarded.items())
    wraps = ", ".join(f"{count} {name} wrap{'s' if count != 1 else ''}" for name, count in q.wraps_corrected.items())
    text = f"cpu {series.cpu} (thread {series.thread}): {q.valid} of {q.rows} counter deltas usable"
    text += f"; discarded: {dropped}" if dropped else ""
    text += f"; corrected {wraps}" if wraps else ""
    return text


def _condition_order(condition: str) -> tuple[int, str]:
    return ({TRANSITION: 0, SMI: 1}.get(condition, 2), condition)
