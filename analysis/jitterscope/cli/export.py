"""``jitterscope export``: a dataset as CSV, cyclictest-style JSON or an HdrHistogram percentile file; one event's
window of the kernel trace as Trace Event Format JSON (``--event N --format perfetto``)."""

from __future__ import annotations

import argparse
import json

from ..format import jsonable
from ..io import EVENT_EXPORT_FORMATS, EXPORT_FORMATS  # light: formats/names.py
from .options import UsageError, input_path, number, output_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="write a dataset as csv, rt-tests-json or hgrm for other tools, or one event as perfetto",
        description="Write a dataset for other tools (csv, rt-tests-json, hgrm), or one latency event's window of "
                    "the kernel trace as Trace Event Format JSON for ui.perfetto.dev and chrome://tracing "
                    "(--event N --format perfetto: every measured CPU a track of tasks, IRQs, softirqs and NMIs; "
                    "the wake-ups as instants with their latency; counters).")
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--format", required=True, choices=EXPORT_FORMATS + EVENT_EXPORT_FORMATS,
                        help="output format (perfetto: one event, with --event)")
    parser.add_argument("--event", type=number(integer=True, min=1, max=2**31 - 1), metavar="N",
                        help="perfetto: the event numbered N by 'jitterscope events' (1: the largest peak)")
    parser.add_argument("--threshold", type=number(min=0, inclusive=False, max=1e9, unit="µs"), metavar="US",
                        help="perfetto: the events' threshold, as 'jitterscope events --threshold' (default: its own)")
    parser.add_argument("--margin", type=number(min=0, max=1e7, unit="µs"), default=1000.0, metavar="US",
                        help="perfetto: time kept before the event's first late wake-up and after its last "
                             "(default 1000 µs)")
    parser.add_argument("-o", "--output", type=output_path, required=True, metavar="FILE", help="file to write")
    parser.add_argument("--thread", type=number(integer=True, min=0, max=2**31 - 1), metavar="N",
                        help="only thread N (hgrm merges all threads otherwise)")
    parser.add_argument("--force", action="store_true", help="overwrite the output")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (the exit status says)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.format in EVENT_EXPORT_FORMATS:
        return _run_event(args)
    if args.event is not None or args.threshold is not None:
        raise UsageError(f"--event and --threshold belong to --format perfetto, not {args.format}")
    from ..io import export_dataset
    result = export_dataset(args.dataset, args.format, args.output, thread=args.thread, overwrite=args.force)
    if args.json:
        print(json.dumps(jsonable(result.to_json()), indent=1))
        return 0
    if args.quiet:
        return 0
    print(f"{result.path}: {result.format}, {result.rows} rows/wake-ups, threads "
          f"{', '.join(map(str, result.threads))}")
    for note in result.notes:
        print(f"  note: {note}")
    return 0


def _run_event(args: argparse.Namespace) -> int:
    if args.event is None:
        raise UsageError(f"--format {args.format} writes one event: give --event N (see 'jitterscope events')")
    if args.thread is not None:
        raise UsageError(f"--thread does not apply to --format {args.format}: the event's window shows every CPU")
    from ..io import export_event_perfetto
    result = export_event_perfetto(args.dataset, args.output, args.event,
                                   threshold_ns=None if args.threshold is None else args.threshold * 1000,
                                   margin_ns=int(args.margin * 1000), overwrite=args.force)
    if args.json:
        print(json.dumps(jsonable(result.to_json()), indent=1))
    elif not args.quiet:
        print(f"{result.path}: perfetto (Trace Event Format), event {result.event} (peak "
              f"{result.peak_latency_ns / 1000:,.1f} µs), window {result.start_ns / 1e9:.6f} to "
              f"{result.end_ns / 1e9:.6f} s (CLOCK_MONOTONIC), CPUs {', '.join(map(str, result.cpus))}: "
              f"{result.slices:,} slices, {result.instants:,} instants, {result.counters:,} counter values; "
              "open it in ui.perfetto.dev or chrome://tracing")
        for note in result.notes:
            print(f"  note: {note}")
    return 0
