"""Plain-text output of ``jitterscope events``: the rates, then the catalogue with each event's evidence."""

from __future__ import annotations

from ..derive import held_by_meaning
from ..format import format_p, format_us
from ..render import tables_text
from .results import Events
from .tables import event_rates_table, events_table


def format_events(events: Events, *, top: int = 20) -> str:
    """The rates table, the half-versus-half line, the catalogue and the evidence of each listed event."""
    lines = [f"{len(events.events):,} events in {events.wakeups:,} wake-ups over {events.observed_s:,.1f} s "
             f"(late: above {format_us(events.threshold_ns)}, {events.threshold_rule})", ""]
    lines.append(tables_text([event_rates_table(events)]))
    if events.halves is not None and events.events:
        h = events.halves
        lines.append(f"first half {h.first:,} events, second half {h.second:,} ({format_p(h.p_value)}, {h.test})")
    lines += ["", tables_text([events_table(events, top=top)])]
    worst = events.worst(top)
    if worst:
        lines += ["", "Evidence:"]
    for rank, event in enumerate(worst, start=1):
        if not event.causes:
            lines.append(f"  {rank}. unexplained: no counter or timeline shows anything during it")
        for cause in event.causes:
            lines.append(f"  {rank}. {cause.kind}: {cause.evidence}")
    if any("held by" in cause.evidence for event in worst for cause in event.causes):
        lines += ["", held_by_meaning(events.policy, events.priority)]
    return "\n".join(lines)
