"""``jitterscope validate``: exit 0 and "valid: ..." or exit 1 with one reason per line."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("validate", help="check a dataset against the format contract")
    parser.add_argument("dataset", help="dataset file or directory")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import validate_dataset
    result = validate_dataset(args.dataset)
    for note in result.notes:
        print(f"note: {note}")
    if result.valid:
        print(f"valid: {result.path}: {result.kind} dataset, {result.rows} rows, {result.threads} thread(s)")
        return 0
    for problem in result.problems:
        print(f"jitterscope validate: invalid: {problem}", file=sys.stderr)
    return 1
