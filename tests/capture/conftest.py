"""Fixtures for the capture-binary tests: the binary, a runner, and dataset checks.

The binary is found the way users find it (``jitterscope.io.capture_binary``,
honouring ``$JITTERSCOPE_CAPTURE``).  Tests that need SCHED_FIFO or mounts skip
with a reason when not root.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.dataset as pads
import pytest
from jitterscope.io import capture_binary


@dataclass(frozen=True)
class CaptureRun:
    """The outcome of one run of the binary."""

    returncode: int
    stdout: str
    stderr: str
    output: Path | None

    @property
    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def is_root() -> bool:
    return os.geteuid() == 0


@pytest.fixture(scope="session")
def capture_bin() -> Path:
    return capture_binary()


def bench_writer_binary() -> Path:
    """The writer benchmark: $JITTERSCOPE_BENCH_WRITER, or installed next to the capture binary (never on PATH)."""
    override = os.environ.get("JITTERSCOPE_BENCH_WRITER")
    path = Path(override) if override else capture_binary().with_name("jitterscope-bench-writer")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is not an executable file: reinstall (make install) or set JITTERSCOPE_BENCH_WRITER")
    return path


@pytest.fixture(scope="session")
def bench_writer_bin() -> Path:
    return bench_writer_binary()


@pytest.fixture
def run_capture(capture_bin: Path, tmp_path: Path):
    """Run the binary: ``run_capture(*args, output="name"|None, timeout=60)``.

    Non-root runs get ``--policy other`` added unless a policy is given, so the
    tests that do not need real-time priority run anywhere.
    """

    def run(*args: str, output: str | Path | None = "out", timeout: float = 120, env=None,
            prefix: tuple[str, ...] = ()) -> CaptureRun:
        argv = [*prefix, str(capture_bin), *args]
        out_path = None
        if output is not None:
            out_path = output if isinstance(output, Path) else tmp_path / output
            argv += ["-o", str(out_path)]
        if not is_root() and "--policy" not in args:
            argv += ["--policy", "other"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)
        return CaptureRun(done.returncode, done.stdout, done.stderr, out_path)

    return run


def thread_frames(path: Path) -> dict[int, dict[str, np.ndarray]]:
    """Per thread, every column as a numpy array, in file order."""
    table = pads.dataset(str(path), format="parquet").to_table()
    threads = table.column("thread").to_numpy()
    out: dict[int, dict[str, np.ndarray]] = {}
    for thread in np.unique(threads):
        mask = threads == thread
        out[int(thread)] = {name: table.column(name).to_numpy()[mask] for name in table.column_names}
    return out


def seq_gaps(seq: np.ndarray) -> int:
    """Wake-ups missing between 0 and the last seq (dropped samples)."""
    if len(seq) == 0:
        return 0
    return int(seq[0]) + int(np.sum(np.diff(seq) - 1))


@pytest.fixture(scope="session")
def frames():
    return thread_frames


@pytest.fixture(scope="session")
def gaps():
    return seq_gaps
