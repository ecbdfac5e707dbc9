"""The report's pages drawn in parallel, by this process and forked children, each into a PDF of its own.

Drawing is most of a small report's time (matplotlib's text layout, paths and font subsetting, one page after
another on one core), and pages do not depend on each other.  Once every section has built its pages, children
are forked: each inherits the figures as built (nothing is pickled: figures hold formatters that are lambdas)
and the fonts and styles already set up, draws its share of the pages (and their ``--figures`` files) into a
PDF, and exits; the pages are then joined in order (:func:`join_pages`).  Pages go to workers by their
estimated weight (:func:`assign_pages`): the report for a given worker count is the same bytes every time, and
its text, page count and page order are the same for any worker count
(the embedded font subsets differ: each worker's PDF has its own).
With one worker the pages are drawn here straight into the report.

At most :func:`report_workers` processes draw.  Children never outlive the report: the parent kills them on
any exception (Ctrl-C and the CLI's terminating signals arrive as exceptions), they ignore Ctrl-C themselves
and end at once on SIGTERM/SIGHUP/SIGQUIT, and each asks the kernel to kill it when the parent dies
(``PR_SET_PDEATHSIG``), should the parent be killed outright.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import JitterscopeError, forget_signals, raise_if_signalled

WORKERS_ENV = "JITTERSCOPE_REPORT_WORKERS"
"""Environment variable capping the processes that draw a report's pages (1: draw in the report's own process)."""


def report_workers(requested: int | None = None) -> int:
    """How many pages are drawn at once: ``requested``, else :data:`WORKERS_ENV`, else every CPU this process may
    use; never more than those CPUs, and 1 where processes cannot be forked.

    Raises
    ------
    JitterscopeError
        :data:`WORKERS_ENV` is not a whole number >= 1.
    """
    if requested is None and os.environ.get(WORKERS_ENV):
        text = os.environ[WORKERS_ENV]
        try:
            requested = int(text)
        except ValueError:
            requested = 0
        if requested < 1:
            raise JitterscopeError(f"{WORKERS_ENV}={text!r} is not a whole number >= 1; unset it or give e.g. 1")
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if not hasattr(os, "fork"):
        return 1
    return max(1, min(requested or cpus, cpus))


PageJob = Callable[[Any], None]
"""Draws one page into the open ``PdfPages`` it is given (and writes that page's other files)."""


def draw_pages(jobs: Sequence[PageJob], output: Path, *, workers: int, metadata: dict[str, Any],
               scratch: Path, weights: Sequence[float] | None = None) -> None:
    """Run ``jobs`` in order into the PDF ``output``: page ``i`` is what ``jobs[i]`` draws.

    With one worker every page is drawn here into ``output``.  With ``n``, this process and ``n - 1`` forked
    children each draw their share of the pages (:func:`assign_pages`, by the pages' estimated ``weights``;
    without them every ``n``-th page) into a PDF of their own under ``scratch``, and :func:`join_pages` takes
    the pages back in order.  One PDF per worker, not per page: each PDF embeds the subsets of its fonts, and
    subsetting a font costs about as much as drawing a page.

    Raises
    ------
    BaseException
        What a job raised (the first page's failure); the children still running are killed first.
    """
    with _mathtext_parsed_once(), _text_measured_once(), _text_laid_out_once(), _fonts_embedded_without_layout_tables():
        _draw_pages(jobs, output, workers=workers, metadata=metadata, scratch=scratch, weights=weights)


def assign_pages(weights: Sequence[float], workers: int) -> list[int]:
    """The worker that draws each page: in page order, the one with the least weight so far (the lowest number
    on a tie), so equal weights go round (page ``i`` to worker ``i % n``).

    Round the pages went wrong for a real capture's report: its two spectrum pages, 4 s of CPU each against
    about 0.8 s for a plain figure, are pages 10 and 12 (a spikes page between), so on 2 CPUs both fell to one
    worker, which drew 13.7 s of the 22 s.  The same weights give the same assignment every time: a report
    drawn by ``n`` workers is the same bytes every time.
    """
    load = [0.0] * workers
    owners = []
    for weight in weights:
        k = min(range(workers), key=lambda w: (load[w], w))
        load[k] += weight
        owners.append(k)
    return owners


def _draw_pages(jobs: Sequence[PageJob], output: Path, *, workers: int, metadata: dict[str, Any],
                scratch: Path, weights: Sequence[float] | None) -> None:
    from ..render import pdf_document

    workers = max(1, min(workers, len(jobs)))
    if workers == 1:
        with pdf_document(output, metadata) as pdf:
            _draw_into(pdf, jobs)
        return
    documents = [scratch / f"worker-{k}.pdf" for k in range(workers)]
    errors = [scratch / f"worker-{k}.error" for k in range(workers)]
    document_metadata = {"CreationDate": metadata.get("CreationDate"), "ModDate": None}

    owners = assign_pages([1.0] * len(jobs) if weights is None else weights, workers)

    def share(k: int) -> None:
        with pdf_document(documents[k], document_metadata) as pdf:
            _draw_into(pdf, [job for job, owner in zip(jobs, owners, strict=True) if owner == k])

    children: dict[int, int] = {}  # pid -> worker
    try:
        for k in range(1, workers):
            with signals_held():  # a signal meanwhile raises once the child is recorded, to be killed
                pid = os.fork()
                if pid == 0:  # the child: draw, and leave without running the parent's clean-ups
                    _child(functools.partial(share, k), errors[k])
                children[pid] = k
        share(0)
        failed: dict[int, BaseException] = {}
        for pid, k in list(children.items()):
            _, status = os.waitpid(pid, 0)
            del children[pid]
            if status != 0:
                failed[k] = _failure(k, status, errors[k])
        if failed:
            raise failed[min(failed)]
    finally:
        _kill(children)
    join_pages(documents, output, owners=owners, metadata=metadata)


def _draw_into(pdf: Any, jobs: Sequence[PageJob]) -> None:
    for job in jobs:
        job(pdf)
        raise_if_signalled()  # a signal whose exception was lost (errors.stop_on_signal) stops at the next page


@contextlib.contextmanager
def _mathtext_parsed_once() -> Any:
    """While pages are drawn, each math text (the log axes' ``10^3`` tick labels) is parsed once, not once per
    page and pass.

    matplotlib caches a parse per ``MathTextParser``, and each page's renderers make new ones: a 10 s capture's
    report parsed 29 distinct labels 218 times, 2.1 of its 16 s of CPU (pyparsing).  The shared cache has
    matplotlib's own key (the text, dpi, a copy of the font properties, antialiasing, hinting) plus the parser's
    output type, the only state of the parser the result depends on; the rcParams a parse reads do not change
    while a report draws (its style is set once, around every page).  Restored afterwards; left as is where
    matplotlib's cache is not the ``functools.lru_cache`` this expects.
    """
    from matplotlib.mathtext import MathTextParser

    original = MathTextParser.__dict__.get("_parse_cached")
    parse = getattr(original, "__wrapped__", None)
    if parse is None:
        yield
        return
    parsed: dict[tuple[Any, ...], Any] = {}

    def shared(self: Any, s: str, dpi: float, prop: Any, antialiased: bool, load_glyph_flags: Any) -> Any:
        key = (self._output_type, s, dpi, prop, antialiased, load_glyph_flags)
        if key not in parsed:
            parsed[key] = parse(self, s, dpi, prop, antialiased, load_glyph_flags)
        return parsed[key]

    MathTextParser._parse_cached = shared
    try:
        yield
    finally:
        MathTextParser._parse_cached = original


@contextlib.contextmanager
def _text_measured_once() -> Any:
    """While pages are drawn, each text is measured once per renderer kind, not once per page and pass.

    matplotlib caches a text's size per renderer object, and every page's PDF save makes a new renderer (and
    its layout engine measures each tick label, title and legend entry on it again): a 10 s capture's report
    asked the PDF renderer 1,563 times, about 2.4 of 55 s of profiled CPU.  A size depends on the string, a
    copy of the font properties, whether it is math text and the dpi (matplotlib's own key), and on the kind
    of renderer (the PDF renderer measures unhinted at 72 dpi, Agg hinted at its own dpi): the shared cache
    keys on all of them, for the two renderers a report uses (PDF and Agg; a mixed-mode renderer's current
    one); TeX and any other renderer go to matplotlib's own cache.  Restored afterwards.
    """
    import matplotlib.text as mtext
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.backends.backend_pdf import RendererPdf

    original = mtext._get_text_metrics_with_cache
    measured: dict[tuple[Any, ...], tuple[float, float, float]] = {}
    kinds = (RendererPdf, RendererAgg)

    def shared(renderer: Any, text: str, fontprop: Any, ismath: Any, dpi: float) -> tuple[float, float, float]:
        inner = _drawing_renderer(renderer)
        if ismath == "TeX" or type(inner) not in kinds:
            return original(renderer, text, fontprop, ismath, dpi)
        key = (type(inner), getattr(inner, "dpi", None), text, fontprop.copy(), ismath, dpi)
        size = measured.get(key)
        if size is None:
            size = measured[key] = inner.get_text_width_height_descent(text, fontprop, ismath)
        return size

    mtext._get_text_metrics_with_cache = shared
    try:
        yield
    finally:
        mtext._get_text_metrics_with_cache = original


def _drawing_renderer(renderer: Any) -> Any:
    """The renderer drawing now: a mixed-mode renderer's current one (vector or raster), else ``renderer`` itself.
    Only a ``MixedModeRenderer`` is unwrapped: Agg's renderer has a ``_renderer`` attribute too (its C++ core)."""
    from matplotlib.backends.backend_mixed import MixedModeRenderer

    return renderer._renderer if isinstance(renderer, MixedModeRenderer) else renderer


@contextlib.contextmanager
def _text_laid_out_once() -> Any:
    """While pages are drawn, each text's layout (its lines placed, its box rotated and aligned) is computed once
    per renderer kind and appearance, not at every pass.

    matplotlib lays a text out again each time its box is asked for: each constrained-layout iteration asks for
    every tick label, title and legend entry, and the draw once more.  The sizes themselves come from the cache
    of :func:`_text_measured_once`, but the rest is Python: a real 10 s capture's report laid texts out 6,336
    times (1,656 distinct), 1.0 of its 7.3 s of CPU in one process.  The layout is a function of the text, a
    copy of the font properties, the line spacing, math parsing, the alignments, the rotation and its mode,
    the figure's dpi and the renderer (its kind and dpi: PDF or Agg, as in :func:`_text_measured_once`);
    wrapped texts (their lines depend on where they stand) and TeX go to matplotlib every time.  Each caller
    gets its own copy of the box.  Restored afterwards; left as is where ``Text._get_layout`` is missing.
    """
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.backends.backend_pdf import RendererPdf
    from matplotlib.text import Text

    original = Text.__dict__.get("_get_layout")
    if original is None:
        yield
        return
    laid_out: dict[tuple[Any, ...], Any] = {}
    kinds = (RendererPdf, RendererAgg)

    def shared(self: Any, renderer: Any) -> Any:
        inner = _drawing_renderer(renderer)
        if type(inner) not in kinds or self.get_wrap() or self.get_usetex():
            return original(self, renderer)
        key = (type(inner), getattr(inner, "dpi", None), self.get_figure(root=True).dpi, self.get_text(),
               self._fontproperties.copy(), self._linespacing, self._parse_math, self._multialignment,
               self._horizontalalignment, self._verticalalignment, self.get_rotation(), self.get_rotation_mode())
        layout = laid_out.get(key)
        if layout is None:
            layout = laid_out[key] = original(self, renderer)
        box, lines, corner = layout
        return box.frozen(), list(lines), corner

    Text._get_layout = shared
    try:
        yield
    finally:
        Text._get_layout = original


LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF", "kern")
"""The tables an embedded font drops while a report is drawn: OpenType substitution and positioning (and the old
kerning table), which shape text before it is placed.  A PDF places each glyph itself (matplotlib laid the text
out with FreeType first), so its viewers never read them."""


@contextlib.contextmanager
def _fonts_embedded_without_layout_tables() -> Any:
    """While pages are drawn, the font subsets a PDF embeds (Type 42: matplotlib cuts each font down to the
    glyphs used, with fontTools) leave out :data:`LAYOUT_TABLES`.

    Subsetting kept them, and subsetting DejaVu Sans's positioning table is most of the work: 83 ms per font
    embedded, 29 ms without (the subset 23 KB, 19 KB without).  Each drawing worker embeds about five fonts
    in its PDF, one after another at the end, so a 10 s capture's report waited about 0.4 s for them.  The
    glyphs, their widths, the Unicode map (the text stays searchable) and the hinting are kept.  Restored
    afterwards; left as is where matplotlib does not subset through ``fontTools.subset`` as this expects.
    """
    import types

    from fontTools import subset
    from matplotlib.backends import _backend_pdf_ps

    if getattr(_backend_pdf_ps, "subset", None) is not subset:
        yield
        return

    class Options(subset.Options):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.drop_tables += [table for table in LAYOUT_TABLES if table not in self.drop_tables]

    lean = types.ModuleType(subset.__name__)
    lean.__dict__.update(subset.__dict__)
    lean.Options = Options  # type: ignore[attr-defined]
    _backend_pdf_ps.subset = lean
    try:
        yield
    finally:
        _backend_pdf_ps.subset = subset


HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Record the terminating signals that arrive inside the block and raise the first at its end, through the
    handler in force before it.

    A handler that raises while ``os.fork`` runs its after-fork hooks (logging's lock release) is reported as
    "Exception ignored" and the signal is lost: the report drew to the end and exited 0 after a SIGHUP (CI,
    tests/report/test_parallel_pages.py).  Blocking the signals would not do: another thread of the process
    (pyarrow's pools) still takes them, and Python runs the handler in the main thread all the same.  Only
    the main thread can set handlers: elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: held.append(signum)) for signum in HELD_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)
        if held:
            signal.raise_signal(held[0])


def _kill(children: dict[int, int]) -> None:
    """Kill and reap the children still running (the report is being left by an exception)."""
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    children.clear()


def _child(job: Callable[[], None], error_file: Path) -> None:
    code = 1
    try:
        forget_signals()  # the parent's notes are the parent's
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)  # the parent's handlers raise; a child just ends
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which kills its children
        _die_with_parent()
        job()
        code = 0
    except BaseException as exc:  # every failure goes back to the parent, which raises it
        try:
            error_file.write_bytes(pickle.dumps(exc))
        except BaseException:  # an exception that does not pickle: its text
            error_file.write_bytes(pickle.dumps(RuntimeError("".join(traceback.format_exception(exc)))))
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent ends (``prctl(PR_SET_PDEATHSIG)``), where it can."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent ended before the request was made
        os._exit(1)


