"""peaks.py's running median and root search are scipy's, bit for bit (issue 25: importing scipy.ndimage and
scipy.optimize cost ~0.45 s of CPU of every `spectrum`), and the spectrum path no longer imports them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from jitterscope.spectrum import peaks
from scipy import ndimage, optimize


def test_running_median_is_ndimage_median_filter():
    rng = np.random.default_rng(1)
    for case in range(400):
        n, width = int(rng.integers(1, 600)), 2 * int(rng.integers(0, 40)) + 1
        x = rng.lognormal(size=n)
        if case % 4 == 0:
            x = np.round(x, 1)  # ties
        assert np.array_equal(peaks._running_median(x, width), ndimage.median_filter(x, size=width, mode="reflect"))


def test_brentq_is_scipys_step_for_step():
    rng = np.random.default_rng(0)
    for _ in range(300):
        c, r = rng.normal(size=3), rng.uniform(-3, 3)
        functions = (lambda x, c=c, r=r: np.tanh(x - r) + c[0] * 1e-3 * (x - r) ** 3,
                     lambda x, c=c, r=r: (x - r) * np.exp(c[1] * x),
                     lambda x, c=c, r=r: np.exp(-abs(c[2]) * x) - np.exp(-abs(c[2]) * r))
        for f in functions:
            a, b = r - rng.uniform(0.01, 5), r + rng.uniform(0.01, 5)
            assert peaks.brentq(f, a, b) == optimize.brentq(f, a, b)
    with pytest.raises(ValueError):
        peaks.brentq(lambda x: x * x + 1, -1.0, 1.0)


def test_threshold_ratio_is_the_scipy_root():
    from jitterscope.spectrum.null import mean_null

    for segments in (2, 7, 40, 400):
        null = mean_null(segments, np.hanning(257)[:-1], 128)
        for floor_sd, per_bin in ((0.02, 1e-5), (0.1, 1e-3), (0.3, 1e-7)):
            excess = lambda x, n=null, sd=floor_sd, p=per_bin: (  # noqa: E731
                peaks._sf_uncertain_level(n, np.array([x]), sd)[0] - p)
            top = float(null.isf(per_bin))
            while excess(top) > 0 and top < 1e6 * null.median:
                top *= 2
            assert peaks._threshold_ratio(null, floor_sd, per_bin) == optimize.brentq(excess, null.median, top)


def test_a_welch_spectrum_imports_neither():
    code = ("import sys, numpy as np; from jitterscope.spectrum import WelchAccumulator, find_welch_peaks; "
            "acc = WelchAccumulator(1000.0, 256); rng = np.random.default_rng(0); t = np.arange(1 << 14); "
            "acc.update(rng.normal(size=t.size) + np.sin(2 * np.pi * 37.0 * t / 1000)); "
            "assert find_welch_peaks(acc.result()); "
            "print(sorted(m for m in ('scipy.ndimage', 'scipy.optimize') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
