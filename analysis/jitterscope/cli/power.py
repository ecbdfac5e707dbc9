"""``jitterscope power`` (alias ``correlate``): which spikes frequency transitions, SMIs or idle depth caused."""

from __future__ import annotations

import argparse
import sys

from ..errors import AnalysisError
from ..power import DEFAULT_C0_EDGES, DEFAULT_MIN_DWELL, DEFAULT_THRESHOLD  # light: power/defaults.py
from .options import input_path, number, print_json, seed


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "power", aliases=["correlate"],
        help="power management: attribute latency spikes to frequency transitions, SMIs and idle depth",
        description="Condition wake-up latency on frequency transitions, SMIs and C0 residency (from the "
                    "APERF/MPERF/SMI counters), test each with risk ratios, rank tests and Holm's correction, "
                    "and say in plain words what caused the spikes.",
    )
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--threshold-us", type=number(min=0, max=1e12, inclusive=False, unit="µs"), action="append",
                        metavar="US",
                        help="spike threshold in µs (repeatable; the first is used in the verdict; "
                             "default min(p99, median + 10 robust SD))")
    parser.add_argument("--window", type=number(integer=True, min=0, max=10_000), default=2,
                        help="± wake-ups around a transition (default 2)")
    parser.add_argument("--alpha", type=number(min=0, max=1, inclusive=False), default=0.01,
                        help="family-wise error rate (default 0.01)")
    parser.add_argument("--rel-threshold", type=number(min=0, max=10, inclusive=False), default=DEFAULT_THRESHOLD,
                        help=f"relative step that makes a transition (default {DEFAULT_THRESHOLD})")
    parser.add_argument("--min-dwell", type=number(integer=True, min=1, max=10**9), default=DEFAULT_MIN_DWELL,
                        help=f"wake-ups a frequency level must last (default {DEFAULT_MIN_DWELL})")
    parser.add_argument("--c0-edges", default=",".join(f"{e:g}" for e in DEFAULT_C0_EDGES),
                        help="C0 residency bin edges as fractions (default 0,0.05,0.5,1)")
    parser.add_argument("--surrogates", type=number(integer=True, min=0, max=100_000), default=200,
                        help="circular-shift surrogates (default 200)")
    parser.add_argument("--seed", type=seed(), default=0, help="seed of the surrogates (default 0)")
    parser.add_argument("--thread", type=number(integer=True, min=0, max=2**31 - 1), action="append", metavar="N",
                        help="analyse only thread N (repeatable; default all; less memory on long captures)")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..power import correlate_dataset, correlation_text
    try:
        edges = tuple(float(e) for e in args.c0_edges.split(","))
    except ValueError:
        raise AnalysisError(f"--c0-edges {args.c0_edges!r} is not a comma-separated list of numbers, "
                            "e.g. 0,0.05,0.5,1") from None
    thresholds = None if not args.threshold_us else [t * 1e3 for t in args.threshold_us]
    result, _ = correlate_dataset(
        open_dataset(args.dataset), thresholds_ns=thresholds, window=args.window, alpha=args.alpha,
        relative_threshold=args.rel_threshold, min_dwell=args.min_dwell, c0_edges=edges,
        n_surrogates=args.surrogates, seed=args.seed, threads=args.thread,
    )
    if args.json:
        print_json(result.to_json(), indent=2, ensure_ascii=False, allow_nan=False)
    else:
        sys.stdout.write(correlation_text(result))
    return 0
