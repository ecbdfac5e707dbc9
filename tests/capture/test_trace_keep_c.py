"""Runs the C unit tests of trace_keep.c's context at a window's start (capture/tests/test_trace_keep.c)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CAPTURE = Path(__file__).resolve().parents[2] / "capture"


def test_trace_keep_unit_tests(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH")
    exe = tmp_path / "test_trace_keep"
    sources = [str(p) for p in sorted(CAPTURE.glob("*.c")) if p.name != "main.c"]  # trace_keep.c's own needs
    subprocess.run(
        [cc, "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", f"-I{CAPTURE}",
         str(CAPTURE / "tests" / "test_trace_keep.c"), *sources, "-o", str(exe)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    passed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("ok ")}
    assert passed == {"first_event_names_the_task", "first_switch_names_the_task_and_prio",
                      "tracked_task_kept_where_they_agree", "empty_window_keeps_the_tracked_task"}
