"""Whether a spectral line runs through the record: the share of time segments where it is present.

A periodic disturbance is a finding when it is there all along; a line that starts or stops mid-run is
reported with the time span where it is present, and power that a few bursts put at some frequency is no
periodicity at all.  A line is *present* in a time segment when the segment's own periodogram at the
line's frequency stands above that segment's local noise level at a 1 % false-alarm level.

Welch peaks are judged on the spectrogram columns (the same Hann segments, grouped in time); Lomb-Scargle
peaks on the analysed samples cut into segments of at least :data:`SEGMENT_CYCLES` cycles, each with a
Hann-windowed Fourier sum at the line and at frequencies 2 .. 12 segment resolutions either side (its local
level).  Segments are made longer (fewer) until a line of the strength found in the whole record would
reach twice the per-segment threshold; a line too weak for even :data:`MIN_SEGMENTS` segments is "not
resolved in time" (presence None) and stays a finding: weakness is not evidence of intermittency.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from .null import mean_null
from .peaks import Peak
from .welch import Psd, Spectrogram

PRESENT_THROUGH = 0.8
"""A line present in at least this share of the record's segments is present through the run."""
MIN_SEGMENTS = 3
MAX_SEGMENTS = 16
SEGMENT_CYCLES = 3
SEGMENT_ALPHA = 0.01
GAP_SEGMENTS = 2
_NEIGHBOURS = np.r_[-12:-1, 2:13]
_FLOOR_BINS = 31
_RATIO_BLOCK = 1 << 13  # samples per block of _ratio's Fourier sums: 23 frequencies x 8192 = 3 MB of complex


@dataclass(frozen=True)
class Presence:
    """Where in time a line is present."""

    fraction: float
    segments: int
    first_s: float
    last_s: float
    """Start of the first and end of the last segment where it is present (relative to the record start)."""


def presence_in_spectrogram(spectrogram: Spectrogram, psd: Psd, frequency_hz: float, snr: float) -> Presence | None:
    """Presence of the line at ``frequency_hz`` (full-record SNR ``snr``) in the spectrogram's columns."""
    b = round(frequency_hz / psd.bin_width_hz)
    power, counts = spectrogram.power, spectrogram.segments.astype(np.int64)
    if not 0 < b < power.shape[1] - 1 or counts.size == 0:
        return None
    starts = spectrogram.start_s
    span = spectrogram.span_s
    while True:
        used = counts > 0
        if used.sum() < MIN_SEGMENTS:
            return None
        threshold = np.array([_column_threshold(int(c), psd.nperseg, psd.nperseg - psd.noverlap) if c else math.inf
                              for c in counts])
        # a stationary line keeps its full-record SNR in every column; it must clear the threshold twice over
        if snr >= 2 * float(np.max(threshold[used])):
            break
        if used.sum() < 2 * MIN_SEGMENTS:
            return None
        power, counts, starts, span = _pairs(power, counts, starts, span)
    lo, hi = max(b - _FLOOR_BINS, 1), min(b + _FLOOR_BINS + 1, power.shape[1] - 1)
    window = np.r_[lo:max(b - 2, lo), min(b + 3, hi):hi]
    level = np.nanmedian(power[:, window], axis=1) / np.array(
        [_column_median(int(c), psd.nperseg, psd.nperseg - psd.noverlap) if c else np.nan for c in counts])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = power[:, max(b - 1, 0):b + 2].max(axis=1) / level
    present = (ratio > threshold) & used
    return _presence(present, used, starts, span)


def _pairs(power: np.ndarray, counts: np.ndarray, starts: np.ndarray, span: float):
    n = power.shape[0] // 2 * 2
    weighted = np.nan_to_num(power[:n]) * counts[:n, None]
    c = counts[0:n:2] + counts[1:n:2]
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (weighted[0:n:2] + weighted[1:n:2]) / c[:, None]
    return p, c, starts[0:n:2], 2 * span


@functools.lru_cache(maxsize=512)
def _column_null(count: int, nperseg: int, step: int):
    window = np.hanning(nperseg + 1)[:-1]
    return mean_null(count, window, step)


@functools.lru_cache(maxsize=512)
def _column_threshold(count: int, nperseg: int, step: int) -> float:
    null = _column_null(count, nperseg, step)
    return float(null.isf(SEGMENT_ALPHA) / null.median)


@functools.lru_cache(maxsize=512)
def _column_median(count: int, nperseg: int, step: int) -> float:
    return _column_null(count, nperseg, step).median


