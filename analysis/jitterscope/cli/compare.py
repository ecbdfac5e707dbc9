"""``jitterscope compare A B [C …] [-o compare.pdf] [--json]``: every run against the first."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import AnalysisError
from .gates import add_gate_arguments, compare_facts, evaluate, report
from .options import input_path, number, output_path, seed


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare runs: quantile changes with intervals, verdicts, tests, environment diff",
        description="Compare two or more datasets against the first: p50 … max with block-bootstrap intervals, "
                    "a headline per pair, a verdict per metric (improved / regressed / within noise / inconclusive), "
                    "rank and distribution tests, "
                    "exceedance-rate ratios and every difference in environment and settings. Each dataset is "
                    "read once in batches (memory bounded whatever its size; a Poisson block bootstrap into "
                    "replicate histograms); the methods table says what is exact and what is within a stated "
                    "bound. When any dataset "
                    "is a histogram (kind histogram), every run is compared as bins: multinomial bootstrap of the "
                    "counts (assumes independent wake-ups), max not judged, rank tests not available.",
    )
    parser.add_argument("datasets", type=input_path, nargs="+", metavar="DATASET",
                        help="two or more datasets; the first is the baseline")
    parser.add_argument("-o", "--output", type=output_path, metavar="PDF", help="also write the comparison as a PDF")
    parser.add_argument("--force", action="store_true", help="replace an existing OUTPUT")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    parser.add_argument("--labels", metavar="A,B,…", help="names of the runs (default: file names)")
    parser.add_argument("--noise", type=number(min=0, max=1000, unit="%"), default=5.0, metavar="PCT",
                        help="noise threshold in percent (default: 5)")
    parser.add_argument("--confidence", type=number(min=0, max=100, inclusive=False, unit="%"), default=95.0,
                        metavar="PCT",
                        help="confidence level of the intervals in percent (default: 95)")
    parser.add_argument("--resamples", type=number(integer=True, min=20, max=100_000), default=1000, metavar="B",
                        help="bootstrap resamples per run (default: 1000)")
    parser.add_argument("--seed", type=seed(), default=0, help="seed of the resampling (default: 0)")
    add_gate_arguments(parser, "compare")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..compare import compare_runs, comparison_text, write_compare_report
    from ..dataset import check_output, open_dataset
    if len(args.datasets) < 2:
        raise AnalysisError("compare needs at least two datasets (the first is the baseline)")
    if not 0 < args.confidence < 100 or args.noise < 0 or args.resamples < 20:
        raise AnalysisError("need 0 < --confidence < 100, --noise >= 0 and --resamples >= 20")
    if args.output:  # before the work: a refused output should not cost a comparison
        check_output(args.output, inputs=args.datasets, overwrite=args.force, error=AnalysisError)
    labels = args.labels.split(",") if args.labels else None
    comparison = compare_runs([open_dataset(p) for p in args.datasets], labels=labels, noise=args.noise / 100,
                              confidence=args.confidence / 100, n_boot=args.resamples, seed=args.seed)
    if args.output:
        info = write_compare_report(comparison, args.output, overwrite=args.force)
        print(f"{info.path}: {info.pages} pages", file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_json(), indent=1, allow_nan=False))
    else:
        print(comparison_text(comparison))
    if not args.fail_if:
        return 0
    return report(evaluate(args.fail_if, compare_facts(comparison)), "compare", args.junit)
