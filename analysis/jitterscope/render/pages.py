"""PDF pages: the page size and style every report uses, a page of figures, note and text pages."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import JitterscopeError
from .style import LINE_STYLES, OKABE_ITO, literal_text, plot_note, plot_text_page
from .table import Table, text_header_lines, to_text

PAGE_SIZE_IN = (11.69, 8.27)
"""A4 landscape: wide tables fit, and a figure reads well printed on A4 or Letter."""

LINES_PER_PAGE = 50
"""10 pt text lines a page holds below its heading: the text axes are 0.90 × 8.27 in = 536 pt high, the heading
takes 24 pt, so 51 lines fit; one is kept spare (:func:`~.style.plot_text_page` draws mono lines 10 pt apart,
a block title 14 pt + a 6 pt gap after each block, the banner 36 pt)."""
CHARS_PER_LINE = 150

REPORT_RC: dict[str, Any] = {
    "pdf.fonttype": 42,  # TrueType (Type 42), not Type 3: searchable, editable, accepted by publishers
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "svg.hashsalt": "jitterscope",  # fixed SVG ids: reproducible bytes
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "path.simplify": True,
    # colour-blind safe, and each default-coloured line has its own dash pattern too
    "axes.prop_cycle": cycler(color=OKABE_ITO, linestyle=LINE_STYLES),
    "agg.path.chunksize": 10000,
}


@dataclass(frozen=True)
class Page:
    """One PDF page: a figure, the file stem it gets under ``--figures``, and tables typeset on it.

    ``tables`` are exported under ``--figures`` with the page (they are already on
    it, so the report does not typeset them again).
    """

    name: str
    figure: Figure
    tables: tuple[Table, ...] = ()
    kind: str = "figure"
    """"figure", or "text" (typeset tables) and "note" (a message): only figures are refitted for papers."""
    prepare: Callable[[Figure], None] | None = None
    """What needs the page laid out before it is drawn (a legend given headroom above the data it would cover:
    :func:`~.layout.legends_off_data`): the report runs it where the page is drawn, in a drawing worker, not
    while the sections are built one after another (a spectrum page's layout passes were 6 s of CPU there)."""


def new_page(nrows: int = 1, ncols: int = 1, **subplot_kw: Any) -> tuple[Figure, Any]:
    """A fresh report-sized figure and its axes (one Axes, or an array for a grid)."""
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True, **subplot_kw)
    return fig, axes


def note_page(name: str, title: str, message: str) -> Page:
    """A page that says why a figure is absent (e.g. histogram-only data), instead of an empty page."""
    fig, ax = new_page()
    plot_note(title, message, ax)
    return Page(name, fig, kind="note")


def text_pages(name: str, heading: str, tables: Sequence[Table], *, banner: str | None = None) -> Iterator[Page]:
    """Typeset tables as monospace text pages, continuing onto further pages as needed."""
    pages: list[list[tuple[str, list[str]]]] = [[]]
    used = 3.6 if banner else 0.0  # in 10 pt lines, as plot_text_page advances
    for table in tables:
        lines = to_text(table, max_width=CHARS_PER_LINE)
        header = lines[:text_header_lines(lines)]
        title = "" if len(tables) == 1 and table.title == heading else table.title
        while lines:
            room = int(LINES_PER_PAGE - used - (1.4 if title else 0.0))  # the block title
            if len(header) < room < len(lines):
                # split before the closing rule and the notes: a continued table must carry rows, not only its
                # header and notes (the last two rows go over with them)
                closing = max(i for i, line in enumerate(lines) if line.startswith("─"))
                if room >= closing:
                    room = closing - 2 if closing - 2 > len(header) else 0
                # and never inside a row: a wrapped last cell's next lines are blank up to that column
                last = _last_column_start(header, table)
                while room > len(header) and last and not lines[room][:last].strip():
                    room -= 1
            if room < min(len(header) + 4, len(lines)) and pages[-1]:
                pages.append([])
                used = 0
                continue
            pages[-1].append((title, lines[:room]))
            used += min(room, len(lines)) + (1.4 if title else 0.0) + 0.6  # the block and the gap after it
            lines = lines[room:]
            if lines:  # continue on the next page under the same header
                lines = header + lines
                title = f"{table.title} (continued)"
    for number, blocks in enumerate(pages):
        page = _text_page(name, number, heading, blocks, banner if number == 0 else None, plot_text_page)
        yield Page(page.name, page.figure, tuple(tables) if number == 0 else (), kind="text")


