"""While a report's pages are drawn, each text is measured once per renderer kind, not once per page (report/
drawing.py, issue 25: every page's PDF save made a new renderer, which measured the same tick labels again, 1,563
measurements in a 10 s capture's report), and the pages are the same bytes as drawn without the shared sizes."""

from __future__ import annotations

from datetime import UTC, datetime

import matplotlib
import matplotlib.text as mtext
import numpy as np
from jitterscope.report.drawing import draw_pages
from matplotlib.backends.backend_pdf import PdfPages, RendererPdf
from matplotlib.figure import Figure

METADATA = {"CreationDate": datetime(2025, 11, 30, tzinfo=UTC), "ModDate": None}


def plain_figure() -> Figure:
    """A page with the texts every report page has: axis labels, a title, a legend, tick labels."""
    figure = Figure(figsize=(6, 4), layout="constrained")
    ax = figure.subplots()
    ax.plot(np.arange(50), np.arange(50) ** 2, label="squares")
    ax.set_xlabel("wake-up")
    ax.set_ylabel("latency (µs)")
    ax.set_title("n = 50")
    ax.legend()
    return figure


def _page(pdf) -> None:
    pdf.savefig(plain_figure())


def _measured(monkeypatch) -> list[str]:
    measured: list[str] = []
    original = RendererPdf.get_text_width_height_descent

    def counting(self, s, prop, ismath):
        measured.append(s)
        return original(self, s, prop, ismath)

    monkeypatch.setattr(RendererPdf, "get_text_width_height_descent", counting)
    return measured


def test_texts_are_measured_once_across_pages_and_the_pages_are_unchanged(tmp_path, monkeypatch) -> None:
    matplotlib.use("pdf")
    measured = _measured(monkeypatch)
    draw_pages([_page], tmp_path / "one.pdf", workers=1, metadata=METADATA, scratch=tmp_path)
    one_page = len(measured)
    assert {"wake-up", "n = 50", "squares"} <= set(measured)
    measured.clear()
    draw_pages([_page] * 4, tmp_path / "shared.pdf", workers=1, metadata=METADATA, scratch=tmp_path)
    assert len(measured) == one_page  # four pages, the same texts: measured once each
    assert sorted(measured) == sorted(set(measured))
    assert mtext._get_text_metrics_with_cache.__module__ == "matplotlib.text"  # matplotlib's own cache is back
    measured.clear()
    with PdfPages(tmp_path / "plain.pdf", metadata=METADATA) as pdf:  # matplotlib alone: a cache per renderer
        for _ in range(4):
            _page(pdf)
    assert len(measured) >= 4 * one_page
    assert (tmp_path / "shared.pdf").read_bytes() == (tmp_path / "plain.pdf").read_bytes()
