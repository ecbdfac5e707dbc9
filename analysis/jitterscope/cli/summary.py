"""``jitterscope summary``: cyclictest's line per thread, then the statistics table (or JSON)."""

from __future__ import annotations

import argparse
import json
import sys

from .options import number, usage_error

TOLERANCE_US = 1.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "summary", help="latency statistics per thread and overall (cyclictest line, percentile table)",
    )
    parser.add_argument("dataset", help="dataset file or directory")
    parser.add_argument("--json", action="store_true", help="print the same numbers as JSON")
    parser.add_argument("--interval-stats", type=number(integer=True, min=1), metavar="N",
                        help="also print periodic_timer's period statistics every N periods")
    parser.add_argument("--tolerance", type=number(min=0, max=1e9, unit="µs"), default=TOLERANCE_US, metavar="US",
                        help="period error tolerance for --interval-stats in µs (default 1)")
    parser.add_argument("--top", type=number(integer=True, min=1, max=100_000), default=20, metavar="K",
                        help="spikes kept per thread (default 20)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..summary import format_cyclictest_line, format_intervals, format_summary_table, summarize
    if args.interval_stats is None and args.tolerance != TOLERANCE_US:
        usage_error("jitterscope summary", "--tolerance applies to --interval-stats N; give both or neither")
    dataset = open_dataset(args.dataset)
    summary = summarize(
        dataset, progress=not args.quiet and not args.json and sys.stderr.isatty(), top_k=args.top,
        interval_block=args.interval_stats, tolerance_ns=round(args.tolerance * 1000),
    )
    if args.json:
        json.dump(summary.to_json(), sys.stdout, indent=2)
        print()
        return 0
    for thread in summary.threads:
        if thread.cyclictest is not None:
            print(format_cyclictest_line(thread))
    print()
    print(format_summary_table(summary))
    if summary.intervals is not None:
        print()
        print(format_intervals(summary.intervals, {t.thread: t.cpu for t in summary.threads}))
    return 0

