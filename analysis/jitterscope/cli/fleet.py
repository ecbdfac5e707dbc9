"""``jitterscope fleet DATASET… | --glob PATTERN [--by KEY] [--scheduler ADDRESS] [-o fleet.pdf] [--json]``."""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys

from .options import input_path, number, output_path, usage_error

BY_KINDS = ("host", "kernel", "governor", "env", "cmdline")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fleet", help="many machines' runs on Dask: worst groups, machine histories with regressions, key table",
        description="Summarize every dataset (HDR histogram and moments of latency, one streaming pass) as a task "
                    "on a Dask cluster, merge them per group and rank the groups by p99.99 and max; compare each "
                    "machine's consecutive runs (by capture start time) and flag regressions; for every "
                    "configuration key, its values with their merged quantiles and a test of whether they separate "
                    "the tails. Unreadable or foreign datasets are listed with their reason and skipped. By default "
                    "a LocalCluster with one worker process per core runs the tasks; --scheduler uses a running "
                    "cluster. Busy-poll datasets (kind poll; not mixed with timer ones) are ranked by the share of "
                    "CPU lost to interruptions, with interruptions per second by size class and the largest one, "
                    "and each machine's runs are compared by the poll comparison.",
    )
    parser.add_argument("datasets", type=input_path, nargs="*", metavar="DATASET", help="dataset files or directories")
    parser.add_argument("--glob", metavar="PATTERN", action="append", default=[],
                        help="datasets matching a pattern ('**' recurses), e.g. --glob 'runs/**/*.parquet'")
    parser.add_argument("--by", nargs="+", metavar="KEY", default=["host"],
                        help="group the ranking by host, kernel, governor, env KEY or cmdline PARAM (default: host)")
    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                        help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: start a "
                             "LocalCluster); 'serial' runs in this process without Dask")
    parser.add_argument("--workers", type=number(integer=True, min=1, max=1024), metavar="N",
                        help="worker processes of the LocalCluster (default: one per core)")
    parser.add_argument("-o", "--output", type=output_path, metavar="PDF", help="also write the fleet report as a PDF")
    parser.add_argument("--force", action="store_true", help="replace an existing PDF")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    parser.add_argument("--noise", type=number(min=0, max=1000, unit="%"), default=5.0, metavar="PCT",
                        help="noise threshold of the regression verdicts in percent (default: 5)")
    parser.add_argument("--confidence", type=number(min=0, max=100, inclusive=False, unit="%"), default=95.0,
                        metavar="PCT",
                        help="confidence level of the intervals in percent (default: 95)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(func=_run, parser=parser)


def _split_by(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """``--by`` takes one or two words; further words are datasets (``--by governor a.parquet`` reads as meant)."""
    words = list(args.by)
    if not words or words[0] not in BY_KINDS:
        got = words[0] if words else "nothing"
        usage_error("jitterscope fleet", f"--by: expected one of {', '.join(BY_KINDS)}, got {got!r}")
    take = 2 if words[0] in ("env", "cmdline") else 1
    if len(words) < take:
        usage_error("jitterscope fleet", f"--by {words[0]} needs a name, e.g. --by env no_hz or --by cmdline isolcpus")
    return words[:take], words[take:]


def _run(args: argparse.Namespace) -> int:
    by_words, more = _split_by(args)
    paths = list(args.datasets) + more
    for pattern in args.glob:
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            usage_error("jitterscope fleet",
                        f"--glob {pattern!r} matches nothing; quote the pattern so the shell leaves it alone")
        paths += matches
    if not paths:
        usage_error("jitterscope fleet", "no datasets: name them, or use --glob 'runs/**/*.parquet'")
    if not 0 < args.confidence < 100 or args.noise < 0:
        usage_error("jitterscope fleet", "need 0 < --confidence < 100 and --noise >= 0")
    if args.workers is not None and args.workers < 1:
        usage_error("jitterscope fleet", "--workers must be >= 1")
    paths = list(dict.fromkeys(paths))  # a dataset named twice (by name and by --glob) counts once
    from ..dataset import check_output
    from ..errors import JitterscopeError
    from ..fleet import fleet_text, parse_group_key, run_fleet, write_fleet_report
    if args.output:  # before the work: a refused output (an input's name, an existing file) should not cost a fleet
        check_output(args.output, inputs=paths, overwrite=args.force, error=JitterscopeError)
    fleet = run_fleet(paths, by=parse_group_key(by_words), scheduler=args.scheduler, workers=args.workers,
                      progress=not args.no_progress and sys.stderr.isatty(), noise=args.noise / 100,
                      confidence=args.confidence / 100)
    if args.output:
        info = write_fleet_report(fleet, args.output, inputs=paths, overwrite=args.force)
        print(f"{info.path}: {info.pages} pages", file=sys.stderr)
    if args.json:
        print(json.dumps(fleet.to_json(), indent=1, allow_nan=False))
    elif getattr(fleet, "kind", None) == "poll":
        from ..fleet import poll_fleet_text
        print(poll_fleet_text(fleet))
    else:
        print(fleet_text(fleet))
    return 0


_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})")


def scheduler_address(text: str) -> str:
    """The ``--scheduler`` type: ``serial``, or ``[tcp|tls|ws|wss|ucx://]HOST:PORT`` with a port 1-65535.

    Checked here, so an empty or malformed address is a usage error (exit 2) rather than an error of Dask's
    address parser deep inside the run.
    """
    value = text.strip()
    if value == "serial":
        return value
    match = _ADDRESS.fullmatch(value)
    if not match or not 1 <= int(match.group(1)) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a scheduler address: give tcp://HOST:PORT (a port "
                                         "1-65535) or 'serial'")
    return value
