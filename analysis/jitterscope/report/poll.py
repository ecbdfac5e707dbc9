"""The report of a poll dataset (kind ``poll``): page 1 written for noise, then its tables and figures.

Page 1 says how much of each polled CPU the interruptions took, the worst one with its time and cause, and
one action per periodic source or notable cause (the tick: ``nohz_full``; RT throttling; a periodic IRQ;
what no kernel event covers).  Then the sections (:data:`POLL_SECTIONS`, ``--sections`` picks): the
tables (noise per CPU and sizes with the interruptions per second and their intervals, causes, periodic sources,
events), every interruption over time, and the histogram of all gaps.  ``--figures`` writes each figure and table
as the timer report does (:func:`jitterscope.report.write_report`).  All numbers come from :mod:`jitterscope.poll`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from ..dataset import Dataset, Metadata, check_output, open_dataset, write_atomically
from ..errors import JitterscopeError
from ..poll import (
    PollCauses,
    PollData,
    PollEvents,
    PollFindings,
    PollSpectrum,
    PollSummary,
    explain_interruptions,
    find_poll_events,
    plot_class_rates,
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


POLL_SECTIONS: tuple[str, ...] = ("findings", "summary", "interruptions", "causes", "spectrum", "events", "gaps")
"""The sections of a poll report, in order (``report --sections`` picks among them)."""
_SECTION_TABLES: dict[str, tuple[str, str]] = {
    "summary": ("Noise and interruptions by size", "poll_noise poll_classes"),
    "causes": ("Causes of the interruptions", "poll_causes"),
    "spectrum": ("Periodic sources of interruptions", "poll_periodic"),
    "events": ("Interruption events", "poll_events"),
}


@dataclass(frozen=True)
class PollResults:
    """Every analysis of a poll dataset, computed once for all sections."""

    data: PollData
    summary: PollSummary
    causes: PollCauses | None
    spectrum: PollSpectrum | None
    events: PollEvents | None
    findings: PollFindings


def poll_results(dataset: Dataset) -> PollResults:
    """Read and analyse a poll dataset (the causes, periodic sources and events need per-interruption rows)."""
    data = read_poll(dataset)
    summary = summarize_poll(data)
    causes = explain_interruptions(data) if data.has_rows else None
    spectrum = poll_spectrum(data, causes=causes) if data.has_rows else None
    events = find_poll_events(data, causes=causes) if data.has_rows else None
    findings = poll_findings(summary, causes=causes, spectrum=spectrum, environment=dataset.metadata.environment,
                             clock=dataset.metadata.clock, events=events)
    return PollResults(data, summary, causes, spectrum, events, findings)


def check_poll_sections(sections: Sequence[str] | None) -> tuple[str, ...]:
    """The sections asked for, in report order; all of them for None.

    Raises
    ------
    JitterscopeError
        A name that is not a poll section (one line naming the known ones).
    """
    if sections is None:
        return POLL_SECTIONS
    unknown = sorted(set(sections) - set(POLL_SECTIONS))
    if unknown:
        raise JitterscopeError(f"unknown report section(s) {', '.join(unknown)} for a poll dataset; known: "
                               f"{', '.join(POLL_SECTIONS)}")
    return tuple(name for name in POLL_SECTIONS if name in sections)


def poll_section_pages(name: str, results: PollResults, path_name: str) -> Iterator[Page]:
    """The pages of one section (none where it does not apply: no rows, no trace, no periodic source)."""
    r = results
    if name == "findings":
        yield findings_page(path_name, r.findings)
    if name in _SECTION_TABLES:
        heading, names = _SECTION_TABLES[name]
        tables = {t.name: t for t in poll_tables(r.summary, r.causes, r.spectrum, r.events)}
        chosen = [tables[n] for n in names.split() if n in tables]
        if chosen:
            yield from text_pages(f"poll_{name}-tables", heading, chosen)
    if name == "summary":
        fig, ax = new_page()
        plot_class_rates(r.summary, ax)
        yield Page("poll_rates", fig)
    if name == "interruptions" and r.data.has_rows:
        fig, ax = new_page()
        plot_interruptions(r.data, ax, causes=r.causes, summary=r.summary)
        yield Page("poll_interruptions", fig)
    if name == "gaps":
        fig, ax = new_page()
        plot_gap_histogram(r.data, r.summary, ax)
        yield Page("poll_gaps", fig)


def poll_pages(dataset: Dataset, sections: Sequence[str] | None = None,
               contributed: list[str] | None = None) -> Iterator[Page]:
    """Every page of a poll dataset's report (of ``sections``, default all), in order; the names of the sections
    that gave a page are appended to ``contributed``."""
    chosen = check_poll_sections(sections)
    results = poll_results(dataset)
    for name in chosen:
        gave = False
        for page in poll_section_pages(name, results, dataset.path.name):
            gave = True
            yield page
        if gave and contributed is not None:
            contributed.append(name)


def write_poll_report(dataset: Dataset | str | Path, output: str | Path, *, overwrite: bool = False,
                      sections: Sequence[str] | None = None,
                      export: Callable[[Page], None] | None = None,
                      contributed: list[str] | None = None) -> int:
    """Write the PDF report of a poll dataset; return its page count.  ``export`` gets each page once it is in
    the PDF (``--figures``: :func:`jitterscope.report.write_report` writes its files there).

    Raises
    ------
    JitterscopeError
        The dataset cannot be read, is not of kind poll, or the output cannot be written; an unknown section.
    """
    source = dataset.path if isinstance(dataset, Dataset) else Path(dataset)
    check_poll_sections(sections)
    out = check_output(output, inputs=[source], overwrite=overwrite, error=JitterscopeError)
    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)
    with matplotlib.rc_context(REPORT_RC), write_atomically(out, what="the report", error=JitterscopeError) as tmp:
        return write_pdf(poll_pages(dataset, sections, contributed), tmp,
                         title=f"jitterscope report: {dataset.path.name}", footer=f"report · {dataset.path.name}",
                         export=export)


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
