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


SCIPY_PACKAGES = tuple(f"scipy.{name}" for name in (
    "special", "signal", "stats", "ndimage", "optimize", "sparse", "linalg", "fft", "interpolate", "integrate"))
UNWANTED = (*SCIPY_PACKAGES, "numpy.random")


def test_spectrum_json_loads_no_scipy_package_only_special_ufuncs(tmp_path):
    """`spectrum --json` end to end, with a planted line found: scipy.special's compiled functions, none of
    scipy's packages (scipy.special's own __init__ alone is 0.3 s of CPU, an eighth of the command at 10^7), and
    no numpy.random (only the median average's reservoir draws)."""
    from jitterscope.io import BaseLatency, PeriodicDisturbance, SimulationSpec, write_simulation

    path = write_simulation(SimulationSpec(base=BaseLatency(distribution="lognormal", median_ns=3_000, spread=0.3),
                                           threads=1, samples=40_000, effects=(
                                               PeriodicDisturbance(frequency_hz=37.0, amplitude_ns=2_000,
                                                                   width_ns=1_000_000),)),
                            tmp_path / "line.parquet", 1)
    code = ("import contextlib, io, json, sys\nfrom jitterscope.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert main(['spectrum', {str(path)!r}, '--json']) == 0\n"
            "peaks = json.loads(out.getvalue())['threads'][0]['peaks']\n"
            "print(json.dumps([[p['frequency_hz'] for p in peaks],\n"
            f"                  sorted(m for m in {UNWANTED!r} if m in sys.modules)]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    frequencies, packages = __import__("json").loads(done.stdout.strip().splitlines()[-1])
    assert any(abs(f - 37.0) < 1.0 for f in frequencies), frequencies  # the null's functions did run
    assert packages == [], packages


def test_the_median_reservoir_draws_from_the_seeded_generator_made_on_first_use():
    from jitterscope.spectrum import WelchAccumulator

    x = np.random.default_rng(5).normal(size=1 << 15)
    reservoirs = []
    for seed in (3, 3, 4):
        acc = WelchAccumulator(1000.0, 64, average="median", reservoir_size=8, seed=seed)
        acc.update(x)  # 1024 segments start at a multiple of nperseg: the reservoir of 8 draws
        reservoirs.append(acc.reservoir)
        assert acc._rng is acc._rng and acc.reservoir_seen > 8
    expected = WelchAccumulator(1000.0, 64, average="median", reservoir_size=8)
    expected._generator = np.random.default_rng(3)  # what the accumulator made at construction before
    expected.update(x)
    assert np.array_equal(reservoirs[0], expected.reservoir) and np.array_equal(reservoirs[0], reservoirs[1])
    assert not np.array_equal(reservoirs[0], reservoirs[2])
