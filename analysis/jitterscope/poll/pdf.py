"""The PDF of a poll comparison (``compare -o`` of poll runs): the headline and tables first, then one page per
pair with each CPU's changes and their intervals, marked by verdict.

Reuses the report's PDF machinery (:mod:`jitterscope.render`: page size, rcParams, text pages, reproducible
bytes under ``SOURCE_DATE_EPOCH``) as the timer compare PDF does.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..dataset import check_output, write_atomically
from ..errors import JitterscopeError
from ..format import format_change
from ..render import PAGE_SIZE_IN, REPORT_RC, Page, text_pages, verdict_label, verdict_style, write_pdf
from .compare import PollComparison, PollPair
from .compare_tables import environment_table, headline_table, pair_table, runs_table


@dataclass(frozen=True)
class PollCompareReportInfo:
    """What :func:`write_poll_compare_report` wrote."""

    path: str
    pages: int


def plot_poll_changes(pair: PollPair, ax: Axes) -> Axes:
    """Each metric's change as a ratio (candidate / baseline, log axis) with its interval, marked by verdict.

    A metric with no ratio (none in the baseline, or an unbounded interval) is listed at the right edge
    with its verdict in words, so every metric has a row."""
    changes = list(pair.changes)
    y = np.arange(len(changes))[::-1]
    finite = [1 + c.change.relative for c in changes if math.isfinite(c.change.relative) and c.change.relative > -1]
    lo_edge, hi_edge = min([0.5, *finite]) / 1.5, max([2.0, *finite]) * 1.5
    for yi, c in zip(y, changes, strict=True):
        m = c.change
        style = verdict_style(m.verdict)
        ratio = 1 + m.relative if math.isfinite(m.relative) and m.relative > -1 else None
        if ratio is None:
            ax.plot([hi_edge], [yi], marker=style.marker, color=style.colour, linestyle="none")
            continue
        if m.relative_low is not None and m.relative_high is not None and math.isfinite(m.relative_low) \
                and math.isfinite(m.relative_high) and m.relative_low > -1:
            ax.plot([1 + m.relative_low, 1 + m.relative_high], [yi, yi], color=style.colour, linewidth=2)
        ax.plot([ratio], [yi], marker=style.marker, color=style.colour, markersize=7, linestyle="none")
    ax.axvline(1.0, color="0.4", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlim(lo_edge, hi_edge * 1.2)
    ax.set_yticks(y, [f"{c.name}  {verdict_label(c.verdict)}  {format_change(c.change.relative)}" for c in changes])
    for label, c in zip(ax.get_yticklabels(), changes, strict=True):
        label.set_color(verdict_style(c.verdict).colour)
    ax.set_xlabel("candidate / baseline [unitless] (interval: Bonferroni over the metrics; max: none)")
    ax.set_title(f"{pair.candidate} vs {pair.baseline}", loc="left")
    return ax


def poll_compare_pages(comparison: PollComparison) -> list[Page]:
    """Every page of a poll comparison's PDF, in order."""
    pages = list(text_pages("compare-poll-summary", "Busy-poll comparison: what changed, and what differs",
                            [headline_table(comparison), environment_table(comparison)]))
    for i, pair in enumerate(comparison.pairs, start=1):
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        plot_poll_changes(pair, fig.add_subplot())
        seconds = sum(r.runtime_s for r in comparison.runs)
        fig.suptitle(f"{pair.candidate} against {pair.baseline}: interruptions per CPU (n = {len(comparison.runs)} "
                     f"runs, {seconds:,.0f} s polled;\nlines: {100 * comparison.metric_confidence:.4g} % intervals, "
                     "Bonferroni over the metrics)", fontsize=13, weight="bold")
        pages.append(Page(f"compare-poll-pair-{i}", fig))
    pages += text_pages("compare-poll-details", "Details",
                        [*(pair_table(comparison, p, i) for i, p in enumerate(comparison.pairs, 1)),
                         runs_table(comparison)])
    return pages


def write_poll_compare_report(comparison: PollComparison, output: str | os.PathLike[str], *,
                              overwrite: bool = False) -> PollCompareReportInfo:
    """Write a poll comparison's PDF; the compared datasets are never overwritten.

    Raises
    ------
    JitterscopeError
        The output cannot be written.
    """
    out = check_output(output, inputs=[run.path for run in comparison.runs], overwrite=overwrite,
                       error=JitterscopeError)
    labels = " vs ".join(r.label for r in comparison.runs)
    with matplotlib.rc_context(REPORT_RC):
        pages = poll_compare_pages(comparison)
        with write_atomically(out, what="the comparison", error=JitterscopeError) as tmp:
            count = write_pdf(pages, tmp, title=f"jitterscope compare (poll): {labels}",
                              footer=f"compare · {labels}")
    return PollCompareReportInfo(str(out), count)
