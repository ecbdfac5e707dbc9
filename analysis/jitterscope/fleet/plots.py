"""Figures of a fleet: each takes a result and an Axes and computes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.patches import ConnectionPatch

from ..format import format_p, us_value
from ..render import OKABE_ITO, VERDICT_STYLES, colour, plain_log_axis, verdict_label
from .results import Fleet, KeySeparation, MachineHistory

_LEVELS = ("p99", "p99.9", "p99.99")
REGRESSED = VERDICT_STYLES["regressed"]


def _when(start_ns: int | None, index: int) -> datetime | int:
    return index if start_ns is None else datetime.fromtimestamp(start_ns / 1e9, tz=UTC)


def plot_fleet_ranking(fleet: Fleet, ax: Axes, *, limit: int = 30) -> Axes:
    """Groups worst first: p99.99 with its interval, p99.9, and the max, on a log µs axis (top ``limit``)."""
    groups = fleet.groups[:limit]
    y = list(range(len(groups)))[::-1]
    for row, g in zip(y, groups, strict=True):
        q = g.quantile("p99.99")
        ax.plot([us_value(q.low_ns), us_value(q.high_ns)], [row, row], color=colour(0), lw=3, alpha=0.5,
                linestyle="-")  # solid: the report's style cycles dash patterns
    ax.scatter([us_value(g.quantile("p99.99").value_ns) for g in groups], y, color=colour(0), zorder=3,
               label="p99.99 (bar: CI)")
    ax.scatter([us_value(g.quantile("p99.9").value_ns) for g in groups], y, color=colour(2), marker="s", s=14,
               zorder=3, label="p99.9")
    ax.scatter([us_value(g.max_ns) for g in groups], y, color=colour(3), marker="x", zorder=3, label="max")
    ax.set_yticks(y, [f"{g.value} ({g.runs} runs)" for g in groups], fontsize=7)
    ax.set_xscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_xlabel("latency [µs]")
    shown = "" if len(fleet.groups) <= limit else f" (worst {limit} of {len(fleet.groups)})"
    ax.set_title(f"Tails by {fleet.by}, worst first{shown} (n = {fleet.runs} runs; bar: CI of p99.99)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_machine_history(history: MachineHistory, ax: Axes) -> Axes:
    """One machine's p99 … p99.99 and max per run; flagged runs circled in red."""
    x = [_when(p.start_ns, i) for i, p in enumerate(history.points)]
    for j, level in enumerate(_LEVELS):
        values = [us_value(dict(p.quantiles_ns).get(level)) for p in history.points]
        ax.plot(x, values, marker=".", color=colour(j), label=level, lw=1)
    ax.plot(x, [us_value(p.max_ns) for p in history.points], marker="x", ls=":", color=colour(3), label="max", lw=1)
    flagged = [(xi, us_value(p.max_ns)) for xi, p in zip(x, history.points, strict=True)
               if p.change is not None and p.change.flagged]
    if flagged:
        ax.scatter([f[0] for f in flagged], [f[1] for f in flagged], s=160, facecolors="none",
                   edgecolors=REGRESSED.colour, marker=REGRESSED.marker, lw=1.5, zorder=4,
                   label=verdict_label("regressed"))
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"{history.host} (n = {len(history.points)} runs, by {history.ordered_by})", fontsize=9)
    if history.ordered_by == "start time" and len({p.start_ns for p in history.points}) > 1:
        _date_axis(ax)
    else:
        ax.set_xlabel("run [index]" if history.points and history.points[0].start_ns is None else
                      "capture start [UTC]", fontsize=7)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    return ax


def plot_fleet_over_time(fleet: Fleet, ax: Axes, *, level: str | None = None) -> Axes:
    """Every machine's per-run tail metric over capture start time, each line named at its end; flagged runs
    marked as regressed.

    Each machine has its own colour and dash pattern (:func:`machine_style`: no two of up to 24 machines look
    alike, in colour or in grey), and its name is written right of the panel, level with its last run and joined
    to it by a thin line: twenty machines need no legend to be told apart.
    """
    level = level or fleet.tail_metric
    ends: list[tuple[str, Any, float, Any]] = []
    for i, history in enumerate(fleet.histories):
        x = [_when(p.start_ns, k) for k, p in enumerate(history.points)]
        y = [us_value(dict(p.quantiles_ns).get(level)) for p in history.points]
        tint, dashes = machine_style(i, len(fleet.histories))
        ax.plot(x, y, color=tint, linestyle=dashes, lw=1.0, marker=".", markersize=3, label=history.host)
        last = [(xi, yi) for xi, yi in zip(x, y, strict=True) if yi is not None]
        if last:
            ends.append((history.host, last[-1][0], float(last[-1][1]), (tint, dashes)))
    flagged = [(_when(p.start_ns, 0), us_value(dict(p.quantiles_ns).get(level))) for _, p in fleet.flagged]
    if flagged:
        ax.scatter([f[0] for f in flagged], [f[1] for f in flagged], color=REGRESSED.colour,
                   marker=REGRESSED.marker, edgecolors="black", linewidths=0.6, zorder=4, s=40,
                   label=f"{verdict_label('regressed')}: {len(flagged)} run{'s' if len(flagged) > 1 else ''}")
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles[-1:], labels[-1:], fontsize=7, loc="upper left")
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel(f"per-run {level} [µs]")
    runs = sum(len(h.points) for h in fleet.histories)
    ax.set_title(f"Each machine's {level} per run over time ({len(fleet.histories)} machines, n = {runs} runs)\n"
                 "no uncertainty: each run's own value")
    if all(p.start_ns is not None for h in fleet.histories for p in h.points):
        _date_axis(ax)
    else:
        ax.set_xlabel("run of each machine [index]")
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    _label_line_ends(ax, ends)
    return ax


