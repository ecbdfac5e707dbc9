"""special_ufuncs: scipy.special's functions without running scipy/special/__init__.py, and a real
``import scipy.special`` afterwards that works and shares them (issue 26: compare of small runs in <= 1 s)."""

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


def test_the_ufuncs_load_alone_and_scipy_special_imports_whole_afterwards() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True", "True", "True"], done.stderr
