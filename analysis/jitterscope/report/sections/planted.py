"""Report section (simulations only): planted versus recovered, right after the findings.

Each planted effect against what this report's analyses found (:func:`jitterscope.io.recover_planted`), with
the tolerance and a verdict.  It reads the events, correlate's result and the spectra the other sections
compute (shared through the context, so nothing runs twice), and uses only those of sections in the report.
The PDF shows each effect as three wrapped lines (planted, recovered, tolerance); ``--figures`` gets the same
rows one effect per row, a column each (CSV, JSON, LaTeX).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ...errors import AnalysisError
from ...io import PlantedRecovery, recover_planted
from ...render import Page, Table, text_pages
from ..build import ReportContext, register_section
from .events import shared_events
from .provenance import SIMULATED_BANNER

NAME = "planted"


def shared_recovery(ctx: ReportContext) -> PlantedRecovery | None:
    """The planted-versus-recovered rows of a simulated dataset, computed once per report (else None)."""
    if not ctx.dataset.metadata.ground_truth or ctx.dataset.is_histogram:
        return None
    return ctx.shared("planted", lambda: _recover(ctx))


def _recover(ctx: ReportContext) -> PlantedRecovery | None:
    why: dict[str, str] = {}
    results: dict[str, Any] = {}
    try:
        results["events"] = shared_events(ctx)
    except AnalysisError as exc:
        why["events"] = f"events not computed: {exc}"
    spectra_why = None  # the spectra before correlate (findings.SHARED_ORDER: the peaks add); said in this order
    if "spectrum" in ctx.sections:
        from ...spectrum import analyze_spectra
        try:
            results["spectra"] = ctx.shared("spectrum", lambda: analyze_spectra(ctx.dataset))
        except AnalysisError as exc:
            spectra_why = f"spectra not computed: {exc}"
    else:
        spectra_why = "the spectrum section is not in this report (--sections)"
    if "power" in ctx.sections:
        from ...power import correlate_dataset
        try:
            results["correlation"], _ = ctx.shared("correlation", lambda: correlate_dataset(ctx.dataset))
        except AnalysisError as exc:
            why["power"] = f"correlate failed: {exc}"
    else:
        why["power"] = "the power section is not in this report (--sections)"
    if spectra_why is not None:
        why["spectrum"] = spectra_why
    return recover_planted(ctx.dataset, unavailable=why, **results)


def planted_table(recovery: PlantedRecovery, *, name: str = f"{NAME}-recovered") -> Table:
    """One row per planted effect: effect, verdict, planted, recovered, tolerance (the ``--figures`` files)."""
    return Table(name=name, title="Planted versus recovered (simulation)",
                 columns=("effect", "verdict", "planted", "recovered", "tolerance"),
                 rows=tuple((r.effect, r.verdict, r.planted, r.recovered, r.tolerance) for r in recovery.rows),
                 formats=("", "", "", "", ""), align=("l", "l", "l", "l", "l"),
                 notes=(f"{recovery.tally()}.", *recovery.notes))


def _display_table(recovery: PlantedRecovery, heading: str) -> Table:
    """The same rows for the PDF: three wrapped lines per effect (only a table's last column wraps)."""
    rows: list[tuple[str, str, str, str]] = []
    for row in recovery.rows:
        rows += [(row.effect, row.verdict.upper(), "planted", row.planted), ("", "", "recovered", row.recovered),
                 ("", "", "tolerance", row.tolerance)]
    # titled as the page, so the title is not printed twice: one effect more fits on the page
    return Table(name=f"{NAME}-display", title=heading,
                 columns=("effect", "verdict", "", "what"), rows=tuple(rows), formats=("", "", "", ""),
                 align=("l", "l", "l", "l"),
                 notes=(f"{recovery.tally()}, against this report's own results ({', '.join(recovery.analyses)}). "
                        "Verdicts: recovered (within the tolerance), partly, missed, false positive (found where "
                        "nothing was planted), not checked (the analysis is not in this report, or the run drew "
                        "none).",))


@register_section(order=6, name=NAME, uses=("spectrum",))
def planted_section(ctx: ReportContext) -> Sequence[Page] | None:
    """After page 1 of a simulation: every planted effect, what was recovered, the tolerance and the verdict."""
    recovery = shared_recovery(ctx)
    if recovery is None:
        return None
    heading = f"Planted versus recovered: {ctx.dataset.path.name}"
    pages = list(text_pages(NAME, heading, [_display_table(recovery, heading)], banner=SIMULATED_BANNER))
    # --figures gets the flat table (one effect per row), not the PDF's three-lines-per-effect layout
    pages[0] = dataclasses.replace(pages[0], tables=(planted_table(recovery),))
    return pages
