"""Every signal a capture meets, for the wrapper (``jitterscope capture``) and the binary (issue 26).

For SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to either alone, a SIGKILL of the wrapper, and a closed output pipe:
no process is left running, the dataset is valid, its status says why it stopped, and at most one flush is lost
(the last wake-up on disk is within one flush interval, plus slack for a loaded machine, of the signal).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, validate_dataset
from jitterscope.io import capture_binary

CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"
FLUSH_S = 0.2
OPTIONS = ["-f", "1000", "--policy", "other", "-a", "0", "--flush-interval", str(FLUSH_S), "-q"]
SLACK_S = 1.0
"""Allowed beyond one flush interval between the signal and the last wake-up on disk: the machine running the
tests is shared and loaded (a lost flush would show as a gap of whole seconds)."""
STOPPING = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT]


def _status(dataset: Path) -> dict:
    parts = sorted(dataset.glob("part-*.parquet"))
    return json.loads(pq.ParquetFile(parts[-1]).schema_arrow.metadata[b"jitterscope.status"])


def _wait_for_a_flush(dataset: Path, process: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if dataset.exists() and sorted(dataset.glob("part-*.parquet")) and open_dataset(dataset).num_rows > 200:
            return
        time.sleep(0.1)
    pytest.fail("the capture wrote no flush in time")


def _binaries_left(out: Path) -> list[int]:
    done = subprocess.run(["pgrep", "-f", "--", f"-o {out}"], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]


def _wait_gone(out: Path, timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := _binaries_left(out)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _check_dataset(out: Path, signalled_ns: int, reason: str) -> None:
    status = _status(out)
    assert status["state"] == "interrupted", status
    assert reason in status["reason"], status
    result = validate_dataset(out)
    assert result.valid, result.problems
    last = int(open_dataset(out).read(columns=["actual_ns"]).column("actual_ns").to_numpy().max())
    # CLOCK_MONOTONIC on both sides: the final flush holds the wake-ups up to the signal, not one flush earlier
    assert last >= signalled_ns - (FLUSH_S + SLACK_S) * 1e9, (signalled_ns - last) / 1e9


@pytest.mark.parametrize("signum", STOPPING, ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_the_wrapper(tmp_path, signum) -> None:
    out = tmp_path / "run"
    wrapper = subprocess.Popen([sys.executable, "-c", CLI, "capture", *OPTIONS, "-D", "60", "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_for_a_flush(out, wrapper)
    signalled = time.monotonic_ns()
    wrapper.send_signal(signum)
    _, stderr = wrapper.communicate(timeout=60)
    assert "Traceback" not in stderr and wrapper.returncode == 0, stderr
    assert not _wait_gone(out)
    _check_dataset(out, signalled, signal.Signals(signum).name)


@pytest.mark.parametrize("signum", STOPPING, ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_the_binary(tmp_path, signum) -> None:
    out = tmp_path / "run"
    binary = subprocess.Popen([str(capture_binary()), *OPTIONS, "-D", "60", "-o", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_a_flush(out, binary)
    signalled = time.monotonic_ns()
    binary.send_signal(signum)
    _, stderr = binary.communicate(timeout=60)
    assert binary.returncode == 0, stderr  # SIGQUIT no longer dumps core: the run ends as on SIGTERM
    _check_dataset(out, signalled, signal.Signals(signum).name)


def test_sigkill_of_the_wrapper_stops_the_binary(tmp_path) -> None:
    """The orphan of issue 26: the wrapper killed, its binary went on at SCHED_FIFO 99 (forever without -D)."""
    out = tmp_path / "run"
    wrapper = subprocess.Popen([sys.executable, "-c", CLI, "capture", *OPTIONS, "-o", str(out)],  # no -D
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    _wait_for_a_flush(out, wrapper)
    assert _binaries_left(out)
    signalled = time.monotonic_ns()
    wrapper.kill()
    wrapper.wait(timeout=30)
    assert not _wait_gone(out), "the capture binary outlived its wrapper"
    _check_dataset(out, signalled, f"parent died: the jitterscope wrapper (pid {wrapper.pid}) ended")


def test_a_binary_whose_wrapper_already_died_does_not_start(tmp_path) -> None:
    """The race PR_SET_PDEATHSIG alone misses: the wrapper died before the binary asked to be told."""
    out = tmp_path / "run"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that is not our parent (and not alive)
    env = {**os.environ, "JITTERSCOPE_CAPTURE_PARENT": str(gone.pid)}
    done = subprocess.run([str(capture_binary()), *OPTIONS, "-D", "5", "-o", str(out)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"jitterscope-capture: the jitterscope wrapper (pid {gone.pid}) has already "
                                   "ended; not starting")
    assert not out.exists()


@pytest.mark.parametrize("through", ["wrapper", "binary"])
def test_a_closed_output_pipe(tmp_path, through) -> None:
    """SIGPIPE: ``… | head -1`` closes the reader; the capture runs to its end and the dataset is complete."""
    out = tmp_path / "run"
    command = [sys.executable, "-c", CLI, "capture"] if through == "wrapper" else [str(capture_binary())]
    process = subprocess.Popen([*command, *OPTIONS[:-1], "-D", "1.5", "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert process.stdout is not None
    process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=60) == 0
    assert not _wait_gone(out)
    assert _status(out)["state"] == "complete"
    assert validate_dataset(out).valid


def test_a_failed_capture_leaves_no_directory(tmp_path) -> None:
    out = tmp_path / "made-by-the-run"
    done = subprocess.run([str(capture_binary()), *OPTIONS, "-D", "1", "--trace=bogus:event", "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    if os.geteuid() != 0:
        pytest.skip("--trace needs root")
    assert done.returncode == 1 and "bogus:event" in done.stderr
    assert not out.exists()


def test_a_failed_capture_keeps_a_directory_it_did_not_make(tmp_path) -> None:
    out = tmp_path / "given"
    out.mkdir()
    (out / "part-00000.parquet").write_bytes(b"an older capture")
    done = subprocess.run([str(capture_binary()), *OPTIONS, "-D", "1", "--force", "--trace=bogus:event", "-o",
                           str(out)], capture_output=True, text=True, timeout=60)
    if os.geteuid() != 0:
        pytest.skip("--trace needs root")
    assert done.returncode == 1
    assert out.is_dir()
