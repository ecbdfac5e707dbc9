"""render.stairs: ``ax.stairs`` with the data limits found from the outline's vertices at once (issue 25: the
report's 8,000-bin histograms spent 1.6 s of CPU in matplotlib's curve-by-curve walk), the same limits."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.render import stairs
from matplotlib.figure import Figure
from matplotlib.path import Path

CASES = {
    # the latency histogram: counts floored at 0.1 on a log axis, with a baseline
    "counts": (np.where(np.arange(8000) % 7 == 0, 0.1, np.arange(8000) % 50 + 1.0), np.arange(8001) * 1.0,
               {"baseline": 0.1}, "log"),
    # the density: empty bins as gaps (NaN), log-spaced edges
    "gaps": (np.where(np.arange(300) % 5 == 0, np.nan, np.linspace(1e-6, 1e-1, 300)), np.logspace(0, 4, 301), {},
             "log"),
    "filled": (np.array([3.0, -2.0, 5.0, 0.0]), np.array([-1.0, 0.0, 2.5, 3.0, 10.0]), {"fill": True}, "linear"),
}


def _limits(values, edges, kwargs, scale, fast: bool):
    ax = Figure().subplots()
    ax.set_yscale(scale)
    patch = stairs(ax, values, edges, **kwargs) if fast else ax.stairs(values, edges, **kwargs)
    ax.autoscale_view()
    return patch, ax


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_limits_are_matplotlibs(case, monkeypatch) -> None:
    values, edges, kwargs, scale = CASES[case]
    plain_patch, plain = _limits(values, edges, kwargs, scale, fast=False)
    walked: list[int] = []
    original = Path.iter_bezier
    monkeypatch.setattr(Path, "iter_bezier", lambda self, **kw: walked.append(1) or original(self, **kw))
    patch, fast = _limits(values, edges, kwargs, scale, fast=True)
    assert walked == []  # not walked curve by curve
    np.testing.assert_array_equal(fast.dataLim.get_points(), plain.dataLim.get_points())
    np.testing.assert_array_equal(fast.dataLim.minpos, plain.dataLim.minpos)
    assert fast.get_xlim() == plain.get_xlim() and fast.get_ylim() == plain.get_ylim()
    np.testing.assert_array_equal(patch.get_path().vertices, plain_patch.get_path().vertices)
    assert "_update_patch_limits" not in vars(fast)  # the method is the class's again
