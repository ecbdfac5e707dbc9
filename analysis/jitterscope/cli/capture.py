"""``jitterscope capture``: run the native binary with the same options."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "capture", add_help=False,
        help="record wake-up latency and counters (runs jitterscope-capture; same options)",
    )
    parser.set_defaults(func=_run, accepts_extra=True)


def _run(args: argparse.Namespace) -> int:
    from ..io import run_capture
    return run_capture(getattr(args, "extra", []))
