"""The fleet PDF: the answers and the ranking first, then the fleet over time and the key table, the
flagged regressions, every machine's history, and the skipped datasets.

Reuses the report's PDF machinery (:mod:`jitterscope.render`: page size, rcParams with Type 42
fonts, ``SOURCE_DATE_EPOCH`` for reproducible bytes, text pages for tables), as compare does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..dataset import check_output, write_atomically
from ..errors import JitterscopeError
from ..render import PAGE_SIZE_IN, REPORT_RC, Page, Table, text_pages, write_pdf
from .plots import plot_fleet_over_time, plot_fleet_ranking, plot_key_separation, plot_machine_history
from .poll import PollFleet
from .results import Fleet
from .tables import (
    flagged_table,
    history_table,
    key_table,
    poll_fleet_lines,
    poll_fleet_tables,
    ranking_table,
    skipped_table,
    summary_lines,
)

HISTORIES_PER_PAGE = 6
KEYS_PLOTTED = 6


@dataclass(frozen=True)
class FleetReportInfo:
    """What :func:`write_fleet_report` wrote."""

    path: str
    pages: int


def fleet_pages(fleet: Fleet) -> list[Page]:
    """Every page of the fleet PDF, in order."""
    answers = Table(name="fleet-answers", title="Answers", columns=("",),
                    rows=tuple((line,) for line in summary_lines(fleet)))
    pages = list(text_pages("fleet-summary", "Fleet: answers and ranking", [answers, ranking_table(fleet)]))
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1, 1.3))
    plot_fleet_ranking(fleet, left)
    plot_fleet_over_time(fleet, right)
    pages.append(Page("fleet-overview", fig))
    if fleet.keys:
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        shown = fleet.keys[:KEYS_PLOTTED]
        axes = fig.subplots(2, 3).ravel()
        for ax, separation in zip(axes, shown, strict=False):
            plot_key_separation(separation, fleet.tail_metric, ax)
        for ax in axes[len(shown):]:
            ax.set_axis_off()
        fig.suptitle(f"Configuration keys, most separating first: per-machine {fleet.tail_metric} (dots) and "
                     f"merged group (bar); n = {fleet.runs} runs of {len(fleet.histories)} machines\nno uncertainty: "
                     "measured values, the Holm p judges each key", fontsize=11)
        pages.append(Page("fleet-keys-figure", fig))
    pages += text_pages("fleet-keys", "Which configuration keys separate the worst tails", [key_table(fleet)])
    flagged_hosts = {host for host, _ in fleet.flagged}
    pages += text_pages("fleet-regressions", "Regressions between consecutive runs",
                        [flagged_table(fleet), *(history_table(h, fleet) for h in fleet.histories
                                                 if h.host in flagged_hosts)])
    # flagged machines first, then the rest by name: every machine's history is drawn
    ordered = sorted(fleet.histories, key=lambda h: (h.host not in flagged_hosts, h.host))
    for start in range(0, len(ordered), HISTORIES_PER_PAGE):
        fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
        axes = fig.subplots(2, 3).ravel()
        chunk = ordered[start:start + HISTORIES_PER_PAGE]
        for ax, history in zip(axes, chunk, strict=False):
            plot_machine_history(history, ax)
        for ax in axes[len(chunk):]:
            ax.set_axis_off()
        axes[0].legend(fontsize=7)
        fig.suptitle(f"Machine histories ({start + 1}–{start + len(chunk)} of {len(ordered)}; regressed runs "
                     f"marked ▲; n = {sum(len(h.points) for h in chunk)} runs; no uncertainty: each run's own "
                     "values)", fontsize=11)
        pages.append(Page(f"fleet-histories-{start // HISTORIES_PER_PAGE + 1}", fig))
    pages += text_pages("fleet-skipped", "Datasets skipped and method", [skipped_table(fleet), _method(fleet)])
    return pages


def _method(fleet: Fleet) -> Table:
    execution = fleet.execution
    rows = [("scheduler", str(execution.get("scheduler"))), ("workers", str(execution.get("workers"))),
            ("peak RSS per worker [MiB]", ", ".join(f"{v / 2**20:.0f}" for v in
                                                    execution.get("peak_rss_bytes_by_worker", {}).values())),
            ("noise threshold", f"±{fleet.noise:.0%}"), ("confidence", f"{fleet.confidence:.0%}"),
            ("tail metric of the key table", fleet.tail_metric)]
    return Table(name="fleet-method", title="How this fleet was computed", columns=("item", "value"),
                 rows=tuple(rows), notes=fleet.notes)


def plot_poll_ranking(fleet: PollFleet, ax: Axes) -> Axes:
    """Each group's share of CPU lost to interruptions (worst at the top), with its interval over runs."""
    groups = list(fleet.groups)[::-1]
    y = np.arange(len(groups))
    ax.barh(y, [g.lost_percent for g in groups], color="0.6")
    for yi, g in zip(y, groups, strict=True):
        if g.lost_percent_ci is not None:
            ax.plot(g.lost_percent_ci, [yi, yi], color="black", linewidth=1.5)
    ax.set_yticks(y, [f"{g.value} ({g.runs} runs)" for g in groups])
    ax.set_xlabel("CPU lost to interruptions [%] (line: interval over the group's runs)")
    ax.set_title(f"busy-poll runs by {fleet.by} (n = {fleet.runs} runs; lines: {fleet.confidence:.0%} intervals "
                 "over a group's runs, from 3 runs)", loc="left")
    return ax


def poll_fleet_pages(fleet: PollFleet) -> list[Page]:
    """Every page of a poll fleet's PDF: the answers, the ranking drawn, the tables."""
    answers = Table(name="fleet-answers", title="Answers", columns=("",),
                    rows=tuple((line,) for line in poll_fleet_lines(fleet)))
    tables = poll_fleet_tables(fleet)
    pages = list(text_pages("fleet-summary", "Fleet of busy-poll runs: answers and ranking", [answers, tables[0]]))
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    plot_poll_ranking(fleet, fig.add_subplot())
    pages.append(Page("fleet-poll-ranking", fig))
    pages += text_pages("fleet-histories", "Machine histories", tables[1:])
    return pages


def write_fleet_report(fleet: Fleet | PollFleet, output: str | os.PathLike[str], *, inputs: Sequence[str] = (),
                       overwrite: bool = False) -> FleetReportInfo:
    """Write the fleet PDF (vector, Type 42 fonts, reproducible under ``SOURCE_DATE_EPOCH``).

    The datasets in ``inputs`` are never overwritten; an existing ``output`` only with ``overwrite``.

    Raises
    ------
    JitterscopeError
        The output cannot be written.
    """
    out = check_output(output, inputs=inputs, overwrite=overwrite, error=JitterscopeError)
    title = f"{fleet.runs} runs by {fleet.by}"
    with matplotlib.rc_context(REPORT_RC):
        pages = poll_fleet_pages(fleet) if isinstance(fleet, PollFleet) else fleet_pages(fleet)
        with write_atomically(out, what="the fleet report", error=JitterscopeError) as tmp:
            count = write_pdf(pages, tmp, title=f"jitterscope fleet: {title}", footer=f"fleet · {title}")
    return FleetReportInfo(str(out), count)
