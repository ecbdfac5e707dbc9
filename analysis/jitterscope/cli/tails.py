"""``jitterscope tails DATASET [--json]``: peaks-over-threshold fit per thread, assumptions checked."""

from __future__ import annotations

import argparse
import json

from ..errors import AnalysisError
from .gates import add_gate_arguments, evaluate, report, summary_facts, wants_events
from .options import input_path, number


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tails", help="extreme-value fit per thread: exceedance probabilities, return levels, assumptions",
        description="Fit a generalised Pareto tail per thread (threshold by a stated parameter-stability rule), "
                    "give P(latency > x) and the latency exceeded about once per hour/day with profile-likelihood "
                    "intervals, cross-check with block maxima, and check independence and stationarity. On a "
                    "busy-poll dataset (kind poll) the series is each CPU's interruption lengths: P(gap > x) per "
                    "interruption and the gap exceeded about once per hour/day at its rate of interruptions.",
    )
    parser.add_argument("dataset", type=input_path, metavar="DATASET", help="dataset file or directory")
    parser.add_argument("--level-us", type=number(min=0, max=1e12, inclusive=False, unit="µs"), action="append",
                        default=[], metavar="US",
                        help="also give P(latency > US µs); repeatable")
    parser.add_argument("--confidence", type=number(min=0, max=100, inclusive=False, unit="%"), default=90.0,
                        metavar="PCT",
                        help="confidence level of the intervals in percent (default: 90)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    add_gate_arguments(parser, "tails")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..tails import analyze_tails, tails_text
    if not 0 < args.confidence < 100:
        raise AnalysisError(f"--confidence must be between 0 and 100, not {args.confidence}")
    dataset = open_dataset(args.dataset)
    if dataset.metadata.kind == "poll":
        from .pollview import poll_tails
        return poll_tails(dataset, args)
    result = analyze_tails(dataset, levels_ns=tuple(x * 1000 for x in args.level_us),
                           confidence=args.confidence / 100)
    print(json.dumps(result.to_json(), indent=1) if args.json else tails_text(result), end="" if not args.json
          else "\n")
    if not args.fail_if:
        return 0
    # the gates read the observed distribution (one streaming pass), never a fitted extrapolation
    from ..events import find_events
    from ..summary import summarize
    summary = summarize(dataset)
    events = find_events(dataset, summary=summary) if wants_events(args.fail_if) else None
    return report(evaluate(args.fail_if, summary_facts(summary, events)), "tails", args.junit)
