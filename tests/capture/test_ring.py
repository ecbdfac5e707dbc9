"""Runs the C unit tests of the sample ring (capture/tests/test_ring.c)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CAPTURE = Path(__file__).resolve().parents[2] / "capture"


def test_ring_unit_tests(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH")
    exe = tmp_path / "test_ring"
    subprocess.run(
        [cc, "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
         f"-I{CAPTURE}", str(CAPTURE / "tests" / "test_ring.c"), str(CAPTURE / "ring.c"), "-o", str(exe)],
        check=True, capture_output=True, text=True,
    )
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    passed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("ok ")}
    assert passed == {"capacity_rounds_up", "empty_pop", "wrap_around", "full_drops_and_counts", "spsc_threads",
                      "spsc_lossless"}
