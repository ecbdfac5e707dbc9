"""``jitterscope validate``: exit 0 and "valid: ..." or exit 1 with one reason per line."""

from __future__ import annotations

import argparse
import json
import sys

from ..format import jsonable
from .options import input_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("validate", help="check a dataset against the format contract")
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (the exit status says)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import validate_dataset
    result = validate_dataset(args.dataset)
    if args.json:
        print(json.dumps(jsonable(result.to_json()), indent=1))
        return 0 if result.valid else 1
    if args.quiet:
        return 0 if result.valid else 1
    for note in result.notes:
        print(f"note: {note}")
    if result.valid:
        print(f"valid: {result.path}: {result.kind} dataset, {result.rows} rows, {result.threads} thread(s)")
        return 0
    for problem in result.problems:
        print(f"jitterscope validate: invalid: {problem}", file=sys.stderr)
    return 1
