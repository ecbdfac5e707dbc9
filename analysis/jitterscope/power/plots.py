"""Figures of the frequency/SMI correlation.  Each ``plot_xxx(..., ax) -> Axes`` draws and computes nothing.

They take :class:`~jitterscope.counters.CounterSeries` (per-wake-up values),
:class:`~jitterscope.cpufreq.Transitions` and the results of
:mod:`jitterscope.correlate`, convert units for display (ns to µs or s, Hz to
MHz, fractions to %) and draw.  A notebook calls them directly::

    result, counters = correlate_dataset(open_dataset("run.parquet"))
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True)
    plot_frequency_timeline(counters.series[0], result.frequency.transitions[0], top, bottom)
"""

from __future__ import annotations

import numpy as np
from matplotlib import colors
from matplotlib.axes import Axes

from ..derive import CounterSeries
from ..format import format_resampled_p
from ..render import colour, empty_panel_note, plain_log_axis, plot_envelope
from .correlate import EventTrigger, LaggedLink
from .cpufreq import Transitions

NS_PER_US = 1e3
NS_PER_S = 1e9


def _from_turbostat(series: CounterSeries) -> bool:
    return "turbostat" in series.tsc_hz_source  # jitterscope.timeline_join.timeline_counters


def _source_label(series: CounterSeries) -> str:
    return "Bzy_MHz (turbostat, per interval)" if _from_turbostat(series) else "f_eff (APERF/MPERF)"


MAX_TRANSITION_LINES = 40
"""More transitions than this are marked as a rug along the top edge, not as lines across the panel: 200 lines
over 10 s covered a 3.5 in column's panel in red (the close-up below shows each transition)."""


def plot_frequency_timeline(series: CounterSeries, transitions: Transitions | None, ax_frequency: Axes,
                            ax_latency: Axes, *, threshold_ns: float | None = None, index: int = 0,
                            latency_label: str = "latency") -> Axes:
    """f_eff over time with transitions marked (top), latency over time on the same time axis (bottom).

    More points than the panel has columns are drawn as their envelope: per column of 2 pt the range of f_eff
    shaded and its mean (the wake-ups are equally spaced: the mean is the time-weighted one, 1,600 MHz for half the
    time at 800 and half at 2,400) as a line; 50 ms P-states over 10 s change every pixel at a column's width, so
    the frequency line itself (and its median) filled the panel as a solid block.
    ``latency_label`` names what the latency points are (e.g. the largest of each run of k wake-ups
    when ``series`` holds the figure rows of a long capture).
    """
    seconds = (series.expected_ns - series.expected_ns[0]) / NS_PER_S
    plot_envelope(ax_frequency, seconds, series.f_eff_hz / 1e6, color=colour(index), linewidth=0.6, marker=".",
                  markersize=1.5, rasterized=True, label=_source_label(series), centre="mean")
    if transitions is not None and transitions.count:
        # from the transitions' own times: the series drawn may be the figure rows of a long capture
        at = (np.asarray(transitions.time_ns, dtype=np.float64) - series.expected_ns[0]) / NS_PER_S
        label = (f"{transitions.count} transitions (±{transitions.relative_threshold:.0%}, "
                 f"dwell ≥ {transitions.min_dwell})")
        if transitions.count <= MAX_TRANSITION_LINES:
            # one collection, not an artist per transition: thousands of transitions draw in milliseconds
            ax_frequency.vlines(at, 0, 1, transform=ax_frequency.get_xaxis_transform(), color="#c00000",
                                linewidth=0.4, alpha=0.5, rasterized=True, label=label)
        else:  # lines would hide the frequency trace: a rug along the top edge
            ax_frequency.vlines(at, 0.93, 1, transform=ax_frequency.get_xaxis_transform(), color="#c00000",
                                linewidth=0.3, alpha=0.4, rasterized=True, label=label + ", marked along the top")
    ax_frequency.set_ylabel("effective frequency [MHz]")
    # short enough for two lines at a column's width: what the band and line are, the legend says
    ax_frequency.set_title(f"CPU {series.cpu}: frequency and latency, n = {np.asarray(series.latency_ns).size:,}\n"
                           "no uncertainty: measured values", fontsize=10)
    ax_frequency.grid(True, alpha=0.3)
    rug = transitions is not None and transitions.count > MAX_TRANSITION_LINES
    _legend_above_band(ax_frequency, series.f_eff_hz / 1e6, below_rug=rug)
    ax_latency.plot(seconds, series.latency_ns / NS_PER_US, color="0.25", linestyle="none", marker=".",
                    markersize=1.5, rasterized=True, label=latency_label)
    if threshold_ns is not None:
        ax_latency.axhline(threshold_ns / NS_PER_US, color="#c00000", linestyle="--", linewidth=0.8,
                           label=f"spike threshold {threshold_ns / NS_PER_US:.1f} µs")
    positive = series.latency_ns[series.latency_ns > 0]
    if positive.size and positive.max() / positive.min() > 20:
        ax_latency.set_yscale("log")
        plain_log_axis(ax_latency.yaxis)
    ax_latency.set_xlabel("time since first wake-up [s]")
    ax_latency.set_ylabel("latency [µs]")
    ax_latency.grid(True, alpha=0.3)
    ax_latency.legend(loc="upper right", fontsize=8)
    return ax_frequency


