"""Figures from results.  Every ``plot_xxx(result, ax) -> Axes`` draws on the Axes it is given.

Plots compute no statistics: they take the series of :mod:`.curves`,
:mod:`timeline` and :mod:`stats` results, convert units for display (ns to µs,
seconds since the first wake-up) and draw.  A notebook calls them directly::

    fig, ax = plt.subplots()
    plot_latency_histogram(bin_histograms(summary.threads), ax)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, NullLocator

from ..render import colour, linear_then_log_axis, plain_log_axis, stairs
from .curves import BinnedHistograms, CcdfCurve, LogDensity, PercentileCurve
from .timeline import ThreadTimeline

NS_PER_US = 1000.0
NS_PER_S = 1e9
LOG_RANGE = 20.0  # a y range wider than this factor gets a log axis
# what a caption says of its uncertainty (render.captions): these figures draw the sample itself, no estimate
EXACT_COUNTS = "no uncertainty: exact counts"
EXACT_QUANTILES = "no uncertainty: the sample's exact quantiles"



def plot_latency_histogram(hists: BinnedHistograms, ax: Axes) -> Axes:
    """OSADL-style latency histogram: linear µs axis, counts per fixed bin on a log axis, one colour per CPU,
    each CPU's maximum in the legend and marked.  A tail reaching far past the bulk is drawn on a logarithmic
    continuation of the axis (:func:`~jitterscope.render.linear_then_log_axis`), so the bulk keeps its width.
    For a log latency axis throughout use :func:`plot_latency_density`."""
    width_us = hists.bin_width_ns / NS_PER_US
    top = max(int(s.counts.max()) for s in hists.series)
    total = len(hists.series)
    for i, series in enumerate(hists.series):
        edges = series.edges_ns / NS_PER_US
        stairs(ax, np.where(series.counts > 0, series.counts, 0.1), edges, baseline=0.1, color=colour(i, total),
                  linewidth=1.0, label=f"{series.label}: n={series.n:,}, max {series.max_ns / NS_PER_US:,.1f} µs")
        ax.plot([series.max_ns / NS_PER_US], [top * 3.0], marker="v", color=colour(i, total), markersize=7,
                linestyle="none")
        ax.axvline(series.max_ns / NS_PER_US, color=colour(i, total), linewidth=0.8, linestyle=":")
    ax.set_yscale("log")
    ax.set_ylim(0.5, top * 8.0)
    if linear_then_log_axis(ax, [(s.edges_ns / NS_PER_US, s.counts) for s in hists.series],
                            label="latency [µs]") is None:
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    ax.set_ylabel(f"wake-ups per {width_us:g} µs bin [count]")
    ax.set_title(f"Latency histogram, {_n(hists.series)} ({width_us:g} µs bins; ▼: maximum; {EXACT_COUNTS})")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, len(hists.series))
    return ax


def plot_latency_density(density: LogDensity, ax: Axes) -> Axes:
    """Latency density on log-log axes, in log-spaced bins (no barcode of single counts in the tail)."""
    total = len(density.series)
    for i, (series, values) in enumerate(zip(density.series, density.density_per_us, strict=True)):
        edges = series.edges_ns / NS_PER_US
        shown = np.where(values > 0, values, np.nan)
        stairs(ax, shown, edges, color=colour(i, total), linewidth=1.0,
                  label=f"{series.label}: n={series.n:,}, max {series.max_ns / NS_PER_US:,.1f} µs")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_xlabel("latency [µs]")
    ax.set_ylabel("wake-ups per µs [fraction of n]")
    ax.set_title(f"Latency density, {_n(density.series)} ({density.bins_per_decade} log bins per decade; "
                 f"{EXACT_COUNTS})")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, total)
    return ax


def plot_period_error(hists: BinnedHistograms, ax: Axes, *, interval_ns: int | None = None) -> Axes:
    """Distribution of period error (Δactual − interval) per CPU, log y; with ``interval_ns``, the period on top.
    A tail reaching far past the bulk is drawn on a logarithmic continuation of the axis, as the latency
    histogram's."""
    width_us = hists.bin_width_ns / NS_PER_US
    top = max(int(s.counts.max()) for s in hists.series)
    for i, series in enumerate(hists.series):
        stairs(ax, np.where(series.counts > 0, series.counts, 0.1), series.edges_ns / NS_PER_US, baseline=0.1,
                  color=colour(i, len(hists.series)), linewidth=1.0,
                  label=(f"{series.label}: n={series.n:,}, min {series.min_ns / NS_PER_US:,.1f} µs, "
                         f"max {series.max_ns / NS_PER_US:,.1f} µs"))
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylim(0.5, top * 8.0)
    interval_us = interval_ns / NS_PER_US if interval_ns else None
    label = "period error: period − interval" + (f" ({interval_us:g} µs)" if interval_us else "") + " [µs]"
    compressed = linear_then_log_axis(ax, [(s.edges_ns / NS_PER_US, s.counts) for s in hists.series],
                                      label=label) is not None
    ax.set_ylabel(f"periods per {width_us:g} µs bin [count]")
    title = f"Period error distribution, {_n(hists.series)} periods ({EXACT_COUNTS})"
    ax.set_title(title)
    # the period itself on top, where the axis is linear (a shifted symlog axis would need ticks of its own;
    # the label then names the interval instead)
    if interval_us and not compressed:
        top_axis = ax.secondary_xaxis("top", functions=(lambda e: e + interval_us, lambda p: p - interval_us))
        top_axis.set_xlabel(f"period = actual[i] − actual[i−1] [µs] (interval {interval_us:g} µs)")
        ax.set_title(title, pad=12)
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, len(hists.series))
    return ax


