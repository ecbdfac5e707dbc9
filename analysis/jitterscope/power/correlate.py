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
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..derive import (
    CounterQuality,
    CounterScan,
    CounterSeries,
    CounterSet,
    iter_counter_batches,
    require_wakeups,
    scan_counters,
    unavailable_reason,
)
from ..errors import AnalysisError
from ..format import format_count, format_p, format_percent, format_ratio, format_us, jsonable
from ..summary import HistogramResult, KeyedLatencyHistograms, LatencyHistogram
from .association import (
    CrossCorrelation,
    EventAverage,
    RankTest,
    RiskRatio,
    detectable_ratio,
    holm,
    rank_test_binned,
    risk_ratio,
)
from .cpufreq import ClaimCheck, FrequencyAnalysis, claim_check, claimed_hz
from .defaults import DEFAULT_C0_EDGES, DEFAULT_MIN_DWELL, DEFAULT_THRESHOLD
from .stream import (
    C0_SCALE,
    RELATIVE_ERROR,
    ConditionClasses,
    ConditionCounts,
    CounterProfile,
    DisplayRows,
    EventBlocks,
    LaggedRanks,
    ProfileResult,
    RankSample,
    SmiCounts,
    ThreadFacts,
    run_per_thread,
)
from .turbostat import TimelineCounters, TimelineStream, TurbostatTimeline, decode_timeline

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


CHUNK_ROWS = 1 << 18
"""An in-memory series goes through the streaming pass in chunks of this many rows."""
METHODS = {
    "exceedance": "exact counts; risk ratio with Katz CI, Fisher's exact p",
    "quantiles": "HDR histogram, relative error 0.1 %, max exact",
    "rank_test": "Mann-Whitney U from histograms; exact U within ±rank.u_bound (pairs in one bucket as ties)",
    "lagged_correlation": "Spearman from histogram mid-ranks (values in one bucket share a rank: latency and "
                          "|Δf_eff| in 0.1 % buckets, C0 residency in 1 ppm buckets), over every wake-up up to "
                          "1,048,576 per thread (2,097,152 over all threads), beyond that over a seeded uniform "
                          "sample of 16,384-wake-up blocks of that many (n and the null band are the sample's)",
    "event_average": "circular-shift surrogates within blocks of at least 1,048,576 wake-ups "
                     "(the whole series when shorter than twice that)",
}


def correlate_dataset(dataset: Dataset, **params: Any) -> tuple[Correlation, CounterSet]:
    """Stream the counters of ``dataset`` through :func:`correlate`'s pass; returns figure rows too.

    Keyword arguments are those of :func:`correlate` plus ``read_k`` (see
    :func:`jitterscope.derive.derive_counters`) and ``threads`` (thread indices to
    analyse; default all).  Memory is bounded whatever the dataset's size: a scan reads the columns
    the derivation needs of the whole thread first (``read_cycles``; the counters' widths come from the
    row groups' statistics where they can), then one pass (:mod:`.stream`) reads everything one row group
    at a time, the threads' derivation and accumulators in parallel (:func:`~.stream.run_per_thread`).  The
    :class:`CounterSet` returned holds, per thread, the rows kept for figures
    (:class:`~.stream.DisplayRows`: every row up to 200,000 per thread, else the latest-latency one
    of each run of k).  Without ``thresholds_ns`` the spike threshold is the rule of
    :func:`default_threshold` on the pooled HDR histogram of latency (within 0.1 %).  A dataset
    joined with a turbostat timeline is correlated in memory (:func:`correlate` with ``timeline``).
    """
    # power asks whether a late wake-up coincides with a low frequency, a deep C-state or an SMI read at that
    # wake-up; a busy loop never sleeps (no C-state, no wake-up): its SMIs per interruption are the summary's causes
    require_wakeups(dataset, "power's question (is a late wake-up explained by the frequency, C-state or SMIs "
                             "read at it? a busy loop neither sleeps nor wakes; its SMIs are in the summary's causes)")
    threads = params.pop("threads", None)
    if threads is not None:
        known = {t.thread for t in dataset.metadata.threads}
        unknown = sorted(set(threads) - known)
        if unknown:
            raise AnalysisError(f"no thread {', '.join(map(str, unknown))} in {dataset.path}; "
                                f"threads are {', '.join(map(str, sorted(known)))}")
    read_k = params.pop("read_k", 10.0)
    scan = scan_counters(dataset, read_k=read_k, threads=threads)
    timeline = decode_timeline(dataset.metadata) if dataset.metadata.timeline is not None else None
    if timeline is not None and not _may_have_frequency(scan):
        return _correlate_timeline(dataset, timeline, threads, params)
    result, display = _correlate_chunks(
        lambda: iter_counter_batches(dataset, scan, read_k=read_k), dataset.metadata.environment,
        rows={t.thread: t.rows for t in scan.threads},
            reason=lambda facts: unavailable_reason(facts, scan.missing, scan.meta_counters), **params)
    if timeline is not None and not (result.frequency and result.frequency.transitions):
        return _correlate_timeline(dataset, timeline, threads, params)  # the counters gave no frequency after all
    return result, CounterSet(series=tuple(display), available=result.available, reason=result.reason)


