"""Overload (issue 2, must-show 6): 50 us interval on every CPU with stress-ng hogging them.

Drops must show up as seq gaps that add up to the reported drops exactly, the
expected_ns steps must stay explainable, and the capture must end on time.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from jitterscope.dataset import open_dataset, validate_dataset

INTERVAL_NS = 50_000
SECONDS = 3


@pytest.fixture(scope="module")
def stress():
    stress_ng = shutil.which("stress-ng")
    if stress_ng is None:
        pytest.skip("stress-ng is not installed (apt-get install stress-ng)")
    proc = subprocess.Popen([stress_ng, "--cpu", "2", "--timeout", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    yield proc
    proc.terminate()
    proc.wait(timeout=10)


def _check(out: Path, frames, gaps) -> int:
    dataset = open_dataset(out)
    total_drops = 0
    for thread, col in frames(out).items():
        info = dataset.metadata.thread(thread)
        seq = col["seq"]
        wakeups = info.extra["wakeups"]
        trailing = wakeups - 1 - int(seq[-1])  # dropped after the last written sample: no gap to show them
        assert gaps(seq) == info.drops
        assert trailing == info.extra["drops_after_last"]
        assert len(seq) + info.drops + trailing == wakeups
        steps = np.diff(col["expected_ns"])
        assert np.array_equal(steps, INTERVAL_NS * (np.diff(seq) + col["overruns"][1:].astype(np.int64)))
        assert np.all(col["actual_ns"] >= col["expected_ns"])
        total_drops += info.drops
    assert dataset.metadata.status["state"] == "complete"
    verdict = validate_dataset(out)  # the analysis side's own contract check agrees
    assert verdict.valid, verdict.problems
    return total_drops


@pytest.mark.slow
@pytest.mark.parametrize("ring", [None, 64], ids=["default-ring", "tiny-ring"])
def test_overload_gaps_equal_drops_and_ends_on_time(stress, run_capture, frames, gaps, ring) -> None:
    assert stress.poll() is None, "stress-ng died"
    extra = ["--ring", str(ring)] if ring else []
    started = time.monotonic()
    run = run_capture("-i", str(INTERVAL_NS // 1000), "-D", str(SECONDS), "-q", "--flush-interval", "0.2", *extra,
                      timeout=SECONDS + 30)
    wall = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    # never blocks: the duration is kept by the measuring threads themselves; allow setup and the final flush
    assert wall < SECONDS + 4, f"capture took {wall:.1f} s for a {SECONDS} s duration"
    drops = _check(run.output, frames, gaps)
    if ring:
        assert drops > 0  # a 64-sample ring cannot hold 10 ms of 20 kHz wake-ups: drops are certain
