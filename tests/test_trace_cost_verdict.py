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


def _pairs(rng: np.random.Generator, pairs: int, cost: float, drift: float) -> tuple[list, list]:
    """Pairs of 3,000 latencies (ns), traced = cost x plain, each run's scale drifting on its own (the host
    moves between the two runs of a pair too: the p50 of identical 15 s runs here spans 18.8-34.8 µs)."""
    plain, traced = [], []
    for _ in range(pairs):
        plain.append(rng.gamma(9.0, 18_000 * np.exp(rng.normal(0, drift)) / 9.0, 3_000))
        traced.append(rng.gamma(9.0, 18_000 * np.exp(rng.normal(0, drift)) * cost / 9.0, 3_000))
    return plain, traced


def test_the_pooled_interval_holds_the_planted_cost_and_widens_with_the_drift(load_benchmark) -> None:
    tc = load_benchmark("trace_cost")
    rng = np.random.default_rng(11)
    plain, traced = _pairs(rng, 30, 1.05, 0.02)
    ratio, low, high = tc.pooled_ratio_interval(plain, traced)
    exact = np.median(np.concatenate(traced)) / np.median(np.concatenate(plain))
    assert ratio == exact and low < 1.05 < high and high - low < 0.04
    assert tc.pooled_verdict(plain, traced, 1.10).endswith("(target <= 1.10: met)")
    # the same cost under a host whose p50 moves 30 % run to run: the pairs cannot tell 1.05 from 1.10
    plain, traced = _pairs(rng, 8, 1.05, 0.30)
    assert "cannot tell" in tc.pooled_verdict(plain, traced, 1.10)
    plain, traced = _pairs(rng, 30, 1.25, 0.02)
    assert "NOT met" in tc.pooled_verdict(plain, traced, 1.10)


def test_the_binned_median_agrees_with_numpy_to_its_bin(load_benchmark) -> None:
    tc = load_benchmark("trace_cost")
    rng = np.random.default_rng(5)
    runs = [rng.gamma(9.0, 2_000.0, 1_001) for _ in range(4)]
    weights = np.array([[1.0, 0.0, 2.0, 1.0]])
    pooled = np.concatenate([runs[0], runs[2], runs[2], runs[3]])
    assert abs(tc._weighted_medians(weights, tc._pair_histograms(runs))[0] - np.median(pooled)) <= tc.BIN_NS


def test_peer_speed_alternates_its_steps_and_judges_each_target_by_its_pairs(load_benchmark, monkeypatch) -> None:
    ps = load_benchmark("peer_speed")
    order: list[str] = []
    # summary 0.9-1.3 s against DuckDB's steady 1.0 s: the pooled ratio would say "met" or not by luck
    wall = {"summary": iter([0.9, 1.3, 0.95, 1.2, 0.92]), "duckdb": iter([1.0] * 5)}

    def fake_step(name, code, path, out="", setup=""):
        order.append(name)
        return {"seconds": next(wall[name]), "cpu": 0.5 if name == "summary" else 1.0, "rss_mb": 1.0}

    monkeypatch.setattr(ps, "run_step", fake_step)
    runs = ps.run_pairs(["summary", "duckdb"], None, None, 5, 10)
    assert order == ["summary", "duckdb", "duckdb", "summary"] * 2 + ["summary", "duckdb"]
    (line,) = ps.pair_lines(runs, 10)
    wall_line, cpu_line = line.splitlines()[1:]
    assert "over the 5 pairs" in wall_line and "cannot tell" in wall_line
    assert cpu_line.endswith("per-pair median 0.500, 95 % bootstrap interval over the 5 pairs 0.500-0.500 "
                             "(target <= 1.00: met)")
    (single,) = ps.pair_lines({name: runs[name][:1] for name in runs}, 10)
    assert "one pair cannot tell" in single and "met" not in single