def _headroom(ax: Axes, values: np.ndarray, top: float) -> None:
    """The y axis of ``ax`` (linear) set so that ``values`` reach ``top`` of its height."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        span = high - low if high > low else max(abs(high) * 0.05, 1.0)
        ax.set_ylim(low - 0.05 * span, low - 0.05 * span + 1.05 * span / top)


BAND_TOP = 0.55
"""Where the frequency's range band may reach, as a share of its panel's height: the legend sits above it.  The
band spans every column when the frequency moves all the time (50 ms P-states: 800 to 2,400 MHz in each), so no
corner of the panel is free of it, and a legend in one hid the band and the rug of transitions at column width."""


def _legend_above_band(ax: Axes, mhz: np.ndarray, *, below_rug: bool) -> None:
    """The legend in headroom above the frequency's range band (and below the rug of transitions, if drawn)."""
    _headroom(ax, mhz, BAND_TOP)
    ax.legend(loc="upper right", fontsize=8, ncols=2, bbox_to_anchor=(1.0, 0.92 if below_rug else 1.0))


ZOOM_S = 10.0
"""The longest close-up under a frequency timeline, in seconds."""
ZOOM_TRANSITIONS = 20
"""The close-up is shortened to hold about this many transitions: each P-state then spans about a twentieth of
the panel, a few millimetres even at a column's width."""


def close_up_window(span_s: float, transitions_s: np.ndarray | None = None) -> tuple[float, float]:
    """The stretch of a run of ``span_s`` seconds shown close up: the whole run up to :data:`ZOOM_S`; when the
    transitions (times in seconds since the first wake-up) come faster than :data:`ZOOM_TRANSITIONS` in that
    length, a shorter length (1, 2 or 5 × 10^k s) that holds about that many, from the middle of the run (a
    representative stretch: the run's start can be its settling)."""
    length = min(ZOOM_S, span_s)
    count = 0 if transitions_s is None else int(np.count_nonzero(np.asarray(transitions_s) <= span_s))
    if span_s <= 0 or count * length / span_s <= ZOOM_TRANSITIONS:
        return 0.0, length
    wanted = ZOOM_TRANSITIONS * span_s / count
    decade = 10.0 ** np.floor(np.log10(wanted))
    length = max(step * decade for step in (1.0, 2.0, 5.0) if step * decade <= wanted)
    start = np.floor((span_s / 2 - length / 2) / length) * length  # a whole multiple: "4–5 s", not "4.37–5.37 s"
    return float(max(0.0, start)), float(max(0.0, start) + length)


