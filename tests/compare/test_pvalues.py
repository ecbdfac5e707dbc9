"""compare's p-values from scipy.special: the same numbers scipy.stats gives, bit for bit (issue 26).

``compare`` does not import scipy.stats (about 1 s of CPU, more than comparing two 20,000-wake-up runs):
:mod:`jitterscope.compare.pvalues` calls the scipy.special functions scipy.stats calls. Each is held here
against scipy.stats on many arguments, support edges, ties and small n included; exact equality, since
"the same functions in the same order" is the claim (a relative 1e-10 would hide a different formula).
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from jitterscope.compare import histogram_tests
from jitterscope.compare.pvalues import (
    binomtest_pvalue,
    kruskal_pvalue,
    kstwo_sf,
    kstwobign_sf,
    norm_ppf,
    norm_sf,
    poisson_sf,
)
from scipy import stats


def _same(ours: float, theirs: float) -> bool:
    theirs = float(theirs)
    return (math.isnan(ours) and math.isnan(theirs)) or ours == theirs


def test_normal_quantile_and_tail_equal_scipy_stats() -> None:
    qs = [0.0, 1e-300, 1e-12, 0.025, 0.5, 0.9, 0.95, 0.975, 0.995, 1 - 1e-12, 1.0, -0.1, 1.1, math.nan]
    for q in qs:
        assert _same(norm_ppf(q), stats.norm.ppf(q)), q
    zs = [-math.inf, -40.0, -8.3, -1.0, -0.0, 0.0, 1e-9, 0.5, 1.96, 5.0, 8.3, 38.0, 40.0, math.inf, math.nan]
    zs += list(np.random.default_rng(1).normal(0, 4, 500))
    for z in zs:
        assert _same(norm_sf(z), stats.norm.sf(z)), z


def test_poisson_tail_equals_scipy_stats_at_and_below_the_support() -> None:
    rng = np.random.default_rng(2)
    cases = [(-1, 3.0), (-5, 0.0), (0, 0.0), (0, 1e-12), (3, 0.0), (0, 2.5), (2.5, 2.5), (math.inf, 4.0),
             (7, math.nan), (math.nan, 3.0), (4, -1.0), (10 ** 6, 10 ** 6 + 0.5)]
    cases += [(int(k), float(mu)) for k, mu in zip(rng.integers(-2, 60, 400), rng.exponential(20, 400), strict=True)]
    for k, mu in cases:
        assert _same(poisson_sf(k, mu), stats.poisson.sf(k, mu)), (k, mu)


def test_two_sided_binomial_test_equals_scipy_stats() -> None:
    rng = np.random.default_rng(3)
    cases = [(0, 1, 0.5), (1, 1, 0.5), (0, 10, 0.0), (10, 10, 1.0), (3, 10, 0.0), (5, 10, 0.5), (0, 6, 0.5),
             (6, 6, 0.5), (2, 4, 0.5), (1, 3, 1 / 3), (50, 100, 0.5), (7, 20, 0.35), (0, 1000, 1e-4)]
    for _ in range(1500):
        n = int(rng.choice([1, 2, 3, 5, 8, 13, 40, 150, 1200, 20000]))
        p = float(rng.choice([rng.uniform(), 0.5, 0.25, 1 / 3, n and 1 / n]))
        cases.append((int(rng.integers(0, n + 1)), n, p))
    for k, n, p in cases:
        assert binomtest_pvalue(k, n, p) == stats.binomtest(k, n, p).pvalue, (k, n, p)
    with pytest.raises(ValueError):
        binomtest_pvalue(5, 4, 0.5)


def test_kruskal_wallis_equals_scipy_stats_with_ties_and_small_groups() -> None:
    rng = np.random.default_rng(4)
    for trial in range(400):
        groups = int(rng.integers(2, 25))
        sizes = rng.integers(1, 60 if trial % 2 else 6, groups)
        if trial % 3 == 0:  # integer nanoseconds: ties everywhere
            samples = [rng.integers(2000, 2040, s).astype(np.float64) for s in sizes]
        elif trial % 3 == 1:
            samples = [rng.lognormal(8, 1, s) for s in sizes]
        else:  # one group shifted: small p-values
            samples = [rng.normal(i == 0, 1, s).round(1) for i, s in enumerate(sizes)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = stats.kruskal(*samples).pvalue
        assert _same(kruskal_pvalue(samples), expected), (trial, samples)
    big = [rng.integers(0, 5000, 2000).astype(np.float64) for _ in range(20)]  # a drift check's size
    assert kruskal_pvalue(big) == stats.kruskal(*big).pvalue
    with pytest.raises(ValueError):
        kruskal_pvalue([np.arange(3.0)])


def _kstwo_cases() -> list[tuple[float, int]]:
    rng = np.random.default_rng(5)
    cases = []
    for n in (1, 2, 7, 140, 141, 500, 3000, 10_000):
        # every branch's edge: the support's end 1/2n, 1/n (Ruben-Gambino), 1 - 1/n, 1/2, n d^2 = 2.2, 18, 370,
        # n d^1.5 = 1.4 (Durbin below, Pelz-Good above)
        edges = [0.0, 0.5 / n, 0.5 / n * (1 + 1e-9), 0.75 / n, 1 / n, 1 / n * (1 + 1e-9), 1 - 1 / n, 0.5,
                 0.4999, math.sqrt(2.2 / n), math.sqrt(2.2 / n) * 0.999, math.sqrt(18 / n),
                 math.sqrt(370 / n), math.sqrt(370 / n) * 0.999, (1.4 / n) ** (2 / 3), (1.4 / n) ** (2 / 3) * 1.001,
                 0.999, 1.0, 1.2, -0.1]
        cases += [(float(d), n) for d in edges]
        cases += [(float(d), n) for d in rng.uniform(0, min(1.0, 6 / math.sqrt(n)), 40)]
    for n in (100_000, 100_001):  # Durbin up to n = 10^5, Pelz-Good beyond (Smirnov's tail is slow at this n)
        cases += [(float((1.4 / n) ** (2 / 3) * f), n) for f in (0.5, 0.999, 1.001, 2.0)]
    return cases


def test_one_sample_kolmogorov_tail_equals_scipy_stats_in_every_branch() -> None:
    for d, n in _kstwo_cases():
        assert _same(kstwo_sf(d, n), stats.kstwo.sf(d, n)), (d, n)
    for x in (-1.0, 0.0, 1e-3, 0.2, 0.8, 1.36, 3.0, 9.0, math.inf, math.nan):
        assert _same(kstwobign_sf(x), stats.kstwobign.sf(x)), x


def _small_n_cases() -> list[tuple[float, int]]:
    """Every n <= 140 (exact branches) and some past it up to 10^5 (the Durbin matrix): each branch and its edges."""
    rng = np.random.default_rng(6)
    cases = []
    for n in range(1, 141):  # Ruben-Gambino's ends (n·d <= 1, n·d >= n - 1): each cut and just beside it
        cases += [(float(c * f), n) for c in (0.75 / n, 1 / n, 1 - 1 / n, 0.5) for f in (1 - 1e-12, 1.0, 1 + 1e-12)]
    for n in [*range(1, 13), *range(15, 139, 9), 139, 140]:  # (the recursions cost ms a call: not every n)
        # the Durbin matrix (n·d² <= 0.754693), Pomeranz's recursion (<= 4), Miller's (twice Smirnov)
        cuts = [math.sqrt(0.754693 / n), math.sqrt(4 / n)]
        cases += [(float(c * f), n) for c in cuts for f in (1 - 1e-12, 1.0, 1 + 1e-12)]
        cases += [(float(d), n) for d in rng.uniform(0.5 / n, min(1.0, 2.5 / math.sqrt(n)), 4)]
        # n·d an integer or one half more (Pomeranz's recursion turns on its fractional part: 0, < 1/2, 1/2, > 1/2)
        pomeranz = [j for j in range(1, n) if 0.754693 < (j + 0.5) ** 2 / n <= 4 and j ** 2 / n > 0.754693]
        cases += [((j + h) / n, n) for j in pomeranz[:1] + pomeranz[-1:] for h in (0.0, 0.5)]
    # a two-sample D is a multiple of 1/lcm(n1, n2), judged at n = round(n1 n2 / (n1 + n2)): ties of values
    # make any such multiple (the statistic of the histograms); sizes from compare's least (100 a run) to 10^5
    for n1, n2 in [(100, 100), (100, 180), (140, 141), (250, 300), (279, 281), (1000, 1500), (20_000, 20_000)]:
        n, lcm = round(n1 * n2 / (n1 + n2)), math.lcm(n1, n2)
        durbin = min(int(lcm * (1.4 / n) ** (2 / 3)), lcm // 2)  # up to the Durbin matrix's end
        cases += [(j / lcm, n) for j in sorted({1, 2, 3, durbin // 3, durbin // 2, durbin, durbin + 1,
                                                *rng.integers(1, lcm // 2, 6).tolist()})]
    return cases


def test_the_exact_and_durbin_branches_equal_scipy_stats_for_every_small_n() -> None:
    """The branches ported from scipy's _ksstats (Durbin matrix, Pomeranz, the n <= 140 product): bit for bit."""
    for d, n in _small_n_cases():
        assert _same(kstwo_sf(d, n), stats.kstwo.sf(d, n)), (d, n)


