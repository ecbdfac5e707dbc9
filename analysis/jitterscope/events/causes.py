"""The causes an event's data supports, from pluggable cause sources.

A :class:`CauseSource` is a name and a function from an event's episodes (and its span) to the causes it
finds.  Two sources are built in:

- :func:`counter_causes`: the counter deltas read on the measured CPU (SMIs counted in the interval of a
  late wake-up, a change of the effective frequency within a few wake-ups, a C0 residency far below the
  thread's median in the interval before the first late wake-up: an exit from a deep idle state);
- :func:`turbostat_source`: the turbostat interval that holds the event, when a timeline is attached
  (an SMI counted in it, or a change of ``Bzy_MHz`` from the interval before).

- :func:`trace_source`: the dataset's kernel trace (``capture --trace`` or ``import TRACE --onto``):
  IRQs, softirqs, threads and NMIs that held the CPU, from :func:`jitterscope.derive.attribute_spikes`.

More sources plug in through ``cause_sources`` of :func:`jitterscope.events.find_events`.  A source must
only *read* what it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ..derive import STATUS_ATTRIBUTED, STATUS_INCOMPLETE
from ..format import format_percent
from .defaults import IDLE_C0_RATIO, TRANSITION_WINDOW
from .results import IDLE_EXIT, SMI, TRACE_INCOMPLETE, TRACE_UNEXPLAINED, TRANSITION, TURBOSTAT, Cause, Episode

CauseFinder = Callable[[Sequence[Episode], int, int], Sequence[Cause]]
"""``(episodes, start_ns, end_ns) -> causes``; times CLOCK_MONOTONIC ns."""


@dataclass(frozen=True)
class CauseSource:
    """A named way of finding an event's causes."""

    name: str
    find: CauseFinder


def _cpus(episodes: Sequence[Episode]) -> str:
    """"CPU 0" / "CPUs 0, 1"; a thread whose CPU is unknown is named by its thread."""
    if len(episodes) == 1:  # the usual case, a million times in a long capture
        e = episodes[0]
        return f"CPU {e.cpu}" if e.cpu >= 0 else f"thread {e.thread} (CPU unknown)"
    names = sorted({f"CPU {e.cpu}" if e.cpu >= 0 else f"thread {e.thread} (CPU unknown)" for e in episodes})
    return ", ".join(names)


def counter_causes(episodes: Sequence[Episode], start_ns: int, end_ns: int) -> list[Cause]:
    """SMIs, frequency transitions and idle exits seen in the counters of the event's episodes."""
    causes = []
    with_smi = [e for e in episodes if e.smi_count > 0]
    if with_smi:
        count = max(e.smi_count for e in with_smi)
        causes.append(Cause(
            kind=SMI, source="counters",
            evidence=(f"ΔSMI = {count:g} in the intervals of the late wake-ups on {_cpus(with_smi)} "
                      "(MSR_SMI_COUNT, read on the measured CPU)"),
            values={"smi": count, "cpus": sorted({e.cpu for e in with_smi})},
        ))
    moved = [e for e in episodes if e.transition is not None]
    if moved:
        before, after = moved[0].transition  # type: ignore[misc]
        causes.append(Cause(
            kind=TRANSITION, source="counters",
            evidence=(f"effective frequency {before / 1e6:.0f} → {after / 1e6:.0f} MHz within "
                      f"±{TRANSITION_WINDOW} wake-ups on {_cpus(moved)} (APERF/MPERF)"),
            values={"before_hz": before, "after_hz": after, "cpus": sorted({e.cpu for e in moved})},
        ))
    deep = [e for e in episodes if e.c0_before is not None and e.c0_median and
            e.c0_before < IDLE_C0_RATIO * e.c0_median]
    if deep:
        first = min(deep, key=lambda e: e.c0_before or 0.0)
        causes.append(Cause(
            kind=IDLE_EXIT, source="counters",
            evidence=(f"C0 residency {format_percent(first.c0_before)} in the interval before the first late "
                      f"wake-up on {_cpus(deep)}, against a median of {format_percent(first.c0_median)}: "
                      "it woke from a deep idle state (ΔMPERF/ΔTSC)"),
            values={"c0_before": first.c0_before, "c0_median": first.c0_median,
                    "cpus": sorted({e.cpu for e in deep})},
        ))
    return causes


COUNTERS = CauseSource("counters", counter_causes)