def plot_percentiles(curves: Sequence[PercentileCurve], ax: Axes) -> Axes:
    """Latency against percentile on an x = 1/(1−q) log axis, labelled 50 % … 99.999 %."""
    highest = 2.0
    top = max(float(np.max(c.values_ns)) for c in curves) if curves else 1.0
    for i, curve in enumerate(curves):
        x = 1.0 / (1.0 - curve.levels / 100.0)
        style = _curve_style(curve.thread, i, curves)
        ax.plot(x, curve.values_ns / NS_PER_US, label=f"{curve.label} (n={curve.n:,})", **style)
        mx = np.array([1.0 / (1.0 - q / 100.0) for q, _ in curve.marks])
        ax.plot(mx, np.array([v for _, v in curve.marks]) / NS_PER_US, marker="o", markersize=3.5,
                linestyle="none", color=style["color"])
        ax.plot([curve.n], [curve.max_ns / NS_PER_US], marker="^", markersize=6, color=style["color"])
        highest = max(highest, float(curve.n))
        top = max(top, curve.max_ns)
    ticks = [2.0] + [10.0 ** k for k in range(1, 6) if 10.0 ** k <= highest * 1.5]
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([_level_label(t) for t in ticks])
    ax.set_xlim(1.8, highest * 1.6)
    bottom = min((float(np.min(c.values_ns)) for c in curves), default=1.0)
    if bottom > 0 and top / bottom > LOG_RANGE:
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
    ax.set_xlabel("percentile q [%] (axis: 1/(1−q), log scale; ▲ = maximum at x = n)")
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"Latency percentiles, {_n(curves)} ({EXACT_QUANTILES})")
    ax.grid(True, which="both", alpha=0.3)
    _legend(ax, len(curves))
    return ax


