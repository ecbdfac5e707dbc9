"""Groups of replicate runs (issue 21): a run is the unit; what differs leaves out per-run readings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from jitterscope.compare import compare_groups, diff_environments, diff_groups, group_changes, group_headline
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset
from jitterscope.io import BaseLatency, SimulationSpec, simulate

DATA = Path(__file__).parent.parent / "data" / "compare-null"
CHANGES = ("regressed", "improved")
METRICS = (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999))
SPREAD_20 = 0.3 + np.log(1.2) / 2.326  # a lognormal sigma whose p99 is 20 % above sigma 0.3's, median alike


def _run_metrics(spread: float, seed: int) -> np.ndarray:
    """p50, p99, p99.9, p99.99 and max of one simulated run (2 threads x 5,000 wake-ups)."""
    sim = simulate(SimulationSpec(threads=2, samples=5_000, base=BaseLatency(spread=spread)), seed)
    latency = sim.table["actual_ns"].to_numpy() - sim.table["expected_ns"].to_numpy()
    return np.r_[np.quantile(latency, [q for _, q in METRICS]), latency.max()]


def _groups(spread_b: float, seed: int) -> list:
    a = np.array([_run_metrics(0.3, 1_000 * seed + i) for i in range(3)])
    b = np.array([_run_metrics(spread_b, 1_000 * seed + 500 + i) for i in range(3)])
    return list(group_changes(a, b, 0.05, 0.95))


def test_three_replicates_per_side_detect_a_planted_20_percent_p99_change_over_seeds() -> None:
    """Must show 3: a planted +20 % p99 (median unchanged) is regressed with 3 runs per side, for every seed."""
    for seed in range(5):
        changes = {m.metric: m for m in _groups(SPREAD_20, seed)}
        assert changes["p99"].verdict == "regressed", changes["p99"].sentence
        assert 0.12 < changes["p99"].relative < 0.28
        assert changes["p50"].verdict != "regressed"


def test_identical_settings_give_no_verdict_beyond_the_stated_rate() -> None:
    """Must show 3: over 10 seeds x 5 metrics, claims stay within the stated rate (a claim on any metric of a
    comparison at most 5 %, so at most 0.5 of 10 comparisons expected; 5 claims allowed).  Rule: the between-run
    variance; without it (an interval of zero width) most tail metrics claim a change."""
    claims = verdicts = 0
    for seed in range(10):
        changes = _groups(0.3, 100 + seed)
        claims += sum(m.verdict in CHANGES for m in changes)
        verdicts += len(changes)
    assert verdicts == 50
    assert claims <= 5, claims


def test_a_gate_fires_on_noise_at_most_at_the_stated_rate() -> None:
    """Rule: Bonferroni over the five metrics (metric_confidence).  Runs whose five metrics each vary by 30 % from
    run to run, 3 per side, nothing changed: a claim on any metric in at most 5 % of 400 comparisons (+ sampling
    slack); at 95 % per metric it is about one in six."""
    rng = np.random.default_rng(11)
    fired = 0
    for _ in range(400):
        a, b = np.exp(0.3 * rng.standard_normal((2, 3, 5)))
        fired += any(m.verdict in CHANGES for m in group_changes(a, b, 0.05, 0.95))
    assert fired <= 0.075 * 400, fired


def test_real_identical_captures_as_two_groups_claim_nothing_and_the_headline_counts_runs() -> None:
    """Real captures (tests/data/compare-null) as 2 runs per side: no claim; the headline says how many runs."""
    a = [open_dataset(DATA / name) for name in ("run03", "run05")]
    b = [open_dataset(DATA / name) for name in ("run04", "run06")]
    result = compare_groups(a, b)
    assert not [m for m in result.metrics if m.verdict in CHANGES]
    headline = group_headline(result)
    assert headline.startswith("B (2 runs) against A (2 runs), between-run variation")
    # the clocks read at each start differ in every run: they are not what differs between the sides
    assert result.environment == ()
    assert "clock.realtime_ns" in result.varying
    assert result.to_json()["runs_per_side"] == [2, 2]


def _meta(governor: str, realtime: int, wakeups: int, pid: int) -> Metadata:
    return Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000,
                                                         extra={"wakeups": wakeups}),),
                    environment={"cpufreq": {"0": {"governor": governor}}, "tracing": {"instance": f"js-{pid}"}},
                    clock={"realtime_ns": realtime, "monotonic_ns": realtime - 10**9})


def test_what_differs_leaves_out_readings_counts_and_pids() -> None:
    """Rule: per_run_key in diff_environments.  Only the governor is a difference; the clock readings, wake-up
    counts and the pid-named trace instance differ in every run."""
    a, b = _meta("performance", 10**18, 5_000, 41), _meta("powersave", 10**18 + 5, 5_001, 42)
    assert [d.key for d in diff_environments([a, b])] == ["environment.cpufreq.governor"]
    every = {d.key for d in diff_environments([a, b], readings=True)}
    assert {"clock.realtime_ns", "clock.monotonic_ns", "threads.wakeups", "environment.tracing.instance"} <= every
    # real captures with identical settings: nothing differs
    real = [open_dataset(DATA / name).metadata for name in ("run03", "run04")]
    assert diff_environments(real) == ()


def test_groups_leave_out_what_differs_within_a_side() -> None:
    """Rule: diff_groups keeps only keys constant within each side (a key that varies inside a side explains
    nothing), even one not known as a reading."""
    a = [_meta("performance", 1, 5_000, 1), _meta("performance", 2, 5_000, 2)]
    b = [_meta("powersave", 3, 5_000, 3), _meta("powersave", 4, 5_000, 4)]
    for m, load in zip([*a, *b], ("0.5", "2.0", "0.5", "2.0"), strict=True):
        object.__setattr__(m, "environment", {**m.environment, "loadavg": load})
    differences, varying = diff_groups(a, b)
    assert [(d.key, d.values) for d in differences] == [("environment.cpufreq.governor", ("performance",
                                                                                          "powersave"))]
    assert "environment.loadavg" in varying and "clock.realtime_ns" in varying