def presence_in_samples(times_s: np.ndarray, values: np.ndarray, frequency_hz: float) -> Presence | None:
    """Presence of the line at ``frequency_hz`` in segments of a sampled series (Lomb-Scargle's input)."""
    times_s = np.asarray(times_s, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if times_s.size < 64 or not frequency_hz > 0:
        return None
    t0, span = float(times_s[0]), float(times_s[-1] - times_s[0])
    nyquist = 0.5 / float(np.median(np.diff(times_s)))
    full = _ratio(times_s, values, frequency_hz, span, nyquist)
    threshold = -math.log(SEGMENT_ALPHA)  # a single periodogram: power / level is Exp(1) under noise
    most = int(min(MAX_SEGMENTS, frequency_hz * span // SEGMENT_CYCLES))
    # the line's ratio above 1 shrinks with the segment length (its power as T^2, the noise's as T)
    segments = next((s for s in range(most, MIN_SEGMENTS - 1, -1) if 1 + (full - 1) / s >= 2 * threshold), None)
    if segments is None:
        return None
    edges = t0 + span * np.arange(segments + 1) / segments
    cut = np.searchsorted(times_s, edges)
    present = np.zeros(segments, dtype=bool)
    used = np.zeros(segments, dtype=bool)
    for s in range(segments):
        t, v = times_s[cut[s]:cut[s + 1]], values[cut[s]:cut[s + 1]]
        if t.size >= 16:
            used[s] = True
            present[s] = _ratio(t, v, frequency_hz, span / segments, nyquist) > threshold
    return _presence(present, used, edges[:-1] - t0, span / segments)


def _ratio(t: np.ndarray, v: np.ndarray, f: float, span: float, nyquist: float) -> float:
    """Hann-windowed periodogram at ``f`` over its median at neighbouring Fourier frequencies (its mean level)."""
    resolution = 1.0 / max(span, 1e-300)
    others = f + _NEIGHBOURS * resolution
    others = others[(others > resolution) & (others < nyquist)]
    if others.size < 4:
        return math.nan
    phase = (t - t[0]) / max(span, 1e-300)
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.clip(phase, 0.0, 1.0))
    x = (v - v.mean()) * w
    freqs = np.r_[f, others]
    # the Fourier sums in blocks of samples: the whole (frequencies x samples) complex matrix of Lomb-Scargle's
    # 2^18 inputs was ~0.3 GB of temporaries, the largest peak of a 10^8 report with gaps (the sections' peaks add)
    elapsed = t - t[0]
    sums = np.zeros(freqs.size, dtype=np.complex128)
    for start in range(0, t.size, _RATIO_BLOCK):
        block = slice(start, start + _RATIO_BLOCK)
        sums += np.exp(-2j * np.pi * np.outer(freqs, elapsed[block])) @ x[block]
    power = np.abs(sums) ** 2
    return float(power[0] / (np.median(power[1:]) / math.log(2)))


def _presence(present: np.ndarray, used: np.ndarray, starts: np.ndarray, span: float) -> Presence:
    """The share of used segments where the line is present, and the span of its main stretch: present
    segments with gaps of at most :data:`GAP_SEGMENTS` between them, the stretch holding most of them (a
    1 % test per segment marks an odd segment of a long run by chance; it must not stretch the span)."""
    where = np.flatnonzero(present)
    fraction = float(present.sum() / max(used.sum(), 1))
    if where.size == 0:
        return Presence(fraction, int(used.sum()), math.nan, math.nan)
    breaks = np.flatnonzero(np.diff(where) > GAP_SEGMENTS + 1) + 1
    stretches = np.split(where, breaks)
    main = max(stretches, key=len)
    return Presence(fraction, int(used.sum()), float(starts[main[0]]), float(starts[main[-1]] + span))


MEMBERS_JUDGED = 8
"""Members of a family (strongest first) whose presence is judged one by one."""


def with_presence(peaks: tuple[Peak, ...], judge, members_judged: int = MEMBERS_JUDGED) -> tuple[Peak, ...]:
    """Peaks with ``presence``, ``present_from_s`` and ``present_to_s`` set.

    ``judge(peak)`` returns a :class:`Presence` or None.  A family is one disturbance: its strongest
    ``members_judged`` members are judged, the majority says whether the family runs through the run (its
    strongest such member gives the share and span every member carries), and a judged member of the other
    kind is no member of it: a steady 113 Hz line that happens to fall on a folded harmonic of an
    intermittent 37 Hz spike train is a disturbance of its own, and leaves the family as its own group.
    """
    families: dict[int, list[int]] = {}
    for i, peak in enumerate(peaks):
        families.setdefault(peak.harmonic_group, []).append(i)
    out = list(peaks)
    next_group = max((p.harmonic_group for p in peaks), default=0) + 1
    for members in families.values():
        members.sort(key=lambda i: peaks[i].snr, reverse=True)
        own: dict[int, Presence | None] = {i: judge(peaks[i]) for i in members[:members_judged]}
        judged = [(i, v) for i, v in own.items() if v is not None]
        # the family's time behaviour is its judged members' majority; the strongest of them speaks for it
        through = sum(v.fraction >= PRESENT_THROUGH for _, v in judged)
        steady = not judged or 2 * through >= len(judged)
        verdict = next((v for _, v in judged if (v.fraction >= PRESENT_THROUGH) == steady), None)
        for i in members:
            mine = own.get(i, verdict)
            if i in own and mine is not None and (mine.fraction >= PRESENT_THROUGH) != steady:
                out[i] = _placed(replace(peaks[i], harmonic_group=next_group, harmonic_number=1,
                                         fundamental_hz=peaks[i].frequency_hz), mine)
                next_group += 1
            else:
                out[i] = _placed(peaks[i], verdict)
    return tuple(out)


def _placed(peak: Peak, presence: Presence | None) -> Peak:
    if presence is None:
        return peak
    return replace(peak, presence=presence.fraction, present_from_s=presence.first_s, present_to_s=presence.last_s)
