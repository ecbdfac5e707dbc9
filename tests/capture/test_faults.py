"""Faults during setup and mid-capture (issues 2 and 16): SCHED_FIFO refused, ENOSPC, EIO at each step of a flush."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
from pathlib import Path

import numpy as np
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
EIO_LINE = re.compile(
    r"^jitterscope-capture: write to (\S+) failed: Input/output error; "
    r"the dataset holds (\d+) samples up to the last flush$"
)


def _check_kept(out: Path, held: int) -> None:
    """Every sample flushed before the failure reads back, once, and nothing hidden is left."""
    for part in sorted(out.glob("part-*.parquet")):
        pq.read_table(part)  # every part intact
    dataset = open_dataset(out)
    table = dataset.read(["thread", "seq"])
    assert dataset.num_rows == table.num_rows == held
    keys = table.column("thread").to_numpy().astype(np.int64) << 40 | table.column("seq").to_numpy()
    assert len(np.unique(keys)) == held  # no duplicate (thread, seq)
    assert dataset.metadata.status["state"] == "running"  # as of the last flush that made it
    assert sum(t.samples for t in dataset.metadata.threads) == held
    assert not list(out.glob(".part-*"))  # no hidden twin left behind


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["flush:write:4:eio", "flush:write-half:4:eio", "flush:sync:4:eio",
                                  "flush:rename:4:eio", "seal:write-half:1:eio", "newpart:write:2:eio"])
def test_eio_mid_flush_stops_with_one_line_and_keeps_what_was_flushed(capture_bin: Path, tmp_path: Path,
                                                                       spec: str) -> None:
    out = tmp_path / "run"
    argv = [str(capture_bin), "-D", "20", "-q", "--flush-interval", "0.1", "--group-seconds", "0.3",
            "--part-seconds", "0.6", "-o", str(out)] + ([] if os.geteuid() == 0 else ["--policy", "other"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, JITTERSCOPE_FAULT=spec))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    match = EIO_LINE.match(lines[0])
    assert match, lines[0]
    held = int(match.group(2))
    assert held > 0
    _check_kept(out, held)


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
        _check_kept(out, held)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
