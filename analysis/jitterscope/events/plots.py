"""Figures of events: each event as a mark at its start time on the CPUs it hit, sized by its peak latency."""

from __future__ import annotations

from collections import Counter

import numpy as np
from matplotlib.axes import Axes

from ..render import capped_legend, colour
from .defaults import DISPLAY_EVENTS
from .results import UNEXPLAINED, Events


def plot_events(events: Events, ax: Axes) -> Axes:
    """Event raster: x = start (s after the first wake-up), y = peak latency (µs, log); colour = first cause.

    Events that hit several CPUs are drawn as one mark with the CPU list beside the largest ones.  More than
    :data:`~.defaults.DISPLAY_EVENTS` events: the largest peak of each run of k consecutive events is drawn
    (:meth:`Events.drawn`), and the title says how many of how many; the legend counts every event.
    """
    drawn, k = events.drawn(DISPLAY_EVENTS)
    totals = Counter(e.cause_kinds[0] for e in events.events)
    kinds = sorted(totals, key=lambda k: (k == UNEXPLAINED, k))
    for i, kind in enumerate(kinds):
        chosen = [e for e in drawn if e.cause_kinds[0] == kind]
        x = np.array([e.start_s for e in chosen])
        y = np.array([e.peak_latency_ns / 1000.0 for e in chosen])
        size = np.array([12 + 10 * min(len(e.cpus), 4) for e in chosen])
        ax.scatter(x, y, s=size, color="0.5" if kind == UNEXPLAINED else colour(i), alpha=0.8,
                   label=f"{kind} ({totals[kind]:,})", edgecolors="none")
    for e in events.worst(5):
        if len(e.cpus) > 1:
            ax.annotate("CPUs " + ",".join(str(c) if c >= 0 else "?" for c in e.cpus),
                        (e.start_s, e.peak_latency_ns / 1000.0), fontsize=7, xytext=(4, 2),
                        textcoords="offset points")
    ax.axhline(events.threshold_ns / 1000.0, color="0.3", linestyle=":", linewidth=0.8,
               label=f"late: > {events.threshold_ns / 1000.0:.1f} µs")
    ax.set_yscale("log")
    ax.set_xlabel("start of event [s after the first wake-up]")
    ax.set_ylabel("peak latency [µs]")
    shown = "" if k == 1 else (f"; {len(drawn):,} drawn: the largest peak of each {k:,} consecutive events")
    ax.set_title(f"Latency spike events (n = {len(events.events):,}{shown}; mark size: CPUs affected)",
                 fontsize=None if k == 1 else 9)
    if events.events:
        capped_legend(ax, fontsize=8, outside=True)  # off the marks it would cover
    else:
        ax.text(0.5, 0.5, "no wake-up above the threshold: no events", transform=ax.transAxes, ha="center")
    return ax
