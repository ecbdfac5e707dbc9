"""``jitterscope import``: other tools' output into a dataset."""

from __future__ import annotations

import argparse
import json
import os

from ..errors import ImportFormatError
from ..format import jsonable
from ..io import IMPORT_FORMATS, TRACE_FORMATS  # light: io/names.py
from .options import DURATION_HELP, duration, input_path, number, output_path, usage_error


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import", help="read cyclictest/jitterdebugger/oslat/rtla output into a dataset",
        description="Import the files of one run: a primary file (cyclictest -v, samples.raw, a histogram...) "
                    "and companions of the same run (cyclictest --json/-q output, jitterdebugger's "
                    "results.json/stdout) used to check counts and fill in what the primary lacks.",
    )
    parser.add_argument("files", type=input_path, nargs="+", metavar="FILE",
                        help="input files (a jitterdebugger -o directory too)")
    parser.add_argument("-o", "--output", type=output_path, required=True, metavar="DATASET",
                        help="dataset file to write (.parquet)")
    parser.add_argument("--format", choices=(*IMPORT_FORMATS, *TRACE_FORMATS),
                        help="format of the first FILE (default: detected)")
    parser.add_argument("--force", action="store_true", help="overwrite the output")
    parser.add_argument("--onto", type=input_path, metavar="DATASET",
                        help="FILE is turbostat interval output: write a copy of DATASET with it attached as a "
                             "timeline joined by wall-clock time; or FILE is kernel trace text (a raw ftrace "
                             "'trace' file, 'trace-cmd report' output) recorded with the mono clock: write the "
                             "directory -o OUT, a copy of DATASET with the trace as its events table")
    parser.add_argument("--turbostat-start", type=number(min=0, max=1e11, unit="s"), metavar="EPOCH_SECONDS",
                        help="with --onto: wall-clock time the first turbostat interval began (needed when "
                             "turbostat ran without --show Time_Of_Day_Seconds)")
    parser.add_argument("--turbostat-interval", type=duration(max=86_400), metavar="DURATION",
                        help=f"with --onto: turbostat's --interval, {DURATION_HELP} (default: from its time "
                             "column, else 5 s)")
    parser.add_argument("--as", dest="as_kind", choices=("poll",), metavar="poll",
                        help="oslat output (text or --json), or rtla osnoise top / hwnoise / osnoise hist text: "
                             "import it as a busy-poll dataset (kind poll, the directory -o OUT) for 'summary' and "
                             "'report' to read as noise; without, oslat is a latency histogram")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (the exit status says)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..io import import_to_dataset
    if args.onto is not None:
        return _attach_trace(args) if _is_trace(args) else _attach_timeline(args)
    if _is_trace(args):
        raise ImportFormatError(f"{args.files[0]}: kernel trace text is not latency data; attach it to a capture "
                                "of the same run with 'jitterscope import TRACE --onto DATASET -o OUT'")
    if args.as_kind == "poll":
        return _import_poll(args)
    if args.turbostat_start is not None or args.turbostat_interval is not None:
        usage_error("jitterscope import", "--turbostat-start and --turbostat-interval need --onto DATASET "
                    "(they place a turbostat timeline on a dataset's wake-ups)")
    # streamed: read a chunk at a time, written row group by row group (memory bounded whatever the file's size)
    imported = import_to_dataset(args.files, args.output, fmt=args.format, overwrite=args.force)
    path, metadata = imported.path, imported.metadata
    source = metadata.source or {}
    if args.json:
        print(json.dumps(jsonable({"path": str(path), "kind": metadata.kind, "rows": imported.rows,
                                   "threads": len(metadata.threads), "source": source}), indent=1))
        return 0
    if args.quiet:
        return 0
    print(f"{path}: {metadata.kind} dataset from {source.get('format')}, {imported.rows} rows, "
          f"{len(metadata.threads)} thread(s)")
    for column, how in (source.get("reconstructed") or {}).items():
        print(f"  reconstructed {column}: {how}")
    for note in source.get("notes") or []:
        print(f"  note: {note}")
    return 0


