"""scipy.special's compiled functions (ndtr, smirnov, gammaincinv, …) and scipy.sparse's kernels without
the cost of importing those packages.

``import scipy.special`` costs about 0.3 s of CPU before the first call: its array-API layer clones numpy's
namespace (``array_api_compat``) and parses the docstring of each of ~90 functions (``xp_capabilities``). The
functions themselves are one compiled module, ``scipy.special._ufuncs`` (the very objects ``scipy.special``
exports for numpy arrays), that loads in ~0.03 s. ``compare`` of two small runs (issue 26: <= 1 s end to end)
needs a few of them and nothing of that layer; so do the tails' and power's functions on its path. The same
holds for its bootstrap's one sparse product (:func:`sparse_tools`).
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
    return _compiled("scipy.special", "_ufuncs", keep=True)


def sparse_tools() -> types.ModuleType:
    """``scipy.sparse._sparsetools`` (the C++ kernels of scipy.sparse: ``csr_matvecs`` …), without ``import
    scipy.sparse`` (~0.15 s of CPU, most of it scipy's array-API layer again).

    Returns
    -------
    types.ModuleType
        The module; its functions are the ones ``scipy.sparse`` calls (the same objects).

    Notes
    -----
    As :func:`special_ufuncs`; the module is then taken out of ``sys.modules`` again, since ``scipy.sparse``'s
    ``__init__`` would not bind one it finds there as its attribute (a later ``import scipy.sparse`` loads it
    itself, and shares its functions: the compiled module is loaded once per process).
    """
    return _compiled("scipy.sparse", "_sparsetools", keep=False)


def _compiled(package: str, name: str, *, keep: bool) -> types.ModuleType:
    with _LOCK:
        if package in sys.modules:
            return importlib.import_module(f"{package}.{name}")
        import scipy

        stand_in = types.ModuleType(package)
        stand_in.__path__ = [str(Path(scipy.__file__).parent / package.split(".")[1])]
        sys.modules[package] = stand_in
        try:
            module = importlib.import_module(f"{package}.{name}")
        finally:
            if sys.modules.get(package) is stand_in:
                del sys.modules[package]
        if not keep:
            sys.modules.pop(f"{package}.{name}", None)
        return module
