"""While a report's pages are drawn, each math text (a log axis' ``10^3``) is parsed once, not once per page
(report/drawing.py, issue 25: 29 labels parsed 218 times, 2.1 of 16 s of CPU, in a 10 s capture's report), and
the pages are the same bytes as drawn without the shared parses."""

from __future__ import annotations

from datetime import UTC, datetime

import matplotlib
import numpy as np
from jitterscope.report.drawing import draw_pages
from matplotlib import _mathtext
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.mathtext import MathTextParser

METADATA = {"CreationDate": datetime(2025, 11, 30, tzinfo=UTC), "ModDate": None}


def _log_page(pdf) -> None:
    figure = Figure(figsize=(6, 4))
    ax = figure.subplots()
    ax.semilogy(np.arange(50), np.logspace(0, 6, 50))
    ax.set_xlabel("wake-up")
    pdf.savefig(figure)


def _parses(monkeypatch) -> list[str]:
    parsed: list[str] = []
    original = _mathtext.Parser.parse

    def counting(self, s, *args, **kwargs):
        parsed.append(s)
        return original(self, s, *args, **kwargs)

    monkeypatch.setattr(_mathtext.Parser, "parse", counting)
    return parsed


def test_math_texts_are_parsed_once_across_pages_and_the_pages_are_unchanged(tmp_path, monkeypatch) -> None:
    matplotlib.use("pdf")
    parsed = _parses(monkeypatch)
    draw_pages([_log_page], tmp_path / "one.pdf", workers=1, metadata=METADATA, scratch=tmp_path)
    one_page = len(parsed)
    assert one_page >= 6 and all("10^" in s for s in parsed)  # the axis' decades: 10^0 .. 10^6
    parsed.clear()
    draw_pages([_log_page] * 4, tmp_path / "shared.pdf", workers=1, metadata=METADATA, scratch=tmp_path)
    assert len(parsed) == one_page  # four pages, the same labels: parsed once each
    assert sorted(parsed) == sorted(set(parsed))
    assert MathTextParser.__dict__["_parse_cached"].__wrapped__  # matplotlib's own cache is back
    parsed.clear()
    with PdfPages(tmp_path / "plain.pdf", metadata=METADATA) as pdf:  # matplotlib alone, its cache per page
        for _ in range(4):
            _log_page(pdf)
    assert len(parsed) > one_page
    assert (tmp_path / "shared.pdf").read_bytes() == (tmp_path / "plain.pdf").read_bytes()
