"""The spectrum's own prominence and chi2 null: the same numbers scipy.signal / scipy.stats give.

``spectrum`` imports neither scipy.signal nor scipy.stats for a Welch spectrum (0.8 s of CPU between them,
issue 25): :func:`peak_prominences` stands in for ``scipy.signal.peak_prominences`` and the mean null's
functions call the ``scipy.special`` functions ``scipy.stats.chi2`` calls.  Both must agree bit for bit, edge
cases included (plateaus, ties, peaks at the ends, arguments at and below the support).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
from jitterscope.spectrum.null import NullDistribution
from jitterscope.spectrum.peaks import peak_prominences
from scipy import signal, stats


def test_prominences_equal_scipys_on_noise_plateaus_and_ties():
    rng = np.random.default_rng(7)
    for trial in range(600):
        n = int(rng.integers(1, 200))
        if trial % 3 == 0:
            x = rng.normal(size=n)
        elif trial % 3 == 1:
            x = rng.integers(0, 4, n).astype(float)  # plateaus and ties everywhere
        else:
            x = np.round(rng.normal(size=n), 1)
        peaks = rng.choice(n, size=min(n, int(rng.integers(1, 8))), replace=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns of a prominence of 0
            expected = signal.peak_prominences(x, peaks)[0]
        assert np.array_equal(peak_prominences(x, peaks), expected), (x, peaks)
    assert peak_prominences(np.arange(3.0), np.array([], dtype=int)).size == 0


def test_mean_null_equals_scipy_stats_chi2_at_and_beyond_its_support():
    rng = np.random.default_rng(3)
    for dof in (0.7, 2.0, 9.4, 61.3, 5000.0):
        null = NullDistribution(kind="mean", dof=dof, order=0)
        x = np.concatenate([[-np.inf, -3.0, -0.0, 0.0, 1e-300, np.nan, np.inf], rng.exponential(dof, 2000)])
        assert np.array_equal(null.sf(x), stats.chi2.sf(x, dof), equal_nan=True)
        assert null.sf(-1.0) == 1.0 and null.sf(2.0) == stats.chi2.sf(2.0, dof)
        q = np.concatenate([[0.0, 1.0, -0.5, 1.5, np.nan, 0.5], rng.uniform(0, 1, 2000),
                            10 ** -rng.uniform(0, 300, 200)])
        assert np.array_equal(null.isf(q), stats.chi2.isf(q, dof), equal_nan=True)
        assert null.median == stats.chi2.median(dof)


def test_a_welch_spectrum_imports_neither_scipy_signal_nor_scipy_stats(tmp_path):
    code = ("import sys\nfrom jitterscope.spectrum.peaks import find_welch_peaks\n"
            "from jitterscope.spectrum.null import NullDistribution\n"
            "print(sorted(m for m in ('scipy.signal', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
