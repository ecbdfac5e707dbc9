"""The PDF report, assembled from registered sections.

A report is a sequence of **sections**, each contributing pages (matplotlib
figures) and tables.  This module holds the section registry and writes the
PDF (vector, Type 42 fonts, byte-reproducible under ``SOURCE_DATE_EPOCH``) and,
with ``figures_dir``, every figure as PDF/SVG/PNG and every table as
CSV/JSON/LaTeX.  It knows nothing about any particular analysis.

Adding a section (what a later analysis does)
---------------------------------------------
1. Write a module **of your own** under ``jitterscope/sections/`` (it comes after
   your analysis and your plots in the data flow, so it may import both;
   your analysis module itself must not import this one)::

       # analysis/jitterscope/sections/spectra.py
       from ..report import Page, ReportContext, new_page, note_page, register_section

       @register_section(order=40, name="spectrum")
       def spectra_section(ctx: ReportContext):
           if ctx.dataset.is_histogram:
               return [note_page("spectra", "Latency spectra", "not available for histogram-only data ...")]
           spectrum = ctx.shared("spectrum", lambda: welch_psd(ctx.dataset))  # computed once, reusable
           fig, ax = new_page()
           plot_spectrum(spectrum, ax)
           return [Page("spectrum", fig), spectrum_table(spectrum)]

2. Add **one line** to :data:`SECTION_MODULES` below naming that module.

A section is a function ``(ReportContext) -> Sequence[Page | Table] | None``:
return ``None`` (or an empty list) when it does not apply.  ``order`` places it
(lower first); ties are broken by name.  Pages are written in the order
returned; consecutive tables are typeset together on text pages.  Every
``Page.name`` and ``Table.name`` must be unique in a report: they are the file
stems under ``--figures``.  The context carries the dataset, the one-pass
summary and timeline every section may use, and :meth:`ReportContext.shared`
to compute anything else once for all sections.

Orders in use: 5 findings (page 1), 6 planted versus recovered (simulations), 10 provenance and summary, 20
distributions, 30 latency over time, 35 period, 40 spectra, 50 power management (frequency, SMI, idle), 60
tails, 80 events (the catalogue of spike events), 100 reproducibility appendix.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from tqdm import tqdm

from .. import __version__
from ..dataset import Dataset, check_output, open_dataset, write_atomically, write_directory_atomically
from ..errors import AnalysisError, JitterscopeError
from ..format import visible
from ..render import (
    FIGURE_WIDTHS_IN,
    PNG_DPI,
    REPORT_RC,
    Page,
    Table,
    fit_for_paper,
    latex_breakable,
    literal_text,
    source_date,
    text_pages,
    tidy_layout,
    to_csv,
    to_json_text,
    to_latex,
)
from ..summary import Summary, TimelineResult, compute_timeline, summarize
from .drawing import draw_pages, report_workers

SECTION_MODULES: tuple[str, ...] = (
    # One line per module that registers sections; imported in this order, sections sorted by `order`.
    "jitterscope.report.sections.findings",
    "jitterscope.report.sections.planted",
    "jitterscope.report.sections.provenance",
    "jitterscope.report.sections.summary",
    "jitterscope.report.sections.power",
    "jitterscope.report.sections.spectrum",
    "jitterscope.report.sections.tails",
    "jitterscope.report.sections.events",
)

FIGURE_FORMATS: tuple[str, ...] = ("pdf", "svg", "png")
"""The files each figure is written as under ``--figures``."""

SUMMARY_ONLY_SECTIONS: tuple[str, ...] = ("findings", "provenance", "appendix")
"""The sections a summary-only dataset gets (every other one needs wake-ups or bins)."""


SectionItem = Page | Table
SectionFunction = Callable[["ReportContext"], Sequence[SectionItem] | None]


@dataclass(frozen=True)
class RegisteredSection:
    """A section in the registry."""

    name: str
    order: int
    function: SectionFunction
    uses: tuple[str, ...] = ()
    """The :meth:`ReportContext.shared` analyses the section waits for where another process computes them
    (:meth:`ReportContext.prefetch`): it is built after the sections that do not."""


_REGISTRY: dict[str, RegisteredSection] = {}


def register_section(*, order: int, name: str,
                     uses: tuple[str, ...] = ()) -> Callable[[SectionFunction], SectionFunction]:
    """Decorator registering ``function`` as the report section ``name`` at position ``order``; ``uses``: the
    prefetched shared analyses it asks for (:attr:`RegisteredSection.uses`).

    Raises
    ------
    ValueError
        Another function is already registered under ``name``.
    """

    def decorate(function: SectionFunction) -> SectionFunction:
        known = _REGISTRY.get(name)
        if known is not None and _qualname(known.function) != _qualname(function):
            raise ValueError(f"report section {name!r} registered twice ({_qualname(known.function)})")
        _REGISTRY[name] = RegisteredSection(name=name, order=order, function=function, uses=tuple(uses))
        return function

    return decorate


def registered_sections() -> tuple[RegisteredSection, ...]:
    """Import :data:`SECTION_MODULES` and return every registered section, in report order."""
    for module in SECTION_MODULES:
        importlib.import_module(module)
    return tuple(sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name)))


@dataclass
class ReportContext:
    """What every section receives: the dataset and the results shared between sections.

    Attributes
    ----------
    dataset
        The opened dataset.
    summary
        ``stats.summarize`` of the dataset (one streaming pass, done once).
    timeline
        ``timeline.compute_timeline`` of the dataset, or None for histogram-only data.
    provenance
        File hashes, tool version and generation time (see :class:`Provenance`).
    top_k
        How many spikes the catalogue lists.
    sections
        Names of the sections in this report, in order.
    progress
        Whether long work may show a progress bar on stderr.
    """

    dataset: Dataset
    summary: Summary
    timeline: TimelineResult | None
    provenance: Provenance
    top_k: int = 20
    progress: bool = False
    sections: tuple[str, ...] = ()  # the sections this report includes, in order
    output: str = "report.pdf"  # the -o path, as given (the reproducibility page repeats it)
    figures_dir: str | None = None
    figure_width: str | None = None
    _shared: dict[str, Any] = field(default_factory=dict)
    shared_seconds: list[tuple[str, float]] = field(default_factory=list)  # (key, wall s) of each shared result
    _prefetched: dict[str, tuple[int, Path]] = field(default_factory=dict)  # key -> (child pid, its result file)

    def thread_page_name(self, prefix: str, thread: int, cpu: int) -> str:
        """A per-thread page name, unique in the report: ``prefix-cpuN`` when every thread has its own known
        CPU, else ``prefix-threadN`` (imports may not know the CPUs, or pin two threads to one CPU)."""
        cpus = [t.cpu for t in self.dataset.metadata.threads]
        if cpu >= 0 and min(cpus, default=-1) >= 0 and len(set(cpus)) == len(cpus):
            return f"{prefix}-cpu{cpu}"
        return f"{prefix}-thread{thread}"

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for, the same object afterwards (its wall time is kept
        in :attr:`shared_seconds`: the section that asks first would otherwise carry it)."""
        if key not in self._shared:
            started = time.perf_counter()
            result = self._collect(key) if key in self._prefetched else _MISSING
            self._shared[key] = compute() if result is _MISSING else result
            self.shared_seconds.append((key, time.perf_counter() - started))
            release_freed_memory()  # the next analysis's peak should not stack on this one's freed leftovers
        return self._shared[key]

    def prefetch(self, key: str, compute: Callable[[], Any], scratch: Path) -> None:
        """Start ``compute()`` for :meth:`shared` ``key`` in a forked child, which leaves its result pickled under
        ``scratch``; this process goes on meanwhile, and :meth:`shared` takes the result when ``key`` is first
        asked for.  Where the child fails (the analysis raised, the result does not pickle, the child was
        killed), :meth:`shared` computes ``key`` here as it would have: the same result, or the same error.
        :meth:`stop_prefetching` ends the children not asked for."""
        if key in self._shared or key in self._prefetched:
            return
        from .drawing import _child, signals_held

        result = scratch / f"shared-{key}.pickle"

        def job() -> None:
            result.write_bytes(pickle.dumps(compute(), protocol=pickle.HIGHEST_PROTOCOL))

        with signals_held():  # a signal meanwhile raises once the child is recorded, to be stopped
            pid = os.fork()
            if pid == 0:  # the child: compute, and leave without running the parent's clean-ups
                _child(job, scratch / f"shared-{key}.error")
            self._prefetched[key] = (pid, result)

    def stop_prefetching(self) -> None:
        """Kill and reap the children of :meth:`prefetch` whose results were not asked for."""
        for pid, _ in self._prefetched.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        self._prefetched.clear()

    def pending(self, key: str) -> bool:
        """Whether a child of :meth:`prefetch` is computing ``key`` (and :meth:`shared` would wait for it)."""
        return key in self._prefetched

    def _collect(self, key: str) -> Any:
        pid, result = self._prefetched.pop(key)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return _MISSING
        try:
            return pickle.loads(result.read_bytes())
        except Exception:  # whatever went wrong, the analysis runs here instead
            return _MISSING
        finally:
            result.unlink(missing_ok=True)


