"""The findings of a poll dataset in words (page 1 of its report, ``jitterscope summary``), and its tables.

Sentences are built from the results only (summary, causes, periodic sources, events); nothing is computed
here but the wording.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..format import format_hz, format_us
from ..render import Table
from .causes import HARDWARE, NOT_TRACED, RT_THROTTLING, PollCauses
from .events import PollEvents
from .spectrum import PollLine, PollSpectrum
from .summary import PollSummary, wall_clock_ns

TICK_PREFIX = "scheduler tick"


@dataclass(frozen=True)
class PollFindings:
    """Page 1: one sentence per polled CPU, then one per periodic source or notable cause, with its action."""

    headline: tuple[str, ...]
    actions: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"headline": list(self.headline), "actions": list(self.actions)}


def format_gap(ns: float | None) -> str:
    """A gap's length: µs below a millisecond, ms from there ("5.1 ms")."""
    if ns is None or not math.isfinite(ns):
        return "–"
    if ns >= 1e9:
        return f"{ns / 1e9:.3g} s"
    return f"{ns / 1e6:.3g} ms" if ns >= 1_000_000 else format_us(ns)


def _lost(percent: float) -> str:
    return f"{percent:.2g} %" if percent < 1 else f"{percent:.3g} %"


def _when(summary_clock: Mapping[str, Any] | None, at_ns: int | None, at_s: float | None) -> str:
    if at_ns is None or at_s is None:
        return " (its time is not recorded)"
    wall = wall_clock_ns(summary_clock, at_ns)
    text = f" at {at_s:.3f} s into the run"
    if wall is not None:
        stamp = _dt.datetime.fromtimestamp(wall / 1e9, _dt.UTC)
        text += f" ({stamp:%Y-%m-%d %H:%M:%S}.{stamp.microsecond // 1000:03d} UTC)"
    return text


def _rate(per_second: float) -> str:
    return f"{per_second:,.0f}" if per_second >= 100 else f"{per_second:.3g}"


def _cpus(listed: str) -> str:
    return f"CPUs {listed}" if "," in listed else f"CPU {listed}"


