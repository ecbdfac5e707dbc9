"""Figures of spectral results; each takes a result and an Axes and computes no statistics."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from ..format import format_thread_cpu
from ..render import empty_panel_note, major_labels_only
from . import InterSpikeIntervals, Peak, Psd, Spectrogram, ThreadSpectra
from .peaks import MIN_CYCLES
from .text import PEAKS_SHOWN, peaks_by_family


def table_peaks(thread: ThreadSpectra) -> list[Peak]:
    """The peaks the report's table lists for this thread, in table order (the ones the figures mark)."""
    return peaks_by_family(thread.peaks, PEAKS_SHOWN)[0]


def plot_psd(thread: ThreadSpectra, ax: Axes) -> None:
    """Welch PSD on log axes with the FAP threshold; where the peaks come from Welch, the table's peaks marked.

    Markers carry the peak's row number in the peak table ("1: 20 Hz" at each family's first row).
    """
    psd = thread.psd
    if psd is None:
        ax.set_title(f"{format_thread_cpu(thread.thread, thread.cpu)}: latency PSD")
        ax.text(0.5, 0.5, "no Welch spectrum (gaps): see the Lomb-Scargle peaks", ha="center", transform=ax.transAxes)
        return
    welch_peaks = not thread.method.startswith("lomb-scargle")  # also "lomb-scargle (means of k wake-ups)"
    who = format_thread_cpu(thread.thread, thread.cpu)
    # two lines at a column's width (43 characters a line at 9 pt): how it was computed goes into the legend
    ax.set_title(f"{who}: PSD, n = {thread.samples:,}\nno uncertainty: "
                 + ("peaks judged by the FAP" if welch_peaks else "peaks tested below"))
    f, p = psd.frequencies_hz[1:], psd.psd[1:]
    ax.loglog(f, p, lw=0.6, color="C0", label=f"Welch {psd.average} of {psd.n_segments} × "
              f"{psd.nperseg / psd.fs_hz:.3g} s, record {psd.n_samples / psd.fs_hz:.4g} s")
    if thread.floor is not None:
        ax.loglog(f, thread.floor.threshold[1:], lw=0.8, color="C1", ls="--", label="FAP threshold")
    if welch_peaks:
        _mark(ax, table_peaks(thread))
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("PSD [ns²/Hz]")
    # at the top, where the report makes headroom for it (render.legend_off_data): low left, it sat on the spectrum
    ax.legend(loc="upper right")


def plot_lomb_scargle(thread: ThreadSpectra, ax: Axes) -> None:
    """Lomb-Scargle periodogram of the wake-ups it used, with the table's peaks marked and numbered."""
    ls = thread.lomb_scargle
    if ls is None:
        ax.set_axis_off()
        return
    used = f"first of {thread.samples:,}" if ls.n_used < thread.samples else "all"
    # two lines at a column's width: the times it used and the test's threshold go into the legend
    ax.set_title(f"{format_thread_cpu(thread.thread, thread.cpu)}: Lomb-Scargle\n"
                 f"n = {ls.n_used:,} ({used}), span {ls.span_s:.4g} s")
    ax.loglog(ls.frequencies_hz, np.maximum(ls.power, np.finfo(float).tiny), lw=0.5, color="C0",
              label=f"power on actual times (Baluev FAP < {ls.alpha:g})")
    if thread.method.startswith("lomb-scargle"):
        _mark(ax, table_peaks(thread))
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("normalised power")
    ax.legend(loc="upper right")


MAX_MARKERS = 60


def _mark(ax: Axes, peaks: list[Peak] | tuple[Peak, ...]) -> None:
    """Mark ``peaks`` (in table order) with their row number; each family's first row also gets its frequency."""
    families: set[int] = set()
    for row, peak in enumerate(peaks[:MAX_MARKERS], start=1):
        ax.plot(peak.frequency_hz, peak.power, "v", color="C3", ms=4)
        text = str(row)
        if peak.harmonic_group not in families:
            families.add(peak.harmonic_group)
            text += f": {peak.frequency_hz:.4g} Hz" + (f" ×{peak.harmonic_number}" if peak.harmonic_number > 1 else "")
        ax.annotate(text, (peak.frequency_hz, peak.power), textcoords="offset points", xytext=(3, 6),
                    ha="left", fontsize="x-small", arrowprops={"arrowstyle": "-", "lw": 0.5})


