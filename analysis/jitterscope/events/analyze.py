"""``find_events``: one streaming pass over a dataset, episodes per thread, events across threads.

Memory: one :class:`~jitterscope.events.detect.ThreadEpisodes` per thread (a row of carry and one small
record per episode), never the wake-ups themselves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..compare import binomtest_pvalue
from ..dataset import Dataset, column_values, iter_thread_batches, open_trace
from ..derive import attribute_spikes
from ..errors import AnalysisError
from ..format import format_us
from ..power import DEFAULT_THRESHOLD, decode_timeline
from ..summary import Summary, summarize
from ..tails import cluster_starts, clustered_interval, decluster
from ..tails import poisson_interval as poisson_interval  # events.poisson_interval: one Garwood interval, in tails
from .causes import COUNTERS, CauseSource, decode_steal, steal_source, trace_source, turbostat_source
from .defaults import (
    LEVELS,
    MAX_DEFAULT_LATE,
    MAX_DEFAULT_THRESHOLD_NS,
    MIN_EXCESS_NS,
    ROBUST_SD,
    TRANSITION_WINDOW,
)
from .detect import COUNTER_COLUMNS, ThreadEpisodes, merge_episodes
from .results import Episode, Event, Events, HalvesTest, RateInterval


def default_threshold_ns(summary: Summary, *, max_late: int = MAX_DEFAULT_LATE) -> tuple[float, str]:
    """The late-wake-up threshold from the latency distribution: median + 10 robust SD, at least median + 5 µs,
    at most 100 µs (so that the count of events above 100 µs is complete); raised, saying so, to the level
    that ``max_late`` wake-ups exceed when more than that exceed it (read from the summary's histogram).

    Returns
    -------
    tuple of (float, str)
        The threshold (ns) and the rule in words, with its numbers.

    Raises
    ------
    AnalysisError
        The summary has no median (no wake-ups).
    """
    overall = summary.overall
    median = overall.percentiles.get("50")
    if median is None or overall.mad_ns is None:
        raise AnalysisError("no latency distribution to set an event threshold from; give --threshold")
    robust = median + ROBUST_SD * 1.4826 * overall.mad_ns
    floor = median + MIN_EXCESS_NS
    value = max(robust, floor)
    rule = (f"median {format_us(median)} + {ROBUST_SD:g} × 1.4826 × MAD {format_us(overall.mad_ns)}"
            if robust >= floor else f"median {format_us(median)} + {format_us(MIN_EXCESS_NS)} (floor)")
    if value > MAX_DEFAULT_THRESHOLD_NS:
        value, rule = MAX_DEFAULT_THRESHOLD_NS, f"capped at {format_us(MAX_DEFAULT_THRESHOLD_NS)} ({rule} is above)"
    return _within_budget(overall, float(value), rule, max_late)


def _within_budget(overall: Any, value: float, rule: str, max_late: int) -> tuple[float, str]:
    """``value`` unless more than ``max_late`` wake-ups exceed it; then the lowest histogram level they do not."""
    histogram = overall.histogram
    if histogram is None or not histogram.count:
        return value, rule
    x, p_exceed = histogram.ccdf()
    above = p_exceed * histogram.count
    at = int(np.searchsorted(x, value, side="left"))  # the first bucket top at or above the threshold
    late = float(above[at - 1]) if at > 0 else float(histogram.count)  # wake-ups above that bucket's floor
    if late <= max_late:
        return value, rule
    within = np.flatnonzero(above <= max_late)
    raised = float(x[within[0]]) if within.size else float(histogram.max_ns)
    return max(raised, value), (
        f"{rule} = {format_us(value)} is exceeded by about {late:,.0f} of {histogram.count:,} wake-ups "
        f"({late / histogram.count:.1%}), too common to be spikes and more than the {max_late:,} events one pass "
        f"holds; raised to {format_us(raised)}, which about {max_late:,} exceed (give --threshold for another)")


def find_events(
    dataset: Dataset,
    *,
    threshold_ns: float | None = None,
    summary: Summary | None = None,
    cause_sources: Sequence[CauseSource] | None = None,
    relative_threshold: float = DEFAULT_THRESHOLD,
    window: int = TRANSITION_WINDOW,
) -> Events:
    """Latency spike events of a sample dataset, with their causes, counts and rates.

    Parameters
    ----------
    dataset
        An opened sample dataset (capture, import or simulation).
    threshold_ns
        Latency above which a wake-up is late; default :func:`default_threshold_ns` of ``summary``.
    summary
        The dataset's summary, when already computed (only used for the default threshold).
    cause_sources
        Extra cause sources (e.g. kernel-trace attribution), consulted after the counters and turbostat.
    relative_threshold, window
        A relative change of the effective frequency above ``relative_threshold`` within ± ``window``
        wake-ups of an event counts as a frequency transition.

    Returns
    -------
    Events

    Raises
    ------
    AnalysisError
        A histogram dataset, no wake-ups, or a threshold that is not a positive number.
    """
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: histogram-only data has no wake-up times, so no events; "
                            "use a capture or a sample-level import (cyclictest -v, jitterdebugger samples)")
    if dataset.num_rows == 0:
        raise AnalysisError(f"{dataset.path}: the dataset has no wake-ups")
    if threshold_ns is None:
        threshold_ns, rule = default_threshold_ns(summary if summary is not None else summarize(dataset))
    else:
        if not math.isfinite(threshold_ns) or threshold_ns <= 0:
            raise AnalysisError(f"threshold {threshold_ns} ns is not a positive number of µs")
        rule = "given"
    meta = dataset.metadata
    present = [c for c in ("overruns", *COUNTER_COLUMNS) if dataset.has(c)]
    accumulators = {info.thread: ThreadEpisodes(info.thread, info.cpu, info.interval_ns, threshold_ns,
                                                tsc_hz=meta.tsc_hz, relative_threshold=relative_threshold,
                                                window=window)
                    for info in meta.threads}
    columns = ["seq", "expected_ns", "actual_ns", *present]
    for info, batch in iter_thread_batches(dataset, columns, check=False):
        # column_values, not to_numpy: its first call imports pandas (0.9 s of CPU)
        accumulators[info.thread].update({name: column_values(batch, name) for name in columns})
    threads = [acc.finish() for acc in accumulators.values() if acc.wakeups]
    offset = _clock_offset(meta.clock)
    sources, notes = _sources(dataset, offset, relative_threshold, cause_sources, threshold_ns)
    notes += sorted({note for acc in threads for note in acc.notes})
    if offset is None:
        notes.append("no realtime/monotonic clock pair in the dataset: event times are relative only")
    first = min(acc.first_expected_ns for acc in threads if acc.first_expected_ns is not None)
    last = max(acc.last_actual_ns for acc in threads if acc.last_actual_ns is not None)
    observed_s = max((last - first) / 1e9, 0.0)
    episodes = [e for acc in threads for e in acc.episodes]
    if threads_share_a_clock(meta):
        groups = merge_episodes(episodes)
    else:  # each thread's times start at its own first wake-up: an overlap in time says nothing
        groups = [[e] for e in sorted(episodes, key=lambda e: (e.start_ns, e.thread))]
        notes.append("the source's threads are not on one clock (each thread's times rebuilt from its own first "
                     "wake-up): events are per thread, none joins several CPUs")
    starts = [group[0].start_ns if len(group) == 1 else min(e.start_ns for e in group) for group in groups]
    utc = _utc_all(starts, offset)
    events = tuple(_event(i, group, start, when, first, sources)
                   for i, (group, start, when) in enumerate(zip(groups, starts, utc, strict=True)))
    intervals = {info.interval_ns for info in meta.threads if info.interval_ns > 0}
    interval = intervals.pop() if len(intervals) == 1 else None
    rates, rate_notes = _rates(events, observed_s, threshold_ns, interval)
    return Events(
        threshold_ns=float(threshold_ns), threshold_rule=rule, wakeups=sum(acc.wakeups for acc in threads),
        observed_s=observed_s, first_expected_ns=int(first), interval_ns=interval, events=events, rates=rates,
        halves=_halves(events, first, observed_s), cause_sources=tuple(s.name for s in sources),
        notes=tuple(notes + rate_notes), policy=_text(meta.granted.get("policy")),
        priority=_whole(meta.granted.get("priority")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
def threads_share_a_clock(meta: Any) -> bool:
    """Whether the threads' times are on one clock, so that events on several CPUs can be joined.

    Captures, simulations and imports with absolute times do; an import whose source says
    ``absolute_times: false`` (cyclictest -v: each thread's times rebuilt from its own first wake-up) does
    not, nor does a cyclictest -v import written before that key existed.
    """
    source = meta.source or {}
    if isinstance(source.get("absolute_times"), bool):
        return bool(source["absolute_times"])
    return source.get("format") != "cyclictest-verbose"


def _clock_offset(clock: Any) -> int | None:
    clock = clock or {}
    realtime, monotonic = clock.get("realtime_ns"), clock.get("monotonic_ns")
    if isinstance(realtime, int) and isinstance(monotonic, int) and not isinstance(realtime, bool):
        return realtime - monotonic
    return None


def _sources(dataset: Dataset, offset: int | None, relative_threshold: float,
             extra: Sequence[CauseSource] | None, threshold_ns: float) -> tuple[list[CauseSource], list[str]]:
    sources = [COUNTERS]
    notes = []
    present = [c for c in ("smi", "aperf", "mperf") if dataset.has(c)]
    if not present:
        notes.append("no SMI or APERF/MPERF counters in the dataset: no event can be attributed to SMIs, "
                     "frequency transitions or idle exits from counters")
    steal = decode_steal(dataset.metadata.steal)
    if steal is not None:
        sources.append(steal_source(steal))
        if steal.left_out:
            notes.append(f"the steal series lists its first rises only ({steal.left_out:,} later ones left out): "
                         "events after the last listed rise are not matched to steal")
    trace = _trace_source(dataset, threshold_ns, notes)
    if trace is not None:
        sources.append(trace)
    timeline = decode_timeline(dataset.metadata)
    if timeline is not None and offset is not None:
        sources.append(turbostat_source(timeline, offset, relative_threshold))
    elif timeline is not None:
        notes.append("a turbostat timeline is attached but the dataset has no clock pair to place events in it")
    return sources + list(extra or ()), notes


def _trace_source(dataset: Dataset, threshold_ns: float, notes: list[str]) -> CauseSource | None:
    """The kernel-trace source when the dataset carries an events table (same threshold as the events)."""
    events = open_trace(dataset.path) if Path(dataset.path).is_dir() else None
    if events is None:
        return None
    attribution = attribute_spikes(dataset, threshold_ns, events=events)
    if attribution.n_incomplete:
        notes.append(f"{attribution.n_incomplete} late wake-up(s) fall where the kernel lost trace events: "
                     "their events say 'incomplete trace' instead of a cause")
    return trace_source(attribution)


def _utc_all(monotonic_ns: Sequence[int], offset: int | None) -> list[str | None]:
    """ISO 8601 UTC (µs, "Z") of each monotonic time, from the clock pair's offset; all at once (10^6 events)."""
    if offset is None:
        return [None] * len(monotonic_ns)
    wall_us = (np.asarray(monotonic_ns, dtype=np.int64) + offset) // 1000
    return [text + "Z" for text in np.datetime_as_string(wall_us.astype("datetime64[us]"), unit="us").tolist()]


def _event(index: int, group: Sequence[Episode], start: int, start_utc: str | None, origin_ns: int,
           sources: Sequence[CauseSource]) -> Event:
    end = group[0].end_ns if len(group) == 1 else max(e.end_ns for e in group)
    # a cause that says where it belongs ("order": steal that can account for the peak comes first) moves there;
    # the rest keep the sources' order
    causes = tuple(sorted((c for source in sources for c in source.find(group, start, end)),
                          key=lambda c: c.values.get("order", 1)))
    if len(group) == 1:  # the usual event: one thread's episode
        e = group[0]
        return Event(
            index=index, start_ns=start, end_ns=end, start_s=(start - origin_ns) / 1e9, start_utc=start_utc,
            cpus=(e.cpu,), threads=(e.thread,), wakeups=e.wakeups, late_wakeups=e.late_wakeups,
            catch_up_wakeups=e.catch_up_wakeups, missed_periods=e.missed_periods, peak_latency_ns=e.peak_latency_ns,
            peak_cpu=e.cpu, peak_thread=e.thread, causes=causes, thread_peaks=((e.thread, e.peak_latency_ns,
                                                                                 e.peak_at_ns),),
        )
    peak = max(group, key=lambda e: e.peak_latency_ns)
    return Event(
        index=index, start_ns=start, end_ns=end, start_s=(start - origin_ns) / 1e9, start_utc=start_utc,
        cpus=tuple(sorted({e.cpu for e in group})), threads=tuple(sorted({e.thread for e in group})),
        wakeups=sum(e.wakeups for e in group), late_wakeups=sum(e.late_wakeups for e in group),
        catch_up_wakeups=sum(e.catch_up_wakeups for e in group),
        missed_periods=sum(e.missed_periods for e in group), peak_latency_ns=peak.peak_latency_ns,
        peak_cpu=peak.cpu, peak_thread=peak.thread, causes=causes,
        thread_peaks=tuple((t, *max((e.peak_latency_ns, e.peak_at_ns) for e in group if e.thread == t))
                           for t in sorted({e.thread for e in group})),
    )


def _rates(events: Sequence[Event], observed_s: float, threshold_ns: float,
           interval_ns: int | None) -> tuple[tuple[RateInterval, ...], list[str]]:
    named: dict[float, list[str]] = {}  # level -> its names: one interval of 1 ms is "1 ms", one row
    for level, label in LEVELS:
        named.setdefault(float(level), []).append(label)
    if interval_ns:
        same = float(interval_ns) in named  # "above 1 ms = one interval": its value is already in the name
        named.setdefault(float(interval_ns), []).append(
            "one interval" if same else f"one interval ({format_us(interval_ns)})")
    out, notes = [], []
    for level in sorted(named):
        label = " = ".join(named[level])
        if level < threshold_ns:
            notes.append(f"events above {label} are not counted: the detection threshold "
                         f"{format_us(threshold_ns)} is above it (give a lower --threshold)")
            continue
        starts = np.array([e.start_ns for e in events if e.peak_latency_ns > level], dtype=np.float64)
        found = decluster(starts)  # storms of stalls: independent clusters, not independent events
        count = found.events
        low, high = clustered_interval(count, found.clusters, 0.95)
        span = observed_s if observed_s > 0 else math.nan
        out.append(RateInterval(label=f"above {label}", level_ns=level, count=count, observed_s=observed_s,
                                rate_per_s=count / span, ci_low_per_s=low / span, ci_high_per_s=high / span,
                                clusters=found.clusters, extremal_index=found.extremal_index))
    return tuple(out), notes


def _halves(events: Sequence[Event], origin_ns: int, observed_s: float) -> HalvesTest | None:
    if observed_s <= 0:
        return None
    middle = origin_ns + observed_s * 1e9 / 2
    first = sum(1 for e in events if e.start_ns < middle)
    second = len(events) - first
    starts = np.array([e.start_ns for e in events], dtype=np.float64)
    found = decluster(starts)
    if found.clusters < len(events):  # a storm is one draw of the process, not many: test the clusters
        heads = cluster_starts(starts, found.clusters)
        early = int(np.count_nonzero(heads < middle))
        p = binomtest_pvalue(early, int(heads.size), 0.5)
        return HalvesTest(first=first, second=second, p_value=p, clusters=int(heads.size))
    p = binomtest_pvalue(first, len(events), 0.5) if events else 1.0
    return HalvesTest(first=first, second=second, p_value=p)
