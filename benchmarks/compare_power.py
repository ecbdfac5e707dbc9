"""Statistical calibration of compare and tails over many seeds (issue 6, "Must show" 2 and 3).

Prints, for ``--seeds`` seeds each (default 100):

* same distribution (two independent simulated runs): seeds where no metric is "regressed" or "improved"
  (want >= 95 %), and how many metrics were "inconclusive" (an interval reaching beyond ±noise: honest, not
  an error);
* a planted 20 % shift of p99 (candidate latencies x 1.2): seeds where p99 is "regressed" (want >= 95 %);
* a known GPD tail: trials where the 90 % profile-likelihood interval of P(latency > x), at a level ten times
  rarer than 1/n (beyond the observed maximum in most trials), covers the truth (want >= 85 %; a trial whose fit
  withholds extrapolation because a model check fired by chance counts as not covering);
* assumption violations: trials where the diagnostics flag strong autocorrelation (AR(1), phi = 0.97) and a
  level shift half-way (x 1.3), and, as the false-alarm reference, i.i.d. lognormal runs that pass.

``--streamed`` judges the pairs with the streamed path instead (``compare_streams`` on ``CompareStream``s, what
``jitterscope compare`` runs on datasets: Poisson block bootstrap on the HDR grid).

Usage: ``python benchmarks/compare_power.py [--seeds 100] [--workers 2] [--streamed]``.
About 10 minutes on 2 idle cores.
The tests run reduced versions (tests/analysis/test_compare.py, test_tails.py).
"""

from __future__ import annotations

import argparse
import functools
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from jitterscope.compare import CompareStream, compare_samples, compare_streams
from jitterscope.io import SimulationSpec, simulate
from jitterscope.tails import fit_tail
from scipy import stats

METRICS = ("p50", "p99", "p99.9", "p99.99", "max")
PAIR_SPEC = SimulationSpec(threads=2, samples=5_000)
GPD_N = 5_000
GPD_XI = 0.2


def _pooled(seed: int) -> tuple[np.ndarray, object]:
    sim = simulate(PAIR_SPEC, seed)
    table = sim.table
    order = np.lexsort((table["seq"].to_numpy(), table["thread"].to_numpy()))
    return (table["actual_ns"].to_numpy() - table["expected_ns"].to_numpy())[order], sim.metadata


def _streamed(runs: list[np.ndarray], metas: list[object], seed: int):
    """compare_streams on the series, each streamed as one thread (block length by Politis-White, as compare)."""
    from jitterscope.compare import optimal_block_length

    streams = []
    for index, values in enumerate(runs):
        stream = CompareStream(n_boot=1000, block_length=optimal_block_length(values).length, resample_fraction=1.0,
                               seed=seed, run=index)
        streams.append(stream.update(0, np.arange(values.size), values).result())
    return compare_streams(streams, metas, ["a", "b"])


def pair_trial(seed: int, streamed: bool = False) -> tuple[bool, bool, tuple[str, ...], int]:
    a, meta_a = _pooled(10_000 + seed)
    b, meta_b = _pooled(20_000 + seed)
    slower = (b * 1.2).astype(np.int64)
    if streamed:
        same = _streamed([a, b], [meta_a, meta_b], seed).pairs[0]
        shifted = _streamed([a, slower], [meta_a, meta_b], seed).pairs[0]
    else:
        same = compare_samples([a, b], [meta_a, meta_b], ["a", "b"], seed=seed).pairs[0]
        shifted = compare_samples([a, slower], [meta_a, meta_b], ["a", "b"], seed=seed).pairs[0]
    noisy = tuple(m for m in METRICS if same.verdict(m) in ("regressed", "improved"))
    inconclusive = sum(same.verdict(m) == "inconclusive" for m in METRICS)
    return not noisy, shifted.verdict("p99") == "regressed", noisy, inconclusive


