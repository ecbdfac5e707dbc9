"""``jitterscope capture``: run the native binary with the same options.

The options go to the binary as they are, but for the duration: ``-D/--duration`` takes every spelling of
the CLI's one duration parser (:func:`~jitterscope.cli.options.duration`: ``10``, ``10s``, ``500ms``, ``2m``,
``1h``, ``1d``) and reaches the binary as plain seconds (its own ``-D`` knows s, m, h and d only).  To find
the duration among the options the wrapper reads them as the binary's getopt_long does, so it needs to know
which options take a value: :data:`BINARY_SHORT_WITH_VALUE` and :data:`BINARY_LONG_OPTIONS` mirror
``capture/config.c`` (a test keeps them equal).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .options import DURATION_HELP, UsageError, duration, format_seconds

PROG = "jitterscope capture"
BINARY_SHORT_WITH_VALUE = "ifapDlo"
"""The binary's short options that take a value (its getopt string, ``":i:f:a:p:D:l:o:qh"``)."""
BINARY_LONG_OPTIONS: dict[str, str] = {
    "interval": "required", "frequency": "required", "affinity": "required", "priority": "required",
    "policy": "required", "duration": "required", "loops": "required", "latency": "required",
    "no-latency": "none", "timer": "required", "counters": "required", "msr-dir": "required",
    "output": "required", "flush-interval": "required", "force": "none", "quiet": "none", "help": "none",
    "version": "none", "ring": "required", "sync": "required", "writer-cpu": "required",
    "group-seconds": "required", "group-rows": "required", "part-seconds": "required", "trace": "optional",
    "trace-buffer": "required", "break": "required", "trace-read-interval": "required", "trace-flush": "required",
    "deepest-idle-state": "required", "cpu-sysfs": "required", "state-dir": "required", "mode": "required",
    "poll-threshold": "required", "poll-clock": "required", "allow-starvation": "none", "rt-runtime-file": "required",
    "trace-keep": "required", "trace-threshold": "required", "trace-window": "required",
    "trace-background": "required", "trace-ring": "required",
}
"""The binary's long options and whether each takes a value (``required``, ``optional`` (only as
``--name=VALUE``), ``none``), as in ``config_options[]`` of ``capture/config.c``."""
CAPTURE_DURATION_MAX_S = 100 * 365 * 86400.0
"""The binary's own limit on -D (100 years)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "capture", add_help=False,
        help="record wake-up latency and counters, or with --mode poll every interruption of a busy loop (runs "
             "jitterscope-capture; same options; "
             f"-D/--duration: {DURATION_HELP})",
    )
    parser.set_defaults(func=_run, accepts_extra=True)


def binary_options(options: Sequence[str]) -> list[str]:
    """The options for the binary: each ``-D/--duration`` value parsed by the CLI's duration parser and passed
    as seconds; everything else unchanged (the binary checks it).

    Raises
    ------
    UsageError
        A duration that is not one (NaN, negative, zero, an unknown unit, over 100 years).
    """
    parse = duration(max=CAPTURE_DURATION_MAX_S)
    out: list[str] = []
    index = 0
    options = list(options)
    while index < len(options):
        option = options[index]
        index += 1
        if option == "--":
            out += [option, *options[index:]]
            break
        if option.startswith("--"):
            name, has_value, value = option[2:].partition("=")
            resolved = _long_name(name)
            kind = BINARY_LONG_OPTIONS.get(resolved or "", "none")
            if kind == "required" and not has_value and index < len(options):
                value, has_value = options[index], True
                index += 1
            if resolved == "duration" and has_value:
                out += ["-D", _seconds(parse, "-D/--duration", value)]
            elif kind == "required" and has_value and "=" not in option:
                out += [option, value]
            else:
                out.append(option)
            continue
        if option.startswith("-") and len(option) > 1:
            # a cluster of short flags, ending in at most one option with a value (e.g. -qD10 or -D 10)
            for position, letter in enumerate(option[1:], start=1):
                if letter not in BINARY_SHORT_WITH_VALUE:
                    continue
                value = option[position + 1:]
                if not value and index < len(options):
                    value = options[index]
                    index += 1
                elif not value:
                    out.append(option)  # no value: the binary says so
                    break
                if letter == "D":
                    flags = option[1:position]
                    out += ([f"-{flags}"] if flags else []) + ["-D", _seconds(parse, "-D/--duration", value)]
                else:
                    out += [option[:position + 1], value]
                break
            else:
                out.append(option)
            continue
        out.append(option)
    return out


def _long_name(name: str) -> str | None:
    """The long option ``name`` stands for: itself, or the one option it abbreviates (getopt_long's rule)."""
    if name in BINARY_LONG_OPTIONS:
        return name
    matches = [known for known in BINARY_LONG_OPTIONS if known.startswith(name)] if name else []
    return matches[0] if len(matches) == 1 else None


def _seconds(parse: object, option: str, value: str) -> str:
    try:
        seconds = parse(value)  # type: ignore[operator]
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"argument {option}: {exc} (see '{PROG} --help')") from None
    if seconds < 1e-9:  # the binary counts in whole ns
        raise UsageError(f"argument {option}: {value!r} is shorter than 1 ns (see '{PROG} --help')")
    return format_seconds(seconds)


def _run(args: argparse.Namespace) -> int:
    from ..io import run_capture
    return run_capture(binary_options(getattr(args, "extra", [])))
