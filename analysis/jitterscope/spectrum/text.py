"""Text tables of spectral results (the ``jitterscope spectrum`` output); formats, computes nothing."""

from __future__ import annotations

import math

from ..format import format_p, format_thread_cpu
from . import MIN_CYCLES, Family, Peak, SpectralAnalysis, ThreadSpectra, families_of

_HEADER = ("freq Hz", "period", "power", "SNR", "FAP", "group", "present", "alias candidates Hz", "likely source")


def format_period(seconds: float) -> str:
    """A period in the unit that reads best (ns, µs, ms or s)."""
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds * 1e9:.4g} ns"


PEAKS_SHOWN = 15
"""Peaks per thread in the report's table, marked on the figure beside it."""


def fap_text(fap: float) -> str:
    """A false-alarm probability as a table cell: "0.0034", "3.4e-05", "< 1e-12" (never 0.0e+00)."""
    return format_p(fap).removeprefix("p = ").removeprefix("p ")


def _row(peak: Peak, unit: str) -> tuple[str, ...]:
    group = f"{peak.harmonic_group}" + (f" (×{peak.harmonic_number})" if peak.harmonic_number > 1 else "")
    aliases = ", ".join(f"{c:.6g}" for c in peak.alias_candidates_hz[1:4])
    return (f"{peak.frequency_hz:.4f}", format_period(peak.period_s), f"{peak.power:.3g} {unit}",
            f"{peak.snr:.1f}", fap_text(peak.fap), group, presence_text(peak), aliases or "-",
            peak.likely_source or "-")


def presence_text(peak: Peak) -> str:
    """Where in the run a line is present: "100%", "31% (35-86 s)", or "n/r" (too weak to judge in time)."""
    if peak.presence is None:
        return "n/r"
    text = f"{peak.presence:.0%}"
    if not peak.through_run and peak.present_from_s is not None and math.isfinite(peak.present_from_s):
        text += f" ({peak.present_from_s:.4g}-{peak.present_to_s:.4g} s)"
    return text


def family_text(family: Family) -> str:
    """A family in words: "7.2997 Hz (fundamental; 68 peaks up to harmonic 147; present 100%)"."""
    numbers = sorted(p.harmonic_number for p in family.members)
    what = "fundamental" if family.has_fundamental else "fundamental not a peak itself"
    extent = f"{len(numbers)} peaks up to harmonic {numbers[-1]}" if len(numbers) > 1 else "a single line"
    return f"{family.fundamental_hz:.4f} Hz ({what}; {extent}; present {presence_text(family.strongest)})"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def peaks_by_family(peaks: tuple[Peak, ...], top: int, per_family: int = 4) -> tuple[list[Peak], int]:
    """The ``top`` peaks a table shows: every independent family before further harmonics of any one.

    Rows are chosen in rounds: round 1 takes each family's lowest-numbered member (families in order of
    their strongest member), round 2 each family's next one, and so on, at most ``per_family`` per family,
    until ``top`` rows are taken.  A 20, 40, ..., 1000 Hz comb therefore costs one row before a 113 Hz
    family gets its first.  Rows are returned grouped by family, each by harmonic number, with the number
    of peaks left out.
    """
    families: dict[int, list[Peak]] = {}
    for peak in sorted(peaks, key=lambda p: p.power, reverse=True):  # families by their strongest member
        families.setdefault(peak.harmonic_group, []).append(peak)
    members = [sorted(m, key=lambda p: p.harmonic_number)[:per_family] for m in families.values()]
    taken = [0] * len(members)
    count = 0
    for r in range(per_family):
        for i, family in enumerate(members):
            if count < top and r < len(family):
                taken[i] += 1
                count += 1
    shown = [p for family, k in zip(members, taken, strict=True) for p in family[:k]]
    return shown, len(peaks) - len(shown)


def format_thread(thread: ThreadSpectra, alpha: float, *, top: int = 20) -> str:
    """One thread's heading, method line, notes and peak table (strongest first)."""
    unit = "" if thread.method == "lomb-scargle" else "ns²/Hz"
    if thread.lomb_scargle is not None and thread.method == "lomb-scargle":
        resolution = thread.lomb_scargle.resolution_hz
    else:
        resolution = thread.psd.bin_width_hz if thread.psd is not None else math.nan
    lines = [f"{format_thread_cpu(thread.thread, thread.cpu)}: fs {thread.fs_hz:g} Hz, n={thread.samples}, "
             f"{thread.method_text}, span {thread.span_s:.4g} s, resolution {resolution:.4g} Hz, "
             f"spikes > {thread.isi.threshold_ns / 1000:.4g} µs: {thread.isi.spikes}"]
    lines += [f"  note: {note}" for note in thread.notes]
    if not thread.peaks:
        lines.append(f"  no peak with false-alarm probability below {alpha:g} and at least {MIN_CYCLES} cycles in the "
                     "record")
    else:
        families = families_of(thread.peaks)
        steady = [f for f in families if f.through_run]
        passing = [f for f in families if not f.through_run]
        lines.append(f"  periodic disturbances (families, each once): {len(steady)} through the run"
                     + (": " + "; ".join(family_text(f) for f in steady[:top]) if steady else ""))
        if passing:
            lines.append(f"  present only part of the run (not periodic findings): {len(passing)}: "
                         + "; ".join(family_text(f) for f in passing[:top]))
        shown, hidden = peaks_by_family(thread.peaks, top)
        lines += ["  " + line for line in _table([_HEADER, *(_row(p, unit) for p in shown)])]
        if hidden:
            lines.append(f"  ... {hidden} more peaks not shown: higher harmonics of the families above, "
                         "or weaker (--top)")
    if thread.spike_peaks:
        spike_families = families_of(thread.spike_peaks)
        lines.append(f"  spike train: {len(thread.spike_peaks)} significant peaks in {len(spike_families)} families: "
                     + "; ".join(f"{f.fundamental_hz:.4f} Hz ({format_period(1 / f.fundamental_hz)}, "
                                 f"{len(f.members)} peaks)" for f in spike_families[:3]))
    if thread.isi.mode_s is not None:
        lines.append(f"  most common interval between spike episodes ≈ {format_period(thread.isi.mode_s)}")
    return "\n".join(lines)


def format_spectral_analysis(analysis: SpectralAnalysis, *, top: int = 20) -> str:
    """All threads' peak tables, then the threads that were skipped and why."""
    parts = [format_thread(t, analysis.options.alpha, top=top) for t in analysis.threads]
    parts += [f"skipped {reason}" for reason in analysis.skipped]
    return "\n\n".join(parts)
