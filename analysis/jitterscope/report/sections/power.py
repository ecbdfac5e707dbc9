"""Report section: frequency transitions, SMIs and idle depth against latency (issue 5).

Runs on every size: :func:`jitterscope.power.correlate_dataset` streams with bounded memory
(issue 11), and the figures draw its figure rows (every wake-up up to 200,000 per thread, else
the largest latency of each run of k, said on the page).

Pages: the verdict and cpufreq's claim; per CPU the frequency timeline over
latency; latency against f_eff and C0 (hexbin); event-triggered averages with
surrogate bands and lagged correlations; the detailed tables.  A dataset
without usable counters gets one line saying why, and no figure pages.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from ...derive import CounterSet
from ...errors import AnalysisError
from ...power import (
    Correlation,
    claims_table,
    close_up_window,
    condition_tests_table,
    correlate_dataset,
    event_table,
    plot_counter_hexbin,
    plot_event_average,
    plot_frequency_timeline,
    plot_frequency_zoom,
    plot_lagged_correlation,
    time_in_frequency_table,
    verdict_table,
)
from ...render import PAGE_SIZE_IN, Page, Table, legends_off_data
from ..build import ReportContext, register_section

TIMELINE_PAGES = 4  # CPUs that get a frequency-timeline page
PANELS = 4  # event-average / correlation panels per page


def _line(text: str) -> Table:
    return Table(name="frequency-smi", title="Frequency transitions, SMIs and idle depth", columns=("finding",),
                 rows=((text,),), formats=("",), align=("l",))


@register_section(order=50, name="power")
def power_section(ctx: ReportContext) -> Sequence[Page | Table] | None:
    """Verdict, timelines, hexbins, event-triggered averages, lagged correlations and tables."""
    if ctx.dataset.is_histogram:
        return [_line("counters not recorded (histogram-only data keeps no per-wake-up counters)")]
    try:
        result, counters = ctx.shared("correlation", lambda: correlate_dataset(ctx.dataset))
    except AnalysisError as exc:
        return [_line(f"frequency and SMI correlation not computed: {exc}")]
    if not result.available:
        return [_line(result.reason)]
    items: list[Page | Table] = [verdict_table(result), *_nonempty(claims_table(result))]
    items += _timeline_pages(result, counters)
    if any(s.has_frequency or s.has_c0 for s in counters.series):
        items.append(_hexbin_page(counters, result.params.get("wakeups")))
    items.append(_methods_table(result))
    items += _panel_pages("event-averages", "Event-triggered averages", result.event_averages, plot_event_average)
    items += _panel_pages("lagged-correlation", "Lagged correlation", result.cross_correlations,
                          plot_lagged_correlation)
    items += _nonempty(condition_tests_table(result), event_table(result), time_in_frequency_table(result))
    # once laid out (where each page is drawn): the legends at the top get headroom above the data they sat on
    prepare = functools.partial(legends_off_data, hold=True)
    return [dataclasses.replace(item, prepare=prepare) if isinstance(item, Page) and item.kind == "figure" else item
            for item in items]


def _nonempty(*tables: Table) -> list[Table]:
    return [t for t in tables if t.rows]


def _timeline_pages(result: Correlation, counters: CounterSet) -> list[Page]:
    by_thread = {t.thread: t for t in (result.frequency.transitions if result.frequency else ())}
    pages = []
    cpus = [s.cpu for s in counters.series]
    by_cpu = min(cpus, default=-1) >= 0 and len(set(cpus)) == len(cpus)
    for index, series in enumerate([s for s in counters.series if s.has_frequency][:TIMELINE_PAGES]):
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        top, middle, bottom = fig.subplots(3, 1, height_ratios=(1.0, 1.0, 1.2))
        middle.sharex(top)
        transitions = by_thread.get(series.thread)
        facts = next((q for q in result.counter_quality if q.get("thread") == series.thread), {})
        rows = int(facts.get("rows") or series.seq.size)
        label = ("latency" if rows <= series.seq.size else
                 f"latency: largest of each {-(-rows // series.seq.size):,} wake-ups ({series.seq.size:,} of {rows:,})")
        plot_frequency_timeline(series, transitions, top, middle, threshold_ns=result.thresholds_ns[0], index=index,
                                latency_label=label)
        span_s = (series.expected_ns[-1] - series.expected_ns[0]) / 1e9
        at_s = None if transitions is None else (np.asarray(transitions.time_ns, dtype=np.float64)
                                                 - series.expected_ns[0]) / 1e9
        start_s, stop_s = close_up_window(span_s, at_s)
        plot_frequency_zoom(series, transitions, bottom, start_s=start_s, stop_s=stop_s, index=index)
        # by CPU when every thread has its own known CPU, else by thread: page names must be unique
        pages.append(Page(f"frequency-timeline-cpu{series.cpu}" if by_cpu else
                          f"frequency-timeline-thread{series.thread}", fig))
    return pages


def _hexbin_page(counters: CounterSet, wakeups: int | None) -> Page:
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    left, right = fig.subplots(1, 2)
    latency = np.concatenate([s.latency_ns for s in counters.series])
    plot_counter_hexbin(np.concatenate([s.f_eff_hz for s in counters.series]), latency, left, what="f_eff")
    plot_counter_hexbin(np.concatenate([s.c0 for s in counters.series]), latency, right, what="c0")
    if wakeups and latency.size < wakeups:
        # a long capture: the figure rows are one wake-up in k per thread, the latest-latency one; say so
        fig.suptitle(f"{latency.size:,} of {wakeups:,} wake-ups drawn: per thread the largest latency of each run "
                     "of consecutive wake-ups (biased to spikes; the tests use every wake-up)", fontsize=9)
    return Page("latency-vs-feff-c0", fig)


def _methods_table(result: Correlation) -> Table:
    """Which statistics are exact and which are bounded approximations (the streamed analysis)."""
    methods = dict(result.params.get("methods") or {})
    return Table(name="power-methods", title="How the power-management statistics were computed",
                 columns=("statistic", "method"), rows=tuple((k.replace("_", " "), str(v)) for k, v in methods.items()),
                 formats=("", ""), align=("l", "l"))


def _panel_pages(name: str, title: str, results: Sequence, plot) -> list[Page]:
    pages = []
    for start in range(0, len(results), PANELS):
        chunk = results[start:start + PANELS]
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        rows, cols = (1, len(chunk)) if len(chunk) <= 2 else (2, 2)
        axes = fig.subplots(rows, cols, squeeze=False).ravel()
        for i, (ax, item) in enumerate(zip(axes, chunk, strict=False)):
            plot(item, ax, index=start + i)
        for ax in axes[len(chunk):]:
            ax.set_axis_off()
        fig.suptitle(title, fontsize=12)
        pages.append(Page(name if start == 0 else f"{name}-{start // PANELS + 1}", fig))
    return pages