def poll_findings(summary: PollSummary, *, causes: PollCauses | None = None, spectrum: PollSpectrum | None = None,
                  environment: Mapping[str, Any] | None = None, clock: Mapping[str, Any] | None = None,
                  events: PollEvents | None = None) -> PollFindings:
    """The sentences of page 1 for a poll dataset."""
    headline = []
    for t in sorted(summary.threads, key=lambda t: -t.lost_percent):
        cause = None
        if causes is not None and t.max_at_ns is not None:
            cause = next((c.cause for c in causes.totals if c.cpu == t.cpu and c.max_ns == t.max_ns), None)
        interval = ""
        if t.available_ci is not None:
            interval = f" (95 % CI {_lost(100 - t.available_ci[1])}–{_lost(100 - t.available_ci[0])})"
        # from buckets the noise is estimated (midpoints; the open last bucket at its lower edge)
        counted = not math.isnan(t.per_second)  # rtla osnoise top gives the noise exactly but no count of gaps
        about = "" if summary.from_rows or not counted else "about "
        rate = (f"{_rate(t.per_second)}/s of ≥ {format_gap(summary.threshold_ns)}, " if counted
                else "how many gaps is not in the source, ")
        sentence = (f"CPU {t.cpu} lost {about}{_lost(t.lost_percent)} to interruptions{interval}: "
                    f"{rate}{format_gap(t.noise_ns)} in "
                    f"{t.runtime_ns / 1e9:.4g} s; worst {format_gap(t.max_ns)}"
                    f"{_when(clock, t.max_at_ns, t.max_at_s)}")
        if cause and cause not in (NOT_TRACED,):
            sentence += f", caused by {cause}"
        headline.append(sentence + ".")
    actions = []
    lines = spectrum.lines if spectrum is not None else ()
    ticks = [line for line in lines if (line.source or "").startswith(TICK_PREFIX)]
    if ticks:
        cpus = sorted({line.cpu for line in ticks})
        rate = sum(line.frequency_hz for line in ticks) / len(ticks)
        sizes = [line.median_ns for line in ticks if line.median_ns is not None]
        size = f" of {format_gap(sum(sizes) / len(sizes))}" if sizes else ""
        listed = ",".join(str(c) for c in cpus)
        nohz = str((environment or {}).get("nohz_full_cpus") or "")
        if nohz and all(str(c) in nohz.replace("-", ",").split(",") for c in cpus):
            advice = (f"the CPU is already nohz_full: another runnable task or a timer keeps its tick on "
                      f"(check 'ps -L -o psr' and /proc/timer_list for CPU {listed})")
        else:
            advice = f"boot with nohz_full={listed} (with isolcpus={listed} and rcu_nocbs={listed})"
        actions.append(f"{rate:.0f}/s ticks{size} on {_cpus(listed)}, the {ticks[0].source}: {advice}.")
    throttled = [line for line in lines if line.source and line.source.startswith("RT throttling")]
    if throttled:
        line = throttled[0]
        cpus = ",".join(str(c) for c in sorted({t.cpu for t in throttled}))
        actions.append(f"RT throttling stopped the loop on {_cpus(cpus)} for {format_gap(line.median_ns)} every "
                       f"{1 / line.frequency_hz:.3g} s: a real-time loop that never sleeps uses up "
                       "sched_rt_runtime_us; give it a nohz_full CPU and set /proc/sys/kernel/sched_rt_runtime_us "
                       "to -1 only while a housekeeping CPU stays free, or poll at SCHED_OTHER.")
    others = [line for line in lines
              if line.source is None or not (line.source.startswith(TICK_PREFIX) or line.source.startswith("RT"))]
    periodic_hardware: dict[int, int] = {}  # CPU -> gaps a periodic source with no kernel event accounts for
    for group in _same_source(others):
        line = group[0]
        if line.cause == HARDWARE:
            periodic_hardware[line.cpu] = periodic_hardware.get(line.cpu, 0) + sum(g.events for g in group)
        what = f" ({line.cause})" if line.cause else (f" ({line.source})" if line.source else "")
        sizes = [(g.median_ns, g.events) for g in group if g.median_ns is not None]
        size = (f" of {format_gap(sizes[0][0])}" if len(sizes) == 1 else
                ": " + ", ".join(f"{n} of {format_gap(m)}" for m, n in sizes) if sizes else "")
        # no kernel event covers it: nothing on this kernel can be moved; the host or the firmware can
        advice = ("no kernel event covers it, so it comes from below the kernel (the host's timer or vCPU "
                  "scheduling, firmware): pin the vCPU and check the host's tick on that core" if line.cause == HARDWARE
                  else "move it off the polled CPU (IRQ affinity in /proc/irq/N/smp_affinity_list, or the thread's "
                  "CPU mask)")
        actions.append(f"A periodic source at {format_hz(line.frequency_hz)} Hz{what} interrupts CPU {line.cpu} "
                       f"({sum(g.events for g in group)} times{size}): {advice}.")
    if causes is not None:
        for total in causes.totals:
            # the periodic source's gaps are among these: say the rest, so that no gap is counted twice on page 1
            periodic = periodic_hardware.get(total.cpu, 0)
            rest = total.count - periodic
            if total.cause == HARDWARE and rest > 0:
                other = "other " if periodic else ""
                either = " either" if periodic else ""
                actions.append(f"{rest} {other}interruption(s) of CPU {total.cpu} (up to {format_gap(total.max_ns)}) "
                               f"had no kernel event{either}: hardware or hypervisor (an SMI, the host taking the "
                               "vCPU); check the BIOS's SMI sources or the host's CPU pinning.")
    if events is not None and events.shared:
        top = events.shared[0]
        actions.append(f"{len(events.shared)} interruption(s) stopped several CPUs at once (the longest "
                       f"{format_gap(top.duration_ns)} on CPUs {','.join(map(str, top.cpus))}): a machine-wide "
                       "stall (SMI, hypervisor, IPI broadcast).")
    if not summary.from_rows:
        actions.append("This source keeps no per-interruption rows (histograms only): times, causes and periodic "
                       "sources need 'jitterscope capture --mode poll'.")
    return PollFindings(headline=tuple(headline), actions=tuple(actions))


