"""``jitterscope sweep check|run|restore|report``: experiments over machine settings and loads."""

from __future__ import annotations

import argparse
import sys

from .options import number, print_json

PROG = "jitterscope sweep"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep", help="run a capture over a plan of settings and loads (randomised, replicated), put the machine "
                      "back, compare the conditions",
        description="An experiment: a TOML plan names what every run captures, the factors (machine knobs such as "
                    "cpuidle.governor, capture options, a load) with their levels, and the design (replicates, "
                    "random or sequential order, seed, warm-up). 'check' says what would change; 'run' applies each "
                    "run's settings (journaled before each change), runs its load, captures, and puts the machine "
                    "back after every run and at any exit; 'restore' repairs a killed sweep from its journal; "
                    "'report' compares the conditions with runs as the unit of replication.",
    )
    commands = parser.add_subparsers(dest="sweep_command", metavar="SUBCOMMAND", required=True)

    check = commands.add_parser("check", help="check a plan against this machine; change nothing",
                                description="Read PLAN, check every factor level against this machine, and print "
                                            "what would be changed, from what to what, and what cannot run (one "
                                            "line each; exit status 2 when anything cannot).")
    check.add_argument("plan", metavar="PLAN", help="the plan (TOML)")
    check.set_defaults(func=_check)

    run = commands.add_parser("run", help="run the plan's design into DIR (runs/<id>/, manifest, journal)",
                              description="Run every run of PLAN's design in order into DIR/runs/<id>/, each with "
                                          "its settings applied and read back, its load running, its factor levels "
                                          "in the dataset's metadata (jitterscope.experiment); put the machine back "
                                          "after every run and at exit (SIGINT, SIGTERM, SIGHUP too).")
    run.add_argument("plan", metavar="PLAN", help="the plan (TOML)")
    run.add_argument("-o", "--output", required=True, metavar="DIR", help="the sweep's directory (new, or with "
                                                                            "--resume the one to continue)")
    run.add_argument("--resume", action="store_true", help="continue DIR: skip runs already complete")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.set_defaults(func=_run)

    restore = commands.add_parser("restore", help="after a killed sweep: end its loads, put its settings back",
                                  description="End the processes DIR's journal records (only when each pid still "
                                              "runs the recorded command line), write back every setting the "
                                              "journal says was changed, read all back and compare.")
    restore.add_argument("directory", metavar="DIR", help="the sweep's directory")
    restore.set_defaults(func=_restore)

    report = commands.add_parser("report", help="compare the conditions of a finished sweep",
                                 description="Per condition, p50 to p99.99 and max with intervals from the "
                                             "replicates (a run is the unit); each factor's effect as a ratio with "
                                             "its interval, Holm-corrected over factors and metrics; the "
                                             "interaction of two factors; CCDFs; a LaTeX table and the methods "
                                             "paragraph.")
    report.add_argument("directory", metavar="DIR", help="the sweep's directory")
    report.add_argument("-o", "--output", metavar="PDF", help="write the report as a PDF")
    report.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    report.add_argument("--figures", metavar="DIR", help="also write each figure (PDF/SVG/PNG) and the tables "
                                                          "(CSV/JSON/LaTeX) into DIR")
    report.add_argument("--noise", type=number(min=0, max=1000, unit="%"), default=10.0, metavar="PCT",
                        help="effects within ±PCT are 'no effect beyond the stated noise' (default: 10)")
    report.add_argument("--confidence", type=number(min=50, max=99.99, unit="%"), default=95.0, metavar="PCT",
                        help="confidence of the intervals in percent (default: 95)")
    report.add_argument("--force", action="store_true", help="replace an existing PDF or figures")
    report.set_defaults(func=_report)


def _problems(problems: tuple[str, ...] | list[str]) -> int:
    for problem in problems:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
    return 2


def _check(args: argparse.Namespace) -> int:
    from ..sweep import PlanError, check_plan, check_text, read_plan
    try:
        plan = read_plan(args.plan)
    except PlanError as exc:
        return _problems(exc.problems)
    check = check_plan(plan)
    print(check_text(check, problems=False))
    return _problems(check.problems) if check.problems else 0


def _run(args: argparse.Namespace) -> int:
    from ..sweep import PlanError, SweepInterrupted, run_sweep
    try:
        result = run_sweep(args.plan, args.output, resume=args.resume, progress=not args.quiet)
    except PlanError as exc:
        return _problems(exc.problems)
    except SweepInterrupted as exc:
        print(f"{PROG} run: interrupted by {exc}; the machine was put back (continue with --resume)",
              file=sys.stderr)
        return 128 + exc.signum
    print(result.summary_line())
    return 0 if result.ok else 1


def _restore(args: argparse.Namespace) -> int:
    from ..sweep import restore_directory
    ended, restored = restore_directory(args.directory)
    for line in ended:
        print(line)
    print(f"restored {len(restored)} setting(s)" + (f": {', '.join(sorted(set(restored)))}" if restored else "")
          + "; every journaled setting reads as before")
    return 0


def _report(args: argparse.Namespace) -> int:
    from ..sweep import analyze_sweep, sweep_text, write_sweep_figures, write_sweep_report
    result = analyze_sweep(args.directory, noise=args.noise / 100, confidence=args.confidence / 100)
    if args.output:
        write_sweep_report(result, args.output, overwrite=args.force)
    if args.figures:
        write_sweep_figures(result, args.figures, overwrite=args.force)
    if args.json:
        print_json(result.to_json(), indent=2, sort_keys=True)
    else:
        print(sweep_text(result))
    return 0
