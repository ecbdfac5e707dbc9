"""``jitterscope events DATASET [--threshold US] [--json]``: latency spike events with their causes."""

from __future__ import annotations

import argparse
import json
import math

from ..errors import JitterscopeError
from ..events import MAX_DEFAULT_THRESHOLD_NS, MIN_EXCESS_NS, ROBUST_SD  # light: events/defaults.py
from .gates import add_gate_arguments, evaluate, events_facts, report
from .options import input_path, number


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "events", help="latency spike events: a stall across CPUs, its catch-up wake-ups and missed periods as one",
        description="Find latency spike events: a run of late wake-ups of one thread with the catch-up wake-ups "
                    "and missed periods after it, joined across threads when they overlap in time. Per event: "
                    "start (UTC and relative), duration, CPUs, wake-ups, missed periods, peak latency and the "
                    "causes the counters (SMI, frequency transition, idle exit) or a turbostat timeline support.",
    )
    parser.add_argument("dataset", type=input_path, metavar="DATASET", help="dataset file or directory")
    parser.add_argument("--threshold", type=number(min=0, inclusive=False, max=1e9, unit="µs"), metavar="US",
                        help=f"a wake-up later than US µs is late (default: median + {ROBUST_SD:g} robust SD, at "
                             f"least median + {MIN_EXCESS_NS / 1000:g} µs, at most "
                             f"{MAX_DEFAULT_THRESHOLD_NS / 1000:g} µs)")
    parser.add_argument("--top", type=number(integer=True, min=1, max=1_000_000), default=20, metavar="K",
                        help="events listed in the text (default 20)")
    parser.add_argument("--json", action="store_true", help="print every event as JSON instead of text")
    add_gate_arguments(parser, "events")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..events import find_events, format_events
    if args.threshold is not None and (not math.isfinite(args.threshold) or args.threshold <= 0):
        raise JitterscopeError(f"--threshold must be a positive number of µs, not {args.threshold:g}")
    if args.top < 1:
        raise JitterscopeError("--top K needs K >= 1")
    dataset = open_dataset(args.dataset)
    if dataset.metadata.kind == "poll":
        from .pollview import poll_events, refuse_timer_options
        refuse_timer_options(args, "events", {"fail_if": []})
        return poll_events(dataset, args)
    events = find_events(dataset,
                         threshold_ns=None if args.threshold is None else args.threshold * 1000)
    if args.json:
        print(json.dumps(events.to_json(), indent=1, allow_nan=False))
    else:
        print(format_events(events, top=args.top))
    if not args.fail_if:
        return 0
    return report(evaluate(args.fail_if, events_facts(events)), "events", args.junit)
