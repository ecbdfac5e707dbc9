"""Text of the trace attribution (``jitterscope summary --trace``), through ``format`` and ``render.Table``."""

from __future__ import annotations

from ..format import format_count, format_p, format_percent, format_us
from ..render import Table, to_text
from .split import LatencySplit, SplitSummary
from .trace import STATUS_ATTRIBUTED, CauseStat, TraceAttribution, held_by_meaning

TABLE_CAUSES = 8
"""Rows of the causes table, "other" included: the most frequent causes, the rest as one row."""


def _ratio(stat: CauseStat) -> str:
    if stat.risk is None:
        return "n/a (present in every traced wake-up)"
    r = stat.risk
    return f"{r.ratio:.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}]"


def trace_attribution_text(result: TraceAttribution, *, worst: int = 10) -> str:
    """Causes across spikes, then the worst spikes each with its contributors, as terminal text.

    ``worst`` limits the spikes listed; the text says how many of how many it shows.
    """
    lines = [
        f"Trace attribution: {format_count(result.n_spikes)} spike(s) over {format_us(result.threshold_ns)} among "
        f"{format_count(result.n_wakeups)} wake-up(s); {format_count(result.n_windows)} completely traced",
        f"  attributed {format_count(result.n_attributed)}, incomplete trace {format_count(result.n_incomplete)}, "
        f"no trace {format_count(result.n_untraced)}; longest contributor unexplained in "
        f"{format_count(result.unexplained_spikes)}",
    ]
    if result.split is not None and result.split.n_spikes:
        lines += split_lines(result.split)
    if result.causes:
        shown_causes, rest = _top(result.causes)
        table = Table(
            name="trace_causes",
            title=f"Causes across spikes (present: >= {format_percent(0.1)} of a spike's delay; risk ratio = "
                  "P(spike | present) / P(spike | absent), 95% CI; Fisher p, Holm-corrected)",
            columns=("cause", "class", "spikes present", "share", "longest in", "time [µs]", "risk ratio [95% CI]",
                     "p (Holm)"),
            rows=tuple((s.cause.label + _pids(s), s.cause.cause_class, s.spikes_present,
                        format_percent(s.share_of_spikes), s.spikes_longest, round(s.total_ns / 1000.0, 1), _ratio(s),
                        format_p(s.p_holm) if s.p_holm is not None else "n/a") for s in shown_causes) + rest,
        )
        lines += ["", *to_text(table, max_width=150)]
    shown = result.spikes[:worst]
    if shown:
        lines += ["", f"Worst spikes (showing {len(shown)} of {format_count(len(result.spikes))}):"]
    for s in shown:
        head = (f"  CPU {s.cpu} thread {s.thread} seq {s.seq} at {s.expected_ns / 1e9:.6f} s (CLOCK_MONOTONIC): "
                f"{format_us(s.delay_ns)} late")
        if s.status != STATUS_ATTRIBUTED:
            lines.append(f"{head}: {s.status}")
            continue
        parts = [f"{c.cause} {format_percent(c.share)} ({format_us(c.ns)})" for c in s.contributions[:4]]
        parts.append(f"unexplained {format_percent((s.unexplained_ns or 0) / s.delay_ns if s.delay_ns else 0)}")
        lines.append(f"{head}; longest: {s.longest}: " + ", ".join(parts))
        lines.append(f"    {spike_split_text(s.split)}")
    lines += ["", held_by_meaning(result.policy, result.priority), result.unexplained_note, *result.notes]
    return "\n".join(lines)


def split_lines(summary: SplitSummary) -> list[str]:
    """The split across the attributed spikes in two lines (how many have one, medians, the unexplained rest)."""
    head = (f"  interrupt vs thread latency: {format_count(summary.n_split)} of {format_count(summary.n_spikes)} "
            "attributed spike(s) split at their timer interrupt")
    if not summary.n_split:
        return [head + " (none: no timer interrupt or wake-up event of the measuring thread in their windows)"]
    sources = ", ".join(f"{n} at {src}" for src, n in summary.by_source.items())
    return [head + f" ({sources})",
            f"    median interrupt latency {format_us(summary.median_interrupt_ns or 0)}, thread latency "
            f"{format_us(summary.median_thread_ns or 0)}; unexplained {format_us(summary.unexplained_interrupt_ns)} "
            f"before the interrupt, {format_us(summary.unexplained_thread_ns)} after (summed)"]


def spike_split_text(split: LatencySplit | None) -> str:
    """"interrupt 60 µs + thread 40 µs (at local_timer_entry)", or why the split is unknown."""
    if split is None or not split.known:
        return f"interrupt/thread split unknown: {split.reason if split is not None else 'not computed'}"
    return (f"interrupt latency {format_us(split.interrupt_ns or 0)} + thread latency "
            f"{format_us(split.thread_ns or 0)} (split at {split.source}; unexplained "
            f"{format_us(split.unexplained_interrupt_ns or 0)} + {format_us(split.unexplained_thread_ns or 0)})")


def _pids(stat: CauseStat) -> str:
    """" [12 pids]" for a command seen under several pids (one cause per command), " [pid 77]" for one."""
    pids = stat.cause.pids or ()
    return f" [{len(pids)} pids]" if len(pids) > 1 else (f" [pid {pids[0]}]" if pids else "")


def _top(causes: tuple[CauseStat, ...]) -> tuple[tuple[CauseStat, ...], tuple[tuple[object, ...], ...]]:
    """The first TABLE_CAUSES - 1 causes (by spikes present), and the rest as one "other" row (if more)."""
    if len(causes) <= TABLE_CAUSES:
        return causes, ()
    shown, rest = causes[:TABLE_CAUSES - 1], causes[TABLE_CAUSES - 1:]
    classes = ", ".join(dict.fromkeys(s.cause.cause_class for s in rest))
    other = (f"other ({len(rest)} causes)", classes, f"≤ {max(s.spikes_present for s in rest)} each", "-",
             sum(s.spikes_longest for s in rest), round(sum(s.total_ns for s in rest) / 1000.0, 1), "n/a", "n/a")
    return shown, (other,)
