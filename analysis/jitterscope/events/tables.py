"""Tables of events: the catalogue (worst events first) and the counts and rates with their intervals."""

from __future__ import annotations

import numpy as np

from ..format import format_us
from ..render import Table
from .results import Event, Events


def _cpus(event: Event) -> str:
    return ",".join(str(c) if c >= 0 else f"?(t{t})" for c, t in zip(event.cpus, event.threads, strict=False)) \
        if len(event.cpus) == len(event.threads) else ",".join(str(c) if c >= 0 else "?" for c in event.cpus)


def event_causes_text(event: Event) -> str:
    """The causes of an event in a few words ("smi; frequency transition"), or "unexplained"."""
    return "; ".join(event.cause_kinds)


def events_table(events: Events, *, top: int = 20, name: str = "events") -> Table:
    """The event catalogue: the ``top`` events with the largest peak latency, one row each."""
    worst = events.worst(top)
    traced = "kernel trace" in events.cause_sources  # the interrupt/thread split needs the trace
    rows = tuple((
        rank, e.start_s, e.start_utc or "-", e.duration_ns / 1000.0, _cpus(e), e.wakeups, e.missed_periods,
        e.peak_latency_ns / 1000.0, *(_split_cells(e) if traced else ()), event_causes_text(e),
    ) for rank, e in enumerate(worst, start=1))
    shown = f"top {len(worst)} of {len(events.events):,}" if len(events.events) > len(worst) else \
        f"all {len(worst):,}"
    split_notes = (SPLIT_NOTE,) if traced else ()
    return Table(
        name=name, title=f"Latency spike events ({shown}, largest peak first)",
        columns=("rank", "start [s]", "start (UTC)", "duration [µs]", "CPUs", "wake-ups", "missed periods",
                 "peak [µs]", *(("interrupt [µs]", "thread [µs]") if traced else ()), "causes"),
        rows=rows, formats=("", "{:.6f}", "", "{:,.1f}", "", "{:,}", "{:,}", "{:,.1f}",
                            *(("{:,.1f}", "{:,.1f}") if traced else ()), ""),
        notes=(*split_notes,
            f"An event is a run of wake-ups later than {events.threshold_ns / 1000:.1f} µs ({events.threshold_rule})"
            " on one thread with the catch-up wake-ups and missed periods after it; runs of different CPUs that "
            "overlap in time are one event. start: seconds after the first programmed wake-up; duration: from the "
            "first late wake-up's target to the last wake-up of the event. Causes are what the counters "
            f"({', '.join(events.cause_sources)}) show during the event; 'unexplained' when they show nothing.",
            *events.notes,
        ),
        align=("r", "r", "l", "r", "l", "r", "r", "r", *(("r", "r") if traced else ()), "l"),
    )


SPLIT_NOTE = ("interrupt / thread: the event's worst traced wake-up split at its timer interrupt "
              "(local_timer_entry around the measuring thread's sched_wakeup, else hrtimer_expire_entry of "
              "hrtimer_wakeup, else that sched_wakeup; with neither traced, as by default, the timer interrupt "
              "open at, or first entered after, the programmed time): interrupt latency = programmed time to "
              "the interrupt (idle exit, interrupts disabled, SMI, hypervisor), thread latency = interrupt to "
              "the thread running (handlers, softirqs, other threads, the wake-up path); n/a where the trace "
              "has none of these events in the window or lost events there.")


def _split_cells(event: Event) -> tuple[float | None, float | None]:
    split = event.latency_split
    if split is None or split.get("source") is None:
        return None, None
    return split["interrupt_ns"] / 1000.0, split["thread_ns"] / 1000.0


def event_split_text(events: Events) -> str | None:
    """Interrupt versus thread latency across the traced events in one sentence (``None``: no event has a trace).

    Each event speaks through its worst traced wake-up (:attr:`Event.latency_split`): medians of the interrupt
    and thread latency over the events with a split, the unexplained rest summed on each side of the interrupt,
    and how many events have none (the trace has no timer interrupt or wake-up event in the window).
    """
    splits = [e.latency_split for e in events.events]
    traced = [s for s in splits if s is not None]
    if not traced:
        return None
    known = [s for s in traced if s.get("source") is not None]
    if not known:
        return (f"none of the {len(traced):,} traced events can be split at its timer interrupt: "
                f"{traced[0].get('reason')}")
    irq = np.median([s["interrupt_ns"] for s in known])
    thread = np.median([s["thread_ns"] for s in known])
    sources = ", ".join(f"{src} ({n:,})" for src in dict.fromkeys(s["source"] for s in known)
                        if (n := sum(s["source"] == src for s in known)))
    before = sum(s["unexplained_interrupt_ns"] for s in known)
    after = sum(s["unexplained_thread_ns"] for s in known)
    unknown = len(traced) - len(known)
    return (f"median interrupt latency {format_us(float(irq))} (programmed time to the timer interrupt: idle exit, "
            f"interrupts off, SMI, hypervisor), thread latency {format_us(float(thread))} (interrupt to the "
            f"thread running: handlers, softirqs, threads); unexplained rest {format_us(before)} before the "
            f"interrupt, {format_us(after)} after (summed); split at {sources}"
            + (f"; {unknown:,} event(s) without a split" if unknown else ""))


def rates_basis(events: Events, *, short: bool = False) -> str:
    """How the rates were made, in one sentence: the span they come from and what their intervals assume."""
    span = f"{events.observed_s:,.1f} s"
    if short:  # page 1
        return ((f"/h extrapolated from a {span} run" if events.observed_s < 3600 else f"over {span}")
                + "; cluster-aware intervals (approximate)")
    per_hour = (f"rates per hour are extrapolated from {span} (less than an hour)" if events.observed_s < 3600
                else f"rates over {events.observed_s / 3600:,.2f} h")
    return (f"{per_hour}; 95% intervals are cluster-aware: the Poisson interval of the count of independent "
            "clusters (events declustered by the extremal index, Ferro-Segers) times the mean cluster size, "
            "approximate (exact Poisson only if the events are independent)")


def event_rates_table(events: Events, name: str = "event-rates") -> Table:
    """Events above 100 µs, 1 ms and one interval (a level named once when two are the same): counts, clusters,
    rates with cluster-aware 95 % intervals."""
    rows = tuple((r.label, r.count, r.clusters, r.rate_per_s * 3600, r.ci_low_per_s * 3600, r.ci_high_per_s * 3600)
                 for r in events.rates)
    return Table(
        name=name, title="Events by peak latency",
        columns=("events", "count", "clusters", "rate [/h]", "95% CI low [/h]", "95% CI high [/h]"),
        rows=rows, formats=("", "{:,}", "{:,}", "{:,.1f}", "{:,.1f}", "{:,.1f}"),
        notes=(f"Over {events.observed_s:,.1f} s of the run ({events.wakeups:,} wake-ups): {rates_basis(events)}.",),
        align=("l", "r", "r", "r", "r", "r"),
    )
