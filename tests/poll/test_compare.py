"""compare of poll runs: planted differences get the right verdict on the right metric, nulls claim nothing."""

from __future__ import annotations

import json
import math

import pytest
from jitterscope.cli import main
from jitterscope.compare import group_change
from jitterscope.errors import AnalysisError
from jitterscope.io import PeriodicIrq, PollSpec, simulate_poll
from jitterscope.poll import compare_poll, compare_poll_groups, poll_compare_headlines

CLAIMS = ("regressed", "improved")


def _spec(**changes):
    base = dict(cpus=(1,), duration_s=8, irqs=(PeriodicIrq(100, 5000, "eth0"),), burst_rate_hz=20, burst_ns=30_000,
                hardware_rate_hz=1, hardware_ns=5000)
    return PollSpec(**{**base, **changes})


@pytest.fixture(scope="session")
def poll_runs(tmp_path_factory):
    """Small poll simulations: replicates of one spec (seeds), and the same with one thing changed."""
    root = tmp_path_factory.mktemp("pollcmp")
    specs = {"base": _spec(), "irq": _spec(irqs=(PeriodicIrq(200, 5000, "eth0"),)), "big": _spec(burst_ns=300_000)}
    return {f"{name}{i}": simulate_poll(spec, root / f"{name}{i}", seed=11 * i + len(name))
            for name, spec in specs.items() for i in range(4 if name == "base" else 2)}


def _claims(comparison):
    return [(c.name, c.verdict) for pair in comparison.pairs for c in pair.changes if c.verdict in CLAIMS]


def test_identical_settings_with_other_seeds_claim_no_change(poll_runs):
    # calibrated on 30 such pairs (2 CPUs, 10 s) and 10 groups of 3 vs 3: no claim on any metric
    comparison = compare_poll([poll_runs["base0"], poll_runs["base1"], poll_runs["base2"], poll_runs["base3"]])
    assert _claims(comparison) == []
    groups = compare_poll_groups([poll_runs["base0"], poll_runs["base1"]], [poll_runs["base2"], poll_runs["base3"]])
    assert _claims(groups) == []
    pair = comparison.pairs[0]
    # none of 0.1-1 ms on either side: no change, not "inconclusive" (the rule for a class neither run has)
    assert pair.verdict("CPU 1 0.1–1 ms/s") == "within noise"
    assert pair.verdict("CPU 1 1–10 µs/s") == "within noise"
    # the loop's iterations and noise time are what was measured, not a setting: no environment difference
    assert "environment:" not in poll_compare_headlines(comparison)[0]


def test_a_doubled_irq_rate_regresses_its_size_class_only_and_halving_it_improves(poll_runs):
    comparison = compare_poll([poll_runs["base0"], poll_runs["irq0"]])
    pair = comparison.pairs[0]
    # 100 -> 200 IRQs/s of 5 µs on top of 250 ticks/s of 2 µs: 1-10 µs from ~350/s to ~450/s
    assert pair.verdict("CPU 1 1–10 µs/s") == "regressed"
    assert pair.verdict("CPU 1 interruptions/s") == "regressed"
    change = next(c.change for c in pair.changes if c.name == "CPU 1 1–10 µs/s")
    assert 0.2 < change.relative < 0.35 and change.relative_low > 0.05
    assert {name for name, _ in _claims(comparison)} == {"CPU 1 1–10 µs/s", "CPU 1 interruptions/s"}
    back = compare_poll([poll_runs["irq0"], poll_runs["base0"]]).pairs[0]
    assert back.verdict("CPU 1 1–10 µs/s") == "improved"
    headline = poll_compare_headlines(comparison)[0]
    assert headline.startswith("irq0 against base0: CPU 1: regressed; interruptions/s, 1–10 µs/s regressed (+")


def test_larger_bursts_move_to_the_larger_class_and_cost_cpu(poll_runs):
    pair = compare_poll([poll_runs["base0"], poll_runs["big0"]]).pairs[0]
    assert pair.verdict("CPU 1 10–100 µs/s") == "improved"  # the 30 µs bursts are gone ...
    grown = next(c for c in pair.changes if c.name == "CPU 1 0.1–1 ms/s")
    # ... to 0.1-1 ms, which the baseline has none of: regressed on the difference's interval, no ratio
    assert grown.verdict == "regressed" and grown.change.baseline_ns == 0 and math.isinf(grown.change.relative)
    assert grown.change.ci_low_ns > 0
    assert pair.verdict("CPU 1 CPU lost %") == "regressed"  # 20/s x 300 µs = 0.6 % more on top of 5 %
    assert pair.verdict("CPU 1 max") == "within noise"  # RT throttling's 50 ms is the max of both


