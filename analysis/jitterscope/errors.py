"""The exceptions users see.  Each message says what is wrong and what to do.

The CLI turns any :class:`JitterscopeError` into one line on stderr and exit
status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import signal
import sys


class JitterscopeError(Exception):
    """Base of every error meant for the user."""


class DatasetError(JitterscopeError):
    """A dataset cannot be opened or read (missing, not Parquet, truncated)."""


class SchemaError(DatasetError):
    """A dataset opens but breaks the contract (columns, types, metadata, invariants)."""


class UnsupportedVersionError(SchemaError):
    """A dataset written by a newer jitterscope than this one."""


class UnknownFormatError(JitterscopeError):
    """An input file is of no format jitterscope can import."""


class ImportFormatError(JitterscopeError):
    """An input file claims a format but is corrupt; the message names the line or byte."""


class AnalysisError(JitterscopeError):
    """Input valid, but the analysis cannot give a meaningful answer (too short, degenerate)."""


class CaptureError(JitterscopeError):
    """The capture binary could not be found or run."""


class Terminated(BaseException):
    """A terminating signal arrived: unwinds like KeyboardInterrupt (a BaseException: no ``except Exception``
    swallows it)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = int(signum)


_received: list[int] = []
"""Signals whose handler ran in this command (:func:`stop_on_signal`), until :func:`forget_signals`."""


def stop_on_signal(signum: int, frame: object) -> None:
    """The CLI's handler of Ctrl-C and the terminating signals: notes the signal, then raises (KeyboardInterrupt
    for SIGINT, else :class:`Terminated`), so that writers remove their temporaries on the way out.

    The note is what :func:`raise_if_signalled` reads where an output is committed: CPython can run a handler
    inside a C call that then sets an exception of its own over the handler's (seen: ``int('normal')`` in
    matplotlib's font matching, under ``except ValueError``), and the signal's exception is lost without a
    word.  Under load about 1 report in 25 sent SIGTERM, SIGHUP or SIGINT as a drawing worker started went on
    to write its PDF and exit 0 that way."""
    _received.append(int(signum))
    raise _stop(signum)


def raise_if_signalled() -> None:
    """Raise again the first signal :func:`stop_on_signal` took whose exception has not ended the command (it
    was lost, see there): called before an output is committed and between a report's pages.  Nothing while
    that exception is being handled (clean-up in an ``except`` or ``finally`` may still write, as an interrupted
    sweep writes its manifest): it is on its way."""
    if not _received or isinstance(sys.exc_info()[1], KeyboardInterrupt | Terminated):
        return
    signum = _received[0]
    _received.clear()
    raise _stop(signum)


def _stop(signum: int) -> BaseException:
    """The exception a signal ends a command with: KeyboardInterrupt for Ctrl-C, else :class:`Terminated`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def signalled() -> int | None:
    """The first signal :func:`stop_on_signal` took and nothing has acted on yet (None: none)."""
    return _received[0] if _received else None


def forget_signals() -> None:
    """Clear the notes of :func:`stop_on_signal` (a command starts, or its signal's exception ended it)."""
    _received.clear()
