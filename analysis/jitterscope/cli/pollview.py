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
