"""Presence tests of Lomb-Scargle lines in bounded memory (issue 25: a 10^8 report with gaps peaked above 1.5 GB).

``presence_in_samples`` computes Fourier sums of up to 2^18 samples at 23 frequencies; as one (frequencies x
samples) complex matrix that was ~0.2 GB of temporaries on top of every result the report holds.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from jitterscope.spectrum import stationarity


def _direct(t: np.ndarray, v: np.ndarray, f: float, span: float, nyquist: float) -> float:
    """The ratio computed as written in its docstring: the whole matrix at once."""
    resolution = 1.0 / span
    others = f + np.r_[-12:-1, 2:13] * resolution
    others = others[(others > resolution) & (others < nyquist)]
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.clip((t - t[0]) / span, 0.0, 1.0))
    x = (v - v.mean()) * w
    power = np.abs(np.exp(-2j * np.pi * np.outer(np.r_[f, others], t - t[0])) @ x) ** 2
    return float(power[0] / (np.median(power[1:]) / math.log(2)))


def test_ratio_of_lomb_scargle_sized_input_is_exact_and_small():
    rng = np.random.default_rng(7)
    n = 1 << 18  # SpectralOptions.ls_max_points
    t = np.cumsum(rng.uniform(0.9e-4, 1.1e-4, n))
    v = rng.lognormal(8.0, 0.3, n) + 300.0 * np.sin(2 * np.pi * 113.0 * t)
    span = float(t[-1] - t[0])
    tracemalloc.start()
    try:
        ratio = stationarity._ratio(t, v, 113.0, span, 5000.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ratio == pytest.approx(_direct(t, v, 113.0, span, 5000.0), rel=1e-9)
    assert ratio > 100  # the planted line stands out
    # the whole matrix and its temporaries were ~190 MiB here; the inputs' own copies are 4 x 2 MiB
    assert peak < 40 * 2**20, f"{peak / 2**20:.0f} MiB traced"
