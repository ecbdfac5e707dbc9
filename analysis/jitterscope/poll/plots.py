"""Figures of a poll dataset: every interruption over time, and the histogram of all gaps.

They draw what the results and the data hold; the only arithmetic is choosing colours and summing the
per-second histograms into one.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from .causes import PollCauses
from .read import PollData
from .summary import PollSummary

MAX_CAUSES_SHOWN = 6


def plot_interruptions(data: PollData, ax: Axes, *, causes: PollCauses | None = None) -> Axes:
    """Each interruption as a point: its start (s from the run's start) against its length (µs, log)."""
    t0 = data.start_ns
    for thread in data.threads:
        x = (thread.start_ns - t0) / 1e9
        y = thread.duration_ns / 1e3
        names = causes.per_row.get(thread.thread) if causes is not None else None
        if names is None:
            ax.scatter(x, y, s=4, label=f"CPU {thread.cpu}", rasterized=x.size > 5000)
            continue
        by_noise: dict[str, float] = {}
        for name, took in zip(names, thread.duration_ns.tolist(), strict=True):
            by_noise[name] = by_noise.get(name, 0) + took
        shown = sorted(by_noise, key=lambda n: -by_noise[n])[:MAX_CAUSES_SHOWN]
        labels = np.asarray(names, dtype=object)
        for name in shown:
            mask = labels == name
            ax.scatter(x[mask], y[mask], s=4, label=f"CPU {thread.cpu}: {name}", rasterized=mask.sum() > 5000)
        other = ~np.isin(labels, shown)
        if other.any():
            ax.scatter(x[other], y[other], s=4, color="0.6", label=f"CPU {thread.cpu}: other")
    ax.set_yscale("log")
    ax.set_xlabel("time since the start [s]")
    ax.set_ylabel("interruption [µs]")
    ax.set_title("Every interruption of the polling loop")
    ax.legend(fontsize=7, markerscale=2, loc="upper right")
    return ax


def plot_gap_histogram(data: PollData, summary: PollSummary, ax: Axes) -> Axes:
    """Counts of all gaps (below the threshold too) per log bucket, per CPU, with the threshold marked."""
    edges = data.edges_ns.astype(float)
    for thread in data.threads:
        counts = thread.windows["histogram"].sum(axis=0)
        if not counts.any():
            continue
        used = np.flatnonzero(counts)
        first, last = int(used[0]), int(used[-1]) + 1  # the occupied buckets only: a log axis from 1 ns is empty
        left = np.maximum(edges[first:last], 1.0)
        ax.stairs(counts[first:last], np.r_[left, edges[last]] / 1e3, label=f"CPU {thread.cpu}")
    ax.axvline(summary.threshold_ns / 1e3, color="0.3", linestyle=":", label="threshold")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gap between two reads of the loop [µs]")
    ax.set_ylabel("count")
    ax.set_title("Every gap, from the per-second histograms")
    ax.legend(fontsize=8)
    return ax