def gpd_trial(seed: int) -> tuple[bool, bool, float, bool]:
    rng = np.random.default_rng(30_000 + seed)
    truth = 1 / (10 * GPD_N)
    level = 5000 + stats.genpareto.isf(truth, GPD_XI, scale=1000)
    x = 5000 + stats.genpareto.rvs(GPD_XI, scale=1000, size=GPD_N, random_state=rng)
    fit = fit_tail(x, interval_ns=1_000_000, levels_ns=(level,))
    interval = dict(fit.exceedance_probabilities).get(level)
    if interval is None:  # the fit withheld extrapolation (a model check failed): counts as not covered
        return False, level > fit.observed_max_ns, float("nan"), True
    return interval.lower <= truth <= interval.upper, level > fit.observed_max_ns, interval.upper / truth, False


def violation_trial(seed: int) -> tuple[bool, bool, bool]:
    rng = np.random.default_rng(40_000 + seed)
    n, phi = 10_000, 0.97
    z = rng.standard_normal(n) * np.sqrt(1 - phi**2)
    e = np.empty(n)
    e[0] = rng.standard_normal()
    for i in range(1, n):
        e[i] = phi * e[i - 1] + z[i]
    ar = fit_tail(3000 * np.exp(0.5 * e), interval_ns=1_000_000)
    ar_flagged = any(not c.passed and c.name in ("exceedance autocorrelation", "extremal index",
                                                 "block-maximum autocorrelation") for c in ar.checks)
    shift = 3000 * np.exp(0.3 * rng.standard_normal(n))
    shift[n // 2:] *= 1.3
    sh = fit_tail(shift, interval_ns=1_000_000)
    shift_flagged = any(not c.passed and "first vs second half" in c.name for c in sh.checks)
    iid = fit_tail(3000 * np.exp(0.3 * rng.standard_normal(n)), interval_ns=1_000_000)
    return ar_flagged, shift_flagged, iid.assumptions_ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("pairs", "gpd", "violations"), help="run one block only")
    parser.add_argument("--streamed", action="store_true", help="judge the pairs with the streamed path")
    args = parser.parse_args()
    seeds = range(args.seeds)
    n = args.seeds
    with ProcessPoolExecutor(args.workers) as pool:
        if args.only in (None, "pairs"):
            start = time.perf_counter()
            pairs = list(pool.map(functools.partial(pair_trial, streamed=args.streamed), seeds))
            print(f"pairs judged {'streamed (compare_streams)' if args.streamed else 'in memory (compare_samples)'}")
            noisy = [m for _, _, ms, _ in pairs for m in ms]
            print(f"same distribution, no metric called a change: {sum(p[0] for p in pairs)}/{n} "
                  f"(want >= {0.95 * n:.0f}); inconclusive metrics {sum(p[3] for p in pairs)}/{len(METRICS) * n}"
                  + (f"; metrics called a change: "
                                                 f"{', '.join(f'{m} x{noisy.count(m)}' for m in METRICS if m in noisy)}"
                                                 if noisy else ""))
            print(f"20% shift of p99, p99 regressed:              {sum(p[1] for p in pairs)}/{n} "
                  f"(want >= {0.95 * n:.0f})   [{time.perf_counter() - start:.0f} s]", flush=True)
        if args.only in (None, "gpd"):
            start = time.perf_counter()
            gpd = list(pool.map(gpd_trial, seeds))
            ratios = np.array([g[2] for g in gpd])
            print(f"GPD tail, 90% interval of P(X > x) covers:    {sum(g[0] for g in gpd)}/{n} "
                  f"(want >= {0.85 * n:.0f}); level beyond the observed max in {sum(g[1] for g in gpd)}/{n}; "
                  f"median upper/truth {np.nanmedian(ratios):.1f}; extrapolation withheld (counted as not covering) in "
                  f"{sum(g[3] for g in gpd)}/{n}   [{time.perf_counter() - start:.0f} s]", flush=True)
        if args.only in (None, "violations"):
            start = time.perf_counter()
            violations = list(pool.map(violation_trial, seeds))
            print(f"AR(1) phi=0.97, dependence flagged:           {sum(v[0] for v in violations)}/{n}")
            print(f"level shift x1.3 half-way, halves flagged:    {sum(v[1] for v in violations)}/{n}")
            print(f"i.i.d. lognormal, all checks pass:            {sum(v[2] for v in violations)}/{n} "
                  f"(false-alarm reference)   [{time.perf_counter() - start:.0f} s]", flush=True)

if __name__ == "__main__":
    main()
