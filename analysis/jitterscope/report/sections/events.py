"""Report section: latency spike events (issue 12): the event raster, the rates and the catalogue.

The catalogue lists events, not samples: a stall seen by several CPUs and its catch-up wake-ups are one row.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import AnalysisError
from ...events import Events, event_rates_table, events_table, find_events, plot_events
from ...render import Page, Table, new_page, note_page
from ..build import ReportContext, register_section


def shared_events(ctx: ReportContext) -> Events | None:
    """The dataset's events, computed once per report (None for histogram-only data)."""
    if ctx.dataset.is_histogram:
        return None
    return ctx.shared("events", lambda: find_events(ctx.dataset, summary=ctx.summary))


@register_section(order=80, name="events")
def events_section(ctx: ReportContext) -> Sequence[Page | Table]:
    """Event raster, event rates and the catalogue of the worst ``--top`` events with their causes."""
    if ctx.dataset.is_histogram:
        return [note_page("events", "Latency spike events",
                          "Latency spike events are not available for histogram-only data: the source kept "
                          "no wake-up times. Capture, or import per-sample output (cyclictest -v, jitterdebugger).")]
    try:
        events = shared_events(ctx)
    except AnalysisError as exc:
        return [note_page("events", "Latency spike events", f"Events not computed: {exc}")]
    assert events is not None
    fig, ax = new_page()
    plot_events(events, ax)
    return [Page("events-raster", fig), event_rates_table(events), events_table(events, top=ctx.top_k)]