def test_groups_of_replicates_judge_by_the_runs(poll_runs):
    groups = compare_poll_groups([poll_runs["base0"], poll_runs["base1"]], [poll_runs["irq0"], poll_runs["irq1"]],
                                 sides=("before", "after"))
    pair = groups.pairs[0]
    assert pair.baseline == "before (2 runs)" and pair.candidate == "after (2 runs)"
    assert pair.verdict("CPU 1 1–10 µs/s") == "regressed"
    assert "between-run" in groups.method and groups.runs_per_side == (2, 2)
    assert "(between-run: means of 2 and 2 runs, Welch t)" in next(
        c.change.sentence for c in pair.changes if c.name == "CPU 1 1–10 µs/s")


def test_bonferroni_level_over_every_metric(poll_runs):
    comparison = compare_poll([poll_runs["base0"], poll_runs["base1"]], confidence=0.95)
    count = len(comparison.pairs[0].changes)  # 4 classes above 1 µs, all, CPU lost, max
    assert count == 7 and comparison.metric_confidence == pytest.approx(1 - 0.05 / 7)


def test_different_thresholds_are_refused(poll_runs, tmp_path):
    other = simulate_poll(_spec(threshold_ns=2000, tick_ns=2500), tmp_path / "t2", seed=1)
    with pytest.raises(AnalysisError, match="poll thresholds differ"):
        compare_poll([poll_runs["base0"], other])


def test_cli_text_json_gates_and_pdf(poll_runs, capsys, tmp_path):
    base, irq = str(poll_runs["base0"]), str(poll_runs["irq0"])
    capsys.readouterr()
    assert main(["compare", base, irq, "--fail-if", "regressed", "--fail-if", "max>1s"]) == 3
    captured = capsys.readouterr()
    assert "CPU 1 1–10 µs/s" in captured.out and "regressed" in captured.out
    assert "FAILED fail-if regressed: irq0 CPU 1 interruptions/s regressed against base0" in captured.err
    assert "passed fail-if max>1s" in captured.err
    assert main(["compare", base, str(poll_runs["base1"]), "--fail-if", "changed", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "poll" and document["pairs"][0]["changes"][0]["name"] == "CPU 1 interruptions/s"
    assert main(["compare", base, str(poll_runs["base1"]), "--", irq, str(poll_runs["irq1"]), "-o",
                 str(tmp_path / "c.pdf")]) == 0
    assert (tmp_path / "c.pdf").read_bytes().startswith(b"%PDF")
    assert "c.pdf: " in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--resamples", "200"], ["--fail-if", "p99>5us"], ["TIMER"]])
def test_cli_refusals_are_one_line_usage_errors(poll_runs, capsys, tmp_path, extra):
    if extra == ["TIMER"]:
        timer = tmp_path / "t.parquet"
        assert main(["simulate", "-o", str(timer), "-D", "2s"]) == 0
        extra = [str(timer)]
    capsys.readouterr()
    assert main(["compare", str(poll_runs["base0"]), str(poll_runs["base1"]), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    if extra[0].endswith("t.parquet"):
        assert "busy-poll dataset (kind poll)" in err and "a timer one" in err


def test_a_rate_interval_stops_at_minus_100_percent():
    # a rare class, mostly none a block: the arithmetic interval would reach below zero, a rate cannot
    a, b = [1.0, 0.0, 0.0, 3.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    unbounded = group_change("x", a, b, 0.05, 0.99, logs=False)
    bounded = group_change("x", a, b, 0.05, 0.99, logs=False, floor=0.0)
    assert unbounded.relative_low < -1 and bounded.relative_low == -1.0 and bounded.ci_low_ns == -5 / 6
    assert bounded.verdict == unbounded.verdict == "inconclusive"


def test_the_pdf_figure_passes_the_caption_and_layout_checks(poll_runs):
    import matplotlib
    from jitterscope.poll import poll_compare_pages
    from jitterscope.render import REPORT_RC, caption_problems, layout_problems

    with matplotlib.rc_context(REPORT_RC):
        pages = poll_compare_pages(compare_poll([poll_runs["base0"], poll_runs["irq0"]]))
        figures = [p for p in pages if p.kind == "figure"]
        assert [p.name for p in figures] == ["compare-poll-pair-1"]
        # one row per metric, each marked by its verdict
        assert len(figures[0].figure.axes[0].get_yticklabels()) == 7
        for page in figures:
            assert caption_problems(page.figure, name=page.name) == []
            assert layout_problems(page.figure, name=page.name) == []
