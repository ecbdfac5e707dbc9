"""Figures and tables of comparisons: they draw/format the result's numbers, nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.compare import (
    compare_samples,
    comparison_tables,
    pair_table,
    plot_compare_ccdf,
    plot_compare_histograms,
    plot_compare_percentiles,
    plot_compare_qq,
    plot_verdicts,
)
from jitterscope.dataset import Metadata, ThreadInfo
from matplotlib.figure import Figure


@pytest.fixture(scope="module")
def comparison():
    rng = np.random.default_rng(1)
    meta = Metadata(kind="simulation", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000),))
    a = (3000 * np.exp(0.3 * rng.standard_normal(5000))).astype(np.int64)
    b = (3600 * np.exp(0.3 * rng.standard_normal(5000))).astype(np.int64)
    return compare_samples([a, b], [meta, meta], ["A", "B"], n_boot=100)


def test_comparison_plots_draw_the_result_series_in_microseconds(comparison) -> None:
    runs = comparison.runs
    ax = Figure().subplots()
    plot_compare_percentiles(runs, ax)
    lines = ax.get_lines()
    assert len(lines) == 2
    np.testing.assert_allclose(lines[0].get_ydata(), np.asarray(runs[0].quantiles_ns) / 1000)
    assert ax.get_ylabel() == "latency [µs]"
    ax = Figure().subplots()
    plot_compare_ccdf(runs, ax)
    np.testing.assert_allclose(ax.get_lines()[1].get_xdata(), np.asarray(runs[1].quantiles_ns) / 1000)
    ax = Figure().subplots()
    plot_compare_histograms(runs, ax)
    assert ax.get_xlabel() == "latency [µs]" and len(ax.patches) == 2
    ax = Figure().subplots()
    plot_compare_qq(comparison.pairs[0], ax)
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), np.asarray(comparison.pairs[0].qq_ns)[:, 0] / 1000)
    ax = Figure().subplots()
    plot_verdicts(comparison.pairs[0], ax)
    texts = [t.get_text() for t in ax.texts]
    verdicts = ("regressed (slower)", "within noise (no change)", "improved (faster)", "inconclusive (unclear)")
    assert sum(texts.count(v) for v in verdicts) == 5


def test_tables_carry_the_result_numbers(comparison) -> None:
    pair = comparison.pairs[0]
    table = pair_table(pair, comparison, 1)
    p99 = next(row for row in table.rows if row[0] == "p99")
    change = next(m for m in pair.metrics if m.metric == "p99")
    assert p99[1] == pytest.approx(change.baseline_ns / 1000)
    assert p99[6] == pytest.approx(1 + change.relative)  # a ratio, candidate / baseline
    assert p99[-1] == change.verdict
    # the answer first: the headline and the environment, then the verdicts and the runs
    assert [t.name for t in comparison_tables(comparison)][:4] == ["compare-headline", "compare-environment",
                                                                     "compare-summary", "compare-runs"]