def plot_ccdf(curves: Sequence[CcdfCurve], ax: Axes) -> Axes:
    """P(latency > x) against x on log-log axes, one line per CPU."""
    floor = 1.0
    for i, curve in enumerate(curves):
        style = _curve_style(curve.thread, i, curves)
        label = f"{curve.label} (n={curve.n:,})"
        if curve.excluded:
            label += f", {curve.excluded:,} ≤ 0 ns not shown"
        ax.step(curve.x_ns / NS_PER_US, curve.p_exceed, where="post", label=label, **style)
        floor = min(floor, 1.0 / max(curve.n, 1))
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_ylim(floor * 0.5, 1.5)
    ax.set_xlabel("latency x [µs]")
    ax.set_ylabel("P(latency > x) [fraction]")
    ax.set_title(f"Complementary CDF (tail), {_n(curves)} ({EXACT_QUANTILES})")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, len(curves))
    return ax


def plot_timeline(timeline: ThreadTimeline, ax: Axes, *, origin_ns: int | None = None,
                  spikes: Sequence[Any] = (), label: str = "", index: int = 0, total: int = 1,
                  marks_label: str | None = None) -> Axes:
    """Maximum and p99 latency per time bin of one thread, spikes (``stats.Spike``) marked with ×."""
    origin = timeline.first_ns if origin_ns is None else origin_ns
    centre = (timeline.bin_start_ns + timeline.bin_width_ns / 2 - origin) / NS_PER_S
    width_s = timeline.bin_width_ns / NS_PER_S
    ax.plot(centre, timeline.max_ns / NS_PER_US, color=colour(index, total), linewidth=1.0, marker=".",
            markersize=2,
            label=f"max per {_seconds(width_s)} bin")
    ax.plot(centre, timeline.p99_ns / NS_PER_US, color="0.35", linewidth=1.0, linestyle="--",
            label=f"p99 per {_seconds(width_s)} bin")
    if spikes:
        ax.plot([(s.actual_ns - origin) / NS_PER_S for s in spikes], [s.latency_ns / NS_PER_US for s in spikes],
                marker="x", color="#c00000", linestyle="none", markersize=6,
                label=marks_label or f"top {len(spikes)} spikes")
    values = np.concatenate([timeline.max_ns, timeline.p99_ns]).astype(np.float64) / NS_PER_US
    positive = values[values > 0]
    # headroom above the data so the legend does not cover the largest values
    if positive.size and positive.max() / positive.min() > LOG_RANGE:
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
        ax.set_ylim(top=positive.max() * 6.0)
    elif positive.size:
        ax.set_ylim(bottom=0.0, top=positive.max() * 1.45)
    ax.set_xlabel("time since first wake-up [s]")
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"{label or f'thread {timeline.thread}'}: latency over time "
                 f"(n = {int(np.sum(timeline.count)):,})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8, ncols=3)
    return ax


def _n(series: Sequence[Any]) -> str:
    """The wake-ups behind a figure's series for its title: "n = 20,000" (all threads together: the
    all-threads curve's n where one is drawn, else the threads' sum)."""
    pooled = [s for s in series if getattr(s, "thread", 0) == -1]
    return f"n = {int(pooled[0].n) if pooled else sum(int(s.n) for s in series):,}"


def _curve_style(thread: int, index: int, curves: Sequence[Any]) -> dict[str, Any]:
    # all threads together: thick black; each thread: its CPU's colour, as in the histogram
    if thread < 0:
        return {"color": "black", "linewidth": 2.0}
    return {"color": colour(index, sum(1 for c in curves if c.thread >= 0)), "linewidth": 1.2}


def _legend(ax: Axes, entries: int) -> None:
    if entries:
        ax.legend(loc="best", fontsize=8 if entries > 4 else 9, ncols=1 if entries <= 8 else 2, framealpha=0.85)


def _level_label(x: float) -> str:
    q = 100.0 * (1.0 - 1.0 / x)
    return f"{q:.{max(0, round(float(np.log10(x))) - 2)}f}%"


def _seconds(value: float) -> str:
    return f"{value * 1000:g} ms" if value < 1 else f"{value:g} s"
