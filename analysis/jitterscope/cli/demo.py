"""``jitterscope demo``: what ``make demo`` runs.

Captures 10 s on every CPU at 1 kHz into a fresh ``out/demo-YYYYmmdd-HHMMSS``
(falling back to ``--policy other``, with a note, when SCHED_FIFO is refused),
prints the per-thread summary and the dataset path.
"""

from __future__ import annotations

import argparse
import sys

from .options import DURATION_HELP, duration, number, output_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="capture 10 s on all CPUs at 1 kHz, summarise and report")
    parser.add_argument("-D", "--duration", type=duration(max=86_400), default=10.0, metavar="DURATION",
                        help=f"capture duration: {DURATION_HELP} (default 10 s, at most 1d)")
    # the spelling before durations were made one option everywhere (issue 15): still accepted, not advertised
    parser.add_argument("--seconds", dest="duration", type=duration(max=86_400), help=argparse.SUPPRESS)
    parser.add_argument("--hz", type=number(min=0, max=1e6, inclusive=False, unit="Hz"), default=1000.0,
                        help="wake-ups per second per CPU (default 1000)")
    parser.add_argument("--out", type=output_path, default="out", metavar="DIR",
                        help="parent of the demo-* directory (default ./out)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no live status while capturing")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..io import capture_dataset, demo_output_dir
    from ..report import write_report
    from ..summary import format_cyclictest_line, format_summary_table, summarize
    output = demo_output_dir(args.out)
    print(f"capturing {args.duration:g} s at {args.hz:g} Hz on every CPU into {output}", file=sys.stderr)
    result = capture_dataset(output, seconds=args.duration, hz=args.hz, quiet=args.quiet)
    if result.note:
        print(f"note: real-time scheduling was refused ({result.note.removeprefix('jitterscope-capture: ')}); "
              "captured with --policy other, so the latencies are not a real-time measurement", file=sys.stderr)
    summary = summarize(open_dataset(result.output))
    for thread in summary.threads:
        print(format_cyclictest_line(thread))
    print()
    print(format_summary_table(summary))
    print()
    print(f"dataset: {result.output}")
    report = write_report(result.output, result.output.parent / f"{result.output.name}-report.pdf",
                          progress=not args.quiet and sys.stderr.isatty())
    print(f"report: {report.path}")
    return 0
