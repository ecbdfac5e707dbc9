"""Crash safety (issue 16, must-show 3): SIGKILL at random moments (20 trials) and at every step of a flush.

The trials live in benchmarks/capture_crash.py (which runs 100 random ones);
this test loads them so both check the same thing: stock pyarrow and DuckDB
read the dataset, no (thread, seq) twice, at most one flush interval missing
per thread, ``jitterscope validate`` passes.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

# JITTERSCOPE_FAULT=KIND:STEP:N kills the writer just before STEP (README, hidden knobs).  A flush rewrites the
# hidden twin (write, write-half), syncs it, links it and renames it over the visible part, then syncs the
# directory; a sealing flush and the first flush of a new part do the same with more bytes or a new name; a
# rotation drops the twins' hidden names.
FAULT_STEPS = [
    *(f"flush:{step}:3" for step in ("write", "write-half", "sync", "link", "rename", "dirsync")),
    *(f"seal:{step}:1" for step in ("write", "write-half", "sync", "rename", "dirsync")),
    *(f"newpart:{step}:2" for step in ("write", "write-half", "rename")),
    *(f"rotate:{step}:1" for step in ("unlink0", "unlink1", "dirsync")),
]


@pytest.mark.slow
def test_sigkill_leaves_readable_parts_missing_at_most_one_flush(capture_bin, tmp_path: Path, load_benchmark) -> None:
    crash_trial = load_benchmark("capture_crash").crash_trial
    rng = random.Random(20261130)
    results = [crash_trial(capture_bin, tmp_path / f"t{i}", rng.uniform(0.05, 1.5), flush_s=0.2) for i in range(20)]
    failures = [r for r in results if not r.ok]
    assert not failures, failures
    with_data = [r for r in results if r.missing_s is not None]
    assert len(with_data) >= 15  # most kills land after setup, mid-capture
    assert any(r.parts >= 2 for r in with_data)  # a part every second: kills after rotations too


@pytest.mark.slow
@pytest.mark.parametrize("spec", FAULT_STEPS)
def test_kill_at_each_step_of_a_flush(capture_bin, tmp_path: Path, spec: str, load_benchmark) -> None:
    result = load_benchmark("capture_crash").fault_trial(capture_bin, tmp_path / "run", spec)
    assert result.ok, result
    assert result.rows > 0
