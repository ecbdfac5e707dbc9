"""Figures and tables of tail fits: they draw/format the fit's numbers, nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.render import to_text
from jitterscope.tails import (
    TailsReport,
    fit_tail,
    plot_mean_residual_life,
    plot_parameter_stability,
    plot_return_levels,
    plot_tail_qq,
    tail_fit_table,
    tails_text,
)
from matplotlib.figure import Figure


@pytest.fixture(scope="module")
def tail_fit():
    return fit_tail(3000 * np.exp(0.3 * np.random.default_rng(2).standard_normal(5000)), interval_ns=1_000_000)


def test_tail_plots(tail_fit) -> None:
    for plot in (plot_mean_residual_life, plot_parameter_stability, plot_tail_qq, plot_return_levels):
        ax = Figure().subplots()
        plot(tail_fit, ax)
        assert ax.get_lines(), plot.__name__
        assert "[µs]" in ax.get_ylabel() or ax.get_ylabel() == "shape ξ [unitless]"
    ax = Figure().subplots()
    plot_parameter_stability(tail_fit, ax)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [c.xi for c in tail_fit.candidates])


def test_tables_carry_the_fit_numbers(tail_fit) -> None:
    report = TailsReport("x", (tail_fit,), ((3, "too short"),))
    fit_table = tail_fit_table(report)
    assert fit_table.rows[0][5] == pytest.approx(tail_fit.xi)
    assert "thread 3: skipped — too short" in fit_table.notes
    assert to_text(fit_table)
    assert tails_text(report).rstrip().endswith("argument about the mechanisms.")


def test_return_levels_of_a_mixture_show_observations_only_without_axis_offsets() -> None:
    rng = np.random.default_rng(11)
    x = 5000 * np.exp(0.3 * rng.standard_normal(30_000))
    x[rng.choice(x.size, 15, replace=False)] += rng.uniform(1e6, 5e6, 15)
    fit = fit_tail(x, interval_ns=1_000_000)
    assert not fit.extrapolated
    fig = Figure()
    ax = fig.subplots()
    plot_return_levels(fit, ax)
    fig.canvas.draw()
    (line,) = ax.get_lines()  # the observations, no model curve
    np.testing.assert_allclose(line.get_ydata(), np.asarray(fit.empirical_return)[:, 1] / 1000)
    assert ax.get_ylim()[1] < 2 * fit.observed_max_ns / 1000  # the axis ends near the largest observation
    assert ax.yaxis.get_offset_text().get_text() == ""
    assert "No return levels" in ax.get_title() and not ax.texts  # in the title: a note in the panel sat on the data
    # 5 µs to 5 ms: on a log axis, or every observation but the 15 stalls sits on the floor
    assert ax.get_yscale() == "log"
    fig = Figure()
    ax = fig.subplots()
    plot_tail_qq(fit, ax)
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_title().startswith("Tail QQ, log-log")
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), np.asarray(fit.qq_points_ns)[:, 1] / 1000)


def test_a_tail_within_two_decades_keeps_linear_axes(tail_fit) -> None:
    for plot in (plot_tail_qq, plot_return_levels):
        ax = Figure().subplots()
        plot(tail_fit, ax)
        assert ax.get_yscale() == "linear", plot.__name__
    excess = np.asarray(tail_fit.qq_points_ns)[:, 1]
    assert excess.max() / np.median(excess) < 100  # the fixture's lognormal tail: within two decades of its median


def test_return_level_axis_is_bounded_near_the_curve(tail_fit) -> None:
    fig = Figure()
    ax = fig.subplots()
    plot_return_levels(tail_fit, ax)
    fig.canvas.draw()
    curve = np.asarray(tail_fit.return_curve)
    assert ax.get_ylim()[1] <= 1.25 * max(curve[:, 1].max(), tail_fit.observed_max_ns) / 1000 + 1e-9
    assert ax.yaxis.get_offset_text().get_text() == ""
