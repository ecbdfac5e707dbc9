"""The ``jitterscope`` command: argument parsing only; every subcommand calls the library.

Each subcommand lives in its own module here with ``register(subparsers)``
adding its parser and setting ``func``.  A :class:`JitterscopeError` becomes
one line on stderr and exit status 1.

Start-up is part of the interface: a module here imports the library (numpy,
pandas, pyarrow, scipy, matplotlib behind the package faces) only inside the
function that runs its subcommand, so ``--help`` and a mistyped option answer
at once; ``tests/test_layout.py`` guards it.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from ..errors import JitterscopeError, Terminated, forget_signals, raise_if_signalled, stop_on_signal
from ..format import visible
from .options import PATHS_HELP, OneLineParser, UsageError, VisibleText

# Modules under jitterscope.cli, one per subcommand, in the order --help lists them.
COMMANDS: tuple[str, ...] = (
    "capture",
    "demo",
    "simulate",
    "summary",
    "events",
    "info",
    "validate",
    "report",
    "power",
    "import_",
    "export",
    "pack",
    "spectrum",
    "compare",
    "tails",
    "fleet",
    "sweep",
)
"""Adding a numeric option to a command: ``type=number(min=0, unit="µs")`` from :mod:`.options`."""


def build_parser() -> argparse.ArgumentParser:
    # OneLineParser: a usage error is one line (exit 2); subparsers inherit the class.
    parser = OneLineParser(
        prog="jitterscope",
        description="Capture and analyse timer wake-up latency and CPU frequency behaviour.",
    )
    parser.add_argument("--version", action="version", version=f"jitterscope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(subparsers)
    for command in subparsers.choices.values():  # the one rule for paths, said in every command's --help
        command.epilog = f"{command.epilog}\n\n{PATHS_HELP}" if command.epilog else PATHS_HELP
    parser.epilog = PATHS_HELP
    return parser


TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""Signals that end a command as Ctrl-C does (temporaries removed on the way out), exit status 128 + N: SIGTERM
(kill, a service stop), SIGHUP (the terminal closed), SIGQUIT (Ctrl-\\; no core dump: nothing to debug)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``jitterscope`` command line; return its exit status (0, 1 error, 2 usage, 130 interrupted,
    128 + N after signal N of :data:`TERMINATING_SIGNALS`)."""
    # these signals as an exception, so that writers remove their temporaries on the way out (as on Ctrl-C); each
    # noted too, for the exception CPython can lose (errors.stop_on_signal): a writer checks before committing
    forget_signals()
    previous = _take_signals() if threading.current_thread() is threading.main_thread() else {}
    try:
        status = _main(argv)
        raise_if_signalled()  # a signal whose exception was lost ends the command as it should have
        return status
    except KeyboardInterrupt:  # Ctrl-C before a command runs (parsing, imports): one line, as during it
        print("jitterscope: interrupted", file=sys.stderr)
        return 130
    except Terminated as stop:
        print(f"jitterscope: terminated ({signal.Signals(stop.signum).name})", file=sys.stderr)
        return 128 + stop.signum
    finally:
        forget_signals()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def console_main() -> NoReturn:
    """The ``jitterscope`` command (and ``python -m jitterscope``): :func:`main`, then the process ends without
    the interpreter's teardown.

    Tearing down a report's interpreter (every module of matplotlib, scipy, pandas, pyarrow and astropy, one
    object at a time) took 0.2-0.3 s after the report was written, for nothing: the system takes the memory back
    at once.  What an exit must still do is done first: the ``atexit`` handlers (weakref finalizers such as
    temporary folders', logging, Dask's), then stdout and stderr flushed.  Where a thread other than a daemon is
    still running, Python's own exit waits for it as usual.
    """
    status = main()
    atexit._run_exitfuncs()  # CPython's own exit step, run now: nothing of it is skipped
    if any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
           if thread is not threading.main_thread()):
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left (a pipe to head), or the stream was closed
            pass
    os._exit(status)


def _take_signals() -> dict[int, Any]:
    """Install :func:`stop_on_signal` for the terminating signals, and for SIGINT where Python's own Ctrl-C
    handler is in force (not where it is ignored: a background job); return the handlers it replaced."""
    previous = {signum: signal.signal(signum, stop_on_signal) for signum in TERMINATING_SIGNALS}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, stop_on_signal)
    return previous


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list == ["--version"]:  # the one answer that needs no parser: scripts call it often
        print(f"jitterscope {__version__}")
        return 0
    parser = build_parser()
    # "capture" passes its options through to the binary untouched.
    try:
        args, rest = parser.parse_known_args(args_list)
        if rest and not getattr(args, "accepts_extra", False):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
    except SystemExit as exc:  # --help (0) or a usage error (2, its one line already printed)
        return exc.code if isinstance(exc.code, int) else 2
    if rest:
        args.extra = rest
    stdout, sys.stdout = sys.stdout, VisibleText(sys.stdout)  # text from a dataset never drives the terminal
    try:
        return int(args.func(args) or 0)
    except JitterscopeError as exc:
        print(visible(f"jitterscope {args.command}: error: {' '.join(str(exc).split())}"), file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        forget_signals()  # its exception arrived: nothing left for main to raise
        print(f"jitterscope {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    console_main()
