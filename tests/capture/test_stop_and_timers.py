"""How a capture ends (SIGINT, SIGTERM, loops) and the three timer modes."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from jitterscope.dataset import open_dataset


@pytest.mark.parametrize("signo", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_ends_with_a_final_flush(capture_bin: Path, tmp_path: Path, signo: int) -> None:
    out = tmp_path / "run"
    argv = [str(capture_bin), "-D", "60", "-q", "-o", str(out)] + ([] if os.geteuid() == 0 else ["--policy", "other"])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    sent = time.monotonic()
    proc.send_signal(signo)
    stdout, stderr = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 1.0  # no waiting for the 60 s duration or a flush tick
    assert proc.returncode == 0, stderr
    dataset = open_dataset(out)
    status = dataset.metadata.status
    assert status["state"] == "interrupted" and status["reason"] == signal.Signals(signo).name
    table = dataset.read()
    threads = table.column("thread").to_numpy()
    for info in dataset.metadata.threads:
        rows = int(np.sum(threads == info.thread))
        assert rows == info.samples
        assert rows + info.drops + info.extra["drops_after_last"] == info.extra["wakeups"]
        assert 800 <= rows + info.overruns <= 1600  # ~1.5 s at 1 kHz, everything up to the signal kept
    assert len(stdout.splitlines()) == len(dataset.metadata.threads)


@pytest.mark.parametrize("timer", ["abs", "timerfd", "posix"])
def test_timer_modes_keep_the_invariants(run_capture, frames, timer: str) -> None:
    run = run_capture("-l", "300", "-i", "500", "-q", "--timer", timer)
    assert run.returncode == 0, run.stderr
    dataset = open_dataset(run.output)
    assert dataset.metadata.settings["granted"]["timer"] == timer
    status = dataset.metadata.status
    assert status == {"state": "complete", "reason": "loop count reached", "flushes": status["flushes"],
                      "cpu_load": status["cpu_load"]}
    for col in frames(run.output).values():
        assert len(col["seq"]) == 300 and np.array_equal(col["seq"], np.arange(300))
        steps = np.diff(col["expected_ns"])
        assert np.array_equal(steps, 500_000 * (1 + col["overruns"][1:].astype(np.int64)))
        assert np.all(col["actual_ns"] >= col["expected_ns"])  # no timer mode wakes before its target


def test_frequency_option_sets_the_interval(run_capture) -> None:
    run = run_capture("-l", "50", "-f", "2000", "-q")
    assert run.returncode == 0, run.stderr
    assert all(t.interval_ns == 500_000 for t in open_dataset(run.output).metadata.threads)


def test_affinity_subset_measures_only_those_cpus(run_capture) -> None:
    cpu = max(os.sched_getaffinity(0))
    run = run_capture("-l", "50", "-a", str(cpu), "-q")
    assert run.returncode == 0, run.stderr
    dataset = open_dataset(run.output)
    assert [(t.thread, t.cpu) for t in dataset.metadata.threads] == [(0, cpu)]
    assert set(dataset.read().column("run_cpu").to_numpy()) == {cpu}
    writer_cpu = dataset.metadata.settings["granted"]["writer_cpu"]
    assert writer_cpu != cpu and (writer_cpu == -1) == (len(os.sched_getaffinity(0)) == 1)
