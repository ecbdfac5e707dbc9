"""``jitterscope compare A B [C …] [-o compare.pdf] [--json]``: every run against the first.

``jitterscope compare A1 A2 A3 -- B1 B2 B3`` (or ``A1 A2 A3 --vs B1 B2 B3``): two groups of replicate runs,
judged by their between-run variation (a run is the unit of replication).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import AnalysisError
from .gates import add_gate_arguments, compare_facts, evaluate, report
from .options import UsageError, input_path, number, output_path, seed


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
                    "counts (assumes independent wake-ups), max not judged, rank tests not available.  "
                    "One run per side: a tail change needs more independent episodes of exceedances than chance "
                    "gives and a drifting run's p50/p99 interval is widened by its segments' spread.  "
                    "'compare A1 A2 A3 -- B1 B2 B3' compares two groups of replicate runs by their between-run "
                    "variation (a run is the unit).  Busy-poll datasets (kind poll, not with timer ones): per CPU, "
                    "interruptions per second in all and by size class, CPU lost and the largest interruption, by "
                    "blocks of seconds (one run per side) or by the runs (groups), Bonferroni over the metrics.",
    )
    parser.add_argument("datasets", type=input_path, nargs="+", metavar="DATASET",
                        help="two or more datasets; the first is the baseline (or, with -- or --vs, the "
                             "baseline group's runs)")
    parser.add_argument("--vs", type=input_path, nargs="+", metavar="DATASET", dest="candidates",
                        help="the candidate group's runs (the same as writing them after --): compare the two "
                             "groups by their between-run variation, at least 2 runs each; the headline says "
                             "how many runs each side has")
    parser.add_argument("--sides", metavar="A,B", help="names of the two groups (default: A,B)")
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
    _separator_means_vs(parser)


def _separator_means_vs(parser: argparse.ArgumentParser) -> None:
    """Let ``A1 A2 -- B1 B2`` mean ``A1 A2 --vs B1 B2``: argparse drops a ``--`` before this parser could see it."""
    parse = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):  # type: ignore[no-untyped-def]
        args = list(args) if args is not None else None
        if args and "--" in args:
            args[args.index("--")] = "--vs"
        return parse(args, namespace)

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    opened = [open_dataset(p) for p in [*args.datasets, *(args.candidates or [])]]
    if any(d.metadata.kind == "poll" for d in opened):
        from .pollview import poll_compare
        return poll_compare(opened, args)
    if args.candidates:
        return _run_groups(args)
    if args.sides:
        raise UsageError("--sides names the two groups of 'compare A1 A2 -- B1 B2'; there are no groups here")
    from ..compare import compare_runs, comparison_text
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
        from ..compare import write_compare_report  # matplotlib: only when a PDF is asked for
        info = write_compare_report(comparison, args.output, overwrite=args.force)
        print(f"{info.path}: {info.pages} pages", file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_json(), indent=1, allow_nan=False))
    else:
        print(comparison_text(comparison))
    if not args.fail_if:
        return 0
    return report(evaluate(args.fail_if, compare_facts(comparison)), "compare", args.junit)


def _run_groups(args: argparse.Namespace) -> int:
    from ..compare import compare_groups, group_text
    from ..dataset import check_output, open_dataset
    if len(args.datasets) < 2 or len(args.candidates) < 2:
        raise UsageError(f"a group comparison needs at least 2 runs per side ({len(args.datasets)} before --, "
                         f"{len(args.candidates)} after); with one run per side use 'compare A B'")
    if not 0 < args.confidence < 100 or args.noise < 0:
        raise AnalysisError("need 0 < --confidence < 100 and --noise >= 0")
    sides = tuple(args.sides.split(",")) if args.sides else ("A", "B")
    if len(sides) != 2 or not all(sides):
        raise UsageError(f"--sides needs two names separated by a comma, got {args.sides!r}")
    paths = [*args.datasets, *args.candidates]
    if args.output:
        check_output(args.output, inputs=paths, overwrite=args.force, error=AnalysisError)
    labels = args.labels.split(",") if args.labels else None
    comparison = compare_groups([open_dataset(p) for p in args.datasets], [open_dataset(p) for p in args.candidates],
                                labels=labels, sides=(sides[0], sides[1]), noise=args.noise / 100,
                                confidence=args.confidence / 100, seed=args.seed)
    if args.output:
        from ..compare import write_group_report  # matplotlib: only when a PDF is asked for
        info = write_group_report(comparison, args.output, overwrite=args.force)
        print(f"{info.path}: {info.pages} pages", file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_json(), indent=1, allow_nan=False))
    else:
        print(group_text(comparison))
    if not args.fail_if:
        return 0
    return report(evaluate(args.fail_if, compare_facts(comparison)), "compare", args.junit)