def _last_column_start(header: list[str], table: Table) -> int:
    """Where the last column starts in a table's text lines (0 when the header does not show it)."""
    names = next((line for line in header if line.strip() and not line.startswith("─")), "")
    title = str(table.columns[-1]).strip()
    return max(names.rfind(title), 0) if title else 0


def _text_page(name: str, page_no: int, heading: str, blocks: list[tuple[str, list[str]]],
               banner: str | None, draw: Callable[..., Axes]) -> Page:
    fig = Figure(figsize=PAGE_SIZE_IN)
    ax = fig.add_axes((0.04, 0.05, 0.92, 0.90))
    draw(heading if page_no == 0 else f"{heading} (continued)", blocks, ax, banner=banner)
    return Page(name if page_no == 0 else f"{name}-{page_no + 1}", fig)


def source_date() -> tuple[datetime, bool]:
    """The report's timestamp: ``SOURCE_DATE_EPOCH`` when set (reproducible builds), else now."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), UTC), True
        except (ValueError, OverflowError, OSError):
            raise JitterscopeError(
                f"SOURCE_DATE_EPOCH={epoch!r} is not a Unix time in seconds; unset it or give an integer"
            ) from None
    return datetime.now(UTC).replace(microsecond=0), False




def write_pdf(pages: Iterable[Page], path: str | os.PathLike[str], *, title: str, footer: str,
              export: Callable[[Page], None] | None = None) -> int:
    """Write ``pages`` as one PDF with a footer and page numbers, the way every jitterscope PDF looks.

    Vector pages with Type 42 fonts (the caller draws them under :data:`REPORT_RC`), text that can come
    from a dataset drawn literally (no mathtext), the creation date from ``SOURCE_DATE_EPOCH`` when set
    (reproducible bytes).  Each figure is cleared once written, so a long document holds one page at a time.

    Parameters
    ----------
    pages
        The pages, in order (a generator is fine).
    path
        Where to write: the temporary file of :func:`jitterscope.dataset.write_atomically`.
    title
        The PDF's Title (dataset text, made visible).
    footer
        The footer's left part, e.g. ``"compare · a vs b"``; the version, the date and the page number are added.
    export
        Called with each page once it is in the PDF, its footer taken off again, before it is cleared: a
        report's ``--figures`` writes its files there (so the PDF is the same bytes with or without them).

    Returns
    -------
    int
        The number of pages written.
    """
    from .. import __version__
    from ..format import visible

    when, _ = source_date()
    metadata = {"Title": visible(title), "Creator": f"jitterscope {__version__}", "CreationDate": when,
                "ModDate": None}
    count = 0
    with pdf_document(path, metadata) as pdf:
        for page in pages:
            count += 1
            engine = page.figure.get_layout_engine()
            rect = engine.get().get("rect") if engine is not None else None
            if rect is not None:
                engine.set(rect=(0.0, 0.03, 1.0, 0.97))  # keep axis labels clear of the footer
            texts = [page.figure.text(0.01, 0.005, f"jitterscope {__version__} {footer} · "
                                      f"{when.strftime('%Y-%m-%d %H:%M:%S UTC')}", fontsize=8, color="0.35"),
                     page.figure.text(0.99, 0.005, f"page {count}", fontsize=8, color="0.35", ha="right")]
            pdf.savefig(literal_text(page.figure))
            if export is not None:
                for text in texts:
                    text.remove()
                if rect is not None:
                    engine.set(rect=rect)
                export(page)
            page.figure.clear()
    return count


@contextlib.contextmanager
def pdf_document(path: str | os.PathLike[str], metadata: dict[str, Any]) -> Iterator[Any]:
    """matplotlib's ``PdfPages`` writing ``path``, left on an exception with its file only closed.

    ``PdfPages``' own exit completes the document whatever happened; after a page cut off mid-write (a signal
    while a figure is saved) completing it raises ``AssertionError: No offset for object 9 (page contents)``
    over the exception that stopped it: a traceback and exit 1 instead of the signal's one line and exit
    128 + N (seen under load, ~1 report in 100 sent SIGHUP).  The document is a temporary, removed anyway."""
    from matplotlib.backends.backend_pdf import PdfPages

    pdf = PdfPages(path, metadata=metadata)
    try:
        yield pdf
    except BaseException:
        document = getattr(pdf, "_file", None)  # matplotlib's PdfFile, made at the first page
        handle = getattr(document, "fh", None)
        if handle is not None and not getattr(document, "passed_in_file_object", True):
            with contextlib.suppress(Exception):
                handle.close()
        raise
    pdf.close()
