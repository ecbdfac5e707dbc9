"""render.linear_then_log_axis: a fixed-bin histogram's axis linear over its bulk and logarithmic past it, where a
far tail would squeeze the bulk against the axis (issue 25: a 30 µs bulk in the left 1 % of a 17 ms axis), on
hand-made counts; and the layout check's tick thinning on such an axis."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.render import linear_then_log_axis
from jitterscope.render.layout import _thin_ticks
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _axes():
    fig = Figure(figsize=(3.5, 3.0))
    FigureCanvasAgg(fig)
    return fig.subplots()


def test_the_switch_is_the_round_value_past_the_bulk_edge() -> None:
    # 10,000 counts in 1-unit bins: 9,900 in [0, 37) (275 in each, 275 x 36 = 9,900), 100 far out: 99 % of
    # 10,000 is reached in the bin ending at 36, and the least of 1, 2, 5 x 10^k at or past 36 is 50
    edges = np.arange(0.0, 3001.0)
    counts = np.zeros(3000)
    counts[:36] = 275.0
    counts[2000:3000:10] = 1.0
    ax = _axes()
    assert linear_then_log_axis(ax, [(edges, counts)], label="x [µs]") == 50.0
    assert ax.get_xscale() == "symlog" and ax.xaxis.get_transform().linthresh == 50.0
    assert ax.get_xlim() == pytest.approx((0.0, 2991 * 1.05))  # the farthest bin, [2990, 2991), and 5 %
    # the linear part as wide as the log part (about 1.8 decades each)
    middle = ax.transAxes.inverted().transform(ax.transData.transform([[50.0, 1.0]]))[0, 0]
    assert middle == pytest.approx(0.5, abs=0.01)
    assert list(ax.xaxis.get_major_locator().tick_values(0, 1)) == [0.0, 25.0, 50.0, 1000.0]


def test_a_tail_within_ten_times_the_switch_leaves_the_axis_linear() -> None:
    edges = np.arange(0.0, 501.0)
    counts = np.zeros(500)
    counts[:40] = 100.0
    counts[499] = 1.0  # 500 <= 10 x 50
    ax = _axes()
    assert linear_then_log_axis(ax, [(edges, counts)], label="x [µs]") is None
    assert ax.get_xscale() == "linear" and ax.get_xlabel() == "x [µs]"


def test_no_counts_no_switch() -> None:
    ax = _axes()
    assert linear_then_log_axis(ax, [(np.arange(4.0), np.zeros(3))], label="x") is None


def test_thinning_a_symlog_axis_keeps_zero_and_both_signs_of_a_size_together() -> None:
    edges = np.arange(-20000.0, 20001.0, 10.0)
    counts = np.zeros(edges.size - 1)
    counts[(edges[:-1] > -60) & (edges[:-1] < 60)] = 1000.0
    counts[[0, -1]] = 1.0
    ax = _axes()
    switch = linear_then_log_axis(ax, [(edges, counts)], label="e [µs]")
    assert switch == 100.0
    ax.figure.canvas.draw()
    before = list(ax.xaxis.get_majorticklocs())
    assert before == [-10000.0, -1000.0, -100.0, 0.0, 100.0, 1000.0, 10000.0]
    assert _thin_ticks(ax.xaxis)
    assert list(ax.xaxis.get_majorticklocs()) == [-1000.0, 0.0, 1000.0]


def test_a_tail_on_the_negative_side_only_does_not_widen_the_positive_side() -> None:
    edges = np.arange(-20000.0, 1001.0, 10.0)
    counts = np.zeros(edges.size - 1)
    counts[(edges[:-1] > -60) & (edges[:-1] < 60)] = 1000.0
    counts[0] = 1.0  # one period 20 ms short
    ax = _axes()
    assert linear_then_log_axis(ax, [(edges, counts)], label="e [µs]") == 100.0
    low, high = ax.get_xlim()
    assert low == pytest.approx(-20000 * 1.05) and high == pytest.approx(100.0)  # 60 x 1.05 < the switch
