"""Figures for papers: a report page refitted to a journal's column or page width with 8-9 pt text.

A report page is A4 landscape with 9-12 pt text; scaled into a 3.5 in column its ticks would print at about
3 pt.  :func:`fit_for_paper` instead sets the figure to the paper width (and a height that keeps each panel
readable), and the text to 8 pt (9 pt for titles), before it is saved; the layout engine re-flows the
axes, and :func:`~.layout.tidy_layout` moves what then collides.  The widths are the common two-column
journal sizes (IEEE, ACM, Elsevier: 3.5 in column, 7.2 in page).

Import-free at module level (the CLI shows :data:`FIGURE_WIDTHS_IN` in ``--help``).
"""

from __future__ import annotations

import textwrap
from typing import Any

FIGURE_WIDTHS_IN = {"column": 3.5, "page": 7.2}
"""Width in inches of ``--figure-width column`` and ``page``."""
TEXT_PT = 8.0
TITLE_PT = 9.0
PANEL_ASPECT = 0.72
"""Height over width of one panel."""
MAX_HEIGHT_IN = 9.0
"""A journal page's text height: no figure is taller."""
PNG_DPI = 300


def fit_for_paper(fig: Any, width: str) -> None:
    """Resize ``fig`` to ``FIGURE_WIDTHS_IN[width]`` with 8-9 pt text (titles 9 pt, everything else 8 pt).

    A figure with panels side by side is set at page width even for ``"column"``: two 1.7 in panels with
    8 pt labels do not fit a column, and a journal sets such a figure across both columns.  The height gives
    each panel of the figure's grid :data:`PANEL_ASPECT` of its width, plus room for the titles, at most
    :data:`MAX_HEIGHT_IN`.  Titles wider than their panel are wrapped.

    Raises
    ------
    ValueError
        ``width`` is not one of :data:`FIGURE_WIDTHS_IN`.
    """
    from matplotlib.text import Text

    from .layout import tidy_layout

    if width not in FIGURE_WIDTHS_IN:
        raise ValueError(f"figure width {width!r}: use one of {', '.join(FIGURE_WIDTHS_IN)}")
    rows, cols = _grid(fig)
    # panels side by side do not fit a 3.5 in column at 8 pt: such a figure spans both columns (LaTeX figure*)
    inches = FIGURE_WIDTHS_IN["page" if cols > 1 else width]
    height = min(MAX_HEIGHT_IN, rows * (inches / cols) * PANEL_ASPECT + 0.35 * rows + 0.3)
    fig.set_size_inches(inches, height)
    titles = {id(ax.title) for ax in fig.axes} | {id(getattr(ax, "_left_title", None)) for ax in fig.axes}
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None:
        titles.add(id(suptitle))
    for text in fig.findobj(Text):
        text.set_fontsize(TITLE_PT if id(text) in titles else TEXT_PT)
    # a title wider than its panel (the figure's title: than the figure) is wrapped, not cut (about 0.65 em per
    # character); each of its lines on its own, so the break its author chose stays (wrapped as one text by
    # tidy_layout, a two-line title of one long line came out as four lines)
    panel_chars = max(20, int(inches / max(cols, 1) * 72 / (0.65 * TITLE_PT)))
    for title, chars in [(ax.title, panel_chars) for ax in fig.axes] + (
            [(suptitle, max(20, int(inches * 72 / (0.65 * TITLE_PT))))] if suptitle is not None else []):
        text = title.get_text()
        if text and max(len(line) for line in text.split("\n")) > chars:
            title.set_text("\n".join("\n".join(textwrap.wrap(line, chars)) or line for line in text.split("\n")))
    for ax in fig.axes:
        ax.tick_params(labelsize=TEXT_PT)
        ax.title.set_fontsize(TITLE_PT)
        legend = ax.get_legend()
        if legend is not None:
            for text in legend.get_texts():
                text.set_fontsize(TEXT_PT)
    # a layout made for an A4 page crowds at 3.5 in: legends go outside, long labels wrap, ticks thin out
    tidy_layout(fig)


def _grid(fig: Any) -> tuple[int, int]:
    """Rows and columns of the figure's subplot grid (1 x 1 for axes placed by hand)."""
    rows, cols = 1, 1
    for ax in fig.axes:
        spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
        if spec is None:
            continue
        grid = spec.get_gridspec()
        rows, cols = max(rows, grid.nrows), max(cols, grid.ncols)
    return rows, cols