def turbostat_source(timeline: Any, offset_ns: int, relative_threshold: float) -> CauseSource:
    """A cause source reading the turbostat interval that holds an event.

    Parameters
    ----------
    timeline
        A decoded timeline (:func:`jitterscope.power.decode_timeline`).
    offset_ns
        ``realtime_ns - monotonic_ns`` of the dataset's clock pair (wall clock of a monotonic time).
    relative_threshold
        A change of ``Bzy_MHz`` from the previous interval above this is a frequency change.
    """

    def find(episodes: Sequence[Episode], start_ns: int, end_ns: int) -> list[Cause]:
        wall = start_ns + offset_ns
        k = int(np.searchsorted(timeline.end_ns, wall, side="left"))
        if k >= timeline.intervals or wall <= timeline.start_ns[k]:
            return []
        when = datetime.fromtimestamp(int(timeline.end_ns[k]) / 1e9, UTC).strftime("%H:%M:%S")
        where = f"turbostat interval {k} ({timeline.interval_s:g} s ending {when} UTC)"
        found = []
        for cpu in sorted({e.cpu for e in episodes}):
            smi = timeline.smi(cpu)[k]
            if np.isfinite(smi) and smi > 0:
                found.append(f"SMI {smi:g} on CPU {cpu}")
            mhz = timeline.series("Bzy_MHz", cpu)
            if k > 0 and np.isfinite(mhz[k]) and np.isfinite(mhz[k - 1]) and mhz[k - 1] > 0 \
                    and abs(mhz[k] / mhz[k - 1] - 1) > relative_threshold:
                found.append(f"Bzy_MHz {mhz[k - 1]:.0f} → {mhz[k]:.0f} on CPU {cpu}")
        if not found:
            return []
        return [Cause(kind=TURBOSTAT, source="turbostat", evidence=f"{where}: {'; '.join(found)}",
                      values={"interval": k, "findings": found})]

    return CauseSource("turbostat", find)


def trace_source(attribution: Any) -> CauseSource:
    """The kernel-trace cause source: what held each event's CPUs, from :func:`jitterscope.derive.attribute_spikes`.

    ``attribution`` is a :class:`~jitterscope.derive.TraceAttribution` computed with the events' threshold.
    Per event, the worst traced spike inside its episodes (same thread, seq in the episode) speaks: its
    contexts (IRQ handlers by name and vector, softirqs, threads that ran instead, NMIs) as shares of its
    delay, the longest named first, and the unexplained rest.  A spike whose trace lost events gives the cause
    "incomplete trace" and nothing else, never a guess; a spike outside the trace gives no cause.
    """
    by_key = {(s.thread, s.seq): s for s in attribution.spikes}

    def find(episodes: Sequence[Episode], start_ns: int, end_ns: int) -> list[Cause]:
        spikes = [by_key[(e.thread, seq)] for e in episodes for seq in range(e.first_seq, e.first_seq + e.wakeups)
                  if (e.thread, seq) in by_key]
        if not spikes:
            return []
        worst = max(spikes, key=lambda s: s.delay_ns)
        lossy = sorted({(s.cpu, s.seq) for s in spikes if s.status == STATUS_INCOMPLETE})
        incomplete = [Cause(kind=TRACE_INCOMPLETE, source="kernel trace",
                            evidence=(f"the kernel lost trace events during {len(lossy)} of the event's late "
                                      f"wake-up(s) (CPU/seq {', '.join(f'{c}/{q}' for c, q in lossy)}): "
                                      "no cause is claimed for them"),
                            values={"wakeups": [{"cpu": c, "seq": q} for c, q in lossy]})] if lossy else []
        if worst.status != STATUS_ATTRIBUTED:
            return incomplete
        held = [c for c in worst.contributions if c.ns > 0][:3]
        shares = ", ".join(f"{c.cause} {c.ns / 1e3:.1f} µs ({format_percent(c.share)})" for c in held)
        rest = worst.unexplained_ns or 0
        kind = TRACE_UNEXPLAINED if worst.longest in (None, "unexplained") else f"kernel: {worst.longest}"
        return [Cause(
            kind=kind, source="kernel trace",
            evidence=(f"CPU {worst.cpu}, seq {worst.seq}, {worst.delay_ns / 1e3:.1f} µs late: held by "
                      f"{shares or 'nothing traced'}; unexplained {rest / 1e3:.1f} µs"),
            values={"cpu": worst.cpu, "seq": worst.seq, "delay_ns": worst.delay_ns, "longest": worst.longest,
                    "contributions": [c.to_json() for c in worst.contributions], "unexplained_ns": rest},
        ), *incomplete]

    return CauseSource("kernel trace", find)
