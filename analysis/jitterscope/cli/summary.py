"""``jitterscope summary``: cyclictest's line per thread, then the statistics table (or JSON)."""

from __future__ import annotations

import argparse
import sys

from .gates import add_gate_arguments, evaluate, report, summary_facts, wants_events
from .options import input_path, number, print_json, usage_error

TOLERANCE_US = 1.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "summary", help="latency statistics per thread and overall (cyclictest line, percentile table)",
    )
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--json", action="store_true", help="print the same numbers as JSON")
    parser.add_argument("--interval-stats", type=number(integer=True, min=1), metavar="N",
                        help="also print periodic_timer's period statistics every N periods")
    parser.add_argument("--tolerance", type=number(min=0, max=1e9, unit="µs"), default=TOLERANCE_US, metavar="US",
                        help="period error tolerance for --interval-stats in µs (default 1)")
    parser.add_argument("--top", type=number(integer=True, min=1, max=100_000), default=20, metavar="K",
                        help="spikes kept per thread (default 20)")
    parser.add_argument("--trace", action="store_true",
                        help="also explain every spike from the dataset's kernel trace (capture --trace, or "
                             "import --onto): IRQs, softirqs, threads, NMIs, with risk ratios")
    parser.add_argument("--spike-us", type=number(min=0, inclusive=False, unit="µs"), metavar="US",
                        help="with --trace: a spike is a wake-up later than US µs (default: median + 10 IQR "
                             "of the latencies, as spectrum uses)")
    parser.add_argument("--worst", type=number(integer=True, min=0, max=1_000_000), default=10, metavar="N",
                        help="with --trace: spikes listed in the text (default 10; the JSON has them all)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_gate_arguments(parser, "summary")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..summary import format_cyclictest_line, format_intervals, format_summary_table, summarize
    if args.interval_stats is None and args.tolerance != TOLERANCE_US:
        usage_error("jitterscope summary", "--tolerance applies to --interval-stats N; give both or neither")
    if (args.spike_us is not None or args.worst != 10) and not args.trace:
        usage_error("jitterscope summary", "--spike-us and --worst go with --trace")
    dataset = open_dataset(args.dataset)
    if dataset.metadata.kind == "poll":
        from .pollview import poll_summary, refuse_timer_options
        refuse_timer_options(args, "summary", {"trace": False, "fail_if": [], "top": 20})
        return poll_summary(dataset, args)
    summary = summarize(
        dataset, progress=not args.quiet and not args.json and sys.stderr.isatty(), top_k=args.top,
        interval_block=args.interval_stats, tolerance_ns=round(args.tolerance * 1000),
    )
    attribution = _attribution(dataset, summary, args) if args.trace else None
    if args.json:
        document = summary.to_json()
        if attribution is not None:
            from ..format import jsonable
            document["trace"] = jsonable(attribution.to_json())
        print_json(document, indent=2)
        return _gates(args, dataset, summary)
    for thread in summary.threads:
        if thread.cyclictest is not None:
            print(format_cyclictest_line(thread))
    print()
    print(format_summary_table(summary))
    if summary.intervals is not None:
        print()
        print(format_intervals(summary.intervals, {t.thread: t.cpu for t in summary.threads}))
    if attribution is not None:
        from ..derive import trace_attribution_text
        print()
        print(trace_attribution_text(attribution, worst=max(args.worst, 0)))
    return _gates(args, dataset, summary)


def _gates(args: argparse.Namespace, dataset: object, summary: object) -> int:
    """--fail-if: evaluate on the overall row (and on the events when a condition counts them)."""
    if not args.fail_if:
        return 0
    from ..events import find_events
    events = find_events(dataset, summary=summary) if wants_events(args.fail_if) else None  # type: ignore[arg-type]
    return report(evaluate(args.fail_if, summary_facts(summary, events)), "summary", args.junit)


def _attribution(dataset, summary, args: argparse.Namespace):
    """attribute_spikes at --spike-us, else at the spectrum's rule from the summary's streamed histogram."""
    from ..derive import attribute_spikes
    from ..errors import AnalysisError
    from ..spectrum import threshold_from_histogram
    if args.spike_us is not None:
        threshold = args.spike_us * 1000.0
    elif summary.overall.histogram is None or not summary.overall.histogram.count:
        raise AnalysisError(f"{dataset.path}: no latencies to set a spike threshold from; give --spike-us")
    else:
        threshold = threshold_from_histogram(summary.overall.histogram)
    return attribute_spikes(dataset, threshold)

