"""``jitterscope info``: metadata, environment, counters and row counts of a dataset."""

from __future__ import annotations

import argparse
import json

from .options import input_path, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("info", help="metadata, environment, counters and row counts of a dataset")
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--json", action="store_true", help="print the decoded metadata as JSON")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..summary import format_info
    dataset = open_dataset(args.dataset)
    if args.json:
        kv = dataset.metadata.to_kv()
        document = {key.decode(): json.loads(value) for key, value in kv.items()}
        document["rows"] = dataset.num_rows
        document["files"] = [str(f) for f in dataset.files]
        print_json(document, indent=2, sort_keys=True)
    else:
        print(format_info(dataset))
    return 0