def plot_spectrogram(spec: Spectrogram, ax: Axes, *, title: str = "spectrogram") -> None:
    """Time-frequency power (log colour scale); columns where no whole segment starts (a gap in the series
    broke every run of contiguous wake-ups there) are grey, and the time axis's label counts them."""
    power = np.ma.masked_invalid(spec.power[:, 1:].T)
    edges_t = np.r_[spec.start_s, spec.start_s[-1] + spec.span_s]
    df = spec.frequencies_hz[1] - spec.frequencies_hz[0]
    edges_f = np.r_[spec.frequencies_hz[1:] - df / 2, spec.frequencies_hz[-1] + df / 2]
    positive = power.compressed()
    positive = positive[positive > 0]
    from matplotlib.colors import LogNorm

    norm = LogNorm(vmin=positive.min(), vmax=positive.max()) if positive.size else None
    mesh = ax.pcolormesh(edges_t, edges_f, power, norm=norm, shading="flat", rasterized=True)
    ax.figure.colorbar(mesh, ax=ax, label="PSD [ns²/Hz]")
    ax.set_title(f"{title}\nof latency, Welch columns of {spec.span_s:.3g} s")
    # a column where every run of contiguous wake-ups was cut short by a gap holds no segment: said where the
    # time axis is read (the title is full at a paper's column width)
    empty = int(np.count_nonzero(spec.segments == 0))
    gaps = ""
    if empty:
        ax.set_facecolor("0.8")  # the masked cells show the panel: grey, not white paper
        gaps = f"; {empty} grey column{'s' if empty > 1 else ''}: gaps, no whole segment"
    ax.set_xlabel(f"time since first wake-up [s]{gaps}")
    ax.set_ylabel("frequency [Hz]")


def plot_spike_psd(psd: Psd | None, peaks: tuple[Peak, ...], ax: Axes, *, title: str = "spike-train spectrum",
                   spikes: int | None = None) -> None:
    """Spectrum of the spike indicator series with its significant peaks.

    A note takes the curve's place where there is no spectrum (``psd`` None: too few contiguous wake-ups for one
    segment) or ``spikes`` (how many the series holds) is below :data:`~.peaks.MIN_CYCLES`: the spectrum of a
    few isolated spikes is flat, and no period can be seen in fewer cycles than that.
    """
    if psd is None:
        ax.set_title(title)
        _note_instead(ax, "not computed: too few contiguous wake-ups for one spectral segment")
        return
    ax.set_title(f"{title}\nWelch {psd.average} of {psd.n_segments} segments, {psd.n_samples / psd.fs_hz:.4g} s")
    if spikes is not None and spikes < MIN_CYCLES:
        _note_instead(ax, f"not drawn: {spikes:,} spike{'' if spikes == 1 else 's'} in the record; a periodic "
                          f"train shows only with {MIN_CYCLES} or more")
        return
    ax.loglog(psd.frequencies_hz[1:], np.maximum(psd.psd[1:], np.finfo(float).tiny), lw=0.6, color="C2")
    _mark(ax, peaks_by_family(peaks, PEAKS_SHOWN)[0])
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("PSD [1/Hz]")
    major_labels_only(ax.xaxis)


def _note_instead(ax: Axes, message: str) -> None:
    """The panel without axes' ticks, holding ``message`` (why nothing is drawn) instead of a plot."""
    ax.set_xticks([])
    ax.set_yticks([])
    empty_panel_note(ax, message)


def plot_isi(isi: InterSpikeIntervals, ax: Axes) -> None:
    """Inter-spike-interval histogram on a log time axis; a note instead where there is no interval.

    Its n is the intervals drawn: between runs of spikes where consecutive late wake-ups were merged into one
    run (``isi.episodes`` < ``isi.spikes``), which its title and axis label say (1,280 spikes made 190 intervals; a
    title saying "n = 1,280 spikes" over 190 counts read as a histogram missing most of its data).
    """
    intervals = int(np.asarray(isi.counts).sum())
    runs = 0 < isi.episodes < isi.spikes
    # two lines of a column's half: the spike and run counts go to the axis label
    ax.set_title(f"{'spike-run' if runs else 'inter-spike'} intervals (n = {intervals:,})\n"
                 f"above {isi.threshold_ns / 1000:.4g} µs; no uncertainty: counts")
    between = f"starts of runs ({isi.spikes:,} spikes in {isi.episodes:,} runs)" if runs else \
        f"spikes ({isi.spikes:,})"
    if not isi.counts.any():
        if isi.spikes >= 2:  # consecutive late wake-ups are one run (one disturbance): intervals are between runs
            _note_instead(ax, f"no interval: {isi.spikes:,} spikes, all in one run of consecutive late wake-ups; an "
                              "interval needs two runs")
        else:
            _note_instead(ax, f"no interval: {isi.spikes} spike above the threshold; an interval needs two")
        return
    ax.stairs(isi.counts, isi.edges_s, fill=True, color="C4")
    ax.set_xscale("log")
    ax.set_xlabel(f"interval between {between} [s]")
    ax.set_ylabel("intervals [count]")
    used = np.flatnonzero(isi.counts)
    if used.size:
        ax.set_xlim(isi.edges_s[max(used[0] - 2, 0)], isi.edges_s[min(used[-1] + 3, isi.edges_s.size - 1)])