_MISSING = object()
"""What :meth:`ReportContext._collect` returns when the child left no result."""

PREFETCH_MAX_WAKEUPS = 2_000_000
"""A report of at most this many wake-ups computes its spectra in a forked child while this process fits the
tails (each 1-2.5 s of CPU for a 10 s capture, one after the other before).  Above it they run one after the
other, in :data:`~.sections.findings.SHARED_ORDER`: side by side their memory peaks would add (at 10^8 each
is about 1 GB)."""


@dataclass(frozen=True)
class Provenance:
    """Where a report comes from: dataset files and their hashes, tool, time."""

    dataset_path: str
    files: tuple[tuple[str, str, int], ...]  # (name, sha256, bytes)
    dataset_sha256: str
    tool_version: str
    generated_utc: str
    reproducible: bool
    source_date_epoch: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset_path": self.dataset_path, "dataset_sha256": self.dataset_sha256,
            "files": [{"name": n, "sha256": h, "bytes": b} for n, h, b in self.files],
            "tool_version": self.tool_version, "generated_utc": self.generated_utc,
            "reproducible": self.reproducible, "source_date_epoch": self.source_date_epoch,
        }


@dataclass(frozen=True)
class ReportInfo:
    """What :func:`write_report` wrote."""

    path: str
    pages: int
    sections: tuple[str, ...]
    figure_files: tuple[str, ...]
    seconds: tuple[tuple[str, float], ...] = ()  # wall time of the shared passes, of each section, then of each
    # result sections share (counted in the section that asked first, too)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "pages": self.pages, "sections": list(self.sections),
                "figure_files": list(self.figure_files), "seconds": dict(self.seconds)}


