"""Runs the C unit tests of the steal series (capture/tests/test_steal.c): parsing, merging, the cap (issue 21)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CAPTURE = Path(__file__).resolve().parents[2] / "capture"


def test_steal_unit_tests(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH")
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat")
    exe = tmp_path / "test_steal"
    subprocess.run(
        [cc, "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{CAPTURE}",
         str(CAPTURE / "tests" / "test_steal.c"), str(CAPTURE / "steal.c"), str(CAPTURE / "jsonw.c"), "-o", str(exe)],
        check=True, capture_output=True, text=True,
    )
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert {line.split()[1] for line in done.stdout.splitlines() if line.startswith("ok ")} == {"parse", "merge", "cap"}
