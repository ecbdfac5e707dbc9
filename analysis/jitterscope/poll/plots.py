"""Figures of a poll dataset: interruptions per second by size (with intervals), every interruption over
time, and the histogram of all gaps.

They draw what the results and the data hold; the only arithmetic is choosing colours and summing the
per-second histograms into one.  Every axis says its unit, every title its n (a paper takes the figure with
its caption only), and the uncertainty where there is one (the summary's 95 % intervals).
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from ..render import capped_legend, empty_panel_note, plain_log_axis
from .causes import PollCauses
from .read import PollData
from .summary import PollSummary, ThreadNoise

MAX_CAUSES_SHOWN = 6


def _availability(summary: PollSummary | None) -> str:
    """The least available CPU with its interval: the uncertainty a caption of the noise carries."""
    if summary is None or not summary.threads:
        return ""
    worst: ThreadNoise = min(summary.threads, key=lambda t: t.available_percent)
    # one line of a column's width (43 characters at 9 pt): the 95 % interval as its larger half-width (the
    # interruptions table gives both ends)
    share, ci = worst.available_percent, worst.available_ci
    ci = "" if ci is None else f" ± {max(share - ci[0], ci[1] - share):.3f}"
    return f"\nleast available: CPU {worst.cpu}, {share:.3f}{ci} %"


def plot_interruptions(data: PollData, ax: Axes, *, causes: PollCauses | None = None,
                       summary: PollSummary | None = None) -> Axes:
    """Each interruption as a point: its start (s from the run's start) against its length (µs, log)."""
    t0 = data.start_ns
    n = sum(t.duration_ns.size for t in data.threads)
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
    ax.set_xlabel("time since the start [s]")
    ax.set_ylabel("gap between two reads [µs]")
    # two lines at a column's width: an interruption is a gap between two reads of the loop (the y label)
    ax.set_title(f"Every interruption ≥ {data.threshold_ns / 1e3:g} µs, n = {n:,}{_availability(summary)}")
    if n == 0:
        empty_panel_note(ax, f"no interruption >= {data.threshold_ns / 1e3:g} µs in the run: n = 0")
        return ax
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)  # gaps read in µs: 20, 50, 100, not 2 x 10^1
    capped_legend(ax, outside=True, fontsize=7, markerscale=2)
    return ax


def plot_class_rates(summary: PollSummary, ax: Axes) -> Axes:
    """Interruptions per second by size class, per CPU, with their 95 % intervals over one-second windows."""
    labels: list[str] = []
    for thread in summary.threads:
        labels += [c.label for c in thread.classes if c.label not in labels]
    width = 0.8 / max(len(summary.threads), 1)
    drawn = 0
    for k, thread in enumerate(summary.threads):
        x, y, low, high = [], [], [], []
        for c in thread.classes:
            if c.per_second <= 0:
                continue  # nothing on a log axis; the table lists the zero
            x.append(labels.index(c.label) - 0.4 + width * (k + 0.5))
            y.append(c.per_second)
            lo, hi = c.per_second_ci if c.per_second_ci is not None else (c.per_second, c.per_second)
            low.append(c.per_second - max(lo, c.per_second * 1e-3))
            high.append(max(hi - c.per_second, 0.0))
        drawn += len(x)
        if x:
            ax.errorbar(x, y, yerr=[low, high], fmt="o", capsize=3, label=f"CPU {thread.cpu}")
    windows = sum(t.windows for t in summary.threads)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("size of the interruption")
    ax.set_ylabel("interruptions per second [1/s]")
    ax.set_title(f"Interruptions/s by size, n = {windows:,} windows\n"
                 f"1 s each, {len(summary.threads)} CPU(s); bars: 95 % t interval")
    if not drawn:
        empty_panel_note(ax, f"no interruption >= {summary.threshold_ns / 1e3:g} µs in any class: n = 0")
        return ax
    ax.set_yscale("log")
    capped_legend(ax, outside=True, fontsize=8)
    return ax


def plot_gap_histogram(data: PollData, summary: PollSummary, ax: Axes) -> Axes:
    """Counts of all gaps (below the threshold too) per log bucket, per CPU, with the threshold marked."""
    edges = data.edges_ns.astype(float)
    total = 0
    windows = 0
    for thread in data.threads:
        counts = thread.windows["histogram"].sum(axis=0)
        windows += thread.windows["histogram"].shape[0]
        total += int(counts.sum())
        if not counts.any():
            continue
        used = np.flatnonzero(counts)
        first, last = int(used[0]), int(used[-1]) + 1  # the occupied buckets only: a log axis from 1 ns is empty
        left = np.maximum(edges[first:last], 1.0)
        # the open last bucket ends where its largest gap does (its edge is INT64_MAX: no axis reaches it)
        right = min(edges[last], max(float(thread.windows["max_gap_ns"].max(initial=0)) + 1, left[-1] * 1.25))
        ax.stairs(counts[first:last], np.r_[left, right] / 1e3, label=f"CPU {thread.cpu}")
    ax.set_xlabel("gap between two reads of the loop [µs]")
    ax.set_ylabel("gaps per bucket [count]")
    # two lines at a column's width: from the per-second histograms, every gap counted (none sampled)
    ax.set_title(f"All gaps, n = {total:,} in {windows:,} s\n"
                 "no uncertainty: counts; quarter-octave bins")
    if total == 0:
        empty_panel_note(ax, "no gap counted: the per-second table is empty, n = 0")
        return ax
    ax.axvline(summary.threshold_ns / 1e3, color="0.3", linestyle=":", label="threshold")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    capped_legend(ax, fontsize=8)
    return ax
