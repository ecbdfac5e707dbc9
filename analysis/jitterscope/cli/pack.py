"""``jitterscope pack``: one sorted, zstd+delta, checksummed Parquet file for sharing."""

from __future__ import annotations

import argparse
import json

from ..format import jsonable
from .options import input_path, output_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("pack", help="write a dataset as one sorted, compressed, checksummed file")
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("-o", "--output", type=output_path, required=True, metavar="FILE",
                        help="packed file to write (.parquet)")
    parser.add_argument("--anonymize", action="store_true",
                        help="pass the metadata through an allowlist: hostnames, addresses, paths, serials and "
                             "user names hashed, the kernel command line cut to its latency parameters, pids and "
                             "tids nulled, unlisted strings dropped (README, 'Sharing a dataset')")
    parser.add_argument("--force", action="store_true", help="overwrite the output")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (the exit status says)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..io import pack_dataset
    result = pack_dataset(args.dataset, args.output, anonymize=args.anonymize, overwrite=args.force)
    if args.json:
        print(json.dumps(jsonable(result.to_json()), indent=1))
        return 0
    if args.quiet:
        return 0
    print(f"{result.path}: {result.rows} rows, {result.bytes} bytes, {result.bytes_per_wakeup:.2f} bytes per "
          f"wake-up ({result.wakeups} wake-ups), sha256 {result.sha256}")
    print(f"  {'column':<12} {'bytes':>10} {'bytes/wake-up':>14}  encoding")
    for name, size in result.column_bytes.items():
        print(f"  {name:<12} {size:>10} {size / max(result.wakeups, 1):>14.3f}  {result.encodings[name]}")
    if args.anonymize:
        changed = ", ".join(result.anonymized) or "nothing (no identifying values found)"
        print(f"  anonymized: {changed}")
    from ..dataset import trace_events_path, trace_part_paths
    if trace_part_paths(args.dataset):  # the packed file holds samples only: say what stays behind
        print(f"  note: the kernel trace {trace_events_path(args.dataset)}/ is not in the packed file; "
              "keep it with the pack or share the dataset directory")
    return 0
