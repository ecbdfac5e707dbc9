"""One parser for the numbers in options, and the one-line usage error every subcommand shares.

Every numeric option of every subcommand takes its ``type=`` from :func:`number`, so NaN, ±inf, values
out of range and non-numbers are refused the same way everywhere, before the library sees them::

    parser.add_argument("--tolerance", type=number(min=0, unit="µs"), default=1.0)
    parser.add_argument("--seed", type=number(integer=True, min=0))
    parser.add_argument("--alpha", type=number(min=0, max=1, inclusive=False))

This module is import-free (argparse and math only): ``--help`` must not load numpy.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn, TextIO

from ..errors import JitterscopeError

SEED_MAX = 2**64 - 1
"""The largest seed numpy's generators take (they refuse negative ones)."""


def number(
    *,
    min: float | None = None,
    max: float | None = None,
    integer: bool = False,
    inclusive: bool = True,
    unit: str = "",
) -> Callable[[str], int | float]:
    """An argparse ``type`` that accepts a finite number in a range and refuses anything else in one line.

    Parameters
    ----------
    min, max
        Bounds (either may be None). With ``inclusive=False`` the bounds themselves are refused too.
    integer
        Whole numbers only; ``1e6`` is accepted as 1000000, ``2.5`` is refused.
    inclusive
        Whether ``min`` and ``max`` themselves are allowed.
    unit
        Shown in the message ("must be >= 0 µs").

    Returns
    -------
    callable
        ``str -> int | float``; raises :class:`argparse.ArgumentTypeError` with what was expected.
    """
    suffix = f" {unit}" if unit else ""

    def describe() -> str:
        kind = "a whole number" if integer else "a number"
        low = "" if min is None else f"{'>=' if inclusive else '>'} {_show(min)}{suffix}"
        high = "" if max is None else f"{'<=' if inclusive else '<'} {_show(max)}{suffix}"
        bounds = " and ".join(b for b in (low, high) if b)
        return f"{kind} {bounds}".strip() if bounds else kind

    def parse(text: str) -> int | float:
        value = _parse_number(text.strip(), integer)
        if value is None:
            raise argparse.ArgumentTypeError(f"{text!r} is not {describe()}")
        too_low = min is not None and (value < min if inclusive else value <= min)
        too_high = max is not None and (value > max if inclusive else value >= max)
        if too_low or too_high:
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: expected {describe()}")
        return value

    parse.__name__ = "whole number" if integer else "number"  # argparse names the type in its own messages
    return parse


DURATION_UNITS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                                    "h": 3600.0, "d": 86400.0}
"""The suffixes a duration may carry, in seconds; a bare number is seconds."""
DURATION_HELP = "a number of seconds, or with a unit: 500ms, 10s, 2m, 1h, 1d"
"""How every duration option's ``--help`` says what it takes."""


def duration(*, min: float = 0.0, max: float | None = None) -> Callable[[str], float]:
    """An argparse ``type`` for a length of time: ``10`` (seconds), ``10s``, ``500ms``, ``2m``, ``1h``, ``1d``.

    The one spelling of durations on every subcommand (``-D/--duration`` of capture, demo and simulate,
    ``--turbostat-interval``), the units of the capture binary's ``-D`` plus ``ms``, ``us`` and ``ns``.

    Parameters
    ----------
    min, max
        Bounds in seconds: more than ``min`` (0 s is no capture), at most ``max``.

    Returns
    -------
    callable
        ``str -> float`` seconds; raises :class:`argparse.ArgumentTypeError` (NaN, inf, negative, no number,
        an unknown unit, out of range) with what was expected.
    """
    def describe() -> str:
        high = "" if max is None else f" and <= {_show_seconds(max)}"
        return f"{DURATION_HELP} (> {_show_seconds(min)}{high})"

    def parse(text: str) -> float:
        stripped = text.strip()
        number_part = stripped.rstrip("".join(sorted({c for unit in DURATION_UNITS for c in unit})))
        unit = stripped[len(number_part):] or "s"
        value = _parse_number(number_part.strip(), False) if unit in DURATION_UNITS else None
        if value is None:
            raise argparse.ArgumentTypeError(f"{text!r} is not a duration: use {DURATION_HELP}")
        seconds = value * DURATION_UNITS[unit]
        if not math.isfinite(seconds) or seconds <= min or (max is not None and seconds > max):
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: expected {describe()}")
        return seconds

    parse.__name__ = "duration"
    return parse


PATHS_HELP = ("paths: an empty path is a usage error; the folder an output goes into must exist "
              "(no command creates missing parent folders)")
"""The one rule for paths of every command, as ``--help`` says it."""


def input_path(text: str) -> str:
    """The ``type`` of every input path: anything but empty ('' used to mean the current directory)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file; give a path ('.' for the current directory)")
    return text


def output_path(text: str) -> str:
    """The ``type`` of every output path: not empty, and in a folder that exists (:data:`PATHS_HELP`)."""
    input_path(text)
    import os

    parent = os.path.dirname(text.rstrip("/")) or "."
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"{text!r}: the folder {parent!r} does not exist; jitterscope creates no "
                                         "parent folders (make it first)")
    return text


def format_seconds(seconds: float) -> str:
    """A duration in seconds as the capture binary's ``-D`` takes it: plain decimal, to the nanosecond."""
    return f"{seconds:.9f}".rstrip("0").rstrip(".")


def _show_seconds(seconds: float) -> str:
    for unit, scale in (("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale and (seconds / scale).is_integer():
            return f"{seconds / scale:g}{unit}"
    return f"{seconds:g}s"


def seed() -> Callable[[str], int | float]:
    """The ``--seed`` type of every command that draws random numbers (0 … 2**64 - 1)."""
    return number(integer=True, min=0, max=SEED_MAX)


def _parse_number(text: str, integer: bool) -> int | float | None:
    try:
        return int(text, 10) if integer else _finite(float(text))
    except ValueError:
        pass
    try:
        value = _finite(float(text))
    except ValueError:
        return None
    if value is None or not integer:
        return value
    return int(value) if value.is_integer() else None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _show(bound: float) -> str:
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (exit 2) naming the ``--help`` to read."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {' '.join(message.split())} (see '{self.prog} --help')", file=sys.stderr)
        sys.exit(2)


class UsageError(JitterscopeError):
    """A combination of options that cannot go together: one line and exit status 2, like argparse's own."""


def usage_error(prog: str, message: str) -> NoReturn:
    """Stop with a one-line usage error (exit 2) for a combination of options argparse cannot check."""
    raise UsageError(f"{message} (see '{prog} --help')")


def print_json(document: object, **options: object) -> None:
    """Print ``document`` as JSON on stdout (``json.dumps`` ``options``), in one write.

    ``json.dump`` to a stream writes token by token: through :class:`VisibleText` that was one escaping pass
    per token (1.9 million calls and 14 of 24 s for the 39 MB of ``spectrum --json`` at 10^7 wake-ups).  One
    string escaped once is the same text: the escaping maps each character on its own.
    """
    import json

    sys.stdout.write(json.dumps(document, **options) + "\n")  # type: ignore[arg-type]


class VisibleText:
    """A text stream that writes every control character (but newline and tab) and lone surrogate as an escape.

    The CLI prints through it, so text from a dataset (a hostname with ANSI escapes, a title-setting sequence,
    CR or NUL, invalid Unicode) reaches the terminal as data, never as a command to it.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from ..format import visible  # import-free module

        self._stream.write(visible(text))
        return len(text)

    def __getattr__(self, name: str) -> object:  # flush, isatty, fileno, encoding… of the real stream
        return getattr(self._stream, name)
