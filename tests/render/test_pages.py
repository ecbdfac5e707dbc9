"""Text pages: tables continue onto further pages, and a continued table carries rows, not only its notes."""

from __future__ import annotations

import pytest
from jitterscope.render import LINES_PER_PAGE, Table, text_pages


def _page_texts(pages) -> list[str]:
    return ["\n".join(text.get_text() for text in page.figure.axes[0].texts) for page in pages]


def _table(rows: int) -> Table:
    return Table(name="t", title="Heading", columns=("row", "value"),
                 rows=tuple((f"r{i:02d}", "x" * 20) for i in range(rows)), formats=("", ""),
                 notes=("first note", "second note"))


def test_a_table_whose_notes_do_not_fit_carries_its_last_rows_over() -> None:
    # rule, header, rule, the rows, the closing rule: the rows fill the page exactly, the two notes do not fit
    rows = LINES_PER_PAGE - 4
    texts = _page_texts(list(text_pages("t", "Heading", [_table(rows)])))
    assert len(texts) == 2
    last, before = f"r{rows - 1:02d}", f"r{rows - 2:02d}"
    assert last in texts[1] and before in texts[1] and "second note" in texts[1]
    assert last not in texts[0] and f"r{rows - 3:02d}" in texts[0]


def test_a_table_that_fits_stays_on_one_page() -> None:
    texts = _page_texts(list(text_pages("t", "Heading", [_table(LINES_PER_PAGE - 7)])))
    assert len(texts) == 1 and "second note" in texts[0]


def test_a_split_never_falls_inside_a_wrapped_row() -> None:
    # every row wraps its last cell onto a second line: a page must end after a whole row
    long = "word " * 40
    table = Table(name="w", title="Heading", columns=("row", "text"),
                  rows=tuple((f"r{i:02d}", long) for i in range(LINES_PER_PAGE)), formats=("", ""))
    for text in _page_texts(list(text_pages("w", "Heading", [table]))):
        body = [line for line in text.splitlines() if line.startswith(("r", " ")) and "word" in line]
        assert body and body[0].startswith("r") and not body[-1].startswith("r"), body[-2:]


def test_series_colours_are_colour_blind_safe_and_lines_differ_by_dash_too() -> None:
    from jitterscope.render import REPORT_RC, colour
    from jitterscope.render.style import OKABE_ITO

    assert [colour(i, 8) for i in range(8)] == list(OKABE_ITO)
    cycle = REPORT_RC["axes.prop_cycle"].by_key()
    assert cycle["color"] == list(OKABE_ITO)
    assert len({str(style) for style in cycle["linestyle"]}) == len(cycle["color"])  # no colour alone


def test_a_long_series_is_drawn_as_an_envelope_not_a_solid_block() -> None:
    import numpy as np
    import pytest
    from jitterscope.render import plot_envelope
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    x = np.arange(500_000) / 1000.0
    y = 2000 + 400 * (np.arange(500_000) % 7 == 0) + np.sin(x)
    ax = Figure().subplots()
    plot_envelope(ax, x, y, label="f_eff", color="C0", columns=1000)
    band = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert band and max(len(line.get_xdata()) for line in ax.get_lines()) == 1000  # a point per span, not 500,000
    vertices = band[0].get_paths()[0].vertices[:, 1]
    assert vertices.max() == pytest.approx(y.max()) and vertices.min() == pytest.approx(y.min())
    short = Figure().subplots()
    plot_envelope(short, x[:100], y[:100], label="f_eff", color="C0", columns=1000)
    assert len(short.get_lines()[0].get_xdata()) == 100 and not short.collections  # short: the line itself


def test_a_series_switching_faster_than_the_pixels_is_drawn_as_its_columns_range_and_mean() -> None:
    """50 ms P-states over 10 s: at a column's width each envelope column (2 pt) holds two states or more, so its
    mean says the share of time at each; the columns follow the panel's drawn width (fewer after a refit)."""
    import numpy as np
    import pytest
    from jitterscope.render import plot_envelope
    from jitterscope.render.style import ENVELOPE_PT
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    x = np.arange(200_000) * 50e-6  # 10 s
    y = np.where((x // 0.05) % 2 == 0, 800.0, 2400.0)
    fig = Figure(figsize=(11.69, 8.27), layout="constrained")
    ax = fig.subplots()
    plot_envelope(ax, x, y, label="f_eff", color="C0", centre="mean")

    def columns_and_room() -> tuple[int, float]:
        fig.draw_without_rendering()
        return len(ax.get_lines()[0].get_xdata()), ax.get_window_extent().width * 72 / fig.dpi / ENVELOPE_PT

    a4, room = columns_and_room()
    assert room - 1 <= a4 <= room + 1  # one column per 2 pt of the panel, not a vertex per wake-up
    fig.set_size_inches(3.5, 2.6)  # refitted to a paper's column
    column, room = columns_and_room()
    assert room - 1 <= column <= room + 1 and column < a4 / 2
    means = ax.get_lines()[0].get_ydata()
    # each column spans 90-110 ms: two states at least, so no column's mean is a level; the run's mean is the
    # time-weighted 1,600 MHz
    assert np.isfinite(means).all() and ((means > 1000) & (means < 2200)).all()
    assert means.mean() == pytest.approx(1600.0, abs=25.0)
    band = next(c for c in ax.collections if isinstance(c, PolyCollection)).get_paths()[0].vertices[:, 1]
    assert band.min() == 800.0 and band.max() == 2400.0


def test_a_pdf_cut_off_mid_page_raises_what_cut_it_off(tmp_path, monkeypatch) -> None:
    """A signal while a page is written (here: as its page object is written, its contents reserved): the
    document is left with its file closed and the signal's exception goes on.  matplotlib's own PdfPages exit
    completes the document and raises AssertionError ("No offset for object") over it: a traceback and exit 1
    instead of the signal's exit status (seen under load, a report sent SIGHUP)."""
    from jitterscope.render import pdf_document
    from matplotlib.backends import backend_pdf
    from matplotlib.figure import Figure

    write = backend_pdf.PdfFile.writeObject

    def interrupted(self, obj, contents):
        if isinstance(contents, dict) and contents.get("Type") == backend_pdf.Name("Page"):
            raise KeyboardInterrupt
        return write(self, obj, contents)

    monkeypatch.setattr(backend_pdf.PdfFile, "writeObject", interrupted)
    figure = Figure()
    figure.subplots().plot([1, 2, 3])
    with pytest.raises(AssertionError, match="No offset"):  # why pdf_document exists
        with backend_pdf.PdfPages(tmp_path / "plain.pdf") as pdf:
            pdf.savefig(figure)
    with pytest.raises(KeyboardInterrupt):
        with pdf_document(tmp_path / "ours.pdf", {}) as pdf:
            pdf.savefig(figure)
