"""The caption check of a drawn figure: units on its axes, its n in a title, a note on each empty panel.

A paper's reader has the figure and its caption, not the report around it: every drawn axis says its unit in
brackets ("latency [µs]", "frequency [Hz]", "intervals [count]") or that it has none ("Spearman r
[unitless]"); an axis of named categories (CPUs, metrics, machines) needs none; the figure's titles say how many
wake-ups (runs, events) it shows ("n = 20,000") and how uncertain what it draws is ("95 % interval", "±", or
"no uncertainty: exact counts of every wake-up"); a panel with nothing to draw says why
(:func:`~.style.empty_panel_note`).  The tests run it over every figure the report, compare and fleet make.
"""

from __future__ import annotations

import re
from typing import Any

from matplotlib.figure import Figure

from .style import EMPTY_NOTE_GID

UNIT = re.compile(r"\[[^\]]+\]")
"""A unit in brackets."""
N_IN_TITLE = re.compile(r"\bn\s?[=≈]\s?[\d,.]+")
"""A sample size: "n = 20,000", "n ≈ 1,000"."""
UNCERTAINTY = re.compile(r"±|\bCI\b|\d+(?:\.\d+)?\s?% (?:[\w-]+ ){0,2}(?:interval|band)|"
                         r"bootstrap interval|no uncertainty: \w")
"""An uncertainty stated: "± 0.05", "95 % interval", "95 % Student-t interval", "CI: bootstrap interval", or why
there is none: "no uncertainty: exact counts of every wake-up"."""


def caption_problems(figure: Figure, *, name: str = "figure") -> list[str]:
    """What the drawn ``figure`` lacks: a [unit] on an axis label, an "n = …" and its uncertainty in its titles,
    a note on a panel without data.  Empty when nothing does."""
    figure.draw_without_rendering()
    problems = _axis_problems(figure, name) + _empty_panel_problems(figure, name)
    titles = figure_titles(figure)
    if not any(N_IN_TITLE.search(t) for t in titles):
        problems.append(f"{name}: no 'n = …' in its titles {titles}")
    if not any(UNCERTAINTY.search(t.replace("\n", " ")) for t in titles):
        problems.append(f"{name}: no uncertainty (an interval, ± or 'no uncertainty: why') in its titles {titles}")
    return problems


def figure_titles(figure: Figure) -> list[str]:
    """The figure's title and every panel's titles (left, centre, right), non-empty ones."""
    suptitle = getattr(figure, "_suptitle", None)
    texts = [suptitle.get_text()] if suptitle is not None else []
    for ax in figure.axes:
        texts += [ax.title.get_text(), ax._left_title.get_text(), ax._right_title.get_text()]
    return [t for t in texts if t]


def _categorical(axis: Any) -> bool:
    """Tick labels that name things (CPUs, metrics, machines): a category axis has no unit.  Dates are not
    categories (their month names are letters)."""
    from matplotlib.dates import AutoDateFormatter, ConciseDateFormatter, DateFormatter

    if isinstance(axis.get_major_formatter(), ConciseDateFormatter | AutoDateFormatter | DateFormatter):
        return False
    return any(re.search(r"[A-Za-z]", t.get_text()) for t in axis.get_ticklabels() if t.get_visible())


def _axis_problems(figure: Figure, name: str) -> list[str]:
    problems = []
    for ax in figure.axes:
        if not ax.axison:
            continue
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if not axis.get_visible():
                continue
            shown = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            if not shown or _categorical(axis):
                continue
            label = axis.get_label().get_text()
            if not label:
                shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
                if any(UNIT.search(s.get_xlabel() if which == "x" else s.get_ylabel())
                       for s in shared.get_siblings(ax)):
                    continue  # a shared axis labelled once, under the bottom panel
            if not UNIT.search(label):
                problems.append(f"{name}: {which}-axis label {label!r} of panel {ax.get_title()!r} has no [unit]")
    return problems


def has_data(ax: Any) -> bool:
    """Whether ``ax`` draws any finite data: lines in data coordinates, points, segments, a density (hexbin,
    mesh, image), bars or steps.  A shaded reference band or a line across the panel is not data."""
    import numpy as np
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.patches import Rectangle, StepPatch

    for line in ax.lines:
        if line.get_transform() == ax.transData:
            xy = np.asarray(line.get_xydata(), dtype=float)
            if xy.size and np.isfinite(xy).all(axis=1).any():
                return True
    for item in ax.collections:
        if isinstance(item, PathCollection) and np.isfinite(
                np.asarray(item.get_offsets(), dtype=float)).all(axis=1).any():
            return True
        if isinstance(item, LineCollection) and any(np.isfinite(np.asarray(s, dtype=float)).all()
                                                    for s in item.get_segments()):
            return True
        if isinstance(item, PolyCollection) and item.get_array() is not None and np.size(item.get_array()):
            return True  # a hexbin; a band from fill_between has no array
        if type(item).__name__ == "QuadMesh":
            return True
    if ax.images:
        return True
    for patch in ax.patches:
        if isinstance(patch, StepPatch) and np.isfinite(np.asarray(patch.get_data().values, dtype=float)).any():
            return True
        if isinstance(patch, Rectangle) and np.isfinite(patch.get_height()) and patch.get_height() != 0:
            return True
    return False


def _empty_panel_problems(figure: Figure, name: str) -> list[str]:
    problems = []
    for ax in figure.axes:
        if not ax.axison or ax.get_label() == "<colorbar>" or has_data(ax):
            continue
        if not any(t.get_gid() == EMPTY_NOTE_GID and t.get_text() for t in ax.texts):
            problems.append(f"{name}: panel {ax.get_title()!r} has no data and no note saying why")
    return problems
