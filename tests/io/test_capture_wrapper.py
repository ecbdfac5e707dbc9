"""``jitterscope capture`` (io/capture.py) and the binary's status output, from the outside as a user meets them.

* SIGINT/SIGTERM/SIGHUP sent to the wrapper alone (``kill``, ``timeout -s INT``) reach the binary, which makes its
  final flush: status ``interrupted``, the last flush kept, and the wrapper's exit status equal to the binary's;
* ``jitterscope-capture … 2>&1 | head -1``: the binary survives the closed pipe and the dataset ends complete;
* a capture that recorded no wake-up ends with a status ``validate`` accepts (and a note saying so).
"""

from __future__ import annotations

import json
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
OPTIONS = ["-f", "1000", "--policy", "other", "-a", "0", "--flush-interval", "0.2", "-q"]


def _status(dataset: Path) -> dict:
    parts = sorted(dataset.glob("part-*.parquet"))
    return json.loads(pq.ParquetFile(parts[-1]).schema_arrow.metadata[b"jitterscope.status"])


def _wait_for_a_flush(dataset: Path, process: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        parts = sorted(dataset.glob("part-*.parquet")) if dataset.exists() else []
        if parts and open_dataset(dataset).num_rows > 200:
            return
        time.sleep(0.1)
    pytest.fail("the capture wrote no flush in time")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_wrapper_alone_ends_the_capture_cleanly(tmp_path, signum) -> None:
    out = tmp_path / "run"
    # a new session: the signal goes to the wrapper only, as with kill or timeout -s, not to a process group
    wrapper = subprocess.Popen([sys.executable, "-c", CLI, "capture", *OPTIONS, "-D", "60", "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_for_a_flush(out, wrapper)
    rows_before = open_dataset(out).num_rows
    wrapper.send_signal(signum)
    stdout, stderr = wrapper.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert wrapper.returncode == 0, stderr  # the binary's status: it ended the run cleanly
    status = _status(out)
    assert status["state"] == "interrupted" and status["reason"] == signal.Signals(signum).name
    dataset = open_dataset(out)
    assert dataset.num_rows >= rows_before  # the last flush is kept (and a final one added)
    assert validate_dataset(out).valid
    assert stdout.startswith("T: 0")  # the binary's final cyclictest line
    # nothing left running: the binary exited with the wrapper
    assert subprocess.run(["pgrep", "-f", str(out)], capture_output=True).returncode == 1


def test_the_wrapper_returns_the_binary_exit_status(tmp_path) -> None:
    bad = subprocess.run([sys.executable, "-c", CLI, "capture", "-i", "10x"], capture_output=True, text=True)
    direct = subprocess.run([str(capture_binary()), "-i", "10x"], capture_output=True, text=True)
    assert bad.returncode == direct.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr == direct.stderr


def test_status_output_into_a_closed_pipe(tmp_path) -> None:
    out = tmp_path / "piped"
    # what `jitterscope-capture ... 2>&1 | head -1` does: the reader goes away after one line
    process = subprocess.Popen([str(capture_binary()), "-f", "1000", "--policy", "other", "-a", "0", "-D", "2",
                                "--flush-interval", "0.2", "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=60) == 0
    assert _status(out)["state"] == "complete"
    assert validate_dataset(out).valid


def test_a_capture_without_a_wake_up_is_valid_and_says_so(tmp_path) -> None:
    out = tmp_path / "empty"
    done = subprocess.run([str(capture_binary()), "-f", "1", "--policy", "other", "-a", "0", "-D", "0.001", "-q",
                           "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = validate_dataset(out)
    assert result.valid and result.rows == 0, result.problems
    assert any("no wake-up was recorded" in note for note in result.notes)
    summary = subprocess.run([sys.executable, "-c", CLI, "summary", str(out)], capture_output=True, text=True)
    assert summary.returncode == 1 and summary.stderr.count("\n") == 1
    assert "no wake-ups were recorded" in summary.stderr and "breaks its contract" not in summary.stderr
