"""Figures of events: each event as a mark at its start time on the CPUs it hit, sized by its peak latency."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from ..render import capped_legend, colour, plain_log_axis
from .defaults import DISPLAY_EVENTS
from .groups import MAX_GROUPS, group_causes
from .results import Events

UNDER_THRESHOLD = 0.15
"""Share of the y axis below the threshold line: room for its name under the marks, which all lie above it."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""One marker per legend entry (the colours repeat in grey print): the groups stay apart without colour."""


def plot_events(events: Events, ax: Axes) -> Axes:
    """Event raster: x = start (s after the first wake-up), y = peak latency (µs, log); colour and marker = first
    cause, grouped as the causes table groups them (:func:`~.groups.group_causes`: at most
    :data:`~.groups.MAX_GROUPS` entries, the top causes and "other").

    Events that hit several CPUs are drawn as one mark with the CPU list beside the largest ones.  More than
    :data:`~.defaults.DISPLAY_EVENTS` events: the largest peak of each run of k consecutive events is drawn
    (:meth:`Events.drawn`), and the title says how many of how many; the legend counts every event.
    """
    drawn, k = events.drawn(DISPLAY_EVENTS)
    groups = group_causes(events, MAX_GROUPS)
    group_of = {e.index: i for i, g in enumerate(groups) for e in g.events}
    for i, group in enumerate(groups):
        chosen = [e for e in drawn if group_of[e.index] == i]
        x = np.array([e.start_s for e in chosen])
        y = np.array([e.peak_latency_ns / 1000.0 for e in chosen])
        size = np.array([12 + 10 * min(len(e.cpus), 4) for e in chosen])
        grey = group.cause_class == "unexplained" or group.is_other
        ax.scatter(x, y, s=size, color="0.5" if grey else colour(i), alpha=0.8, marker=MARKERS[i % len(MARKERS)],
                   label=f"{group.label} ({len(group.events):,})", edgecolors="none")
    for e in events.worst(5):
        if len(e.cpus) > 1:
            ax.annotate("CPUs " + ",".join(str(c) if c >= 0 else "?" for c in e.cpus),
                        (e.start_s, e.peak_latency_ns / 1000.0), fontsize=7, xytext=(4, 2),
                        textcoords="offset points")
    # the threshold is named on its line, not in the legend: the legend holds the causes only.  Its name goes
    # under the line: every event peaks above it, so nothing is drawn there (above it, a mark hid the name)
    threshold_us = events.threshold_ns / 1000.0
    ax.axhline(threshold_us, color="0.3", linestyle=":", linewidth=0.8)
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)  # peaks within a decade: 20, 30, 40 µs, not 2 x 10^1
    if events.events:
        low, high = ax.get_ylim()
        # the line at least UNDER_THRESHOLD of the axis above its bottom (log: in decades), room for the name
        ax.set_ylim(min(low, threshold_us / (high / threshold_us) ** (UNDER_THRESHOLD / (1 - UNDER_THRESHOLD))),
                    high)
    ax.annotate(f"late: > {threshold_us:.1f} µs", (1.0, threshold_us), xycoords=("axes fraction", "data"),
                xytext=(-2, -6), textcoords="offset points", ha="right", va="top", fontsize=7, color="0.3")
    ax.set_xlabel("start of event [s after the first wake-up]")
    ax.set_ylabel("peak latency [µs]")
    shown = "" if k == 1 else f", {len(drawn):,} drawn"
    which = "measured peaks" if k == 1 else f"peaks, largest of each {k:,}"  # of k consecutive events
    # two lines at a column's width (43 characters a line at 9 pt): what the marks are goes into the legend's title
    ax.set_title(f"Latency spike events, n = {len(events.events):,}{shown}\nno uncertainty: {which}",
                 fontsize=None if k == 1 else 9)
    if events.events:
        # off the marks it would cover; the causes are already top 7 + "other", so the cap changes nothing here
        capped_legend(ax, fontsize=8, outside=True, title="first cause (events)\nmark size: CPUs affected",
                      title_fontsize=8)
    else:
        ax.text(0.5, 0.5, "no wake-up above the threshold: no events", transform=ax.transAxes, ha="center")
    return ax