def _failure(worker: int, status: int, error_file: Path) -> BaseException:
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return JitterscopeError(f"drawing the report's pages: worker {worker} was stopped by {name}")
    try:
        return pickle.loads(error_file.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return JitterscopeError(f"drawing the report's pages: worker {worker} failed (exit status "
                                f"{os.WEXITSTATUS(status)})")


def join_pages(documents: Sequence[Path], output: Path, *, owners: Sequence[int], metadata: dict[str, Any]) -> None:
    """Write page ``i`` of the report, the next page of ``documents[owners[i]]``, for every page ``i``, as one PDF
    with the document ``metadata`` (Title, Creator, CreationDate as matplotlib's ``PdfPages`` takes them)."""
    from pypdf import PdfReader, PdfWriter

    readers = [PdfReader(document) for document in documents]
    taken = [0] * len(documents)
    writer = PdfWriter()
    for owner in owners:
        writer.add_page(readers[owner].pages[taken[owner]])
        taken[owner] += 1
    info = {}
    for key, value in metadata.items():
        if value is not None:
            info[f"/{key}"] = _pdf_date(value) if isinstance(value, datetime) else str(value)
    writer.add_metadata(info)
    with open(output, "wb") as handle:
        writer.write(handle)


def _pdf_date(when: datetime) -> str:
    """A PDF date string, as matplotlib writes it (``D:20251130000000Z``)."""
    from matplotlib.backends.backend_pdf import _datetime_to_pdf

    return _datetime_to_pdf(when)