def _may_have_frequency(scan: CounterScan) -> bool:
    """Can the counters give an effective frequency (APERF and MPERF recorded and counting, a TSC rate)?"""
    if not {"aperf", "mperf"} <= set(scan.present):
        return False
    return any(t.tsc_hz and not {"aperf", "mperf"} & set(t.all_zero) for t in scan.threads)


def _correlate_timeline(dataset: Dataset, timeline: TurbostatTimeline, threads: Sequence[int] | None,
                        params: dict[str, Any]) -> tuple[Correlation, CounterSet]:
    """The dataset's wake-ups against its turbostat timeline, streamed (:class:`~.turbostat.TimelineStream`)."""
    stream = TimelineStream(dataset, timeline, relative_threshold=params.get("relative_threshold", DEFAULT_THRESHOLD),
                            threads=threads)
    rows = {t.thread: t.samples for t in dataset.metadata.threads if threads is None or t.thread in threads}
    no_values = "the turbostat timeline has no Bzy_MHz or SMI values for the captured CPUs"
    result, display = _correlate_chunks(
        stream.batches, dataset.metadata.environment, rows=rows, timeline=stream,
        near_of=lambda chunk, start: stream.near(chunk), reason=lambda facts: no_values,
        available_of=lambda facts: any(f.has_frequency or f.has_smi for f in facts), **params)
    return result, CounterSet(series=tuple(display), available=result.available, reason=result.reason)


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
        :func:`default_threshold` of all wake-ups' latency.
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

    Notes
    -----
    The series go through the same streaming, mergeable accumulators as
    :func:`correlate_dataset` (:mod:`.stream`), in chunks of :data:`CHUNK_ROWS`; ``params["methods"]``
    says which statistics are exact and which are bounded approximations.
    """
    _check_params(thresholds_ns, window, alpha, c0_edges, max_lag, n_surrogates)
    series = counters.series
    if not series or sum(s.seq.size for s in series) == 0:
        raise AnalysisError("no wake-ups to correlate")
    method = "given"
    if not thresholds_ns:
        thresholds_ns = (default_threshold(np.concatenate([s.latency_ns for s in series]).astype(np.float64)),)
        method = "exact"
    near = {} if timeline is None else {s.thread: n for s, n in zip(series, timeline.near_transition, strict=True)}

    def near_of(chunk: CounterSeries, start: int) -> np.ndarray:
        return near[chunk.thread][start:start + chunk.seq.size]

    def batches() -> Iterator[tuple[int, Callable[[], Iterator[CounterSeries]]]]:
        for s in series:
            yield s.thread, lambda s=s: (_rows(s, start, start + CHUNK_ROWS)
                                         for start in range(0, max(s.seq.size, 1), CHUNK_ROWS))

    result, _ = _correlate_chunks(
        batches, environment, rows={s.thread: int(s.seq.size) for s in series}, thresholds_ns=thresholds_ns,
        window=window, alpha=alpha,
        relative_threshold=relative_threshold, min_dwell=min_dwell, c0_edges=c0_edges, max_lag=max_lag,
        n_surrogates=n_surrogates, seed=seed, timeline=timeline, near_of=near_of if timeline is not None else None,
        available=counters.available, reason=lambda facts: counters.reason, threshold_method=method)
    return result


def _rows(series: CounterSeries, start: int, stop: int) -> CounterSeries:
    """Rows [start, stop) of a series (its quality counted once, on the first chunk)."""
    if start == 0 and stop >= series.seq.size:
        return series
    q = series.quality if start == 0 else CounterQuality(rows=0, valid=0, discarded={},
                                                            counter_bits=series.quality.counter_bits,
                                                            read_cycles_limit=series.quality.read_cycles_limit,
                                                            all_zero=series.quality.all_zero,
                                                            missing=series.quality.missing)
    cut = slice(start, stop)
    return replace(series, seq=series.seq[cut], expected_ns=series.expected_ns[cut],
                   latency_ns=series.latency_ns[cut], f_eff_hz=series.f_eff_hz[cut], c0=series.c0[cut],
                   smi_delta=series.smi_delta[cut], quality=q)


def _correlate_chunks(
    batches: Callable[[], Iterable[tuple[int, Callable[[], Iterable[CounterSeries]]]]],
    environment: Mapping[str, Any] | None,
    *,
    rows: Mapping[int, int],
    thresholds_ns: Sequence[float] | None = None,
    window: int = 2,
    alpha: float = 0.01,
    relative_threshold: float = DEFAULT_THRESHOLD,
    min_dwell: int = DEFAULT_MIN_DWELL,
    c0_edges: Sequence[float] = DEFAULT_C0_EDGES,
    max_lag: int = 10,
    n_surrogates: int = 200,
    seed: int = 0,
    timeline: TimelineCounters | TimelineStream | None = None,
    near_of: Callable[[CounterSeries, int], np.ndarray] | None = None,
    available: bool | None = None,
    available_of: Callable[[Sequence[ThreadFacts]], bool] | None = None,
    reason: Callable[[Sequence[ThreadFacts]], str] | None = None,
    threshold_method: str = "HDR histogram (within 0.1 %)",
) -> tuple[Correlation, list[CounterSeries]]:
    """One streaming pass over ``batches()``, and the verdicts.

    ``batches()`` yields ``(thread, derive)``: ``derive()`` gives the next chunks of that thread, in
    order; the threads' work runs in parallel (:func:`~.stream.run_per_thread`), each thread's in order.
    ``rows``: each thread's wake-ups (from the scan), for the figure rows and the rank sample.  With a
    ``timeline`` (in memory, or streamed), ``near_of(chunk, first_row)`` gives a chunk's wake-ups near a
    frequency change (turbostat's resolution).
    ``available`` None: decided from the counters seen (a usable C0 or SMI series); ``reason``
    says why none is usable.  Everything that depends on the whole thread (its transitions, the pooled
    threshold, the ranks) is settled as the pass goes (:class:`_ThreadPass`) or at its end.
    """
    _check_params(thresholds_ns, window, alpha, c0_edges, max_lag, n_surrogates)
    given = tuple(float(t) for t in thresholds_ns) if thresholds_ns else None
    passes: dict[int, _ThreadPass] = {}

    def handle(chunk: CounterSeries) -> None:  # runs in the chunk's thread's worker
        tp = passes.get(chunk.thread)
        if tp is None:
            profile = CounterProfile(chunk.thread, chunk.cpu, relative_threshold=relative_threshold,
                                     min_dwell=min_dwell, claimed_hz=claimed_hz(environment, chunk.cpu),
                                     tolerance=relative_threshold)
            tp = passes[chunk.thread] = _ThreadPass(profile, rows.get(chunk.thread, 0), given, window, c0_edges,
                                                    max_lag, n_surrogates, seed, timeline, near_of, len(rows))
        tp.update(chunk)

    run_per_thread(batches(), handle)
    if not passes:
        raise AnalysisError("no wake-ups to correlate")
    if isinstance(timeline, TimelineStream):
        timeline.check_overlap()
    ordered = [passes[t] for t in sorted(passes)]
    if len(ordered) > 1:  # each thread's last work (its held rows, its rank sample) is its own: in parallel
        with ThreadPoolExecutor(max_workers=min(len(ordered), os.cpu_count() or 1)) as pool:
            list(pool.map(_ThreadPass.finish, ordered))
    else:
        for tp in ordered:
            tp.finish()
    profiled = [tp.profiled for tp in ordered]
    facts = [p.facts for p in profiled]
    if given:
        thresholds = given
        method = threshold_method if threshold_method in ("exact", "given") else "given"
    else:
        pooled = LatencyHistogram(RELATIVE_ERROR)
        for p in profiled:
            pooled.merge(p.latency_histogram)
        # at the top of its bucket, so that the histograms count the wake-ups above it exactly
        thresholds, method = (float(pooled.bucket_top(_histogram_threshold(pooled.result()))),), threshold_method
        for tp in ordered:
            tp.count_exceedances(thresholds[0])
    params = {"window": window, "alpha": alpha, "relative_threshold": relative_threshold, "min_dwell": min_dwell,
              "c0_edges": list(c0_edges), "max_lag": max_lag, "n_surrogates": n_surrogates, "seed": seed,
              "frequency_source": "counters" if timeline is None else f"turbostat timeline {timeline.file}",
              "resolution_s": None if timeline is None else timeline.interval_s,
              "wakeups": int(sum(f.rows for f in facts)), "methods": {**METHODS, "default_threshold": method}}
    base = dict(alpha=alpha, window=window, relative_threshold=relative_threshold, min_dwell=min_dwell,
                thresholds_ns=thresholds, counter_quality=tuple(f.to_json() for f in facts), params=params)
    if available is None:
        available = available_of(facts) if available_of else any(f.has_c0 or f.has_smi for f in facts)
    if not available:
        why = reason(facts) if reason is not None else "counters not recorded"
        return Correlation(available=False, reason=why, attributed={}, verdicts=(why,), notes=(), **base), []
    frequency = FrequencyAnalysis(
        transitions=tuple(p.transitions for p in profiled if p.facts.has_frequency),
        time_in_frequency=tuple(p.time_in_frequency for p in profiled if p.facts.has_frequency),
        claims=tuple(_claim(p, environment, relative_threshold) for p in profiled if p.facts.has_frequency))
    tests = _adjust(_tests(ordered, alpha))
    triggers = tuple(t for tp in ordered for t in tp.triggers())
    links = tuple(link for tp in ordered for link in tp.links())
    shares = _smi_shares(ordered, thresholds[0])
    attributed = _attributed(tests, alpha)
    verdicts = _verdicts(tests, attributed, facts, frequency, shares, thresholds[0], alpha, window,
                         None if timeline is None else timeline.smi_total)
    if timeline is not None:
        verdicts = (timeline.resolution_note, *verdicts)
    notes = (tuple(c.message for c in frequency.claims) + tuple(_quality_note(f) for f in facts)
             + tuple(note for tp in ordered for note in tp.notes()))
    result = Correlation(available=True, reason="", attributed=attributed, verdicts=verdicts, notes=notes,
                         tests=tests, event_averages=triggers, cross_correlations=links, smi_shares=shares,
                         frequency=frequency, **base)
    return result, [d for d in (tp.display.result() for tp in ordered) if d is not None]


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


def _histogram_threshold(histogram: HistogramResult) -> float:
    """:func:`default_threshold`'s rule on a histogram (median, MAD and p99 within its bucket width)."""
    median, p99 = histogram.percentile(50), histogram.percentile(99)
    mad = histogram.mad_ns()
    return min(p99, median + 10 * 1.4826 * mad) if mad > 0 else p99


def _claim(profile: ProfileResult, environment: Mapping[str, Any] | None, tolerance: float) -> ClaimCheck:
    f = profile.frequency
    measured = tuple(v / 1e6 for v in f.percentiles([5, 50, 95]).values()) if f is not None else (None,) * 3
    return claim_check(profile.facts.thread, profile.facts.cpu, environment, measured_mhz=measured,
                       within=profile.frequency_within, count=profile.frequency_count,
                       transitions=profile.transitions.count, tolerance=tolerance)


WITHHELD_LIMIT = 1 << 20
"""Wake-ups per thread held back while a frequency jump near them may still become a transition; beyond, the
oldest are left out of the condition tests (and a note says how many)."""


def _near_seqs(seq: np.ndarray, marks: np.ndarray, window: int) -> np.ndarray:
    """Rows whose ``seq`` (increasing) lies within ±window of one of ``marks`` (sorted).

    Each mark covers one run of rows, found by bisection: work in the marks, not the rows (a chunk has
    hundreds of thousands of rows and a handful of marks)."""
    out = np.zeros(seq.size, dtype=bool)
    if marks.size == 0 or seq.size == 0:
        return out
    marks = marks[(marks >= seq[0] - window) & (marks <= seq[-1] + window)]
    if marks.size:
        starts = np.searchsorted(seq, marks - window, side="left")
        stops = np.searchsorted(seq, marks + window, side="right")
        edges = np.zeros(seq.size + 1, dtype=np.int64)
        np.add.at(edges, starts, 1)
        np.add.at(edges, stops, -1)
        out = np.cumsum(edges[:-1]) > 0
    return out


def _take(chunk: CounterSeries, rows: np.ndarray | slice) -> CounterSeries:
    return replace(chunk, seq=chunk.seq[rows], expected_ns=chunk.expected_ns[rows], latency_ns=chunk.latency_ns[rows],
                   f_eff_hz=chunk.f_eff_hz[rows], c0=chunk.c0[rows], smi_delta=chunk.smi_delta[rows])


class _ThreadPass:
    """The one pass over a thread: its profile (:class:`CounterProfile`) and everything conditioned on it.

    The conditions need each wake-up's distance to the transitions, which the profile's detector settles
    only as more rows come: a wake-up within ±window of a jump that may still become a transition (or of
    the last row seen) is held back until the detector decides (at most :data:`WITHHELD_LIMIT`), every
    other one is counted at once (the counts do not depend on order).  Event sums hold a pending
    transition's own sums until it is decided (:class:`~.stream.EventBlocks`).  The lagged ranks keep the
    rows of their sample (:class:`~.stream.RankSample`) and rank them at the end, on the whole thread's
    histograms.  Without given thresholds, exceedances come from the histograms once the pooled threshold
    is known (:meth:`count_exceedances`; exact, the threshold being a bucket's top).
    """

    def __init__(self, profile: CounterProfile, rows: int, thresholds: Sequence[float] | None, window: int,
                 edges: Sequence[float], max_lag: int, n_surrogates: int, seed: int,
                 timeline: TimelineCounters | TimelineStream | None,
                 near_of: Callable[[CounterSeries, int], np.ndarray] | None, threads: int = 1) -> None:
        self.profile, self.window, self.edges, self.max_lag = profile, window, edges, max_lag
        self.thresholds, self.timeline, self.near_of = thresholds, timeline, near_of
        self.any_near = False
        self.thread = profile.thread
        self.rows = 0
        self.labels: dict[str, str] = {}
        self.conditions = {TRANSITION: "", SMI: "", **{f"{C0_PREFIX}{low:g}-{high:g}": ""
                                                      for low, high in itertools.pairwise(edges)}}
        # latency per wake-up class (:class:`~.stream.ConditionClasses`); each condition's counts at the end
        self.classes = ConditionClasses(edges, transition=TRANSITION, smi=SMI,
                                        c0_bins=[c for c in self.conditions if c.startswith(C0_PREFIX)])
        self.by_class = KeyedLatencyHistograms(self.classes.size, RELATIVE_ERROR)
        self.exceed_by_class = np.zeros((len(thresholds or ()), self.classes.size), dtype=np.int64)
        self.counts: dict[str, ConditionCounts] = {}
        self.smi = SmiCounts()
        # without a given threshold the spike counts come from histograms at the end: of the rows with an SMI,
        # and of those without an SMI count (the rest of the profile's, which holds every row)
        self.smi_unknown, self.smi_with = LatencyHistogram(RELATIVE_ERROR), LatencyHistogram(RELATIVE_ERROR)
        self.events: EventBlocks | None = None
        self.averages: list[tuple[str, EventAverage]] = []
        self._final_transitions: np.ndarray | None = None
        if timeline is None and rows > 2 * (2 * max_lag + 1):
            kinds = [(TRANSITION, self._transition_rows), (SMI, None)]
            seeds = [np.random.SeedSequence([seed, self.thread, k]) for k in (0, 1)]
            self.events = EventBlocks(kinds, max_lag=max_lag, n_surrogates=n_surrogates, seeds=seeds)
        self.sample = RankSample(rows, np.random.SeedSequence([seed, self.thread, 2]), threads=threads)
        self.ranks: list[tuple[str, LaggedRanks]] = []
        self.display = DisplayRows(rows)
        self._withheld: list[CounterSeries] = []
        self._withheld_rows = 0
        self.left_out = 0
        self.profiled: ProfileResult | None = None

    @property
    def facts(self) -> ThreadFacts:
        assert self.profiled is not None, "finish() first"
        return self.profiled.facts

    def _transition_rows(self) -> tuple[np.ndarray, np.ndarray]:
        if self._final_transitions is not None:
            return self._final_transitions, np.zeros(0, dtype=np.int64)
        detector = self.profile.detector
        return (np.array([row for row, _ in detector.decided()], dtype=np.int64),
                np.array([row for row, _ in detector.pending()], dtype=np.int64))

    def update(self, chunk: CounterSeries) -> None:
        n = chunk.seq.size
        self.profile.update(chunk)
        if self.near_of is not None:
            near = self.near_of(chunk, self.rows)
            self.any_near = self.any_near or bool(near.any())
            self._count(chunk, near)
        else:
            self._settle(chunk)
        latency = chunk.latency_ns
        if self.thresholds:
            self.smi.update(latency, chunk.smi_delta, self.thresholds[0])
        else:  # the threshold is known at the end: the counts come from these two histograms then
            known, with_smi = self.profile.last_smi_known, self.profile.last_smi
            self.smi.known += int(known.sum())
            self.smi.with_smi += int(with_smi.sum())
            if not known.all():
                self.smi_unknown.update(latency[~known])
            self.smi_with.update(latency[with_smi])
        if self.events is not None:
            self.events.update(latency, self.rows + np.flatnonzero(self.profile.last_smi))
        if self.timeline is None:
            self._keep_sample(chunk)
        self.display.update(chunk)
        self.rows += n

    def _settle(self, chunk: CounterSeries) -> None:
        """Count the rows whose nearness to a transition is settled; hold back the others."""
        detector = self.profile.detector
        decided = np.array([seq for _, seq in detector.decided()], dtype=np.int64)
        pending = np.array([seq for _, seq in detector.pending()], dtype=np.int64)
        last = int(chunk.seq[-1])
        parts, self._withheld, self._withheld_rows = [*self._withheld, chunk], [], 0
        for part in parts:
            open_ = _near_seqs(part.seq, pending, self.window) | (part.seq > last - self.window)
            if not open_.any():
                self._count(part, _near_seqs(part.seq, decided, self.window))
                continue
            first_open = int(np.argmax(open_))
            if open_[first_open:].all():  # only the last rows wait (slices, no copies)
                settled, held = _take(part, slice(0, first_open)), _take(part, slice(first_open, None))
                if settled.seq.size:
                    self._count(settled, _near_seqs(settled.seq, decided, self.window))
            else:  # rows around a jump wait too: count the rest in place (a mask, not a copy of every column)
                held = _take(part, open_)
                self._count(part, _near_seqs(part.seq, decided, self.window), only=~open_)
            self._withheld.append(held)
            self._withheld_rows += held.seq.size
        while self._withheld_rows > WITHHELD_LIMIT:  # a frequency that flickers without settling: leave out
            oldest = self._withheld.pop(0)
            self._withheld_rows -= oldest.seq.size
            self.left_out += oldest.seq.size

    def _count(self, part: CounterSeries, near: np.ndarray, only: np.ndarray | None = None) -> None:
        """Add ``part``'s rows (those in ``only``, if given) to the latency of their class."""
        keys = self.classes.classes(part, near, turbostat=self.near_of is not None)
        latency = part.latency_ns
        if only is not None:
            keys, latency = keys[only], latency[only]
        self.by_class.update(latency, keys)
        for k, threshold in enumerate(self.thresholds or ()):
            self.exceed_by_class[k] += np.bincount(keys[latency > threshold], minlength=self.classes.size)

    def _condition_counts(self) -> dict[str, ConditionCounts]:
        """Each labelled condition's inside and outside: the union of its classes' histograms and counts."""
        out = {}
        for condition in self.conditions:
            if condition not in self.labels:
                continue
            inside, outside = self.classes.inside(condition), self.classes.outside(condition)
            out[condition] = ConditionCounts(
                tuple(self.thresholds or ()), inside=self.by_class.merged(inside),
                outside=self.by_class.merged(outside), exceed_in=self.exceed_by_class[:, inside].sum(axis=1),
                exceed_out=self.exceed_by_class[:, outside].sum(axis=1))
        return out

    def _keep_sample(self, chunk: CounterSeries) -> None:
        # |Δf_eff| of this chunk, from the previous chunk's last row on
        self.sample.keep(self.rows, chunk.latency_ns, self.profile.last_change, chunk.c0)

    def finish(self) -> None:
        """After the last chunk: the profile, the held-back rows, the labels, the C0 partition, the ranks."""
        profiled = self.profiled = self.profile.result()
        facts, transitions = profiled.facts, profiled.transitions
        self._final_transitions = np.asarray(transitions.index, dtype=np.int64)
        marks = np.asarray(transitions.seq, dtype=np.int64)
        for part in self._withheld:
            self._count(part, _near_seqs(part.seq, marks, self.window))
        self._withheld = []
        if self.timeline is None and transitions.count:
            periods = "period" if self.window == 1 else "periods"
            self.labels[TRANSITION] = f"within {self.window} {periods} of a frequency transition"
        elif self.timeline is not None and self.any_near:
            self.labels[TRANSITION] = "in a turbostat interval on either side of a frequency change"
        if facts.smi_events:
            self.labels[SMI] = "in an interval with an SMI"
        c0_bins = [c for c in self.conditions if c.startswith(C0_PREFIX)]
        if facts.has_c0:
            for (low, high), name in zip(itertools.pairwise(self.edges), c0_bins, strict=True):
                self.labels[name] = f"after an interval with C0 residency {low:.0%}–{high:.0%}"
        self.counts = self._condition_counts()
        if not facts.has_smi:
            self.smi = None
        if self.timeline is None:
            self._rank_sample(profiled)
        # the last block's event sums (surrogates and all) here, in the thread's own worker, not after the join
        self.averages = self.events.result(peak_halfwidth=self.window) if self.events is not None else []

    def _rank_sample(self, profiled: ProfileResult) -> None:
        facts = profiled.facts
        if facts.has_frequency and profiled.change is not None:
            self.ranks.append(("|Δf_eff|", LaggedRanks(profiled.latency_histogram, profiled.change,
                                                      max_lag=self.max_lag)))
        if facts.has_c0 and profiled.c0 is not None:
            self.ranks.append(("C0 residency", LaggedRanks(profiled.latency_histogram, profiled.c0,
                                                          max_lag=self.max_lag)))
        columns, breaks = self.sample.kept()
        if not self.ranks or not columns or columns[0].size == 0:
            return
        latency, change, c0 = columns
        c0 *= C0_SCALE  # ranked in ppm
        latency_ranks = self.ranks[0][1].x_ranks_of(latency)  # every pair's x is latency: ranked once
        for other, ranks in self.ranks:
            ranks.update_runs(latency_ranks, c0 if other == "C0 residency" else change, breaks)

    def count_exceedances(self, threshold: float) -> None:
        """The pooled threshold (a bucket's top) is known: the exceedance and spike counts from the histograms."""
        for counts in self.counts.values():
            counts.thresholds = (threshold,)
            counts.exceed_in = np.array([counts.inside.count_above(int(threshold))], dtype=np.int64)
            counts.exceed_out = np.array([counts.outside.count_above(int(threshold))], dtype=np.int64)
        if self.smi is not None:
            assert self.profiled is not None
            everything = self.profiled.latency_histogram.count_above(int(threshold))
            self.smi.spikes = everything - self.smi_unknown.count_above(int(threshold))
            self.smi.spikes_with_smi = self.smi_with.count_above(int(threshold))

    def notes(self) -> list[str]:
        out = []
        if self.left_out:
            out.append(f"cpu {self.facts.cpu}: {self.left_out:,} wake-ups next to frequency jumps that were still "
                       "undecided were left out of the condition tests (the frequency changed too often to settle)")
        if self.events is not None and self.events.left_out[0]:
            out.append(f"cpu {self.facts.cpu}: {self.events.left_out[0]:,} frequency jumps decided late were left "
                       "out of the event-triggered average of transitions")
        return out

    def triggers(self) -> list[EventTrigger]:
        return [EventTrigger(cpu=self.facts.cpu, event=name, average=average) for name, average in self.averages]

    def links(self) -> list[LaggedLink]:
        return [LaggedLink(self.facts.cpu, other, replace(ranks.result(), sample=self.sample.note))
                for other, ranks in self.ranks]


def _tests(passes: Sequence[_ThreadPass], alpha: float) -> list[ConditionTest]:
    raw: list[ConditionTest] = []
    conditions = sorted({c for tp in passes for c in tp.labels}, key=_condition_order)
    for condition in conditions:
        members = [tp for tp in passes if condition in tp.labels]
        for tp in members:
            raw.extend(_test(f"cpu {tp.facts.cpu}", tp.facts.cpu, condition, tp.labels[condition],
                             tp.counts[condition]))
        if len(members) > 1:
            pooled = members[0].counts[condition].copy()
            for tp in members[1:]:
                pooled.merge(tp.counts[condition])
            raw.extend(_test("all", None, condition, members[-1].labels[condition], pooled))
    # the detectable ratio is at Bonferroni's level alpha/m, the first step of Holm's procedure
    m = sum(len(t.exceedance) for t in raw)
    return [replace(t, exceedance=tuple(replace(e, detectable_ratio=detectable_ratio(
        (e.risk.exceed_in + e.risk.exceed_out) / (t.n_in + t.n_out), t.n_in, t.n_out, alpha=alpha / max(m, 1),
        power=POWER)) for e in t.exceedance)) for t in raw]


def _test(scope: str, cpu: int | None, condition: str, label: str, counts: ConditionCounts) -> list[ConditionTest]:
    n_in, n_out = counts.inside.count, counts.outside.count
    if n_in == 0 or n_out == 0:
        return []
    inside, outside = counts.inside.result(), counts.outside.result()
    rows = []
    for k, threshold in enumerate(counts.thresholds):
        a, c = int(counts.exceed_in[k]), int(counts.exceed_out[k])
        risk = risk_ratio(a, n_in, c, n_out)
        rows.append(Exceedance(threshold_ns=threshold, risk=risk, p_holm=float("nan"),
                               share_of_spikes=a / (a + c) if a + c else float("nan"),
                               share_of_all=n_in / (n_in + n_out), detectable_ratio=float("nan")))
    rank = rank_test_binned(np.asarray(inside.bucket_lower_ns, dtype=np.float64), np.asarray(inside.bucket_counts),
                            np.asarray(outside.bucket_lower_ns, dtype=np.float64),
                            np.asarray(outside.bucket_counts))
    return [ConditionTest(scope=scope, cpu=cpu, condition=condition, label=label, n_in=int(n_in), n_out=int(n_out),
                          quantiles_in_ns=_quantiles(inside), quantiles_out_ns=_quantiles(outside), rank=rank,
                          rank_p_holm=float("nan"), exceedance=tuple(rows))]


def _quantiles(histogram: HistogramResult) -> dict[str, float]:
    values = histogram.percentiles([q for _, q in QUANTILES])
    return {name: float(values[float(q)]) for name, q in QUANTILES}


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


def _smi_shares(passes: Sequence[_ThreadPass], threshold: float) -> tuple[SmiShare, ...]:
    scopes = [(f"cpu {tp.facts.cpu}", [tp.smi]) for tp in passes if tp.smi is not None]
    if len(scopes) > 1:
        scopes.append(("all", [tp.smi for tp in passes if tp.smi is not None]))
    rows = []
    for scope, members in scopes:
        counts = SmiCounts()
        for m in members:
            counts.merge(m)
        among = 0.0
        if counts.spikes_with_smi and counts.known > counts.with_smi:
            ratio = ((counts.spikes_with_smi / counts.with_smi)
                     / max((counts.spikes - counts.spikes_with_smi) / (counts.known - counts.with_smi), 1e-300))
            among = (ratio - 1) / ratio if ratio > 1 else 0.0
        fraction = counts.spikes_with_smi / counts.spikes * among if counts.spikes else 0.0
        rows.append(SmiShare(scope=scope, threshold_ns=threshold, spikes=counts.spikes,
                             spikes_with_smi=counts.spikes_with_smi,
                             share_of_wakeups_with_smi=counts.with_smi / counts.known if counts.known else 0.0,
                             attributable_fraction=float(fraction), attributable_among_coinciding=float(among)))
    return tuple(rows)


def _verdicts(tests: Sequence[ConditionTest], attributed: Mapping[str, bool], series: Sequence[ThreadFacts],
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
    smi_count = smi_total if smi_total is not None else int(sum(s.smi_total for s in series if s.has_smi))
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
    return (f"{format_count(share.spikes_with_smi)} of {format_count(share.spikes)} wake-ups later than "
            f"{format_us(threshold)} coincide with an SMI; about {format_count(round(caused))} of those "
            f"{format_count(share.spikes_with_smi)} "
            f"({format_percent(share.attributable_among_coinciding)}) "
            f"are attributable to SMIs, {format_percent(share.attributable_fraction)} of all wake-ups later than "
            f"{format_us(threshold)}.")


def _why_no_frequency(series: Sequence[ThreadFacts]) -> str:
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
    return (f"APERF/MPERF deltas discarded, mostly for {worst}: {format_count(counts[worst])} of "
            f"{format_count(rows)} wake-ups")


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
    numbers = (f"risk ratio {format_ratio(e.risk.ratio)}, 95% CI {format_ratio(e.risk.ci_low)}–"
               f"{format_ratio(e.risk.ci_high)}, "
               f"{format_p(e.p_holm)} Holm-adjusted; Cliff's delta {test.rank.cliffs_delta:+.2f}")
    if e.risk.exceed_in + e.risk.exceed_out == 0:
        return (f"No wake-up{where} was later than {format_us(e.threshold_ns)}, so nothing can be attributed "
                f"to wake-ups {test.label}; choose a lower --threshold-us to test smaller delays.")
    share = format_percent(e.share_of_spikes)
    if attributed:
        return (f"{share} of wake-ups later than {format_us(e.threshold_ns)} fall {test.label}{where}, against "
                f"{format_percent(e.share_of_all)} of all wake-ups ({numbers}).")
    power = ("no risk ratio would have been detectable" if not math.isfinite(e.detectable_ratio)
             else f"a risk ratio of {format_ratio(e.detectable_ratio)} or more would have been detected with "
                  f"{POWER:.0%} power")
    return (f"No link found{where} between wake-ups later than {format_us(e.threshold_ns)} and wake-ups "
            f"{test.label}: {share} of them fall there, against {format_percent(e.share_of_all)} of all wake-ups "
            f"({numbers}); {power}.")


def _quality_note(series: ThreadFacts) -> str:
    q = series.quality
    dropped = "; ".join(f"{count} {why}" for why, count in q.discarded.items())
    wraps = ", ".join(f"{count} {name} wrap{'s' if count != 1 else ''}" for name, count in q.wraps_corrected.items())
    text = f"cpu {series.cpu} (thread {series.thread}): {q.valid} of {q.rows} counter deltas usable"
    text += f"; discarded: {dropped}" if dropped else ""
    text += f"; corrected {wraps}" if wraps else ""
    return text


def _condition_order(condition: str) -> tuple[int, str]:
    return ({TRANSITION: 0, SMI: 1}.get(condition, 2), condition)