_DASHES = ("-", "--", ":", "-.")


def machine_style(index: int, total: int) -> tuple[str, Any]:
    """Machine ``index`` of ``total``'s colour and dash pattern: Okabe-Ito's 8 colours, then the same colours
    dashed, dotted, dash-dotted (32 distinct looks); beyond, looks repeat and the line-end names tell them apart."""
    return OKABE_ITO[index % len(OKABE_ITO)], _DASHES[(index // len(OKABE_ITO)) % len(_DASHES)]


LABEL_PT = 6.0


def _label_line_ends(ax: Axes, ends: list[tuple[str, Any, float, Any]]) -> None:
    """Each line's name right of the panel, at its last value's height, pushed apart so that no two overlap, and
    joined to the last point by a thin line of the line's colour."""
    import numpy as np
    from matplotlib.dates import date2num

    if not ends:
        return
    ax.autoscale_view()
    to_axes = ax.transData + ax.transAxes.inverted()
    points = [(date2num(x) if isinstance(x, datetime) else x, y) for _, x, y, _ in ends]
    wanted = to_axes.transform(np.asarray(points, dtype=float))[:, 1]
    # the panel's height in points (before the layout engine resizes it: it only grows it here)
    height_pt = ax.get_position().height * ax.figure.get_figheight() * 72.0 * 0.9
    gap = min(LABEL_PT * 1.3 / height_pt, 1.0 / len(ends))
    order = np.argsort(wanted)
    placed = np.clip(wanted[order], 0.0, 1.0)
    for k in range(1, placed.size):  # upwards: each at least a gap above the one below
        placed[k] = max(placed[k], placed[k - 1] + gap)
    overflow = placed[-1] - 1.0
    if overflow > 0:  # the top ran off the panel: shift down, then keep the gaps downwards
        placed[-1] = 1.0
        for k in range(placed.size - 2, -1, -1):
            placed[k] = min(placed[k], placed[k + 1] - gap)
    for k, y in zip(order, placed, strict=True):
        name, _, _, (tint, dashes) = ends[k]
        # the joining line in the machine's colour and dashes; the name in black (yellow text does not read)
        joint = ConnectionPatch(xyA=points[k], coordsA=ax.transData, xyB=(1.03, y), coordsB=ax.transAxes,
                                color=tint, linestyle=dashes, linewidth=0.6, clip_on=False)
        joint.set_in_layout(False)
        ax.add_artist(joint)
        ax.text(1.035, y, name, fontsize=LABEL_PT, color="0.1", va="center", ha="left", clip_on=False,
                transform=ax.transAxes)


def plot_key_separation(separation: KeySeparation, tail_metric: str, ax: Axes) -> Axes:
    """One key: each value's per-unit tail values (dots) and merged group tail (bar), worst first."""
    for i, v in enumerate(separation.values):
        ax.scatter([i] * len(v.unit_tails_ns), [us_value(t) for t in v.unit_tails_ns], color=colour(i), s=14,
                   alpha=0.8)
        ax.hlines(us_value(v.stats.quantile(tail_metric).value_ns), i - 0.3, i + 0.3, color=colour(i), lw=2)
    ax.set_xticks(range(len(separation.values)), [v.value for v in separation.values], fontsize=7,
                  rotation=20)
    ax.set_xlabel(f"{separation.key} [value]", fontsize=7)  # values such as "250" are names, not numbers
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel(f"{tail_metric} [µs]")
    mark = "separates" if separation.significant else "does not separate"
    ax.set_title(f"{separation.key}: {mark} ({format_p(separation.p_holm)}, Holm)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return ax


def _date_axis(ax: Axes) -> None:
    ax.set_xlabel("capture start [UTC]", fontsize=7)
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