def _is_trace(args: argparse.Namespace) -> bool:
    from ..io import sniff_trace
    if args.format in TRACE_FORMATS:
        return True
    if args.format is not None or len(args.files) != 1:
        return False
    if not os.path.isfile(args.files[0]):
        return False  # missing, a directory, a device, a FIFO (whose open would wait): the importer says so
    try:
        with open(args.files[0], "rb") as handle:
            return sniff_trace(handle.read(64 * 1024)) is not None
    except OSError:
        return False  # the importer says what is wrong with the file


def _attach_trace(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset, write_dataset, write_trace_events
    from ..io import check_alignment, read_trace_text, with_source
    if len(args.files) != 1:
        raise ImportFormatError("--onto takes exactly one trace file")
    dataset = open_dataset(args.onto)
    if dataset.is_histogram:
        raise ImportFormatError(f"{args.onto}: a histogram dataset has no wake-up times to attach a trace to")
    events = read_trace_text(args.files[0], args.format)
    table = dataset.read()
    expected, actual = table.column("expected_ns").to_numpy(), table.column("actual_ns").to_numpy()
    note = check_alignment(events, (int(expected.min()), int(actual.max())), where=args.files[0], onto=args.onto)
    events = with_source(events, {"onto": str(args.onto), "alignment": note})
    from pathlib import Path
    out = Path(args.output)
    if out.exists() and not args.force:
        raise ImportFormatError(f"{out}: already exists; choose another name or pass --force")
    out.mkdir(parents=True, exist_ok=True)
    write_dataset(table, dataset.metadata, out / "part-00000.parquet", overwrite=args.force)
    path = write_trace_events(events, out, overwrite=args.force)
    print(f"{out}: {args.onto} with the {events.info['source']['format']} trace of {args.files[0]} attached as "
          f"{path.relative_to(out)} ({events.num_rows} events, CPUs {list(events.cpus)}, "
          f"{events.resolution_ns} ns resolution); {note}")
    unparsed = events.info["source"].get("unparsed_lines")
    if unparsed:
        print(f"  note: {unparsed} line(s) were not trace events and were skipped")
    return 0


def _attach_timeline(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset, write_dataset
    from ..io import read_timeline
    from ..power import decode_timeline, join_timeline, overlap_note
    if len(args.files) != 1 or args.format not in (None, "turbostat"):
        raise ImportFormatError("--onto takes exactly one turbostat output file (and no --format other than turbostat)")
    timeline = read_timeline(args.files[0], start_s=args.turbostat_start, interval_s=args.turbostat_interval)
    dataset = open_dataset(args.onto)
    if dataset.is_histogram:
        raise ImportFormatError(f"{args.onto}: a histogram dataset has no wake-up times to join a timeline with; "
                                "attach it to a dataset with per-wake-up rows")
    table = dataset.read()
    metadata = dataset.metadata.with_changes(timeline=timeline)
    decoded = decode_timeline(metadata)
    assert decoded is not None
    join = join_timeline(table.column("actual_ns").to_numpy(), table.column("cpu").to_numpy(), metadata, decoded)
    note = overlap_note(join, decoded)
    path = write_dataset(table, metadata, args.output, overwrite=args.force, inputs=[*args.files, args.onto])
    print(f"{path}: {args.onto} with the turbostat timeline of {timeline['file']} attached "
          f"({decoded.intervals} interval(s) of {decoded.interval_s:g} s, CPUs {timeline['cpus']}, "
          f"times from {timeline['time_from']}); {int(join.inside.sum())} of {table.num_rows} wake-ups inside")
    for line in [*timeline["notes"], *([note] if note else [])]:
        print(f"  note: {line}")
    return 0


def _import_poll(args: argparse.Namespace) -> int:
    """``--as poll``: one oslat or rtla osnoise output file as a poll dataset directory."""
    from ..io import import_as_poll
    if len(args.files) != 1 or args.format not in (None, "oslat", "oslat-json"):
        usage_error("jitterscope import", "--as poll takes one oslat (text or --json) or rtla osnoise top/hist "
                                          "output file")
    path, tool = import_as_poll(args.files[0], args.output, overwrite=args.force)
    what = f"{tool} output (no per-interruption rows: {tool} keeps none)"
    if args.json:
        print(json.dumps({"path": str(path), "kind": "poll", "rows": 0}, indent=1))
    elif not args.quiet:
        print(f"{path}: poll dataset from {what}")
    return 0
