"""Figures of spectral results; each takes a result and an Axes and computes no statistics."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from . import InterSpikeIntervals, Peak, Psd, Spectrogram, ThreadSpectra


def plot_psd(thread: ThreadSpectra, ax: Axes, *, label_families: int = 6) -> None:
    """PSD on log axes with the FAP threshold; the strongest significant peaks marked, each family labelled."""
    psd = thread.psd
    if psd is None:
        ax.set_title(f"CPU {thread.cpu} (thread {thread.thread}): latency PSD")
        ax.text(0.5, 0.5, "no Welch spectrum (gaps): see the Lomb-Scargle peaks", ha="center", transform=ax.transAxes)
        return
    ax.set_title(f"CPU {thread.cpu} (thread {thread.thread}): latency PSD, {psd.average} of {psd.n_segments} "
                 f"segments, n={thread.samples}")
    f, p = psd.frequencies_hz[1:], psd.psd[1:]
    ax.loglog(f, p, lw=0.6, color="C0", label="Welch PSD")
    if thread.floor is not None:
        ax.loglog(f, thread.floor.threshold[1:], lw=0.8, color="C1", ls="--", label="FAP threshold")
    _mark(ax, thread.peaks if thread.method != "lomb-scargle" else (), label_families)
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("PSD [ns²/Hz]")
    ax.legend(loc="lower left")


MAX_MARKERS = 60


def _mark(ax: Axes, peaks: tuple[Peak, ...], label_families: int) -> None:
    """Mark the strongest peaks; label each family once, at its lowest harmonic, with its size."""
    for peak in peaks[:MAX_MARKERS]:
        ax.plot(peak.frequency_hz, peak.power, "v", color="C3", ms=4)
    families: dict[int, list[Peak]] = {}
    for peak in peaks:  # strongest first: families in order of their strongest member
        families.setdefault(peak.harmonic_group, []).append(peak)
    for members in list(families.values())[:label_families]:
        first = min(members, key=lambda p: p.harmonic_number)
        text = f"{first.frequency_hz:.4g} Hz" + (f" ×{first.harmonic_number}" if first.harmonic_number > 1 else "")
        if len(members) > 1:
            text += f" (+{len(members) - 1} harmonics)"
        ax.annotate(text, (first.frequency_hz, first.power), textcoords="offset points", xytext=(4, 8),
                    ha="left", fontsize=8, arrowprops={"arrowstyle": "-", "lw": 0.5})


def plot_spectrogram(spec: Spectrogram, ax: Axes, *, title: str = "spectrogram") -> None:
    """Time-frequency power (log colour scale); empty columns are blank."""
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
    ax.set_title(title)
    ax.set_xlabel("time since first wake-up [s]")
    ax.set_ylabel("frequency [Hz]")


def plot_spike_psd(psd: Psd, peaks: tuple[Peak, ...], ax: Axes, *, title: str = "spike-train spectrum") -> None:
    """Spectrum of the spike indicator series with its significant peaks."""
    ax.loglog(psd.frequencies_hz[1:], np.maximum(psd.psd[1:], np.finfo(float).tiny), lw=0.6, color="C2")
    _mark(ax, peaks, 4)
    ax.set_title(title)
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("PSD [1/Hz]")


def plot_isi(isi: InterSpikeIntervals, ax: Axes) -> None:
    """Inter-spike-interval histogram on a log time axis."""
    ax.stairs(isi.counts, isi.edges_s, fill=True, color="C4")
    ax.set_xscale("log")
    ax.set_title(f"inter-spike intervals ({isi.spikes} spikes > {isi.threshold_ns / 1000:.4g} µs)")
    ax.set_xlabel("interval [s]")
    ax.set_ylabel("count")
    used = np.flatnonzero(isi.counts)
    if used.size:
        ax.set_xlim(isi.edges_s[max(used[0] - 2, 0)], isi.edges_s[min(used[-1] + 3, isi.edges_s.size - 1)])
