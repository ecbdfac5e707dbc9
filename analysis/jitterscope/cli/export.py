"""``jitterscope export``: a dataset as CSV, cyclictest-style JSON or an HdrHistogram percentile file."""

from __future__ import annotations

import argparse
import json

from ..format import jsonable
from ..io import EXPORT_FORMATS  # light: formats/names.py
from .options import input_path, number, output_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="write a dataset as csv, rt-tests-json or hgrm for other tools")
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--format", required=True, choices=EXPORT_FORMATS, help="output format")
    parser.add_argument("-o", "--output", type=output_path, required=True, metavar="FILE", help="file to write")
    parser.add_argument("--thread", type=number(integer=True, min=0, max=2**31 - 1), metavar="N",
                        help="only thread N (hgrm merges all threads otherwise)")
    parser.add_argument("--force", action="store_true", help="overwrite the output")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (the exit status says)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
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
