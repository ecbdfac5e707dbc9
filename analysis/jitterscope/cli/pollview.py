"""The poll-dataset path of ``summary``, ``spectrum`` and ``events`` (kind ``poll``: a busy loop's interruptions).

Each command opens its dataset; a poll dataset comes here instead of the timer analyses, which need wake-ups.
Options that only mean something for wake-ups (a spike threshold, interval statistics, gates) are refused in
one line rather than ignored.
"""

from __future__ import annotations

import argparse
import json
import sys

from .options import print_json, usage_error


def refuse_timer_options(args: argparse.Namespace, command: str, names: dict[str, object]) -> None:
    """Exit 2 naming the first option given that only applies to timer datasets."""
    for name, default in names.items():
        if getattr(args, name, default) != default:
            usage_error(f"jitterscope {command}", f"--{name.replace('_', '-')} applies to timer datasets; this one "
                                                  "is a busy-poll dataset (kind poll)")


def poll_summary(dataset: object, args: argparse.Namespace) -> int:
    """``summary`` of a poll dataset: the findings sentences and the tables (or JSON)."""
    from ..poll import (
        explain_interruptions,
        find_poll_events,
        poll_findings,
        poll_spectrum,
        poll_tables,
        poll_text,
        read_poll,
        summarize_poll,
    )
    data = read_poll(dataset)  # type: ignore[arg-type]
    summary = summarize_poll(data)
    causes = explain_interruptions(data) if data.has_rows else None
    spectrum = poll_spectrum(data, causes=causes) if data.has_rows else None
    events = find_poll_events(data, causes=causes) if data.has_rows else None
    meta = data.dataset.metadata
    findings = poll_findings(summary, causes=causes, spectrum=spectrum, environment=meta.environment,
                             clock=meta.clock, events=events)
    if args.json:
        from ..format import jsonable
        document = {"kind": "poll", "summary": summary.to_json(), "findings": findings.to_json(),
                    "causes": causes.to_json() if causes else None,
                    "spectrum": spectrum.to_json() if spectrum else None}
        print_json(jsonable(document), indent=2, allow_nan=False)
        return 0
    sys.stdout.write(poll_text(summary, findings, poll_tables(summary, causes, spectrum, events)))
    return 0


def poll_periodic(dataset: object, args: argparse.Namespace) -> int:
    """``spectrum`` of a poll dataset: the periodic sources of interruptions per CPU and size class."""
    from ..poll import explain_interruptions, poll_spectrum, poll_tables, read_poll, summarize_poll
    from ..render import to_text
    data = read_poll(dataset)  # type: ignore[arg-type]
    causes = explain_interruptions(data) if data.has_rows else None
    spectrum = poll_spectrum(data, alpha=args.alpha, causes=causes)
    if args.json:
        from ..format import jsonable
        print_json(jsonable(spectrum.to_json()), allow_nan=False)
        return 0
    table = poll_tables(summarize_poll(data), None, spectrum)[-1]
    print("\n".join([table.title, *to_text(table)]))
    for line in spectrum.skipped:
        print(line)
    return 0


def poll_events(dataset: object, args: argparse.Namespace) -> int:
    """``events`` of a poll dataset: interruptions joined across CPUs, longest first."""
    from ..poll import explain_interruptions, find_poll_events, format_gap, read_poll
    data = read_poll(dataset)  # type: ignore[arg-type]
    causes = explain_interruptions(data)
    min_ns = 10_000 if args.threshold is None else round(args.threshold * 1000)
    events = find_poll_events(data, min_ns=min_ns, causes=causes)
    if args.json:
        print(json.dumps(events.to_json(), indent=1, allow_nan=False))
        return 0
    print(f"{len(events.events)} interruption event(s) >= {format_gap(min_ns)} on {events.cpus} CPU(s), "
          f"{len(events.shared)} of them on several CPUs at once")
    t0 = data.start_ns
    for event in events.events[:args.top]:
        print(f"  {(event.start_ns - t0) / 1e9:10.6f} s  {format_gap(event.duration_ns):>10}  CPUs "
              f"{','.join(map(str, event.cpus)):<8} {event.cause or '–'}")
    return 0


