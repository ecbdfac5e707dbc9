"""``jitterscope report DATASET -o report.pdf [--figures DIR [--figure-width column|page]] [-q]``."""

from __future__ import annotations

import argparse
import sys

from ..render import FIGURE_WIDTHS_IN
from .options import input_path, number, output_path, usage_error


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="write a PDF report (provenance, summary, distributions, latency over time, spikes)",
        description="Write the PDF report of a dataset; with --figures, also every figure "
                    "(PDF/SVG/PNG) and table (CSV/JSON/LaTeX) for papers.",
    )
    parser.add_argument("dataset", type=input_path, metavar="DATASET", help="dataset file or directory")
    parser.add_argument("-o", "--output", type=output_path, default="report.pdf",
                        help="PDF to write (default: report.pdf)")
    parser.add_argument("--figures", type=output_path, metavar="DIR", help="also write each figure and table into DIR")
    parser.add_argument("--figure-width", choices=tuple(FIGURE_WIDTHS_IN), metavar="column|page",
                        help="with --figures: refit each figure to a paper's column ("
                             f"{FIGURE_WIDTHS_IN['column']:g} in) or page ({FIGURE_WIDTHS_IN['page']:g} in) width "
                             "with 8-9 pt text; figures with panels side by side always get the page width "
                             "(default: the report's A4 page)")
    parser.add_argument("--top", type=number(integer=True, min=1, max=1000), default=20, metavar="K",
                        help="spikes in the catalogue (default: 20)")
    parser.add_argument("--sections", metavar="NAME,...",
                        help="only these report sections, comma-separated (default: all; an unknown name lists them)")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing OUTPUT (and files of the same name in --figures DIR)")
    parser.add_argument("--methods", action="store_true",
                        help="print the methods paragraph of the dataset (tool and version, system, timer, "
                             "interval, priority, duration, counters and tracing, latency definition, statistics, "
                             "dataset hash) and write nothing; --figures DIR also writes it as methods.md/.tex")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars, print only the path")
    parser.set_defaults(func=_run, report_parser=parser)


def _run(args: argparse.Namespace) -> int:
    if args.figure_width and not args.figures:
        usage_error("jitterscope report", "--figure-width needs --figures DIR (the folder the refitted figures go to)")
    if args.methods:
        from ..report import dataset_methods

        print(dataset_methods(args.dataset))
        return 0
    from ..report import write_report
    sections = [name.strip() for name in args.sections.split(",") if name.strip()] if args.sections else None
    info = write_report(args.dataset, args.output, figures_dir=args.figures, top_k=args.top,
                        progress=not args.quiet and sys.stderr.isatty(), sections=sections,
                        overwrite=args.force, figure_width=args.figure_width)
    print(info.path)
    if not args.quiet:
        extra = f", {len(info.figure_files)} files in {args.figures}" if args.figures else ""
        print(f"{info.pages} pages{extra}", file=sys.stderr)
    return 0