def release_freed_memory() -> None:
    """Hand memory already freed back to the operating system: Arrow's pool and glibc's arenas.

    A report runs one streaming analysis after another, each in its own worker threads; the allocators keep
    what an analysis freed (hundreds of MB after the summary and timeline passes, in the arenas of threads
    that have ended), so without this each analysis's peak would stack on the leftovers of the ones before.
    Where the C library is not glibc there is no ``malloc_trim``: only Arrow's pool is released.
    """
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` among the symbols the process has loaded (no library search), or None."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def hash_files(dataset: Dataset) -> tuple[tuple[tuple[str, str, int], ...], str]:
    """sha256 of each file, and of the dataset: the file's own for one file, else of the "name sha256" lines."""
    entries = []
    for file in dataset.files:
        digest = hashlib.sha256()
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        entries.append((file.name, digest.hexdigest(), file.stat().st_size))
    if len(entries) == 1:
        return tuple(entries), entries[0][1]
    combined = hashlib.sha256("".join(f"{n} {h}\n" for n, h, _ in entries).encode()).hexdigest()
    return tuple(entries), combined


def build_context(dataset: Dataset, *, top_k: int = 20, progress: bool = False) -> ReportContext:
    """Open-once work every section shares: file hashes, the summary pass, the timeline pass.

    The three are independent streaming reads, run in threads: Parquet decoding,
    numpy and hashlib release the GIL, so on two cores they overlap.
    """
    when, reproducible = source_date()
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="report") as pool:
        hashing = pool.submit(hash_files, dataset)
        summarizing = pool.submit(summarize, dataset, progress=progress, top_k=top_k)
        timing = None if dataset.is_histogram else pool.submit(compute_timeline, dataset, progress=progress)
        summary = summarizing.result()
        timeline = None if timing is None else timing.result()
        files, combined = hashing.result()
    release_freed_memory()
    provenance = Provenance(
        dataset_path=str(dataset.path), files=files, dataset_sha256=combined, tool_version=__version__,
        generated_utc=when.strftime("%Y-%m-%d %H:%M:%S UTC"), reproducible=reproducible,
        source_date_epoch=int(when.timestamp()) if reproducible else None,
    )
    return ReportContext(dataset=dataset, summary=summary, timeline=timeline, provenance=provenance,
                         top_k=top_k, progress=progress)


def write_report(
    dataset: Dataset | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    figures_dir: str | os.PathLike[str] | None = None,
    top_k: int = 20,
    progress: bool = False,
    sections: Sequence[str] | None = None,
    overwrite: bool = False,
    figure_width: str | None = None,
    workers: int | None = None,
) -> ReportInfo:
    """Write the PDF report of ``dataset`` to ``output`` (and figures/tables to ``figures_dir``).

    Parameters
    ----------
    dataset
        An opened :class:`~jitterscope.dataset.Dataset` or its path.
    output
        The PDF to write (replaced if it exists).
    figures_dir
        If given, each figure is also written there as PDF, SVG and PNG and each
        table as CSV, JSON and LaTeX (booktabs).
    top_k
        Number of spikes in the spike catalogue.
    progress
        Show progress bars on stderr.
    sections
        Names of the sections to include (default: all registered ones).
    overwrite
        ``--force``: replace an existing ``output`` (and files of the same name in ``figures_dir``). The
        dataset itself is never overwritten; the figures folder appears whole or not at all.
    figure_width
        ``"column"`` (3.5 in) or ``"page"`` (7.2 in): figures under ``figures_dir`` are refitted to that
        width with 8-9 pt text (:func:`~jitterscope.render.fit_for_paper`); None keeps the report's page.
        PNGs are written at 300 dpi either way.
    workers
        Processes drawing the pages, this one and forked children (:mod:`.drawing`); default: the
        ``JITTERSCOPE_REPORT_WORKERS`` environment variable, else every CPU.  1 draws in this process.  The
        report's bytes are the same for any number.

    Returns
    -------
    ReportInfo
        The path, page count, sections that contributed, and the files written under ``figures_dir``.

    Raises
    ------
    JitterscopeError
        The dataset cannot be read or analysed, or the output cannot be written.
    """
    source = dataset.path if isinstance(dataset, Dataset) else Path(dataset)
    out = check_output(output, inputs=[source], overwrite=overwrite, error=JitterscopeError)
    if figures_dir is not None:
        check_output(figures_dir, inputs=[source, out], overwrite=overwrite, directory=True, error=JitterscopeError)
    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)
    if figure_width is not None and figure_width not in FIGURE_WIDTHS_IN:
        raise JitterscopeError(f"figure width {figure_width!r}: use one of {', '.join(FIGURE_WIDTHS_IN)}")
    if dataset.metadata.kind == "poll":
        return _poll_report(dataset, out, figures_dir=figures_dir, sections=sections, figure_width=figure_width)
    chosen = registered_sections()
    if sections is not None:
        unknown = sorted(set(sections) - {s.name for s in chosen})
        if unknown:
            raise JitterscopeError(f"unknown report section(s) {', '.join(unknown)}; known: "
                                   f"{', '.join(s.name for s in chosen)}")
        chosen = tuple(s for s in chosen if s.name in sections)
    with matplotlib.rc_context(REPORT_RC):
        started = time.perf_counter()
        ctx = build_context(dataset, top_k=top_k, progress=progress)
        if ctx.summary.summary_only:
            # only count/min/avg/max are known: provenance with those numbers and a note, and the appendix
            asked = chosen
            chosen = tuple(s for s in chosen if s.name in SUMMARY_ONLY_SECTIONS)
            if not chosen:
                raise JitterscopeError(
                    f"{dataset.path}: a summary-only source (count/min/avg/max per thread) has no data for section(s) "
                    f"{', '.join(s.name for s in asked)}; ask for {' or '.join(SUMMARY_ONLY_SECTIONS)}")
        ctx.sections = tuple(section.name for section in chosen)
        ctx.output, ctx.figure_width = str(output), figure_width
        ctx.figures_dir = None if figures_dir is None else str(figures_dir)
        seconds = [("summary+timeline", time.perf_counter() - started)]
        when, _ = source_date()
        metadata = {
            "Title": visible(f"jitterscope report: {dataset.path.name}"),
            "Creator": f"jitterscope {__version__}",
            "CreationDate": when,
            "ModDate": None,
        }
        written: list[str] = []
        used_names: set[str] = set()
        contributed: list[str] = []
        pages = 0
        jobs: list[Callable[[PdfPages], None]] = []
        weights: list[float] = []
        with contextlib.ExitStack() as stack:
            fig_dir = None if figures_dir is None else stack.enter_context(
                write_directory_atomically(Path(figures_dir), what="the figures", error=JitterscopeError))
            tmp = stack.enter_context(write_atomically(out, what="the report", error=JitterscopeError))
            count = report_workers(workers)
            scratch = Path(stack.enter_context(scratch_directory()))
            stack.callback(ctx.stop_prefetching)
            _start_shared_work(ctx, scratch, workers=count)
            built: dict[str, Sequence[SectionItem]] = {}
            bar = tqdm(build_order(chosen, ctx), desc="report", unit="section", file=sys.stderr,
                       disable=not progress)
            for section in bar:
                bar.set_postfix_str(section.name)
                started = time.perf_counter()
                built[section.name] = section.function(ctx) or ()
                seconds.append((section.name, time.perf_counter() - started))
            for section in chosen:  # the pages in report order, whatever order the sections were built in
                items = built[section.name]
                if items:
                    contributed.append(section.name)
                for page in _pages_of(section.name, items, ctx):
                    _claim(page.name, used_names, section.name)
                    pages += 1
                    jobs.append(functools.partial(_draw_page, page, ctx, pages, fig_dir, figure_width))
                    weights.append(page_weight(page))
                    if fig_dir is not None:
                        written += [str(fig_dir / f"{page.name}.{ext}") for ext in FIGURE_FORMATS]
                        for table in page.tables:
                            _claim(table.name, used_names, section.name)
                            written += _export_table(table, fig_dir)
            started = time.perf_counter()
            draw_pages(jobs, tmp, workers=count, metadata=metadata, scratch=scratch, weights=weights)
            seconds.append((f"drawing ({min(count, len(jobs))} process{'es' if min(count, len(jobs)) > 1 else ''})",
                            time.perf_counter() - started))
            seconds += [(f"{key} (shared, within the sections above)", secs) for key, secs in ctx.shared_seconds]
            if fig_dir is not None:
                written += _export_methods(ctx, fig_dir)
    if figures_dir is not None:  # the files now stand in the folder asked for, not in its temporary
        written = [str(Path(figures_dir) / Path(path).name) for path in written]
    return ReportInfo(path=str(out), pages=pages, sections=tuple(contributed), figure_files=tuple(written),
                      seconds=tuple(seconds))


def build_order(sections: Sequence[RegisteredSection], ctx: ReportContext) -> list[RegisteredSection]:
    """The order ``sections`` are built in: first those that use no analysis another process is still computing
    (:meth:`ReportContext.pending`), then the rest, each group in report order.  The sections are independent
    but for :meth:`ReportContext.shared`, which gives every section the same result whoever asks first, so the
    pages are the same in either order; the sections that wait come last, and meanwhile this process builds
    the others instead of waiting (page 1 and the spectra waited 0.2 s for a 10 s capture's spectra)."""
    return sorted(sections, key=lambda section: any(ctx.pending(key) for key in section.uses))  # stable


def _start_shared_work(ctx: ReportContext, scratch: Path, *, workers: int) -> None:
    """Where the report is drawn by more than one process and is small (:data:`PREFETCH_MAX_WAKEUPS`), its two
    longest shared analyses run side by side: the spectra in a forked child (:meth:`ReportContext.prefetch`),
    the tail fits here; every section then finds them done.  Each is the analysis its sections ask for, with
    the same arguments, so the report is the same."""
    if workers < 2 or ctx.dataset.is_histogram or ctx.dataset.num_rows > PREFETCH_MAX_WAKEUPS:
        return
    if "spectrum" in ctx.sections:  # page 1 and the spectrum section ask for it only then
        from ..spectrum import analyze_spectra

        ctx.prefetch("spectrum", lambda: analyze_spectra(ctx.dataset), scratch)
    if "tails" in ctx.sections:
        from ..tails import analyze_tails

        with contextlib.suppress(AnalysisError):  # the tails section says why, when it asks again
            ctx.shared("tails", lambda: analyze_tails(ctx.dataset))


SCRATCH_PREFIX = "jitterscope-pages-"
"""The drawing workers' scratch folders: ``jitterscope-pages-PID-XXXXXXXX`` in the temporary directory."""


def scratch_directory(base: str | os.PathLike[str] | None = None) -> tempfile.TemporaryDirectory[str]:
    """The scratch folder of this report's drawing workers, named by this process's pid, after removing those of
    reports that are gone: a report killed with SIGKILL cannot remove its own, so the next one does."""
    base = Path(base if base is not None else tempfile.gettempdir())
    for old in base.glob(f"{SCRATCH_PREFIX}*-*"):
        owner = old.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=base)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _poll_report(dataset: Dataset, out: Path, *, figures_dir: str | os.PathLike[str] | None,
                 sections: Sequence[str] | None, figure_width: str | None) -> ReportInfo:
    """A poll dataset's report has its own pages and sections (:mod:`.poll`: page 1 for noise, tables, three
    figures); ``--figures`` and ``--figure-width`` write them as the timer report's are written."""
    from .poll import check_poll_sections, poll_methods, write_poll_report

    check_poll_sections(sections)
    written: list[str] = []
    contributed: list[str] = []
    used: set[str] = set()
    with contextlib.ExitStack() as stack:
        fig_dir = None if figures_dir is None else stack.enter_context(
            write_directory_atomically(Path(figures_dir), what="the figures", error=JitterscopeError))

        def export(page: Page) -> None:
            if fig_dir is None:
                return
            _claim(page.name, used, "poll")
            written.extend(_export_figure(page, fig_dir, figure_width))
            for table in page.tables:
                _claim(table.name, used, "poll")
                written.extend(_export_table(table, fig_dir))

        pages = write_poll_report(dataset, out, overwrite=True, sections=sections, export=export,
                                  contributed=contributed)  # check_output above already applied --force
        if fig_dir is not None:
            _, sha256 = hash_files(dataset)
            text = visible(poll_methods(dataset.metadata, dataset_sha256=sha256))
            for name, body in (("methods.md", text + "\n"), ("methods.tex", latex_breakable(text) + "\n")):
                (fig_dir / name).write_text(body, encoding="utf-8")
                written.append(str(fig_dir / name))
    if figures_dir is not None:  # the files now stand in the folder asked for, not in its temporary
        written = [str(Path(figures_dir) / Path(path).name) for path in written]
    return ReportInfo(path=str(out), pages=pages, sections=tuple(contributed), figure_files=tuple(written))


def _draw_page(page: Page, ctx: ReportContext, page_no: int, fig_dir: Path | None, width: str | None,
               pdf: PdfPages) -> None:
    """Draw ``page`` into ``pdf`` with its footer (and its ``--figures`` files without it); then drop it.

    The footer first: it narrows the layout's rectangle, so the checks of ``prepare`` and the annotations' tidy
    see the panels where the page prints them.  ``prepare`` may set the layout engine aside once it has laid the
    page out (:func:`~..render.legends_off_data` with ``hold``); it is put back before the ``--figures`` files,
    which are laid out at their own sizes.
    """
    engine = page.figure.get_layout_engine()
    undo = _decorate(page.figure, ctx, page_no)
    if page.prepare is not None:
        page.prepare(page.figure)
    if _annotated(page.figure):  # labels at data points may fall on each other
        _restore_engine(page.figure, engine)  # tidy_layout's rounds lay the page out again
        tidy_layout(page.figure)
    # the PDF page first, so it is the same bytes with or without --figures
    pdf.savefig(literal_text(page.figure))
    _restore_engine(page.figure, engine)
    if fig_dir is not None:
        undo()
        _export_figure(page, fig_dir, width)
    page.figure.clear()  # a long report holds no drawn page


def _restore_engine(fig: Figure, engine: Any) -> None:
    if engine is not None and fig.get_layout_engine() is not engine:
        fig.set_layout_engine(engine)


def page_weight(page: Page) -> float:
    """What drawing ``page`` costs, roughly, in plain figure pages: one laid out again first (``prepare``: a
    spectrum page's legends, 3.6-4.1 s of CPU for a real 10 s capture) 4, a text or note page (0.2-0.6 s) 0.5,
    another figure (0.6-1.3 s) 1; the drawing workers get equal shares of it (:func:`.drawing.assign_pages`)."""
    if page.prepare is not None:
        return 4.0
    return 1.0 if page.kind == "figure" else 0.5


def _pages_of(section: str, items: Sequence[SectionItem], ctx: ReportContext) -> Iterator[Page]:
    pending: list[Table] = []
    groups = 0

    def typeset() -> Iterator[Page]:
        nonlocal groups
        groups += 1
        heading = pending[0].title if len(pending) == 1 else section.replace("-", " ").capitalize()
        yield from text_pages(f"{section}-tables" + (f"-{groups}" if groups > 1 else ""), heading, pending)

    for item in items:
        if isinstance(item, Table):
            pending.append(item)
            continue
        if pending:
            yield from typeset()
            pending = []
        yield item
    if pending:
        yield from typeset()


def _decorate(fig: Figure, ctx: ReportContext, page_no: int) -> Callable[[], None]:
    """Footer on every page (what, from which data, page number; SIMULATED when it is); returns its undo."""
    engine = fig.get_layout_engine()
    rect = engine.get().get("rect") if engine is not None else None
    if rect is not None:
        engine.set(rect=(0.0, 0.03, 1.0, 0.97))  # keep axis labels clear of the footer
    prov = ctx.provenance
    footer = (f"jitterscope {prov.tool_version} · {Path(prov.dataset_path).name} · "
              f"sha256 {prov.dataset_sha256[:12]} · {prov.generated_utc}")
    texts = [fig.text(0.01, 0.005, footer, fontsize=8, color="0.35", ha="left", va="bottom"),
             fig.text(0.99, 0.005, f"page {page_no}", fontsize=8, color="0.35", ha="right", va="bottom")]
    if ctx.dataset.metadata.kind == "simulation":
        # right of the provenance line, left of the page number: the centre collides with a long file name
        texts.append(fig.text(0.93, 0.005, "SIMULATED DATA", fontsize=9, color="#b00000", weight="bold",
                              ha="right", va="bottom"))

    def undo() -> None:
        for text in texts:
            text.remove()
        if rect is not None:
            engine.set(rect=rect)

    return undo


def _annotated(fig: Figure) -> bool:
    """Whether ``fig`` labels data points (annotations): only those pages pay for a layout pass at A4."""
    from matplotlib.text import Annotation

    return any(isinstance(text, Annotation) for ax in fig.axes for text in ax.texts)


def _claim(name: str, used: set[str], section: str) -> None:
    if name in used:
        raise ValueError(f"report section {section!r}: page/table name {name!r} is already used")
    used.add(name)


def _export_figure(page: Page, directory: Path, width: str | None = None) -> list[str]:
    if width is not None and page.kind == "figure":  # text and note pages stay pages (tables go out as files)
        fit_for_paper(page.figure, width)
    paths = []
    for ext in FIGURE_FORMATS:
        path = directory / f"{page.name}.{ext}"
        kwargs: dict[str, Any] = {"metadata": {"Software": None}, "dpi": PNG_DPI} if ext == "png" else {}
        if ext == "pdf":
            kwargs = {"metadata": {"CreationDate": source_date()[0], "ModDate": None}}
        if ext == "svg":
            kwargs = {"metadata": {"Date": source_date()[0].isoformat()}}
        page.figure.savefig(path, format=ext, **kwargs)
        paths.append(str(path))
    return paths


def _export_table(table: Table, directory: Path) -> list[str]:
    outputs = {"csv": to_csv(table), "json": to_json_text(table), "tex": to_latex(table)}
    paths = []
    for ext, text in outputs.items():
        path = directory / f"{table.name}.{ext}"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return paths


def _export_methods(ctx: ReportContext, directory: Path) -> list[str]:
    """methods.md and methods.tex: the paragraph a paper's methods section can cite (:mod:`.methods`)."""
    from .methods import methods_latex, methods_text

    meta, sha256 = ctx.dataset.metadata, ctx.provenance.dataset_sha256
    paths = []
    for name, text in (("methods.md", methods_text(meta, dataset_sha256=sha256) + "\n"),
                       ("methods.tex", methods_latex(meta, dataset_sha256=sha256))):
        (directory / name).write_text(text, encoding="utf-8")
        paths.append(str(directory / name))
    return paths


def _qualname(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"
