"""Find and run the native capture binary ``jitterscope-capture``.

The binary is installed inside the package (``jitterscope/bin``), so it is
found even under sudo, whose secure_path does not include a venv's ``bin/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from .errors import CaptureError

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


def run_capture(options: Sequence[str]) -> int:
    """Run the capture binary with ``options``; its stdout/stderr go to ours. Returns its exit code."""
    binary = capture_binary()
    try:
        return subprocess.run([str(binary), *options], check=False).returncode
    except OSError as exc:
        raise CaptureError(f"cannot run {binary}: {exc.strerror}") from None
