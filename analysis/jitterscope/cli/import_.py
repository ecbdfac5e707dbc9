"""``jitterscope import``: other tools' output into a dataset."""

from __future__ import annotations

import argparse

from ..dataset import write_dataset
from ..importers import FORMATS, import_files


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import", help="read cyclictest/jitterdebugger/oslat/rtla output into a dataset",
        description="Import the files of one run: a primary file (cyclictest -v, samples.raw, a histogram...) "
                    "and companions of the same run (cyclictest --json/-q output, jitterdebugger's "
                    "results.json/stdout) used to check counts and fill in what the primary lacks.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="input files (a jitterdebugger -o directory too)")
    parser.add_argument("-o", "--output", required=True, metavar="DATASET", help="dataset file to write (.parquet)")
    parser.add_argument("--format", choices=FORMATS, help="format of the first FILE (default: detected)")
    parser.add_argument("--force", action="store_true", help="overwrite the output")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    table, metadata = import_files(args.files, fmt=args.format)
    path = write_dataset(table, metadata, args.output, overwrite=args.force)
    source = metadata.source or {}
    print(f"{path}: {metadata.kind} dataset from {source.get('format')}, {table.num_rows} rows, "
          f"{len(metadata.threads)} thread(s)")
    for column, how in (source.get("reconstructed") or {}).items():
        print(f"  reconstructed {column}: {how}")
    for note in source.get("notes") or []:
        print(f"  note: {note}")
    return 0
