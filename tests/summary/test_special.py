"""special_ufuncs and sparse_tools: scipy.special's functions and scipy.sparse's kernels without running their
packages' __init__, and a real import of the package afterwards that works and shares them (issue 26:
compare of small runs in <= 1 s)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from jitterscope.summary import special_ufuncs
ufuncs = special_ufuncs()
light = "scipy.special" not in sys.modules and "scipy.special._support_alternative_backends" not in sys.modules
value = float(ufuncs.ndtr(1.5))
from scipy import special  # the real package, after the stand-in was removed
import scipy.stats
shared = special.ndtr is ufuncs.ndtr and special._ufuncs is ufuncs and special.gammaincinv is ufuncs.gammaincinv
works = special.logsumexp([0.0, 0.0]) > 0.69 and scipy.stats.norm.sf(-1.5) == value
print(light, shared, works, special_ufuncs() is ufuncs)
"""

SPARSE = """
import sys
import numpy as np
from jitterscope.summary import sparse_tools
tools = sparse_tools()
light = not any(m in sys.modules for m in ("scipy.sparse", "scipy.sparse._sparsetools", "scipy._lib._array_api"))
y = np.zeros(4)
tools.csr_matvecs(2, 2, 2, np.array([0, 1, 3]), np.array([0, 0, 1]), np.ones(3), np.array([1.0, 2, 3, 4]), y)
import scipy.sparse  # the real package afterwards: whole, and the same kernels
a = scipy.sparse.csr_array((np.ones(3), (np.array([0, 1, 1]), np.array([0, 0, 1]))), shape=(2, 2))
works = np.array_equal(a @ np.array([[1.0, 2], [3, 4]]), y.reshape(2, 2))
shared = scipy.sparse._sparsetools.csr_matvecs is tools.csr_matvecs
print(light, works, shared, sparse_tools().csr_matvecs is tools.csr_matvecs)
"""


def test_the_ufuncs_load_alone_and_scipy_special_imports_whole_afterwards() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True", "True", "True"], done.stderr


def test_sparse_kernels_load_alone_and_scipy_sparse_imports_whole_afterwards() -> None:
    done = subprocess.run([sys.executable, "-c", SPARSE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True", "True", "True"], done.stderr