def poll_compare(datasets: list, args: argparse.Namespace) -> int:  # type: ignore[type-arg]
    """``compare`` of poll datasets: runs (or two groups) per CPU; a poll run against a timer one is refused."""
    prog = "jitterscope compare"
    poll = next(d for d in datasets if d.metadata.kind == "poll")
    other = next((d for d in datasets if d.metadata.kind != "poll"), None)
    if other is not None:
        usage_error(prog, f"{poll.path} is a busy-poll dataset (kind poll) and {other.path} a timer one (kind "
                          f"{other.metadata.kind}): a loop's interruptions and wake-up latencies are not the same "
                          "measure; compare poll runs with poll runs")
    refuse_timer_options(args, "compare", {"resamples": 1000, "seed": 0})
    for condition in args.fail_if:
        if condition.kind != "verdict" and condition.metric != "max":
            usage_error(prog, f"--fail-if {condition.text!r}: a poll comparison knows the verdicts and 'max' (the "
                              "largest interruption of the candidate runs), not latency percentiles")
    from ..dataset import check_output
    from ..errors import AnalysisError
    from ..poll import compare_poll, compare_poll_groups, poll_compare_text
    from .options import UsageError
    labels = args.labels.split(",") if args.labels else None
    k = len(args.datasets)
    if args.candidates:
        if k < 2 or len(args.candidates) < 2:
            raise UsageError(f"a group comparison needs at least 2 runs per side ({k} before --, "
                             f"{len(args.candidates)} after); with one run per side use 'compare A B'")
        sides = tuple(args.sides.split(",")) if args.sides else ("A", "B")
        if len(sides) != 2 or not all(sides):
            raise UsageError(f"--sides needs two names separated by a comma, got {args.sides!r}")
    elif args.sides:
        raise UsageError("--sides names the two groups of 'compare A1 A2 -- B1 B2'; there are no groups here")
    elif k < 2:
        raise AnalysisError("compare needs at least two datasets (the first is the baseline)")
    if args.output:  # before the work: a refused output should not cost a comparison
        check_output(args.output, inputs=[str(d.path) for d in datasets], overwrite=args.force, error=AnalysisError)
    if args.candidates:
        comparison = compare_poll_groups(datasets[:k], datasets[k:], labels=labels, sides=(sides[0], sides[1]),
                                         noise=args.noise / 100, confidence=args.confidence / 100)
    else:
        comparison = compare_poll(datasets, labels=labels, noise=args.noise / 100, confidence=args.confidence / 100)
    if args.output:
        from ..poll import write_poll_compare_report  # matplotlib: only when a PDF is asked for
        info = write_poll_compare_report(comparison, args.output, overwrite=args.force)
        print(f"{info.path}: {info.pages} pages", file=sys.stderr)
    if args.json:
        print_json(comparison.to_json(), indent=1, allow_nan=False)
    else:
        sys.stdout.write(poll_compare_text(comparison) + "\n")
    if not args.fail_if:
        return 0
    from .gates import evaluate, poll_compare_facts, report
    return report(evaluate(args.fail_if, poll_compare_facts(comparison)), "compare", args.junit)


def poll_tails(dataset: object, args: argparse.Namespace) -> int:
    """``tails`` of a poll dataset: the extreme-value fit of each CPU's interruption lengths."""
    for condition in args.fail_if:
        if condition.kind == "events":
            usage_error("jitterscope tails", f"--fail-if {condition.text!r}: latency spike events are a timer "
                                              "dataset's; on a poll dataset gate on max or pNN of the interruptions")
    from ..poll import analyze_poll_tails, read_poll
    from ..tails import tails_text
    data = read_poll(dataset)  # type: ignore[arg-type]
    result = analyze_poll_tails(data, levels_ns=tuple(x * 1000 for x in args.level_us),
                                confidence=args.confidence / 100)
    if args.json:
        print_json(result.to_json(), indent=1)
    else:
        sys.stdout.write(tails_text(result))
    if not args.fail_if:
        return 0
    # as for timer datasets, the gates read what was recorded (every interruption), never the fit
    import numpy as np

    from .gates import Facts, evaluate, report
    lengths = np.concatenate([t.duration_ns for t in data.threads]).astype(float)
    latency: dict[str, float | None] = {"max": None, "min": None, "mean": None}
    if lengths.size:
        latency.update(max=float(lengths.max()), min=float(lengths.min()), mean=float(lengths.mean()))
    for condition in args.fail_if:
        if condition.kind == "percentile":
            q = float(condition.metric[1:]) / 100
            resolved = lengths.size and lengths.size * (1 - q) >= 1  # as the summary: no pNN from a few values
            latency[condition.metric] = float(np.quantile(lengths, q)) if resolved else None
    facts = Facts(latency_ns=latency, scope="the interruptions of all polled CPUs")
    return report(evaluate(args.fail_if, facts), "tails", args.junit)
