"""Processes a sweep starts (loads and captures): journaled before they can do anything, ended and reaped.

A process is started in its own session (so its whole group can be ended, stress-ng's workers included) and
held at a gate before it execs: it waits on a pipe until its pid, start time and command line are in the
journal (fsync'd).  If the sweep dies before that, the pipe closes and the child exits without running
anything, so no process of ours ever runs unrecorded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .journal import Journal, fault_point


@dataclass
class Started:
    """A process started by :func:`start_process`."""

    popen: subprocess.Popen[bytes]
    argv: tuple[str, ...]
    role: str
    log: Path | None

    @property
    def pid(self) -> int:
        return self.popen.pid


GATE = ("/bin/sh", "-c", 'IFS= read -r go && exec "$0" "$@" </dev/null; exit 125')
"""The gate a process waits at until it is journaled: a shell that reads one line from its stdin and then execs the
command (same pid, same start time); end of file (the sweep died first) makes it exit without running it.
(subprocess.Popen waits for the exec, so the gate cannot be a preexec_fn.)"""


def gated_cmdline(argv: Sequence[str]) -> tuple[str, ...]:
    """The command line of a process still at the gate."""
    return (*GATE, *argv)


def start_process(argv: Sequence[str], journal: Journal, *, role: str, run: str, cpus: Sequence[int] | None = None,
                  log: Path | None = None) -> Started:
    """Start ``argv`` pinned to ``cpus`` (None: as we are), its output into ``log`` (None: ours), journaled.

    Raises
    ------
    OSError
        The program cannot be started.
    """
    gate_read, gate_write = os.pipe()
    output = open(log, "wb") if log is not None else None  # closed below; the child keeps its copy
    try:
        popen = subprocess.Popen([*GATE, *argv], stdin=gate_read, stdout=output,
                                 stderr=subprocess.STDOUT if output else None, start_new_session=True)
    except OSError:
        os.close(gate_write)
        raise
    finally:
        os.close(gate_read)
        if output is not None:
            output.close()
    try:
        if cpus is not None:  # before the exec: the command and every process it forks inherit it
            os.sched_setaffinity(popen.pid, set(cpus))
        journal.record_process(popen.pid, role, run, cmdline=tuple(argv))
        os.write(gate_write, b"go\n")
    finally:
        os.close(gate_write)
    fault_point("process-running")
    return Started(popen=popen, argv=tuple(argv), role=role, log=log)


def stop_process(started: Started, journal: Journal, *, grace_s: float = 5.0, sig: int = signal.SIGTERM) -> int:
    """End ``started``'s process group (``sig``, then SIGKILL after ``grace_s``), reap it, journal it; its status.

    A process that already exited is only reaped.  The status is the exit code, or ``128 + N`` for signal N.
    """
    popen = started.popen
    if popen.poll() is None:
        try:
            os.killpg(popen.pid, sig)
        except ProcessLookupError:
            pass
        try:
            popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            popen.wait()
    _reap_group(popen.pid, grace_s)
    journal.record_ended(popen.pid)
    status = popen.returncode
    return status if status >= 0 else 128 - status


def _reap_group(pgid: int, grace_s: float) -> None:
    """Workers of the group that outlive their leader (re-parented to init) get SIGKILL; wait until none is left."""
    deadline = time.monotonic() + grace_s
    for _ in range(int(3 * grace_s / 0.02) + 1):  # bounded: a process stuck in D state is not waited for forever
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        if time.monotonic() > deadline:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + grace_s
        time.sleep(0.02)
