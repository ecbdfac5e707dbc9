"""The report of a poll dataset (kind ``poll``): page 1 written for noise, then its tables and figures.

Page 1 says how much of each polled CPU the interruptions took, the worst one with its time and cause, and
one action per periodic source or notable cause (the tick: ``nohz_full``; RT throttling; a periodic IRQ;
what no kernel event covers).  Then the tables (noise per CPU, sizes, causes, periodic sources, events),
every interruption over time, and the histogram of all gaps.  All numbers come from :mod:`jitterscope.poll`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from ..dataset import Dataset, Metadata, check_output, open_dataset, write_atomically
from ..errors import JitterscopeError
from ..poll import (
    PollFindings,
    explain_interruptions,
    find_poll_events,
    plot_gap_histogram,
    plot_interruptions,
    poll_findings,
    poll_spectrum,
    poll_tables,
    read_poll,
    summarize_poll,
)
from ..render import PAGE_SIZE_IN, REPORT_RC, Page, new_page, text_pages, write_pdf

WRAP = 118


def findings_page(path_name: str, findings: PollFindings) -> Page:
    """Page 1: the headline per CPU in bold, then the actions."""
    fig = Figure(figsize=PAGE_SIZE_IN)
    ax = fig.add_axes((0.04, 0.05, 0.92, 0.90))
    ax.set_axis_off()
    ax.text(0.0, 1.0, f"Busy-poll noise: {path_name}", fontsize=15, weight="bold", va="top", transform=ax.transAxes)
    y = 0.93
    for sentence in findings.headline:
        text = "\n".join(textwrap.wrap(sentence, WRAP))
        ax.text(0.0, y, text, fontsize=11, weight="bold", color="#b00000", va="top", transform=ax.transAxes)
        y -= 0.035 * (text.count("\n") + 1) + 0.015
    y -= 0.02
    if findings.actions:
        ax.text(0.0, y, "What to do", fontsize=12, weight="bold", va="top", transform=ax.transAxes)
        y -= 0.045
    for action in findings.actions:
        text = "\n".join(textwrap.wrap(action, WRAP, initial_indent="• ", subsequent_indent="  "))
        ax.text(0.0, y, text, fontsize=10, va="top", transform=ax.transAxes)
        y -= 0.03 * (text.count("\n") + 1) + 0.012
    return Page("poll_findings", fig, kind="text")


def poll_pages(dataset: Dataset) -> Iterator[Page]:
    """Every page of a poll dataset's report, in order."""
    data = read_poll(dataset)
    summary = summarize_poll(data)
    metadata = dataset.metadata
    causes = explain_interruptions(data) if data.has_rows else None
    spectrum = poll_spectrum(data, causes=causes) if data.has_rows else None
    events = find_poll_events(data, causes=causes) if data.has_rows else None
    findings = poll_findings(summary, causes=causes, spectrum=spectrum, environment=metadata.environment,
                             clock=metadata.clock, events=events)
    yield findings_page(dataset.path.name, findings)
    yield from text_pages("poll_tables", "Interruptions of the polling loop",
                          poll_tables(summary, causes, spectrum, events))
    if data.has_rows:
        fig, ax = new_page()
        plot_interruptions(data, ax, causes=causes)
        yield Page("poll_interruptions", fig)
    fig, ax = new_page()
    plot_gap_histogram(data, summary, ax)
    yield Page("poll_gaps", fig)


def write_poll_report(dataset: Dataset | str | Path, output: str | Path, *, overwrite: bool = False) -> int:
    """Write the PDF report of a poll dataset; return its page count.

    Raises
    ------
    JitterscopeError
        The dataset cannot be read, is not of kind poll, or the output cannot be written.
    """
    source = dataset.path if isinstance(dataset, Dataset) else Path(dataset)
    out = check_output(output, inputs=[source], overwrite=overwrite, error=JitterscopeError)
    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)
    with matplotlib.rc_context(REPORT_RC), write_atomically(out, what="the report", error=JitterscopeError) as tmp:
        return write_pdf(poll_pages(dataset), tmp, title=f"jitterscope report: {dataset.path.name}",
                         footer=f"report · {dataset.path.name}")


def poll_methods(meta: Metadata, *, dataset_sha256: str) -> str:
    """The methods paragraph of a poll dataset (``report --methods``): what was measured and how it is summarised."""
    info = meta.poll or {}
    tool = f"{meta.tool.get('name', 'not recorded')} {meta.tool.get('version', '')}".strip()
    granted = meta.granted
    cpus = ", ".join(str(t.cpu) for t in meta.threads) or "not recorded"
    iteration = (info.get("iteration_ns") or {}).get("median")
    throttling = info.get("rt_throttling")
    histogram_only = bool((meta.source or {}).get("histogram_only"))
    measured = (meta.source or {}).get("tool") or {}
    if histogram_only and measured.get("name"):
        tool = f"{measured.get('name')} {measured.get('version', '')} (imported by {tool})".strip()
    kept = "counted" if histogram_only else "an interruption (its start and length kept)"
    parts = [
        f"Busy-poll interruptions were recorded by {tool} on CPU(s) {cpus}"
        + (f" at {granted.get('policy')} priority {granted.get('priority')}" if granted.get("policy") else "") + ".",
        f"A polling loop read the {info.get('clock', 'recorded')} clock"
        + (f" (median iteration {iteration:g} ns)" if isinstance(iteration, int | float) else "")
        + f"; every gap of at least {info.get('threshold_ns', 'the threshold')} ns between two reads is {kept} "
          "as an interruption, and every gap, shorter ones too, is counted in log-spaced buckets.",
        "The CPU available is 100 × (1 − noise / runtime) %, noise being the summed length of the interruptions, "
        "as osnoise reports it; intervals are 95 % Student-t over whole one-second windows.",
        ("RT throttling was on (" + f"{throttling.get('runtime_us')} of {throttling.get('period_us')} µs)."
         if isinstance(throttling, dict) else "RT throttling was off or not recorded."),
    ]
    if histogram_only:
        parts.append("The source keeps only histograms: there are no per-interruption rows.")
    parts.append(f"The dataset (schema version {meta.schema_version}) has SHA-256 {dataset_sha256}.")
    return " ".join(parts)
