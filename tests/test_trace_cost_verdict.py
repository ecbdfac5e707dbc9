"""benchmarks/trace_cost.py's verdict over interleaved pairs: met, NOT met, or cannot tell (the pairs' own spread)."""

from __future__ import annotations

import numpy as np


def test_a_ratio_inside_the_pairs_spread_cannot_tell(load_benchmark) -> None:
    tc = load_benchmark("trace_cost")
    # the 8 pairs measured on 2026-12-02 (p50 traced / plain): pooled 1.22, but 0.81-1.72 pair to pair
    measured = np.array([32.3 / 18.8, 32.4 / 26.3, 17.7 / 20.1, 18.5 / 22.7, 34.7 / 34.8, 29.8 / 25.3,
                         26.1 / 19.1, 32.3 / 20.2])
    mid, low, high = tc.ratio_interval(measured)
    assert low < 1.10 < high and abs(mid - np.median(measured)) < 1e-12
    assert "cannot tell" in tc.interval_verdict(measured, 1.10)


def test_tight_pairs_give_a_verdict_either_way(load_benchmark) -> None:
    tc = load_benchmark("trace_cost")
    rng = np.random.default_rng(3)
    assert tc.interval_verdict(1.03 + rng.normal(0, 0.01, 10), 1.10).endswith("(target <= 1.10: met)")
    assert "NOT met" in tc.interval_verdict(1.30 + rng.normal(0, 0.01, 10), 1.10)
