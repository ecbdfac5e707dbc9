"""While a report's pages are drawn, each text is laid out once per renderer kind and appearance (report/drawing.py,
issue 25: matplotlib lays a text out again at every constrained-layout iteration and at the draw, 6,336 times for
a real 10 s capture's report), and the pages are the same bytes as drawn without the shared layouts."""

from __future__ import annotations

from datetime import UTC, datetime

import matplotlib
from jitterscope.report.drawing import _text_laid_out_once, draw_pages
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.text import Text

from .test_text_measured_once import plain_figure

METADATA = {"CreationDate": datetime(2025, 11, 30, tzinfo=UTC), "ModDate": None}


def _page(pdf) -> None:
    figure = plain_figure()  # its y label is rotated: a layout of its own
    ax = figure.axes[0]
    ax.set_title("n = 50\nsecond line", loc="left")
    ax.annotate("peak", (40, 1600), xytext=(10, 1800), rotation=30, arrowprops={"arrowstyle": "->"})
    pdf.savefig(figure)


def _laid_out(monkeypatch) -> list[str]:
    laid_out: list[str] = []
    original = Text._get_layout

    def counting(self, renderer):
        laid_out.append(self.get_text())
        return original(self, renderer)

    monkeypatch.setattr(Text, "_get_layout", counting)
    return laid_out


def test_texts_are_laid_out_once_across_pages_and_the_pages_are_unchanged(tmp_path, monkeypatch) -> None:
    matplotlib.use("pdf")
    laid_out = _laid_out(monkeypatch)
    counting = Text._get_layout
    draw_pages([_page], tmp_path / "one.pdf", workers=1, metadata=METADATA, scratch=tmp_path)
    one_page = len(laid_out)
    assert {"wake-up", "latency (µs)", "n = 50\nsecond line", "peak", "squares"} <= set(laid_out)
    laid_out.clear()
    draw_pages([_page] * 4, tmp_path / "shared.pdf", workers=1, metadata=METADATA, scratch=tmp_path)
    assert len(laid_out) == one_page  # four pages, the same texts: laid out once each
    assert Text._get_layout is counting  # the method is back
    laid_out.clear()
    with PdfPages(tmp_path / "plain.pdf", metadata=METADATA) as pdf:  # matplotlib alone: at every pass
        for _ in range(4):
            _page(pdf)
    assert len(laid_out) >= 4 * 2 * one_page
    assert (tmp_path / "shared.pdf").read_bytes() == (tmp_path / "plain.pdf").read_bytes()


def test_a_text_that_looks_different_is_laid_out_again_and_each_caller_owns_its_box() -> None:
    figure = Figure(figsize=(4, 3))
    renderer = FigureCanvasAgg(figure).get_renderer()
    plain = figure.text(0.5, 0.5, "latency", fontsize=10)
    variants = {"size": {"fontsize": 14}, "rotation": {"rotation": 90}, "alignment": {"ha": "right"},
                "text": {"text": "latency!"}, "spacing": {"linespacing": 3.0, "text": "two\nlines"},
                "two lines": {"text": "two\nlines"}}
    others = {name: figure.text(0.5, 0.5, "latency", fontsize=10) for name in variants}
    for name, change in variants.items():
        others[name].update(change)
    with _text_laid_out_once():
        first, lines, _ = plain._get_layout(renderer)
        first.x0 = -1000.0  # a caller that changes its box changes no one else's
        again = plain._get_layout(renderer)[0].bounds
        assert again[0] != -1000.0 and lines
        shared = {name: text._get_layout(renderer)[0].bounds for name, text in others.items()}
    # each looks different, so each was laid out for itself: what matplotlib alone gives it
    assert plain._get_layout(renderer)[0].bounds == again
    assert {name: text._get_layout(renderer)[0].bounds for name, text in others.items()} == shared
    assert len({again, *shared.values()}) == 1 + len(variants)
