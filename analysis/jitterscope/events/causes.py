"""The causes an event's data supports, from pluggable cause sources.

A :class:`CauseSource` is a name and a function from an event's episodes (and its span) to the causes it
finds.  Two sources are built in:

- :func:`counter_causes`: the counter deltas read on the measured CPU (SMIs counted in the interval of a
  late wake-up, a change of the effective frequency within a few wake-ups, a C0 residency far below the
  thread's median in the interval before the first late wake-up: an exit from a deep idle state);
- :func:`turbostat_source`: the turbostat interval that holds the event, when a timeline is attached
  (an SMI counted in it, or a change of ``Bzy_MHz`` from the interval before).

- :func:`trace_source`: the dataset's kernel trace (``capture --trace`` or ``import TRACE --onto``):
  IRQs, softirqs, threads (one cause per command) and NMIs that held the CPU, from
  :func:`jitterscope.derive.attribute_spikes`.
- :func:`steal_source`: the capture's steal series (``jitterscope.steal``: the measured CPUs' steal time from
  ``/proc/stat``, sampled every 10 ms by the writer): the hypervisor took the vCPU during the event.

More sources plug in through ``cause_sources`` of :func:`jitterscope.events.find_events`.  A source must
only *read* what it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ..derive import CLASS_OF_KIND, STATUS_ATTRIBUTED, STATUS_INCOMPLETE
from ..format import format_percent, format_us
from .defaults import IDLE_C0_RATIO, TRANSITION_WINDOW
from .results import (
    HYPERVISOR,
    IDLE_EXIT,
    SMI,
    TRACE_INCOMPLETE,
    TRACE_UNEXPLAINED,
    TRANSITION,
    TURBOSTAT,
    Cause,
    Episode,
)

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
        top = next((c for c in worst.contributions if c.cause == worst.longest), None)
        kind = TRACE_UNEXPLAINED if top is None else f"kernel: {worst.longest}"
        split = worst.split
        return [Cause(
            kind=kind, source="kernel trace",
            evidence=(f"CPU {worst.cpu}, seq {worst.seq}, {worst.delay_ns / 1e3:.1f} µs late: held by "
                      f"{shares or 'nothing traced'}; unexplained {rest / 1e3:.1f} µs; {_split_words(split)}"),
            values={"cpu": worst.cpu, "seq": worst.seq, "delay_ns": worst.delay_ns, "longest": worst.longest,
                    "class": "unexplained" if top is None else CLASS_OF_KIND.get(top.kind, top.kind),
                    "contributions": [c.to_json() for c in worst.contributions], "unexplained_ns": rest,
                    "split": split.to_json() if split is not None else None},
        ), *incomplete]

    return CauseSource("kernel trace", find)


def _split_words(split: Any) -> str:
    """"interrupt latency 60.0 µs + thread latency 40.0 µs (at local_timer_entry)", or why it is unknown."""
    if split is None or not split.known:
        return f"interrupt/thread split unknown ({split.reason if split is not None else 'not computed'})"
    return (f"interrupt latency {split.interrupt_ns / 1e3:.1f} µs + thread latency {split.thread_ns / 1e3:.1f} µs "
            f"(split at {split.source}; of the unexplained rest {split.unexplained_interrupt_ns / 1e3:.1f} µs "
            f"before the interrupt, {split.unexplained_thread_ns / 1e3:.1f} µs after)")


@dataclass(frozen=True)
class StealSeries:
    """The capture's steal series (``jitterscope.steal``), as arrays per measured CPU.

    Each rise says the CPU's steal counter rose by ``ns`` between the writer's samples at ``from_ns`` and
    ``to_ns`` (CLOCK_MONOTONIC; consecutive rises merged).  ``tick_ns`` is the counter's unit (USER_HZ).
    """

    tick_ns: int
    period_ns: int
    cpus: tuple[int, ...]
    first_ns: int
    last_ns: int
    total_ns: Mapping[int, int]
    rises: Mapping[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    left_out: int

    def overlapping(self, cpu: int, start_ns: int, end_ns: int) -> tuple[int, int, int] | None:
        """(steal ns, first sample, last sample) of the rises on ``cpu`` accounted in ``(start_ns, end_ns]``."""
        found = self.rises.get(cpu)
        if found is None:
            return None
        low, high, ns = found
        hit = (low < end_ns) & (high > start_ns)
        if not hit.any():
            return None
        return int(ns[hit].sum()), int(low[hit].min()), int(high[hit].max())

    def chance(self, cpus: Sequence[int], duration_ns: int) -> float:
        """The probability that an event of ``duration_ns`` on ``cpus``, placed at a random time of the series,
        matches a rise (:meth:`overlapping` with the tick's slack): the share of the time covered by the windows
        ``(from - duration - tick, to)``, summed over the CPUs (an upper bound when CPUs share rises)."""
        span = self.last_ns - self.first_ns
        if span <= 0:
            return 1.0
        covered = 0
        for cpu in cpus:
            found = self.rises.get(cpu)
            if found is None:
                continue
            low, high, _ = found
            order = np.argsort(high)
            low, high = low[order], high[order]
            reach = high - low + duration_ns + self.tick_ns  # each window, before its overlap with the previous
            gap = np.diff(high, prepend=np.iinfo(np.int64).min // 2)
            covered += int(np.minimum(reach, gap).sum())
        return min(covered / span, 1.0)


def decode_steal(steal: Mapping[str, Any] | None) -> StealSeries | None:
    """The steal series of a dataset's metadata, or None when none was recorded (or it says why not)."""
    if not isinstance(steal, Mapping) or "error" in steal or not isinstance(steal.get("rises"), list):
        return None
    by_cpu: dict[int, list[tuple[int, int, int]]] = {}
    for rise in steal["rises"]:
        if isinstance(rise, list) and len(rise) == 4 and all(isinstance(v, int) for v in rise):
            by_cpu.setdefault(rise[0], []).append((rise[1], rise[2], rise[3]))
    rises = {cpu: tuple(np.asarray(col, dtype=np.int64) for col in zip(*items, strict=True))
             for cpu, items in by_cpu.items()}
    totals = steal.get("total_ns") if isinstance(steal.get("total_ns"), Mapping) else {}
    return StealSeries(
        tick_ns=int(steal.get("tick_ns") or 10_000_000), period_ns=int(steal.get("period_ns") or 10_000_000),
        cpus=tuple(int(c) for c in steal.get("cpus") or ()), first_ns=int(steal.get("first_ns") or 0),
        last_ns=int(steal.get("last_ns") or 0),
        total_ns={int(k): int(v) for k, v in totals.items() if str(k).lstrip("-").isdigit()},
        rises=rises, left_out=int(steal.get("left_out") or 0))  # type: ignore[arg-type]


def _ms(ns: int, *, signed: bool = False) -> str:
    return f"{ns / 1e6:{'+' if signed else ''},.1f} ms".replace(".0 ms", " ms")


def steal_source(steal: StealSeries) -> CauseSource:
    """The hypervisor cause source: steal time on an event's CPUs while it lasted.

    The kernel accounts stolen time at the vCPU's next tick or idle exit after it runs again (within 1/HZ ≤
    10 ms), and the writer reads it at its next sample; so the rises that count for an event are those read
    in samples that end after the event starts and begin before it ends plus one tick (``tick_ns``).  The cause
    comes first among the event's causes when the steal (plus one tick of the counter's truncation) can account
    for the event's peak latency, last otherwise (the evidence says how much of it).
    """

    def find(episodes: Sequence[Episode], start_ns: int, end_ns: int) -> list[Cause]:
        found = {e.cpu: hit for e in episodes if e.cpu >= 0
                 and (hit := steal.overlapping(e.cpu, start_ns, end_ns + steal.tick_ns)) is not None}
        if not found:
            return []
        peak = max(e.peak_latency_ns for e in episodes)
        most = max(ns for ns, _, _ in found.values())
        covers = most + steal.tick_ns >= peak
        parts = ", ".join(f"CPU {cpu} by {_ms(ns)}" for cpu, (ns, _, _) in sorted(found.items()))
        low = min(lo for _, lo, _ in found.values())
        high = max(hi for _, _, hi in found.values())
        evidence = (f"steal time rose on {parts} (/proc/stat, read by the writer every {_ms(steal.period_ns)}, "
                    f"in samples {_ms(low - start_ns, signed=True)} from the event's start to "
                    f"{_ms(high - end_ns, signed=True)} from its end): the hypervisor ran something else on the "
                    "vCPU; " + ("it can account for the peak latency" if covers else
                                f"at most {_ms(most + steal.tick_ns)} of the {format_us(peak)} peak latency")
                    + " (a guest's kernel trace shows the task that ran when the vCPU stopped as holding the CPU)")
        return [Cause(kind=HYPERVISOR, source="steal", evidence=evidence,
                      values={"class": "hypervisor", "steal_ns": {str(c): ns for c, (ns, _, _) in found.items()},
                              "from_ns": low, "to_ns": high, "covers_peak": covers, "order": 0 if covers else 2})]

    return CauseSource("steal", find)


def steal_by_chance(steal: StealSeries, events: Sequence[Any]) -> float:
    """Events expected to coincide with steal by chance alone: each event's :meth:`StealSeries.chance`, summed
    (events grouped by CPUs and duration rounded up to 1 ms, so 10^5 events cost a few hundred passes)."""
    shapes: dict[tuple[tuple[int, ...], int], int] = {}
    for e in events:
        key = (tuple(e.cpus), -(-int(e.end_ns - e.start_ns) // 1_000_000) * 1_000_000)
        shapes[key] = shapes.get(key, 0) + 1
    return sum(n * steal.chance(cpus, duration) for (cpus, duration), n in shapes.items())