ZOOM_DATA_TOP = 0.75
"""How high the close-up's steps and stems may reach, as a share of its panel's height: its legend sits above."""


def plot_frequency_zoom(series: CounterSeries, transitions: Transitions | None, ax: Axes, *, start_s: float,
                        stop_s: float, index: int = 0) -> Axes:
    """A time window close up: f_eff as steps (left axis) and latency as stems (right axis), transitions marked."""
    seconds = (series.expected_ns - series.expected_ns[0]) / NS_PER_S
    inside = (seconds >= start_s) & (seconds <= stop_s)
    ax.step(seconds[inside], series.f_eff_hz[inside] / 1e6, where="pre", color=colour(index), linewidth=1.0,
            # short labels: at column width the close-up is narrow and a long label wraps over the tick labels
            label=("Bzy_MHz (left)" if _from_turbostat(series) else "f_eff (left)"))
    if transitions is not None and transitions.count:
        # from the transitions' own times: the series drawn may be the figure rows of a long capture
        at = (np.asarray(transitions.time_ns, dtype=np.float64) - series.expected_ns[0]) / NS_PER_S
        shown = at[(at >= start_s) & (at <= stop_s)]
        ax.vlines(shown, 0, 1, transform=ax.get_xaxis_transform(), color="#c00000", linewidth=0.6, alpha=0.6)
    ax.set_xlim(start_s, stop_s)
    ax.set_xlabel("time since first wake-up [s]")
    ax.set_ylabel("effective frequency [MHz]")
    ax.grid(True, alpha=0.3)
    right = ax.twinx()
    right.vlines(seconds[inside], 0, series.latency_ns[inside] / NS_PER_US, color="0.55", linewidth=0.8,
                 label="latency (right)", rasterized=True)
    right.set_ylim(bottom=0)
    right.set_ylabel("latency [µs]")
    # the frequency steps over the latency stems: thousands of stems in a second hid them
    ax.set_zorder(right.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_title(f"CPU {series.cpu}: close-up of {start_s:g}–{stop_s:g} s\nred lines: detected transitions",
                 fontsize=10)
    # headroom on both axes for the legend: a twin's data is not seen by the page's legend check
    _headroom(ax, series.f_eff_hz[inside] / 1e6, ZOOM_DATA_TOP)
    highest = float(np.nanmax(series.latency_ns[inside])) / NS_PER_US if inside.any() else 0.0
    if highest > 0:
        right.set_ylim(0, highest / ZOOM_DATA_TOP)
    handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="upper right", fontsize=8, ncols=2)
    return ax


def plot_counter_hexbin(values: np.ndarray, latency_ns: np.ndarray, ax: Axes, *, what: str,
                        gridsize: int = 60) -> Axes:
    """Hexbin density of latency against f_eff (``what="f_eff"``, Hz) or C0 residency (``what="c0"``, 0..1)."""
    finite = np.isfinite(values) & (latency_ns > 0)
    x = values[finite] / 1e6 if what == "f_eff" else 100 * values[finite]
    y = latency_ns[finite] / NS_PER_US
    if x.size == 0:
        empty_panel_note(ax, f"no valid {what} values (n = 0 of {np.asarray(latency_ns).size:,} wake-ups)")
        return ax
    # C0 always spans 0-100 %: a fixed extent keeps a nearly constant residency readable (not 5.000001 %)
    extent = None if what == "f_eff" else (0.0, 100.0, float(np.log10(y.min())), float(np.log10(y.max())) + 1e-9)
    art = ax.hexbin(x, y, gridsize=gridsize, yscale="log", norm=colors.LogNorm(), cmap="viridis", mincnt=1,
                    rasterized=True, extent=extent)
    ax.figure.colorbar(art, ax=ax, label="wake-ups per cell")
    plain_log_axis(ax.yaxis)
    ax.set_xlabel("effective frequency of the interval before the wake-up [MHz]" if what == "f_eff"
                  else "C0 residency of the interval before the wake-up [%]")
    ax.set_ylabel("latency [µs]")
    ax.set_title(f"latency against {'f_eff' if what == 'f_eff' else 'C0 residency'} (n = {x.size:,})\n"
                 "no uncertainty: counts of measured pairs", fontsize=10)
    return ax


