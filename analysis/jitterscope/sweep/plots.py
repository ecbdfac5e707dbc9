"""A sweep's figures: the factor effects with their intervals (page 1) and the CCDF of each condition.

Each takes a result and an Axes and computes nothing.  Colours are Okabe and Ito's colour-blind-safe set;
conditions also differ by line style, so the overlay reads in grey print.
"""

from __future__ import annotations

from matplotlib.axes import Axes

from ..render import plain_log_axis, verdict_style
from .results import METRIC_NAMES, VERDICT_EFFECT, VERDICT_NONE, SweepAnalysis

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINE_STYLES = ("-", "--", "-.", ":")
VERDICTS_SHOWN = (VERDICT_EFFECT, VERDICT_NONE, "inconclusive")


def plot_effects(result: SweepAnalysis, ax: Axes) -> Axes:
    """Every main effect and interaction as a ratio with its interval (log scale), the noise band shaded."""
    order = {name: i for i, name in enumerate(METRIC_NAMES)}
    effects = sorted(result.effects, key=lambda e: (list(result.factors).index(e.factor), str(e.level),
                                                    order[e.metric]))
    effects += sorted(result.interactions, key=lambda e: (e.factor, str(e.other_factor), order[e.metric]))
    labels = []
    for y, effect in enumerate(reversed(effects)):
        style = verdict_style(effect.verdict)  # colour, marker and word: never colour alone
        if effect.low is not None and effect.high is not None:
            ax.plot([effect.low, effect.high], [y, y], color=style.colour, lw=2)
        ax.plot([effect.ratio], [y], style.marker, color=style.colour, ms=5)
        short = effect.label.replace(" vs ", "/")
        labels.append(f"{short} · {effect.metric}")
    ax.axvspan(1 / (1 + result.noise), 1 + result.noise, color="0.9", zorder=0,
               label=f"noise ±{result.noise * 100:g} %")
    ax.axvline(1.0, color="0.4", lw=0.8)
    ax.set_xscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel(f"ratio to the reference level ({result.confidence * 100:g} % interval, runs as units)")
    for verdict in VERDICTS_SHOWN:
        style = verdict_style(verdict)
        ax.plot([], [], marker=style.marker, linestyle="-", color=style.colour, label=verdict)
    for y in range(len(effects) - 1):  # a rule between factors (and before the interactions)
        upper, lower = list(reversed(effects))[y + 1], list(reversed(effects))[y]
        if (upper.kind, upper.factor, str(upper.level)) != (lower.kind, lower.factor, str(lower.level)):
            ax.axhline(y + 0.5, color="0.75", lw=0.6)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Which settings matter: effect of each factor on each latency metric", fontsize=10, loc="left")
    return ax


def plot_sweep_ccdf(result: SweepAnalysis, ax: Axes) -> Axes:
    """The latency CCDF of each condition (its runs pooled, warm-up excluded), log-log."""
    for index, condition in enumerate(result.conditions):
        x, p = condition.ccdf_us
        if not x:
            continue
        ax.step(x, p, where="post", color=OKABE_ITO[index % len(OKABE_ITO)],
                ls=LINE_STYLES[(index // len(OKABE_ITO) + index) % len(LINE_STYLES)], lw=1.4,
                label=f"{condition.label} ({len(condition.runs)} runs)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_xlabel("wake-up latency [µs]")
    ax.set_ylabel("fraction of wake-ups later")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Latency CCDF per condition (runs pooled for the picture only)", fontsize=10, loc="left")
    return ax


def plot_condition_metric(result: SweepAnalysis, metric: str, ax: Axes) -> Axes:
    """Each run's value of ``metric`` per condition (dots) with the condition's interval (bar)."""
    if metric not in METRIC_NAMES:
        raise ValueError(f"unknown metric {metric!r}")
    for index, condition in enumerate(result.conditions):
        est = condition.metrics[metric]
        values = [r.metrics_ns[metric] / 1e3 for r in result.runs if r.id in condition.runs]
        colour = OKABE_ITO[index % len(OKABE_ITO)]
        ax.plot([index] * len(values), values, "o", color=colour, alpha=0.6, ms=4)
        if est.low_ns is not None and est.high_ns is not None:
            ax.plot([index, index], [est.low_ns / 1e3, est.high_ns / 1e3], color=colour, lw=3, alpha=0.5)
        ax.plot([index - 0.2, index + 0.2], [est.value_ns / 1e3] * 2, color=colour, lw=2)
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    ax.set_xticks(range(len(result.conditions)), [c.label.replace(", ", "\n") for c in result.conditions],
                  fontsize=6)
    ax.set_ylabel(f"{metric} [µs]")
    ax.set_title(f"{metric} per run", fontsize=9, loc="left")
    return ax
