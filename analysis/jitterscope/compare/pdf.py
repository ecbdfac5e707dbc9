"""The compare PDF: summary and environment diff first, then one page of figures per pair, then the detail tables.

Reuses the report's PDF machinery (:mod:`jitterscope.report`: page size, rcParams with
Type 42 fonts, ``SOURCE_DATE_EPOCH`` for reproducible bytes, text pages for tables).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import matplotlib
from matplotlib.figure import Figure

from ..dataset import check_output, write_atomically
from ..errors import JitterscopeError
from ..render import PAGE_SIZE_IN, REPORT_RC, Page, legend_off_data, text_pages, write_pdf
from .groups import GroupComparison
from .plots import (
    plot_compare_ccdf,
    plot_compare_histograms,
    plot_compare_percentiles,
    plot_compare_qq,
    plot_group_runs,
    plot_verdicts,
)
from .samples import Comparison
from .tables import (
    environment_diff_table,
    group_environment_table,
    group_headline_table,
    group_metrics_table,
    group_runs_table,
    headline_table,
    methods_table,
    pair_table,
    pair_tests_table,
    ratio_table,
    runs_table,
    verdict_summary_table,
)


@dataclass(frozen=True)
class CompareReportInfo:
    """What :func:`write_compare_report` wrote."""

    path: str
    pages: int


def compare_pages(comparison: Comparison) -> list[Page]:
    """Every page of the compare PDF, in order."""
    # the answer first: what changed and the environment difference that may be its cause
    pages = list(text_pages("compare-summary", "Comparison: what changed, and what differs",
                            [headline_table(comparison), environment_diff_table(comparison)]))
    pages += text_pages("compare-verdicts", "Verdicts and runs", [
        verdict_summary_table(comparison), runs_table(comparison),
        *([methods_table(comparison)] if comparison.methods else [])])
    for i, pair in enumerate(comparison.pairs, start=1):
        runs = (comparison.runs[0], comparison.runs[i])
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        axes = fig.subplot_mosaic("HCP;QVV")
        plot_compare_histograms(runs, axes["H"])
        plot_compare_ccdf(runs, axes["C"])
        plot_compare_percentiles(runs, axes["P"])
        plot_compare_qq(pair, axes["Q"])
        plot_verdicts(pair, axes["V"])
        fig.suptitle(f"{pair.candidate} against {pair.baseline} (n = {runs[1].n:,} and {runs[0].n:,} wake-ups)",
                     fontsize=13, weight="bold")
        legend_off_data(axes["H"])  # the histograms' legend sat on the peaks: headroom above them
        pages.append(Page(f"compare-pair-{i}", fig))
    for i, pair in enumerate(comparison.pairs, start=1):
        pages += text_pages(f"compare-details-{i}", f"Details: {pair.candidate} vs {pair.baseline}",
                            [pair_table(pair, comparison, i), ratio_table(pair, i),
                             pair_tests_table(pair, i, comparison)])
    return pages


def write_compare_report(
    comparison: Comparison, output: str | os.PathLike[str], *, overwrite: bool = False,
) -> CompareReportInfo:
    """Write the compare PDF (vector, Type 42 fonts, reproducible under ``SOURCE_DATE_EPOCH``).

    The compared datasets are never overwritten; an existing ``output`` only with ``overwrite``.

    Raises
    ------
    JitterscopeError
        The output cannot be written.
    """
    out = check_output(output, inputs=[run.path for run in comparison.runs], overwrite=overwrite,
                       error=JitterscopeError)
    labels = " vs ".join(r.label for r in comparison.runs)
    with matplotlib.rc_context(REPORT_RC):
        pages = compare_pages(comparison)
        with write_atomically(out, what="the comparison", error=JitterscopeError) as tmp:
            count = write_pdf(pages, tmp, title=f"jitterscope compare: {labels}", footer=f"compare · {labels}")
    return CompareReportInfo(str(out), count)


def group_pages(comparison: GroupComparison) -> list[Page]:
    """Every page of a group comparison's PDF: the answer, the runs' spread, the tables."""
    pages = list(text_pages("compare-groups-summary", "Comparison of two groups of runs: what changed",
                            [group_headline_table(comparison), group_metrics_table(comparison),
                             group_environment_table(comparison)]))
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    plot_group_runs(comparison, fig.add_subplot())
    fig.suptitle(f"{comparison.candidate_label} ({len(comparison.candidate)} runs) against "
                 f"{comparison.baseline_label} ({len(comparison.baseline)} runs)", fontsize=13, weight="bold")
    pages.append(Page("compare-groups-runs", fig))
    pages += text_pages("compare-groups-details", "Runs", [group_runs_table(comparison)])
    return pages


def write_group_report(
    comparison: GroupComparison, output: str | os.PathLike[str], *, overwrite: bool = False,
) -> CompareReportInfo:
    """Write a group comparison's PDF (as :func:`write_compare_report`)."""
    out = check_output(output, inputs=[run.path for run in comparison.runs], overwrite=overwrite,
                       error=JitterscopeError)
    title = (f"{comparison.candidate_label} ({len(comparison.candidate)} runs) vs {comparison.baseline_label} "
             f"({len(comparison.baseline)} runs)")
    with matplotlib.rc_context(REPORT_RC):
        pages = group_pages(comparison)
        with write_atomically(out, what="the comparison", error=JitterscopeError) as tmp:
            count = write_pdf(pages, tmp, title=f"jitterscope compare: {title}", footer=f"compare · {title}")
    return CompareReportInfo(str(out), count)
