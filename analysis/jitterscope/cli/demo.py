"""``jitterscope demo``: what ``make demo`` runs."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="capture 10 s on all CPUs at 1 kHz, summarise and report")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise NotImplementedError
