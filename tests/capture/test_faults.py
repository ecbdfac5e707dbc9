"""Faults during setup and mid-capture (issue 2, must-show 4): SCHED_FIFO refused, ENOSPC."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (drops CAP_SYS_NICE / mounts a tmpfs)")


def _no_rt_rights() -> None:
    # RLIMIT_RTPRIO 0 plus no CAP_SYS_NICE (setpriv below): sched_setscheduler(SCHED_FIFO) -> EPERM,
    # as a cgroup without real-time budget does to root.
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))


def _unprivileged(binary: Path, *args: str) -> subprocess.CompletedProcess:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop CAP_SYS_NICE")
    argv = [setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", str(binary), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, preexec_fn=_no_rt_rights)


@needs_root
def test_fifo_refused_says_so_and_policy_other_works(capture_bin: Path, tmp_path: Path) -> None:
    refused = _unprivileged(capture_bin, "-l", "50", "-q", "-o", str(tmp_path / "fifo"))
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "SCHED_FIFO priority 99 refused: Operation not permitted" in lines[0]
    assert "--policy other" in lines[0]
    assert not (tmp_path / "fifo").exists()  # refused before anything was created

    other = _unprivileged(capture_bin, "-l", "200", "-q", "--policy", "other", "-o", str(tmp_path / "other"))
    assert other.returncode == 0, other.stderr
    dataset = open_dataset(tmp_path / "other")
    assert all(t.samples == 200 for t in dataset.metadata.threads)
    granted = dataset.metadata.settings["granted"]
    assert granted["policy"] == "other" and granted["priority"] == 0
    assert any("policy other" in sentence for sentence in granted["degraded"])


ENOSPC_LINE = re.compile(
    r"^jitterscope-capture: write to (\S+) failed: No space left on device; "
    r"the dataset holds (\d+) samples up to the last flush$"
)


@needs_root
@pytest.mark.slow
def test_enospc_stops_cleanly_and_keeps_the_last_flush(capture_bin: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        out = mnt / "run"
        done = subprocess.run(
            [str(capture_bin), "-i", "100", "-D", "120", "-q", "--flush-interval", "0.1", "-o", str(out)],
            capture_output=True, text=True, timeout=150, check=False,
        )
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        match = ENOSPC_LINE.match(lines[0])
        assert match, lines[0]
        held = int(match.group(2))
        assert held > 0
        for part in sorted(out.glob("part-*.parquet")):
            pq.read_table(part)  # every part intact
        dataset = open_dataset(out)
        assert dataset.num_rows == held
        assert dataset.read().num_rows == held
        assert dataset.metadata.status["state"] == "running"  # as of the last flush that fit
        assert sum(t.samples for t in dataset.metadata.threads) == held
        assert not list(out.glob(".part-*"))  # no half-made part left behind
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