def poll_tables(summary: PollSummary, causes: PollCauses | None = None,
                spectrum: PollSpectrum | None = None, events: PollEvents | None = None, *,
                top_events: int = 15) -> list[Table]:
    """The poll report's tables: noise per CPU, interruptions by size class, causes, periodic sources, events."""
    tables = [Table(
        name="poll_noise", title="Noise per polled CPU",
        columns=("CPU", "runtime [s]", "interruptions", "per s", "noise [µs]", "available [%]", "95 % CI [%]",
                 "max [µs]", "at [s]"),
        rows=tuple((t.cpu, t.runtime_ns / 1e9, None if math.isnan(t.per_second) else t.interruptions, t.per_second,
                    t.noise_ns / 1e3,
                    t.available_percent,
                    None if t.available_ci is None else f"{t.available_ci[0]:.4f}–{t.available_ci[1]:.4f}",
                    t.max_ns / 1e3, t.max_at_s) for t in summary.threads),
        formats=("", "{:.3f}", "{:,}", "{:.1f}", "{:,.1f}", "{:.4f}", "", "{:,.1f}", "{:.3f}"),
        notes=(f"An interruption is a gap >= {format_gap(summary.threshold_ns)} between two reads of the loop "
               "(one loop iteration included). available = 100 × (1 − noise / runtime), as osnoise reports it; "
               "the interval is Student-t over whole one-second windows.",),
    )]
    rows = []
    for t in summary.threads:
        for c in t.classes:
            ci = "" if c.per_second_ci is None else f"{max(c.per_second_ci[0], 0):.2f}–{c.per_second_ci[1]:.2f}"
            rows.append((t.cpu, c.label, c.count, c.per_second, ci))
    tables.append(Table(name="poll_classes", title="Interruptions by size", columns=(
        "CPU", "size", "count", "per s", "95 % CI per s"), rows=tuple(rows), formats=("", "", "{:,}", "{:.2f}", "")))
    if causes is not None:
        tables.append(Table(
            name="poll_causes", title="Causes (the context that held most of each gap)",
            columns=("CPU", "cause", "class", "count", "noise [µs]", "max [µs]", "share of noise [%]"),
            rows=tuple((c.cpu, c.cause, c.cause_class, c.count, c.noise_ns / 1e3, c.max_ns / 1e3,
                        100 * c.share_of_noise) for c in causes.totals),
            formats=("", "", "", "{:,}", "{:,.1f}", "{:,.1f}", "{:.2f}"),
            notes=(f"'{RT_THROTTLING}': a gap of sched_rt_period - sched_rt_runtime recurring at the period; "
                   f"'{HARDWARE}': no kernel event covers most of the gap.", *causes.notes[:2]),
        ))
    if spectrum is not None:
        tables.append(Table(
            name="poll_periodic", title="Periodic sources of interruptions",
            columns=("CPU", "size", "frequency [Hz]", "interruptions", "median [µs]", "source", "cause (trace)"),
            rows=tuple((line.cpu, line.size_class, line.frequency_hz, line.events,
                        None if line.median_ns is None else line.median_ns / 1e3, line.source or "–",
                        line.cause or "–") for line in spectrum.lines),
            formats=("", "", "{:.4g}", "{:,}", "{:,.1f}", "", ""),
            notes=("Per size class, regular interval trains are peeled off one by one (the tick, then a periodic "
                   "IRQ among what is left); a class without one goes through a Welch spectrum of its counts.",),
        ))
    if events is not None and events.events:
        tables.append(Table(
            name="poll_events", title=f"Longest interruption events (of {len(events.events)} >= "
                                      f"{format_gap(events.min_ns)})",
            columns=("start [s]", "duration [µs]", "CPUs", "rows", "cause"),
            rows=tuple(((e.start_ns - _start(summary)) / 1e9 if _start(summary) else None, e.duration_ns / 1e3,
                        ",".join(map(str, e.cpus)), e.rows, e.cause or "–") for e in events.events[:top_events]),
            formats=("{:.3f}", "{:,.1f}", "", "", ""),
        ))
    return tables


def _start(summary: PollSummary) -> int | None:
    starts = [t.max_at_ns - round(t.max_at_s * 1e9) for t in summary.threads
              if t.max_at_ns is not None and t.max_at_s is not None]
    return min(starts) if starts else None


def poll_text(summary: PollSummary, findings: PollFindings, tables: list[Table]) -> str:
    """``jitterscope summary`` of a poll dataset: the findings, then the tables as text."""
    from ..render import to_text
    out = [*findings.headline, *(f"- {a}" for a in findings.actions), ""]
    for table in tables:
        out += [table.title, *to_text(table), ""]
    out += list(summary.notes)
    return "\n".join(out).rstrip() + "\n"



def _same_source(lines: Sequence[PollLine]) -> list[list[PollLine]]:
    """Lines of one CPU at the same frequency (within 0.5 %) with the same cause are one source whose gaps fall
    into several size classes (a 1 kHz host timer costing 8 µs or 13 µs): one action, not one per class."""
    groups: list[list[PollLine]] = []
    for line in lines:
        for group in groups:
            first = group[0]
            if (first.cpu == line.cpu and (first.cause, first.source) == (line.cause, line.source)
                    and abs(first.frequency_hz - line.frequency_hz) <= 0.005 * first.frequency_hz):
                group.append(line)
                break
        else:
            groups.append([line])
    return groups
