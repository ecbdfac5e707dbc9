"""Import other tools' output into a jitterscope dataset.

:func:`detect` names the format of one file; :func:`import_files` reads the
files of one run (a primary file, plus companions from the same run used to
cross-check counts and fill in what the primary lacks) and returns the dataset
table and metadata, ready for :func:`jitterscope.dataset.write_dataset`.

Formats (``FORMATS``):

=========================  ==========  =============================================
format                     becomes     file
=========================  ==========  =============================================
cyclictest-verbose         samples     ``cyclictest -v`` stdout
cyclictest-histogram       histogram   ``cyclictest -h/-H`` stdout or ``--histfile``
cyclictest-json            histogram   ``cyclictest --json=FILE`` (summary if no -h)
cyclictest-quiet           summary     ``cyclictest -q`` stdout (summary lines)
jitterdebugger-samples     samples     ``samples.raw`` (``-o DIR -s``)
jitterdebugger-results     histogram   ``results.json``
jitterdebugger-stdout      summary     jitterdebugger's stdout summary lines
oslat                      histogram   ``oslat`` stdout
oslat-json                 histogram   ``oslat --json=FILE``
rtla-timerlat-hist         histogram   ``rtla timerlat hist`` stdout
periodic-timer             summary     periodic_timer interval-statistics log (period blocks)
=========================  ==========  =============================================

turbostat output is a frequency/C-state/SMI timeline, not latencies: it is not
a dataset of its own but travels inside one (``jitterscope.timeline``), attached
with ``jitterscope import TURBOSTAT.txt --onto DATASET -o OUT``
(:func:`jitterscope.importers.turbostat.read_timeline`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ...dataset import Metadata
from ...errors import ImportFormatError, UnknownFormatError
from ..names import IMPORT_FORMATS
from . import (
    cyclictest_histogram,
    cyclictest_json,
    cyclictest_quiet,
    cyclictest_verbose,
    jitterdebugger,
    oslat,
    periodic_timer,
    rtla_timerlat,
    turbostat,
)
from ._build import build_histogram, build_summary_only
from ._build_samples import Sink, TableSink, build_cyclictest_verbose, build_jitterdebugger
from ._common import Parsed, open_input

SNIFF_BYTES = 64 * 1024

FORMATS: tuple[str, ...] = IMPORT_FORMATS

_TOOL = {f: f.split("-")[0] for f in (*FORMATS, "turbostat")} | {
    "rtla-timerlat-hist": "rtla", "periodic-timer": "periodic_timer"}
_SAMPLE_FORMATS = ("cyclictest-verbose", "jitterdebugger-samples")
_HISTOGRAM_FORMATS = ("cyclictest-histogram", "cyclictest-json", "jitterdebugger-results", "oslat", "oslat-json",
                      "rtla-timerlat-hist")
# Order matters: the first format whose sniffer accepts the head wins.
_SNIFFERS: tuple[tuple[str, Callable[[bytes, int], bool]], ...] = (
    ("cyclictest-json", lambda h, s: cyclictest_json.sniff(h)),
    ("oslat-json", lambda h, s: oslat.sniff_json(h)),
    ("jitterdebugger-results", lambda h, s: jitterdebugger.sniff_results(h)),
    ("cyclictest-histogram", lambda h, s: cyclictest_histogram.sniff(h)),
    ("rtla-timerlat-hist", lambda h, s: rtla_timerlat.sniff(h)),
    ("oslat", lambda h, s: oslat.sniff(h)),
    ("jitterdebugger-stdout", lambda h, s: jitterdebugger.sniff_stdout(h)),
    ("cyclictest-verbose", lambda h, s: cyclictest_verbose.sniff(h)),
    ("cyclictest-quiet", lambda h, s: cyclictest_quiet.sniff(h)),
    ("periodic-timer", lambda h, s: periodic_timer.sniff(h)),
    ("turbostat", lambda h, s: turbostat.sniff(h)),
    ("jitterdebugger-samples", jitterdebugger.sniff_samples),
)


def detect(path: str | os.PathLike[str]) -> str:
    """Name the format of ``path`` (one of :data:`FORMATS`) from its first bytes.

    ``turbostat`` is also recognised (for a clear refusal by :func:`import_files`).

    Raises
    ------
    UnknownFormatError
        The file is of no format jitterscope imports.
    ImportFormatError
        The file cannot be read.
    """
    file = Path(path)
    with open_input(file) as handle:  # a device or a FIFO is refused here, before it is opened
        try:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(SNIFF_BYTES)
        except OSError as exc:
            raise ImportFormatError(f"{file}: cannot read ({exc.strerror or exc})") from None
    if size == 0:
        raise UnknownFormatError(f"{file}: file is empty; nothing to import")
    for name, sniff in _SNIFFERS:
        if sniff(head, size):
            return name
    raise UnknownFormatError(
        f"{file}: not a format jitterscope imports (known: {', '.join(FORMATS)}); "
        "name it with --format if you know what it is"
    )


def import_files(
    paths: Sequence[str | os.PathLike[str]], fmt: str | None = None
) -> tuple[pa.Table, Metadata]:
    """Import the files of one run into memory; returns (table, metadata) for ``write_dataset``.

    The whole table is held in memory: to import a large file, use :func:`import_to_dataset`, which writes
    row group by row group in bounded memory (the same rows and metadata).

    Parameters
    ----------
    paths
        The run's files: one primary (samples, else a histogram, else a summary)
        and companions from the same run (cyclictest ``--json``/``-q`` output next
        to ``-v`` output; jitterdebugger ``results.json``/stdout next to
        ``samples.raw``).  A jitterdebugger output directory stands for its
        ``samples.raw`` and ``results.json``.
    fmt
        Force the format of the first file instead of detecting it.

    Returns
    -------
    (pyarrow.Table, Metadata)
        Kind ``import`` for sample sources, ``histogram`` otherwise; the
        metadata's ``source`` says what was reconstructed and how, and notes
        such as samples missing from the output.

    Raises
    ------
    UnknownFormatError, ImportFormatError
        A file is of no known format, is corrupt, or the files are not one run.
    """
    sink = TableSink()
    metadata = _import(_expand(paths), fmt, sink)
    return sink.table(), metadata


@dataclass(frozen=True)
class ImportedDataset:
    """What :func:`import_to_dataset` wrote."""

    path: Path
    metadata: Metadata
    rows: int


def import_to_dataset(
    paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *, fmt: str | None = None,
    overwrite: bool = False,
) -> ImportedDataset:
    """Import the files of one run into the dataset file ``output``, in memory bounded by one chunk.

    Sample files (cyclictest ``-v``, jitterdebugger ``samples.raw``) are read a chunk at a time and written
    row group by row group (:func:`jitterscope.dataset.stream_dataset`): the output appears only when
    complete, and a failure leaves no file.  Rows and metadata are those of :func:`import_files`, save the
    order of rows of different threads (interleaved chunk by chunk; each thread's rows in order, as the
    contract asks).

    Parameters
    ----------
    paths, fmt
        As for :func:`import_files`.
    output
        The ``.parquet`` file to write; never one of ``paths``.
    overwrite
        Replace an existing ``output`` (``--force``).

    Raises
    ------
    UnknownFormatError, ImportFormatError
        As for :func:`import_files`.
    DatasetError
        The output cannot be written there.
    """
    from ...dataset import stream_dataset

    files = _expand(paths)
    # the paths as given too: an output inside a jitterdebugger directory given as input is refused
    with stream_dataset(output, overwrite=overwrite, inputs=[*paths, *files]) as stream:
        metadata = _import(files, fmt, stream)
        stream.finish(metadata)
        rows = stream.rows
    return ImportedDataset(path=Path(output), metadata=metadata, rows=rows)


def _import(files: list[Path], fmt: str | None, sink: Sink) -> Metadata:
    if not files:
        raise ImportFormatError("no input files given")
    if fmt is not None and fmt not in FORMATS:
        raise UnknownFormatError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    formats = [fmt if (fmt and i == 0) else detect(f) for i, f in enumerate(files)]
    if "turbostat" in formats:
        raise ImportFormatError(
            f"{files[formats.index('turbostat')]}: turbostat output is a frequency/C-state/SMI timeline, not "
            "wake-up latencies; attach it to a capture of the same run with "
            "'jitterscope import TURBOSTAT.txt --onto DATASET -o OUT'")
    tools = {_TOOL[f] for f in formats}
    if len(tools) > 1:
        listing = ", ".join(f"{p.name} ({f})" for p, f in zip(files, formats, strict=True))
        raise ImportFormatError(f"files from different tools given together: {listing}; import one run at a time")
    primary_index = _primary(files, formats)
    companions = [_parse(f, fmt_, None) for i, (f, fmt_) in enumerate(zip(files, formats, strict=True))
                  if i != primary_index]
    resolution = next((c.resolution_ns for c in companions if c.resolution_ns), None)
    if any(c.settings.get("options", {}).get("nsecs") for c in companions):
        resolution = 1
    for comp in companions:
        if comp.format == "cyclictest-quiet":
            cyclictest_quiet.scale(comp, resolution or 1000)
    primary_path, primary_format = files[primary_index], formats[primary_index]
    if primary_format == "cyclictest-verbose":
        metadata = build_cyclictest_verbose(cyclictest_verbose.VerboseReader(primary_path), companions, sink)
        beside = None if any(c.format == "cyclictest-json" for c in companions) else _json_beside(primary_path)
        if beside is None:
            return metadata
        source = dict(metadata.source or {})
        source["notes"] = [*source.get("notes", []), (
            f"{beside} beside it looks like cyclictest --json output, not imported: if it is this run's, import "
            f"both ('jitterscope import {primary_path} {beside} -o OUT') to know each thread's CPU (now -1)")]
        return metadata.with_changes(source=source)
    if primary_format == "jitterdebugger-samples":
        return build_jitterdebugger(jitterdebugger.SamplesReader(primary_path, resolution or 1000), companions,
                                    sink)
    primary = _parse(primary_path, primary_format, resolution)
    if primary.format == "cyclictest-quiet":
        cyclictest_quiet.scale(primary, resolution or 1000)
    if primary.role == "histogram":
        table, metadata = build_histogram(primary, companions)
    else:
        table, metadata = build_summary_only(primary, companions)
    sink.write(table, metadata.kind)
    return metadata


def _json_beside(path: Path) -> Path | None:
    """A cyclictest ``--json`` file in the folder of a ``-v`` log (its name's stem first), or None."""
    try:
        candidates = sorted(path.parent.glob("*.json"), key=lambda p: (p.stem != path.stem, p.name))[:20]
    except OSError:
        return None
    for candidate in candidates:
        try:
            if not candidate.is_file():
                continue
            with open_input(candidate) as handle:
                if cyclictest_json.sniff(handle.read(SNIFF_BYTES)):
                    return candidate
        except (OSError, ImportFormatError):
            continue
    return None


def _expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [path / name for name in ("samples.raw", "results.json") if (path / name).is_file()]
            if not found:
                raise ImportFormatError(f"{path}: directory holds neither samples.raw nor results.json; "
                                        "give the tool's output files")
            files.extend(found)
        elif not path.exists():
            raise ImportFormatError(f"{path}: no such file")
        else:
            files.append(path)
    return files


def _primary(files: list[Path], formats: list[str]) -> int:
    for group in (_SAMPLE_FORMATS, _HISTOGRAM_FORMATS):
        chosen = [i for i, f in enumerate(formats) if f in group]
        if len(chosen) > 1 and group is _SAMPLE_FORMATS:
            raise ImportFormatError(
                f"two sample files given ({files[chosen[0]].name}, {files[chosen[1]].name}); import one run at a time")
        if chosen:
            return chosen[0]
    return 0


def _parse(path: Path, fmt: str, resolution_ns: int | None) -> Parsed:
    if fmt == "cyclictest-verbose":
        return cyclictest_verbose.parse(path)
    if fmt == "cyclictest-histogram":
        return cyclictest_histogram.parse(path, resolution_ns or 1000)
    if fmt == "cyclictest-json":
        return cyclictest_json.parse(path)
    if fmt == "cyclictest-quiet":
        return cyclictest_quiet.parse(path)
    if fmt == "jitterdebugger-samples":
        return jitterdebugger.parse_samples(path, resolution_ns or 1000)
    if fmt == "jitterdebugger-results":
        return jitterdebugger.parse_results(path)
    if fmt == "jitterdebugger-stdout":
        return jitterdebugger.parse_stdout(path)
    if fmt == "oslat":
        return oslat.parse(path)
    if fmt == "oslat-json":
        return oslat.parse_json(path)
    if fmt == "rtla-timerlat-hist":
        return rtla_timerlat.parse(path)
    if fmt == "periodic-timer":
        return periodic_timer.parse(path)
    raise UnknownFormatError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


__all__ = ["FORMATS", "ImportedDataset", "detect", "import_files", "import_to_dataset"]
