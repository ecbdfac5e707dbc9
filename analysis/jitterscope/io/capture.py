"""Find and run the native capture binary ``jitterscope-capture``.

The binary is installed inside the package (``jitterscope/bin``), so it is
found even under sudo, whose secure_path does not include a venv's ``bin/``.
:func:`capture_dataset` runs one capture into a directory (falling back to
``--policy other`` when real-time scheduling is refused, and saying so);
``jitterscope capture`` passes options straight through with :func:`run_capture`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path

from ..errors import CaptureError

BINARY_NAME = "jitterscope-capture"


def capture_binary() -> Path:
    """Path of the capture binary: $JITTERSCOPE_CAPTURE, the package's copy, or $PATH."""
    override = os.environ.get("JITTERSCOPE_CAPTURE")
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise CaptureError(f"JITTERSCOPE_CAPTURE={override} is not an executable file")
        return path
    # The package directory first; an editable install keeps the binary in
    # site-packages while the Python sources stay in the tree, so look there too.
    roots = [Path(str(resources.files("jitterscope")))]
    roots += [Path(entry) / "jitterscope" for entry in sys.path if entry]
    for root in roots:
        packaged = root / "bin" / BINARY_NAME
        if os.access(packaged, os.X_OK):
            return packaged
    scripts = Path(sysconfig.get_path("scripts")) / BINARY_NAME
    if os.access(scripts, os.X_OK):
        return scripts
    found = shutil.which(BINARY_NAME)
    if found:
        return Path(found)
    raise CaptureError(
        f"{BINARY_NAME} not found in the package or on PATH; reinstall jitterscope (make install)"
    )


FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""Signals ``jitterscope capture`` passes on to the binary, which ends the run with a final flush on each."""
PARENT_ENV = "JITTERSCOPE_CAPTURE_PARENT"
"""Set to the wrapper's pid for the binary it starts: the binary asks the kernel for a signal when that process
dies (``PR_SET_PDEATHSIG``; even a SIGKILL of the wrapper) and ends its run as on SIGTERM, with a final flush and
the reason in its status, instead of running on at SCHED_FIFO 99 as an orphan. A binary run by hand, without it,
may outlive its shell (nohup)."""


def binary_environment() -> dict[str, str]:
    """The environment for a capture binary this process starts: ours, plus :data:`PARENT_ENV`."""
    return {**os.environ, PARENT_ENV: str(os.getpid())}


def run_capture(options: Sequence[str]) -> int:
    """Run the capture binary with ``options``, its stdout/stderr ours; return its exit status.

    SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process are forwarded to the binary (which makes its final flush
    and records the state ``interrupted``) instead of killing it or leaving it orphaned; the handlers are in
    place before the binary starts, so there is no moment where Ctrl-C gives a Python traceback. The exit status
    is the binary's (``128 + N`` when it died of signal N, as a shell reports it). Should this process die
    anyway (SIGKILL), the binary stops by itself (:data:`PARENT_ENV`).
    """
    binary = capture_binary()
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: object) -> None:
        # a Ctrl-C at a terminal reaches the binary too (same process group); one more SIGINT is harmless:
        # the binary only notes that a signal came
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED_SIGNALS}
    try:
        try:
            child = subprocess.Popen([str(binary), *options], env=binary_environment())
        except OSError as exc:
            raise CaptureError(f"cannot run {binary}: {exc.strerror}") from None
        status = child.wait()  # PEP 475: the wait resumes after each forwarded signal
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return status if status >= 0 else 128 - status


@dataclass(frozen=True)
class CaptureResult:
    """One finished capture made by :func:`capture_dataset`."""

    output: Path
    policy: str
    """``fifo`` as asked, or ``other`` after a refusal."""
    note: str | None
    """Why the capture is degraded (the binary's refusal line), or None."""
    final_lines: tuple[str, ...]
    """The binary's last lines, one per thread, in cyclictest's format."""

    def to_json(self) -> dict[str, object]:
        return {"output": str(self.output), "policy": self.policy, "note": self.note,
                "final_lines": list(self.final_lines)}


def realtime_refusal(binary: Path | None = None) -> str | None:
    """Return the binary's one-line refusal when SCHED_FIFO 99 is not granted here, else None.

    Runs the binary for one wake-up on every CPU without output.
    """
    binary = binary or capture_binary()
    try:
        done = subprocess.run([str(binary), "-l", "1", "-q", "--no-latency", "--counters", "none"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CaptureError(f"cannot run {binary}: {exc}") from None
    if done.returncode == 0:
        return None
    line = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
    if "refused" not in line:
        raise CaptureError(f"{binary} failed its real-time check: {line}")
    return line


def demo_output_dir(base: str | os.PathLike[str] = "out", now: datetime | None = None) -> Path:
    """A fresh ``base/demo-YYYYmmdd-HHMMSS`` path (the directory itself is left for the binary to create)."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return Path(base) / f"demo-{stamp}"


def capture_dataset(
    output: str | os.PathLike[str],
    *,
    seconds: float = 10.0,
    hz: float = 1000.0,
    fallback_to_other: bool = True,
    quiet: bool = False,
    extra: Sequence[str] = (),
) -> CaptureResult:
    """Capture ``seconds`` at ``hz`` on every online CPU into the new directory ``output``.

    Parameters
    ----------
    output
        Dataset directory to create; must not exist.
    seconds, hz
        Duration and wake-up frequency.
    fallback_to_other
        When SCHED_FIFO is refused, capture with ``--policy other`` and say so in
        :attr:`CaptureResult.note` instead of failing.
    quiet
        Pass ``-q`` (no live status on stderr).
    extra
        Further options for the binary.

    Returns
    -------
    CaptureResult

    Raises
    ------
    CaptureError
        The binary is missing, real-time scheduling is refused without fallback,
        or the capture failed (its one-line message is in the error).
    """
    if seconds <= 0 or hz <= 0:
        raise CaptureError(f"seconds and hz must be positive (got {seconds}, {hz})")
    binary = capture_binary()
    out = Path(output)
    if out.exists() or out.is_symlink():
        raise CaptureError(f"{out} already exists; choose a new output directory")
    refusal = realtime_refusal(binary)
    if refusal and not fallback_to_other:
        raise CaptureError(refusal.removeprefix("jitterscope-capture: "))
    policy = "other" if refusal else "fifo"
    if out.parent.exists() and not out.parent.is_dir():
        raise CaptureError(f"{out.parent}: exists and is not a directory; choose another output directory")
    try:  # the folder itself, not its missing parents (the rule of every command: parents must exist)
        out.parent.mkdir(exist_ok=True)
    except OSError as exc:
        raise CaptureError(f"{out.parent}: cannot create the directory ({exc.strerror})") from None
    argv = [str(binary), "-D", f"{seconds:g}", "-f", f"{hz:g}", "--policy", policy, "-o", str(out), *extra]
    if quiet:
        argv.append("-q")
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=None if not quiet else subprocess.PIPE,
                              text=True, check=False, env=binary_environment())
    except OSError as exc:
        raise CaptureError(f"cannot run {binary}: {exc.strerror}") from None
    if done.returncode != 0:
        message = (done.stderr or "").strip().splitlines()
        detail = message[-1] if message else "see its message above"
        raise CaptureError(f"capture failed with exit status {done.returncode}: {detail}")
    return CaptureResult(output=out, policy=policy, note=refusal,
                         final_lines=tuple(line for line in done.stdout.splitlines() if line.startswith("T:")))
