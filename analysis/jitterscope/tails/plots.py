"""Figures of tail fits.  Each ``plot_xxx(fit, ax) -> Axes`` draws; none computes.

A :class:`~jitterscope.tails.TailFit` carries its plot-ready series (candidate
thresholds, QQ points, return-level curves); these functions only convert ns to
µs and draw.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from ..render import colour, plain_log_axis
from .fit import TailFit

NS_PER_US = 1000.0
LOG_SPAN = 100.0
"""Observations whose largest is more than this factor above their smallest (return levels) or their median excess
(QQ) are drawn on log axes: a mixed tail (a 17 ms stall over excesses of a few µs) put every point but one on the
floor of a linear panel."""


def _candidate_thresholds_us(fit: TailFit) -> np.ndarray:
    return np.array([c.threshold_ns for c in fit.candidates]) / NS_PER_US


def _mark_chosen_threshold(fit: TailFit, ax: Axes) -> None:
    ax.axvline(fit.threshold_ns / NS_PER_US, color="#b00000", linestyle=":", label="chosen threshold")


def plot_mean_residual_life(fit: TailFit, ax: Axes) -> Axes:
    """Mean excess over the candidate thresholds; linear above a valid threshold. Chosen one marked."""
    u = _candidate_thresholds_us(fit)
    e = np.array([c.mean_excess_ns for c in fit.candidates]) / NS_PER_US
    ax.plot(u, e, marker="o", color=colour(0))
    _mark_chosen_threshold(fit, ax)
    ax.set_xlabel("threshold u [µs]")
    ax.set_ylabel("mean excess over u [µs]")
    ax.set_title("Mean residual life")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_parameter_stability(fit: TailFit, ax: Axes) -> Axes:
    """GPD shape over the candidate thresholds with ±1.96 se bars; the chosen threshold marked."""
    u = _candidate_thresholds_us(fit)
    xi = np.array([c.xi for c in fit.candidates])
    se = np.array([c.xi_se for c in fit.candidates])
    ax.errorbar(u, xi, yerr=1.96 * se, marker="o", color=colour(0), capsize=3, linestyle="-")
    _mark_chosen_threshold(fit, ax)
    ax.axhline(0, color="0.5", linewidth=0.8)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.set_xlabel("threshold u [µs]")
    ax.set_ylabel("shape ξ [unitless]")
    ax.set_title("Parameter stability")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_tail_qq(fit: TailFit, ax: Axes) -> Axes:
    """Observed exceedances against the fitted GPD's quantiles."""
    points = np.asarray(fit.qq_points_ns) / NS_PER_US
    ax.plot(points[:, 0], points[:, 1], marker=".", linestyle="none", color=colour(0), markersize=4)
    top = float(points.max())
    positive = points[(points > 0).all(axis=1)]
    # the smallest excesses are near zero in any tail: the span that squeezes a linear panel is the largest
    # against the typical (median) one
    logarithmic = positive.size > 0 and top / float(np.median(positive[:, 1])) > LOG_SPAN
    bottom = float(positive.min()) if logarithmic else 0.0
    ax.plot([bottom, top], [bottom, top], color="0.4", linestyle="--", linewidth=0.8)
    if logarithmic:  # the excesses span decades: on linear axes all but the largest sit at the origin
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axis(ax.xaxis)
        plain_log_axis(ax.yaxis)
    scale = ", log-log" if logarithmic else ""
    ax.set_xlabel("GPD quantile of the excess [µs]")
    ax.set_ylabel("observed excess over threshold [µs]")
    ax.set_title(f"Tail QQ{scale} (r = {fit.qq_correlation:.4f}, n = {len(points):,})")
    ax.grid(True, alpha=0.3)
    return ax


def plot_return_levels(fit: TailFit, ax: Axes) -> Axes:
    """Return level against return period (wake-ups, log), with the interval band and the largest observations.

    Where the fit does not extrapolate (``fit.extrapolated`` False) only the observations are drawn, with
    the reason; the latency axis never reaches far beyond the observed maximum (the band is clipped).
    """
    emp = np.asarray(fit.empirical_return)
    ax.plot(emp[:, 0], emp[:, 1] / NS_PER_US, marker=".", linestyle="none", color="0.2", markersize=3,
            label="observed")
    top = float(emp[:, 1].max()) / NS_PER_US
    if fit.extrapolated and fit.return_curve:
        curve = np.asarray(fit.return_curve)
        ax.plot(curve[:, 0], curve[:, 1] / NS_PER_US, color=colour(0), label="GPD return level")
        upper = np.where(np.isfinite(curve[:, 3]), curve[:, 3], np.nan)
        ax.fill_between(curve[:, 0], curve[:, 2] / NS_PER_US, upper / NS_PER_US, color=colour(0), alpha=0.2,
                        label=f"{fit.confidence:.0%} interval")
        top = max(top, float(np.nanmax(curve[:, 1])) / NS_PER_US)
        ax.set_ylim(top=1.25 * top)  # an unbounded upper end must not flatten the curve to a line
        for r in fit.return_levels:
            ax.axvline(r.wakeups, color="0.5", linestyle=":", linewidth=0.8)
            ax.text(r.wakeups, ax.get_ylim()[1], f" 1/{r.period}", fontsize="small", va="top", color="0.3")
    else:  # said in the title: a note inside the panel sat on the observations
        # two lines of a column's width: what is missing, then what is drawn instead
        ax.set_title("No return levels: a mixed tail (see checks)\n"
                     "no uncertainty: the largest observations", color="#b00000", fontsize=10)
    ax.set_xscale("log")
    observed = emp[:, 1][emp[:, 1] > 0]
    if not (fit.extrapolated and fit.return_curve) and observed.size and \
            float(observed.max()) / float(observed.min()) > LOG_SPAN:
        # observations only, spanning decades: a linear axis put all but the largest on its floor
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
    else:
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.set_xlabel("return period [wake-ups]")
    ax.set_ylabel("latency [µs]")
    if fit.extrapolated and fit.return_curve:
        ax.set_title(f"Return levels ({fit.confidence:.0%} interval shaded)")
    elif fit.extrapolated:
        ax.set_title("Largest observations (no uncertainty: observed values)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    return ax
