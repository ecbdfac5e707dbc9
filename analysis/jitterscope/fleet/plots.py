"""Figures of a fleet: each takes a result and an Axes and computes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

from ..format import format_p, us_value
from ..render import colour, plain_log_axis
from .results import Fleet, KeySeparation, MachineHistory

_LEVELS = ("p99", "p99.9", "p99.99")


def _when(start_ns: int | None, index: int) -> datetime | int:
    return index if start_ns is None else datetime.fromtimestamp(start_ns / 1e9, tz=UTC)


def plot_fleet_ranking(fleet: Fleet, ax: Axes, *, limit: int = 30) -> Axes:
    """Groups worst first: p99.99 with its interval, p99.9, and the max, on a log µs axis (top ``limit``)."""
    groups = fleet.groups[:limit]
    y = list(range(len(groups)))[::-1]
    for row, g in zip(y, groups, strict=True):
        q = g.quantile("p99.99")
        ax.plot([us_value(q.low_ns), us_value(q.high_ns)], [row, row], color=colour(0), lw=3, alpha=0.5)
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
    ax.set_title(f"Tails by {fleet.by}, worst at the top{shown}")
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
        ax.scatter([f[0] for f in flagged], [f[1] for f in flagged], s=160, facecolors="none", edgecolors="red",
                   lw=1.5, zorder=4, label="regressed")
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"{history.host} ({len(history.points)} runs, by {history.ordered_by})", fontsize=9)
    if history.ordered_by == "start time" and len({p.start_ns for p in history.points}) > 1:
        _date_axis(ax)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    return ax


def plot_fleet_over_time(fleet: Fleet, ax: Axes, *, level: str | None = None) -> Axes:
    """Every machine's per-run tail metric over capture start time; flagged runs in red."""
    level = level or fleet.tail_metric
    for i, history in enumerate(fleet.histories):
        x = [_when(p.start_ns, k) for k, p in enumerate(history.points)]
        ax.plot(x, [us_value(dict(p.quantiles_ns).get(level)) for p in history.points], color=colour(i % 10),
                lw=0.8, alpha=0.7)
    flagged = [(_when(p.start_ns, 0), us_value(dict(p.quantiles_ns).get(level))) for _, p in fleet.flagged]
    if flagged:
        ax.scatter([f[0] for f in flagged], [f[1] for f in flagged], color="red", zorder=4, s=30,
                   label=f"regressed ({len(flagged)})")
        ax.legend(fontsize=7)
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel(f"per-run {level} [µs]")
    ax.set_title(f"The fleet over time: each machine's {level} per run ({len(fleet.histories)} machines)")
    if all(p.start_ns is not None for h in fleet.histories for p in h.points):
        _date_axis(ax)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    return ax


def plot_key_separation(separation: KeySeparation, tail_metric: str, ax: Axes) -> Axes:
    """One key: each value's per-unit tail values (dots) and merged group tail (bar), worst first."""
    for i, v in enumerate(separation.values):
        ax.scatter([i] * len(v.unit_tails_ns), [us_value(t) for t in v.unit_tails_ns], color=colour(i), s=14,
                   alpha=0.8)
        ax.hlines(us_value(v.stats.quantile(tail_metric).value_ns), i - 0.3, i + 0.3, color=colour(i), lw=2)
    ax.set_xticks(range(len(separation.values)), [v.value for v in separation.values], fontsize=7,
                  rotation=20)
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_ylabel(f"{tail_metric} [µs]")
    mark = "separates" if separation.significant else "does not separate"
    ax.set_title(f"{separation.key}: {mark} ({format_p(separation.p_holm)}, Holm)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return ax


def _date_axis(ax: Axes) -> None:
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
