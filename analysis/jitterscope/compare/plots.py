"""Figures of comparisons.  Each ``plot_xxx(result, ax) -> Axes`` draws; none computes.

The results (:class:`~jitterscope.compare.Comparison`) carry their plot-ready
series (quantile curves, histogram fractions, QQ points); these functions only
convert ns to µs and draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.axes import Axes

from ..format import format_change
from ..render import LINE_STYLES, colour, plain_log_axis, verdict_label, verdict_style
from .samples import PairComparison, RunSummary

if TYPE_CHECKING:
    from .groups import GroupComparison

NS_PER_US = 1000.0


def _runs_of(runs: Sequence[RunSummary]) -> Sequence[RunSummary]:
    if not runs:
        raise ValueError("nothing to plot: no runs")
    return runs


def _ns(runs: Sequence[RunSummary]) -> str:
    """The runs' sizes for a title: "n = 5,000 and 4,000 wake-ups" ("n = 5,000 each": the page's title says
    wake-ups, and three titles side by side have no room for the word)."""
    sizes = [f"{run.n:,}" for run in runs]
    if len(set(sizes)) == 1:
        return f"n = {sizes[0]}" + (" each" if len(sizes) > 1 else " wake-ups")
    return f"n = {' and '.join(sizes)} wake-ups"


def plot_compare_histograms(runs: Sequence[RunSummary], ax: Axes) -> Axes:
    """Overlaid latency histograms (fraction of wake-ups per bin, shared bins, log y)."""
    for i, run in enumerate(_runs_of(runs)):
        edges = np.asarray(run.hist_edges_ns) / NS_PER_US
        fraction = np.asarray(run.hist_fraction)
        # stairs take no style from the cycle: the runs' line styles set here, as the CCDF's lines have them
        ax.stairs(np.where(fraction > 0, fraction, np.nan), edges, color=colour(i), linewidth=1.2,
                  linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                  label=f"{run.label} (n={run.n:,}, max {run.max_ns / NS_PER_US:,.1f} µs)")
    if runs[0].hist_edges_ns[0] > 0:
        ax.set_xscale("log")
        plain_log_axis(ax.xaxis)
    ax.set_yscale("log")
    ax.set_xlabel("latency [µs]")
    ax.set_ylabel("wake-ups per bin [fraction of n]")
    ax.set_title(f"Latency histograms ({_ns(runs)})")
    ax.grid(True, alpha=0.3)
    # upper right, in headroom made above the histograms' peaks once the page is laid out (legend_off_data)
    ax.legend(fontsize=8, loc="upper right")
    return ax


def plot_compare_ccdf(runs: Sequence[RunSummary], ax: Axes) -> Axes:
    """Complementary CDFs P(latency > x), log-log."""
    for i, run in enumerate(_runs_of(runs)):
        x = np.asarray(run.quantiles_ns) / NS_PER_US
        p = 1 - np.asarray(run.quantile_levels)
        ax.step(x, p, where="post", color=colour(i), linewidth=1.2, label=run.label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_xlabel("latency x [µs]")
    ax.set_ylabel("P(latency > x) [fraction]")
    ax.set_title(f"CCDF ({_ns(runs)})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_compare_percentiles(runs: Sequence[RunSummary], ax: Axes) -> Axes:
    """Percentile plot: latency against 1/(1-q) on a log axis, labelled 90% … 99.99%."""
    for i, run in enumerate(_runs_of(runs)):
        x = 1 / (1 - np.asarray(run.quantile_levels))
        ax.plot(x, np.asarray(run.quantiles_ns) / NS_PER_US, color=colour(i), linewidth=1.2, label=run.label)
    ax.set_xscale("log")
    ticks = [t for t in (2, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7) if t <= ax.get_xlim()[1] * 1.01]
    ax.set_xticks(ticks, [f"{100 * (1 - 1 / t):g}%" for t in ticks])
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_xlabel("percentile [%]")
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"Percentiles ({_ns(runs)})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_compare_qq(pair: PairComparison, ax: Axes) -> Axes:
    """QQ plot: candidate quantiles against the baseline's at the same levels, with the identity line."""
    points = np.asarray(pair.qq_ns) / NS_PER_US
    ax.plot(points[:, 0], points[:, 1], marker=".", linestyle="none", color=colour(1), markersize=4)
    low, high = float(points.min()), float(points.max())
    ax.plot([low, high], [low, high], color="0.4", linewidth=0.8, linestyle="--", label="no change")
    if low > 0:
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axis(ax.xaxis)
        plain_log_axis(ax.yaxis)
    ax.set_xlabel(f"{pair.baseline} quantile [µs]")
    ax.set_ylabel(f"{pair.candidate} quantile [µs]")
    ax.set_title(f"QQ plot ({len(points):,} quantile levels)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_verdicts(pair: PairComparison, ax: Axes) -> Axes:
    """The per-metric verdicts as a panel of text: change, interval, verdict.

    Each verdict is a marker, a colour and words ("regressed (slower)"): read without colour it still says which
    way the run moved (:data:`~jitterscope.render.VERDICT_STYLES`)."""
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(f"{pair.candidate} vs {pair.baseline}: change of each metric [µs] (CI: bootstrap interval)",
                 loc="left")
    y = 0.92
    for m in pair.metrics:
        rel = format_change(m.relative)
        if m.relative_low is not None and np.isfinite(m.relative_low):
            rel += f"  [{format_change(m.relative_low)} … {format_change(m.relative_high)}]"
        text = (f"{m.metric:>7}  {m.baseline_ns / NS_PER_US:10.2f} → {m.candidate_ns / NS_PER_US:10.2f} µs  "
                f"{rel}")
        ax.text(0.0, y, text, family="DejaVu Sans Mono", fontsize=9, va="top", transform=ax.transAxes)
        style = verdict_style(m.verdict)
        ax.plot([0.985], [y - 0.025], marker=style.marker, color=style.colour, markersize=7, linestyle="none",
                clip_on=False, transform=ax.transAxes)
        ax.text(0.965, y, verdict_label(m.verdict), fontsize=10, weight="bold", color=style.colour, ha="right",
                va="top", transform=ax.transAxes)
        y -= 0.12
    for note in pair.notes:
        ax.text(0.0, y, note, fontsize=8, va="top", wrap=True, transform=ax.transAxes, color="0.3")
        y -= 0.1
    return ax


def plot_group_runs(comparison: GroupComparison, ax: Axes) -> Axes:
    """Each run's p50 … max as a dot, side A left of side B per metric (log y): the spread the verdicts use."""
    metrics = [m.metric for m in comparison.metrics]
    sides = ((comparison.baseline_label, comparison.baseline, -0.15, "o"),
             (comparison.candidate_label, comparison.candidate, 0.15, "s"))
    for i, (label, runs, shift, marker) in enumerate(sides):
        for j, name in enumerate(metrics):
            values = [dict(run.metrics_ns)[name] / NS_PER_US for run in runs]
            ax.scatter(np.full(len(values), j + shift), values, color=colour(i), marker=marker, s=18,
                       label=f"{label} ({len(runs)} runs)" if j == 0 else None)
    ax.set_xticks(range(len(metrics)),
                  [f"{m.metric}\n{verdict_label(m.verdict).replace(' (', chr(10) + '(')}\n{format_change(m.relative)}"
                   for m in comparison.metrics])
    for label, m in zip(ax.get_xticklabels(), comparison.metrics, strict=True):
        label.set_color(verdict_style(m.verdict).colour)
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"each run one dot (n = {len(comparison.baseline)} + {len(comparison.candidate)} runs; "
                 "no uncertainty: a run's own value): the verdicts come from this spread")
    ax.legend(loc="upper left", fontsize=8)
    return ax
