"""scipy.special's compiled functions (ndtr, smirnov, gammaincinv, …) without ``import scipy.special``'s own cost.

``import scipy.special`` costs about 0.3 s of CPU before the first call: its array-API layer clones numpy's
namespace (``array_api_compat``) and parses the docstring of each of ~90 functions (``xp_capabilities``). The
functions themselves are one compiled module, ``scipy.special._ufuncs`` (the very objects ``scipy.special``
exports for numpy arrays), that loads in ~0.03 s. ``compare`` of two small runs (issue 26: <= 1 s end to end)
needs a few of them and nothing of that layer; so do the tails' and power's functions on its path.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from pathlib import Path

_LOCK = threading.Lock()


def special_ufuncs() -> types.ModuleType:
    """``scipy.special._ufuncs``, loaded without running ``scipy/special/__init__.py`` unless it has run already.

    Returns
    -------
    types.ModuleType
        The module; its functions are ``scipy.special``'s (``special_ufuncs().ndtr is scipy.special.ndtr``).

    Notes
    -----
    A submodule's import needs its package in ``sys.modules``: a bare package object stands in for
    ``scipy.special`` while ``_ufuncs`` (and the compiled modules it imports) load, and is removed at once, so a
    later ``import scipy.special`` runs the real ``__init__`` and picks up the same ``_ufuncs``
    (tests/summary/test_special.py). The lock keeps two threads from meeting the stand-in.
    """
    with _LOCK:
        if "scipy.special" in sys.modules:
            return importlib.import_module("scipy.special._ufuncs")
        import scipy

        stand_in = types.ModuleType("scipy.special")
        stand_in.__path__ = [str(Path(scipy.__file__).parent / "special")]
        sys.modules["scipy.special"] = stand_in
        try:
            return importlib.import_module("scipy.special._ufuncs")
        finally:
            if sys.modules.get("scipy.special") is stand_in:
                del sys.modules["scipy.special"]
