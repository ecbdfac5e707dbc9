"""The sweep PDF (page 1: which settings matter, by how much, with what confidence) and ``--figures``."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from ..dataset import check_output, write_atomically
from ..errors import JitterscopeError
from ..render import (
    PAGE_SIZE_IN,
    REPORT_RC,
    Page,
    Table,
    text_pages,
    to_csv,
    to_json_text,
    to_latex,
    write_pdf,
)
from .plots import plot_condition_metric, plot_effects, plot_sweep_ccdf
from .results import SweepAnalysis
from .tables import (
    conditions_table,
    effects_table,
    events_table,
    headline,
    latex_table,
    methods_paragraph,
    runs_table,
)


def _first_page(result: SweepAnalysis) -> Page:
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=(1, 3.4))
    ax = top.subplots()
    ax.set_axis_off()
    ax.text(0, 1, f"Sweep {Path(result.directory).name}: which settings matter", fontsize=14, weight="bold",
            va="top", transform=ax.transAxes)
    lines = []
    for line in headline(result):
        lines += textwrap.wrap(line, 150, subsequent_indent="    ")
    lines.append(f"{len(result.runs)} runs, {len(result.conditions)} conditions; "
                 + (f"missing: {'; '.join(result.missing)}" if result.missing else "no run missing")
                 + f"; settings restored and verified: {', '.join(result.restored) or 'none changed'}")
    ax.text(0, 0.82, "\n".join(lines), fontsize=8, va="top", family="monospace", transform=ax.transAxes)
    plot_effects(result, bottom.subplots())
    return Page("sweep-effects", fig)


def figure_pages(result: SweepAnalysis) -> list[Page]:
    """The figures: page 1 (which settings matter) and the CCDF overlay with each run's p99."""
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1.5, 1))
    plot_sweep_ccdf(result, left)
    plot_condition_metric(result, "p99", right)
    return [_first_page(result), Page("sweep-ccdf", fig)]


def sweep_pages(result: SweepAnalysis) -> list[Page]:
    pages = figure_pages(result)
    pages += text_pages("sweep-tables", "Conditions and effects",
                        [conditions_table(result), events_table(result), effects_table(result)]
                        + ([effects_table(result, interactions=True)] if result.interactions else []))
    methods = Table("sweep-methods", "Methods", ("",),
                    tuple((line,) for line in textwrap.wrap(methods_paragraph(result), 140)))
    pages += text_pages("sweep-runs", "Runs and methods", [runs_table(result), methods])
    return pages


def write_sweep_report(result: SweepAnalysis, output: str | os.PathLike[str], *, overwrite: bool = False) -> int:
    """Write the sweep PDF; the number of pages.

    Raises
    ------
    JitterscopeError
        The output exists (without ``overwrite``) or cannot be written.
    """
    out = check_output(output, overwrite=overwrite, error=JitterscopeError)
    with matplotlib.rc_context(REPORT_RC):
        with write_atomically(out, what="the sweep report", error=JitterscopeError) as tmp:
            return write_pdf(sweep_pages(result), tmp, title=f"jitterscope sweep {result.directory}",
                             footer=f"sweep · {Path(result.directory).name}")


def write_sweep_figures(result: SweepAnalysis, directory: str | os.PathLike[str], *,
                        overwrite: bool = False) -> list[Path]:
    """Each figure as PDF, SVG and PNG; each table as CSV, JSON and LaTeX; ``sweep-table.tex`` (siunitx) and
    ``methods.txt``.  Returns the files written."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, text: str) -> None:
        path = folder / name
        if path.exists() and not overwrite:
            raise JitterscopeError(f"{path} exists; use --force to replace it")
        path.write_text(text)
        written.append(path)

    with matplotlib.rc_context(REPORT_RC):
        for page in figure_pages(result):
            for ext in ("pdf", "svg", "png"):
                path = folder / f"{page.name}.{ext}"
                if path.exists() and not overwrite:
                    raise JitterscopeError(f"{path} exists; use --force to replace it")
                page.figure.savefig(path, dpi=150)
                written.append(path)
    for table in (conditions_table(result), events_table(result), effects_table(result),
                  effects_table(result, interactions=True), runs_table(result)):
        put(f"{table.name}.csv", to_csv(table))
        put(f"{table.name}.json", to_json_text(table))
        put(f"{table.name}.tex", to_latex(table))
    put("sweep-table.tex", latex_table(result))
    put("sweep-table-wide.tex", latex_table(result, wide=True))
    put("methods.txt", methods_paragraph(result) + "\n")
    return written
