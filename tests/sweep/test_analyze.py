"""The sweep's comparison: hand-computed small cases, and planted truth (a factor that moves p99 by 30 % found,
one that does nothing called "no effect beyond the stated noise", in at least 95 % of seeds)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.cli import main
from jitterscope.sweep import (
    METRICS,
    VERDICT_EFFECT,
    VERDICT_INCONCLUSIVE,
    VERDICT_NONE,
    RunMetrics,
    analyze_sweep,
    compare_conditions,
    events_table,
    holm,
    latex_table,
    methods_paragraph,
    simulated_sweep_runs,
    write_simulated_sweep,
)
from scipy import stats

FACTORS = {"A": ["a0", "a1"], "B": ["b0", "b1"]}


def test_holm_by_hand() -> None:
    # sorted 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, but never below 0.06)
    assert holm([0.01, 0.04, None, 0.03, 0.005]) == pytest.approx([0.03, 0.06, None, 0.06, 0.02])  # type: ignore[arg-type]


def _runs(log_values: dict[tuple[str, str], list[float]]) -> list[RunMetrics]:
    runs = []
    for (a, b), logs in log_values.items():
        for replicate, value in enumerate(logs, start=1):
            runs.append(RunMetrics(id=f"{a}{b}{replicate}", position=len(runs), replicate=replicate, condition=0,
                                   levels={"A": a, "B": b}, samples=1000, warmup_samples=0,
                                   metrics_ns={name: 1000 * math.exp(value) for name, _ in METRICS}))
    return runs


def test_effects_and_interaction_by_hand() -> None:
    # log metric per cell: A adds exactly 1.0, B nothing; each cell's two runs differ by 0.2 (s^2 = 0.02, df 4)
    runs = _runs({("a0", "b0"): [0.0, 0.2], ("a1", "b0"): [1.0, 1.2], ("a0", "b1"): [0.0, 0.2],
                  ("a1", "b1"): [1.0, 1.2]})
    conditions, effects, interactions = compare_conditions(runs, FACTORS, noise=0.4, confidence=0.95)
    t = stats.t.ppf(0.975, 4)
    a = next(e for e in effects if e.factor == "A" and e.metric == "p99")
    # contrast weights +-1/2 on four cells of two runs: se = sqrt(0.02 * 4 * 0.25 / 2) = 0.1
    assert a.ratio == pytest.approx(math.e)
    assert (a.low, a.high) == pytest.approx((math.exp(1 - 0.1 * t), math.exp(1 + 0.1 * t)))
    assert a.p == pytest.approx(2 * stats.t.sf(10, 4))
    assert a.p_holm == pytest.approx(min(1, 18 * a.p))  # the smallest of 18 tests (6 metrics x (2 + 1))
    assert a.verdict == VERDICT_EFFECT and a.df == 4
    b = next(e for e in effects if e.factor == "B" and e.metric == "p99")
    assert b.ratio == pytest.approx(1.0) and (b.low, b.high) == pytest.approx((math.exp(-0.1 * t), math.exp(0.1 * t)))
    assert b.verdict == VERDICT_NONE  # [0.76, 1.32] lies inside +-40 %
    inter = next(e for e in interactions if e.metric == "p99")
    # weights +-1 on the four cells: se = sqrt(0.02 * 4 * 1 / 2) = 0.2
    assert inter.ratio == pytest.approx(1.0) and inter.high == pytest.approx(math.exp(0.2 * t))
    assert inter.verdict == VERDICT_INCONCLUSIVE  # [0.57, 1.74] reaches beyond +-40 %
    c = next(c for c in conditions if c.levels == {"A": "a1", "B": "b0"})
    est = c.metrics["p50"]  # geometric mean of e^1.0 and e^1.2 (x1000 ns), its own t interval (df 1)
    assert est.value_ns == pytest.approx(1000 * math.exp(1.1))
    assert est.high_ns == pytest.approx(1000 * math.exp(1.1 + stats.t.ppf(0.975, 1) * math.sqrt(0.02) / math.sqrt(2)))


def test_an_interaction_is_found_when_one_factor_acts_only_with_the_other() -> None:
    runs = _runs({("a0", "b0"): [0.0, 0.05, -0.05], ("a1", "b0"): [0.0, 0.05, -0.05],
                  ("a0", "b1"): [0.0, 0.05, -0.05], ("a1", "b1"): [0.7, 0.75, 0.65]})
    _, _, interactions = compare_conditions(runs, FACTORS)
    inter = next(e for e in interactions if e.metric == "p99")
    assert inter.verdict == VERDICT_EFFECT and inter.ratio == pytest.approx(math.exp(0.7))


def test_one_run_per_condition_gives_no_interval_and_no_verdict() -> None:
    runs = _runs({("a0", "b0"): [0.0], ("a1", "b0"): [1.0], ("a0", "b1"): [0.0], ("a1", "b1"): [1.0]})
    _, effects, _ = compare_conditions(runs, FACTORS)
    assert all(e.low is None and e.p is None and e.verdict == VERDICT_INCONCLUSIVE for e in effects)


SEEDS = 60


def test_planted_truth_30_percent_found_null_called_no_effect_in_95_percent_of_seeds() -> None:
    """Factor A multiplies latency (so p99) by 1.3, B by 1; 3 replicates, 2 % between-run spread."""
    found = null_ok = 0
    for seed in range(SEEDS):
        runs = simulated_sweep_runs(FACTORS, {"A": {"a1": 1.3}}, seed=seed)
        _, effects, _ = compare_conditions(runs, FACTORS, noise=0.10)
        a = next(e for e in effects if e.factor == "A" and e.metric == "p99")
        b = next(e for e in effects if e.factor == "B" and e.metric == "p99")
        found += a.verdict == VERDICT_EFFECT and a.low is not None and a.low <= 1.3 <= a.high
        null_ok += b.verdict == VERDICT_NONE
    assert found >= 0.95 * SEEDS, f"A found in {found}/{SEEDS} seeds"
    assert null_ok >= 0.95 * SEEDS, f"B called no effect in {null_ok}/{SEEDS} seeds"


def test_the_report_reads_a_sweep_directory_as_the_planted_truth_says(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_simulated_sweep(tmp_path / "sim", FACTORS, {"A": {"a1": 1.3}}, seed=5, samples=2000)
    result = analyze_sweep(directory)
    memory = compare_conditions(simulated_sweep_runs(FACTORS, {"A": {"a1": 1.3}}, seed=5, samples=2000),
                                FACTORS)[1]
    # through the datasets (Parquet, jitterscope.experiment) as in memory: the same numbers
    assert [(e.label, e.metric, e.verdict) for e in result.effects] == [(e.label, e.metric, e.verdict)
                                                                        for e in memory]
    assert np.allclose([e.ratio for e in result.effects], [e.ratio for e in memory])
    assert main(["sweep", "report", str(directory), "--json", "-o", str(tmp_path / "r.pdf"),
                 "--figures", str(tmp_path / "fig")]) == 0
    doc = json.loads(capsys.readouterr().out)
    a = next(e for e in doc["effects"] if e["factor"] == "A" and e["metric"] == "p99")
    assert a["verdict"] == VERDICT_EFFECT and a["low"] < 1.3 < a["high"]
    assert (tmp_path / "r.pdf").stat().st_size > 10_000
    tex = (tmp_path / "fig" / "sweep-table.tex").read_text()
    assert r"\begin{table}" in tex and "S[table-format" in tex and r"\toprule" in tex
    assert r"\begin{table*}" in (tmp_path / "fig" / "sweep-table-wide.tex").read_text()
    for name in ("sweep-effects.pdf", "sweep-ccdf.svg", "sweep-effects.png", "sweep-conditions.csv", "methods.txt"):
        assert (tmp_path / "fig" / name).exists(), name
    assert "randomised complete blocks" in methods_paragraph(result)
    assert all(r.events is not None and r.measured_s for r in result.runs)
    assert len(events_table(result).rows) == 4
    assert latex_table(result).count(r"\\") == 1 + 4 + 2  # header, four conditions, two effects


def test_report_of_a_directory_that_is_not_a_sweep_is_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "report", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no readable manifest.json" in err[0]


def test_the_warm_up_is_left_out_of_the_statistics(tmp_path: Path) -> None:
    from jitterscope.dataset import write_dataset
    from jitterscope.io import SimulationSpec, simulate
    from jitterscope.sweep import run_histogram

    table, metadata = simulate(SimulationSpec(threads=2, samples=2000, counters=()), seed=1)
    expected = table.column("expected_ns").to_numpy()
    actual = table.column("actual_ns").to_numpy().copy()
    threads = table.column("thread").to_numpy()
    first = {t: expected[threads == t].min() for t in (0, 1)}
    early = np.array([e < first[t] + 300_000_000 for e, t in zip(expected, threads, strict=True)])
    actual[early] += 5_000_000  # a 5 ms stall in every wake-up of the first 0.3 s of each thread
    table = table.set_column(table.column_names.index("actual_ns"), "actual_ns", pa.array(actual))
    path = write_dataset(table, metadata.with_changes(experiment={"warmup_ns": 300_000_000}), tmp_path / "d.parquet")
    histogram, skipped = run_histogram(path, 300_000_000)
    assert skipped == int(early.sum()) == 2 * 300
    assert histogram.count == 2 * 2000 - 2 * 300 and histogram.max_ns < 5_000_000
    with_warmup, _ = run_histogram(path, 0)
    assert with_warmup.max_ns >= 5_000_000