def test_no_branch_of_the_kolmogorov_tail_imports_scipy_stats() -> None:
    """Each branch once (exact small n, Durbin at n = 10^4, Pomeranz, Pelz-Good, Smirnov), in a fresh process."""
    code = ("import sys; from jitterscope.compare.pvalues import kstwo_sf; "
            "ps = [kstwo_sf(d, n) for d, n in ((0.7 / 50, 50), (0.08, 50), (0.2, 50), (0.5, 50), (0.002, 10_000),"
            " (0.012, 10_000), (0.05, 10_000))]; "
            "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')), all(0 <= p <= 1 for p in ps))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["[]", "True"], done.stdout + done.stderr


@pytest.mark.parametrize("sizes", [(3, 4), (40, 25), (150, 200), (1000, 1000), (4000, 9000), (20_000, 20_000),
                                   (200_000, 300_000)])
def test_two_sample_ks_of_the_histograms_equals_scipy_stats_with_ties(sizes: tuple[int, int]) -> None:
    """compare's KS p-value of two binned runs (ties: one grid bucket) is scipy.stats' for the same D and n."""
    from jitterscope.compare import CompareStream

    rng = np.random.default_rng(sum(sizes))
    runs = []
    for i, size in enumerate(sizes):
        stream = CompareStream(n_boot=2, block_length=10, resample_fraction=1.0, seed=0, run=i)
        stream.update(0, np.arange(size), (rng.lognormal(8, 0.5, size) + 40 * i).astype(np.int64))
        runs.append(stream.result())
    test = {t.name: t for t in histogram_tests(*runs)}["Kolmogorov-Smirnov"]
    en = sizes[0] * sizes[1] / sum(sizes)
    expected = stats.kstwo.sf(test.statistic, round(en)) if en < 1e5 else \
        stats.kstwobign.sf(test.statistic * math.sqrt(en))
    assert test.p_value == expected
