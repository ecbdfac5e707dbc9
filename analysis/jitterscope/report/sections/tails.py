"""Report section: the extreme-value view of each thread (peaks over threshold), with its assumptions stated."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from ...errors import AnalysisError
from ...format import format_thread_cpu
from ...render import PAGE_SIZE_IN, Page, Table, note_page
from ...tails import (
    EVT_PROMISE,
    analyze_tails,
    plot_mean_residual_life,
    plot_parameter_stability,
    plot_return_levels,
    plot_tail_qq,
    shape_text,
    tail_checks_table,
    tail_events_table,
    tail_fit_table,
)
from ..build import ReportContext, register_section


@register_section(order=60, name="tails")
def tails_section(ctx: ReportContext) -> Sequence[Page | Table]:
    """Per thread: mean residual life, parameter stability, tail QQ and return levels; then the fit and checks."""
    if ctx.dataset.is_histogram:
        return [note_page("tails", "Tails", "not available for histogram-only data: a tail fit and its "
                          "independence checks need the individual wake-ups in order.")]
    try:
        report = ctx.shared("tails", lambda: analyze_tails(ctx.dataset))
    except AnalysisError as exc:
        return [note_page("tails", "Tails", f"no tail fit: {exc}")]
    items: list[Page | Table] = []
    for fit in report.threads:
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        axes = fig.subplots(2, 2)
        plot_mean_residual_life(fit, axes[0, 0])
        plot_parameter_stability(fit, axes[0, 1])
        plot_tail_qq(fit, axes[1, 0])
        plot_return_levels(fit, axes[1, 1])
        state = ("assumptions hold" if fit.assumptions_ok and fit.extrapolated else
                 "ASSUMPTIONS NOT MET — indicative only" if fit.extrapolated else
                 "a mixed tail — no extrapolation")  # short: the line fits a 7.2 in page at 9 pt
        # two lines: the verdict, then the sample (one line ran off an A4 page for "thread 0 (CPU unknown)")
        fig.suptitle(f"Tail of {format_thread_cpu(fit.thread, fit.cpu)}: {shape_text(fit.xi, fit.xi_se)}, {state}\n"
                     f"n = {fit.n:,} wake-ups, {fit.exceedances:,} above the threshold u",
                     fontsize=12, weight="bold", color="black" if fit.assumptions_ok else "#b00000")
        items.append(Page(f"tails-thread-{fit.thread}", fig))
    fit_table = tail_fit_table(report)
    items.append(Table(fit_table.name, fit_table.title, fit_table.columns, fit_table.rows, fit_table.formats,
                       (*fit_table.notes, EVT_PROMISE)))
    items.append(tail_events_table(report))
    items += [tail_checks_table(fit) for fit in report.threads]
    return items
