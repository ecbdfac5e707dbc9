"""Report sections on latency: distributions, latency over time (largest events marked), period error.

Histogram-only datasets get the distributions (from their bins) and a note in
place of each figure that needs per-wake-up samples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...errors import AnalysisError
from ...render import PAGE_SIZE_IN, Page, new_page, note_page
from ...summary import (
    bin_histograms,
    ccdf_curves,
    log_density,
    percentile_curves,
    plot_ccdf,
    plot_latency_density,
    plot_latency_histogram,
    plot_percentiles,
    plot_period_error,
    plot_timeline,
    series_label,
)
from ..build import ReportContext, register_section
from .events import shared_events

HISTOGRAM_ONLY = ("not available for histogram-only data: the source ({source}) kept only a latency histogram, "
                  "not the individual wake-ups this figure needs. Capture with jitterscope-capture, or import "
                  "per-sample output (cyclictest -v, jitterdebugger samples) to get it.")
TOO_FEW = ("Too few wake-ups to draw this: every thread has fewer than two (distinct, positive) latencies. "
           "Capture for longer.")
TIMELINE_PANELS = 4  # threads per latency-over-time page


@register_section(order=20, name="distributions")
def distributions_section(ctx: ReportContext) -> Sequence[Page]:
    """Latency histogram (OSADL style: linear µs, a far tail on a log continuation), density in log-spaced bins (log
    µs), percentiles and CCDF."""
    threads = ctx.summary.threads
    with_all = (*threads, ctx.summary.overall) if len(threads) > 1 else tuple(threads)
    pages = []
    fig, ax = new_page()
    plot_latency_histogram(bin_histograms(threads, "latency"), ax)
    pages.append(Page("latency-histogram", fig))
    fig, ax = new_page()
    plot_latency_density(log_density(threads, "latency"), ax)
    pages.append(Page("latency-density", fig))
    pages.append(_curve_page("latency-percentiles", "Latency percentiles", percentile_curves(with_all),
                             plot_percentiles))
    pages.append(_curve_page("latency-ccdf", "Complementary CDF (tail)", ccdf_curves(with_all), plot_ccdf))
    return pages


def _curve_page(name: str, title: str, curves: Sequence[Any], plot: Callable[[Sequence[Any], Axes], Axes]) -> Page:
    """A page with `plot` of `curves`, or a note saying there were too few wake-ups to draw any."""
    if not curves:
        return note_page(name, title, TOO_FEW)
    fig, ax = new_page()
    plot(curves, ax)
    return Page(name, fig)


@register_section(order=30, name="timeline")
def timeline_section(ctx: ReportContext) -> Sequence[Page]:
    """Maximum and p99 latency per time bin, spikes marked; up to four threads per page."""
    if ctx.timeline is None:
        return [note_page("latency-over-time", "Latency over time", _histogram_only(ctx))]
    marks = _event_peaks(ctx)
    threads = ctx.timeline.threads
    pages = []
    for start in range(0, len(threads), TIMELINE_PANELS):
        chunk = threads[start:start + TIMELINE_PANELS]
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        axes = fig.subplots(len(chunk), 1, squeeze=False, sharex=True)[:, 0]
        for ax, item in zip(axes, chunk, strict=True):
            index = threads.index(item)
            plot_timeline(item, ax, origin_ns=ctx.timeline.origin_ns, index=index, total=len(threads),
                          spikes=marks.get(item.thread, []), marks_label="peaks of the largest events",
                          label=series_label(item.thread, item.cpu, len(threads)))
        for ax in axes[:-1]:
            ax.set_xlabel("")
        fig.suptitle("Latency over time (no uncertainty: each bin's own max and p99)", fontsize=12)
        name = "latency-over-time" if start == 0 else f"latency-over-time-{start // TIMELINE_PANELS + 1}"
        pages.append(Page(name, fig))
    return pages


@register_section(order=35, name="period")
def period_section(ctx: ReportContext) -> Sequence[Page]:
    """Distribution of the period error (consecutive wake-up distance minus the interval)."""
    if ctx.dataset.is_histogram:
        return [note_page("period-error", "Period error distribution", _histogram_only(ctx))]
    try:
        hists = bin_histograms(ctx.summary.threads, "period error", attribute="period_error")
    except AnalysisError:
        return [note_page("period-error", "Period error distribution",
                          "No thread has two consecutive wake-ups, so no period can be measured.")]
    intervals = {t.interval_ns for t in ctx.summary.threads if t.interval_ns}
    fig, ax = new_page()
    plot_period_error(hists, ax, interval_ns=intervals.pop() if len(intervals) == 1 else None)
    return [Page("period-error", fig)]


def _event_peaks(ctx: ReportContext) -> dict[int, list[SimpleNamespace]]:
    """Per thread, its peak in each of the ``--top`` largest events (the marks of the latency-over-time plots)."""
    try:
        events = shared_events(ctx)
    except AnalysisError:
        return {}
    marks: dict[int, list[SimpleNamespace]] = {}
    for event in events.worst(ctx.top_k) if events is not None else ():
        for thread, latency, when in event.thread_peaks:
            marks.setdefault(thread, []).append(SimpleNamespace(actual_ns=when, latency_ns=latency))
    return marks


def _histogram_only(ctx: ReportContext) -> str:
    source = ctx.dataset.metadata.source or {}
    return HISTOGRAM_ONLY.format(source=source.get("format", "an imported histogram"))