EVENT_DATA_TOP = 0.7
"""How high an event-triggered average and its band may reach, as a share of the panel: its legend sits above.
The band is the panel's width wide, so the legend had no free corner (at a column's width one panel's legend sat
on the band, its neighbour's was moved out beside the figure)."""


def plot_event_average(trigger: EventTrigger, ax: Axes, *, index: int = 0) -> Axes:
    """Mean latency around events, with the surrogates' pointwise band shaded."""
    a = trigger.average
    event = {"transition": "frequency transition", "smi": "SMI"}.get(trigger.event, trigger.event)
    short = {"transition": "transition", "smi": "SMI"}.get(trigger.event, trigger.event)
    lags = np.asarray(a.lags)
    low, high = np.asarray(a.band_low) / NS_PER_US, np.asarray(a.band_high) / NS_PER_US
    mean = np.asarray(a.mean) / NS_PER_US
    if np.isfinite(low).any():
        ax.fill_between(lags, low, high, color="0.8", step="mid",
                        label=f"95 % band, {a.n_surrogates} circular shifts")
    ax.plot(lags, mean, color=colour(index), marker="o", markersize=3, linewidth=1.2,
            label=f"mean ({format_resampled_p(a.p_value, a.n_surrogates)})")
    _headroom(ax, np.concatenate([mean, low, high]), EVENT_DATA_TOP)
    ax.axvline(0, color="0.4", linewidth=0.6, linestyle=":")
    ax.set_xlabel(f"lag from the {event} [wake-ups]")
    ax.set_ylabel("mean latency [µs]")
    # two lines of a panel 3.6 in wide (a page's half) at 9 pt
    # (at a column's width the titles of panels side by side met, and were wrapped to four lines each)
    ax.set_title(f"CPU {trigger.cpu}: latency at {short}s\nn = {a.n_events:,}; 95 % band of surrogates", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=7)
    return ax


def plot_lagged_correlation(link: LaggedLink, ax: Axes, *, index: int = 0) -> Axes:
    """Rank correlation of latency with |Δf_eff| or C0 per lag, and the ±1.96/√n null band."""
    c = link.correlation
    lags = np.asarray(c.lags)
    band = np.asarray(c.null_band)
    ax.fill_between(lags, -band, band, color="0.85", step="mid", label="95% band of no correlation")
    ax.vlines(lags, 0, np.asarray(c.r), color=colour(index), linewidth=2)
    # a streamed thread longer than the rank sample: the pairs come from its blocks (the methods table says how)
    pairs = f"n ≈ {max(c.n):,} pairs of a block sample" if c.sample else f"n ≈ {max(c.n):,}"
    ax.plot(lags, np.asarray(c.r), "o", color=colour(index), markersize=3, label=f"Spearman r ({pairs})")
    ax.axhline(0, color="0.3", linewidth=0.6)
    ax.set_xlabel(f"lag [wake-ups] (latency at t against {link.other} at t + lag)")
    ax.set_ylabel("Spearman r [unitless]")
    # two lines of a panel 3.6 in wide (a page's half) at 9 pt: the block sample is said in the legend too
    ax.set_title(f"CPU {link.cpu}: latency vs {link.other}, n ≈ {max(c.n):,}\n"
                 + ("block sample; " if c.sample else "") + "grey: 95 % band of r = 0", fontsize=10)
    if not np.isfinite(np.asarray(c.r, dtype=float)).any():
        # a rank correlation with a constant series is undefined at every lag: say so, not an empty frame
        empty_panel_note(ax, f"no variation: {link.other} or latency constant (n = {max(c.n, default=0):,} "
                             "pairs), so no rank correlation")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=7)
    return ax
