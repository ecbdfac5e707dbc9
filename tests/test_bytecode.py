"""``make install`` leaves the package compiled: with PYTHONDONTWRITEBYTECODE set (as where these tests run), an
import writes no bytecode, so without it every command compiles the modules it imports again (0.5 s of CPU for
the whole package, a fixed cost of every command; issue 25)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAMP = ROOT / ".venv" / ".jitterscope-installed"


def test_make_install_leaves_every_module_compiled():
    if not STAMP.exists():
        pytest.skip("the package was not installed by `make install` (no .venv/.jitterscope-installed)")
    installed = STAMP.stat().st_mtime
    if installed < (ROOT / "Makefile").stat().st_mtime:
        pytest.skip("installed before the Makefile's current recipe: run `make install`")
    sources = [path for path in (ROOT / "analysis" / "jitterscope").rglob("*.py") if path.stat().st_mtime <= installed]
    assert sources
    missing = [str(path.relative_to(ROOT)) for path in sources
               if not Path(importlib.util.cache_from_source(str(path))).exists()]
    assert not missing, f"{len(missing)} module(s) without bytecode after `make install`, e.g. {missing[:3]}"
