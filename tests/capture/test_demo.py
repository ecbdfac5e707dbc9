"""``jitterscope demo`` and :func:`jitterscope.io.capture_dataset` (short runs)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.errors import CaptureError
from jitterscope.io import capture_dataset, demo_output_dir


def test_demo_output_dir_is_timestamped() -> None:
    assert demo_output_dir("out", datetime(2026, 11, 30, 4, 5, 6)) == Path("out/demo-20261130-040506")


def test_capture_dataset_refuses_existing_output(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="already exists"):
        capture_dataset(tmp_path, seconds=1)


def test_demo_captures_summarises_and_prints_the_path(tmp_path: Path, capsys) -> None:
    assert main(["demo", "-D", "1", "--out", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr().out
    [made] = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert made.name.startswith("demo-")
    assert f"dataset: {made}" in out
    report = tmp_path / f"{made.name}-report.pdf"
    assert out.rstrip().endswith(f"report: {report}") and report.read_bytes().startswith(b"%PDF")
    dataset = open_dataset(made)
    lines = [line for line in out.splitlines() if line.startswith("T:")]
    assert len(lines) == len(dataset.metadata.threads) == len(os.sched_getaffinity(0))
    assert "p99" in out  # the summary table
    assert dataset.metadata.settings["asked"]["interval_ns"] == 1_000_000


def _no_rt_rights() -> None:
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_demo_falls_back_to_policy_other_with_a_note(tmp_path: Path, capture_bin: Path) -> None:
    env = dict(os.environ, JITTERSCOPE_CAPTURE=str(capture_bin))
    done = subprocess.run(
        ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", sys.executable, "-c",
         "import sys; from jitterscope.cli import main; sys.exit(main())",
         "demo", "-D", "1", "--out", str(tmp_path), "-q"],
        capture_output=True, text=True, timeout=120, check=False, env=env, preexec_fn=_no_rt_rights,
    )
    assert done.returncode == 0, done.stderr
    assert "note: real-time scheduling was refused" in done.stderr and "--policy other" in done.stderr
    [made] = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert open_dataset(made).metadata.settings["granted"]["policy"] == "other"
