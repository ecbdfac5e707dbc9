"""Significant peaks of a spectrum: noise-floor test, prominence and harmonic grouping.

Noise-floor test (Welch): for Gaussian noise the averaged periodogram in a bin
is the local noise level times a known null distribution (chi2(nu)/nu for the
mean of K segments, nu the equivalent degrees of freedom; an exponential order
statistic for the median).  The local level is the running median of the
spectrum over ``floor_bins`` neighbouring bins divided by the null's median;
the per-bin p-value is the null's survival function at power / level, and the
false-alarm probability over the M tested bins is Šidák's 1 - (1 - p)^M.

The running median is itself noisy (relative variance about
pi/2 * var(null) / m_eff, m_eff = m / 1.94 for Hann-correlated bins); left
alone that made a 1 % test reject 1.6 % of pure noise, so the p-value
averages the null's survival function over that uncertainty of the level
(Gauss-Hermite quadrature).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import ndimage, optimize, signal

from .welch import Psd

# Hann side lobes: -31.5 dB at 2.5 bins, falling 18 dB per octave.  A weaker peak within this envelope
# (plus a margin) of a stronger neighbour is that neighbour's leakage, not a disturbance of its own.
_SIDELOBE_DB_AT = (2.5, -31.5)
_SIDELOBE_DB_PER_DECADE = -60.0
_SIDELOBE_MARGIN_DB = 10.0
_SIDELOBE_REACH_BINS = 16
FIRST_TESTED_BIN = 2
"""Bins 0 and 1 are not tested: detrending empties bin 0 and the window's main lobe spreads drift into bin 1,
so a slow trend would pass for a peak there; a period must fit at least twice in a segment."""
# Hann: correlation of powers in adjacent bins 4/9, two apart 1/36, so m bins hold m / (1 + 2 (4/9 + 1/36)).
_HANN_BIN_CORRELATION = 1.0 + 2.0 * (4.0 / 9.0 + 1.0 / 36.0)
_QUADRATURE = np.polynomial.hermite_e.hermegauss(21)
MIN_CYCLES = 10
"""A peak needs at least this many cycles in the analysed record: a "period" seen two to eight times in a
record is a burst, not a periodic disturbance (frequency x record span >= MIN_CYCLES)."""
MAX_PEAKS = 200
"""Peaks kept per spectrum after harmonic grouping (:func:`order_by_family`); tables and figures show fewer,
chosen by family (:func:`~jitterscope.spectrum.text.peaks_by_family`)."""


@dataclass(frozen=True)
class Peak:
    """One significant spectral peak.

    ``power`` is in the spectrum's unit (ns^2/Hz for a Welch PSD of latency,
    dimensionless for Lomb-Scargle); ``snr`` is power over the local noise level.
    """

    frequency_hz: float
    power: float
    snr: float
    fap: float
    prominence_db: float
    bin_index: int
    resolution_hz: float
    method: str
    harmonic_group: int = 0
    harmonic_number: int = 1
    alias_candidates_hz: tuple[float, ...] = ()
    likely_source: str | None = None

    @property
    def period_s(self) -> float:
        return 1.0 / self.frequency_hz if self.frequency_hz > 0 else math.inf

    def to_json(self) -> dict:
        out = asdict(self)
        out["period_s"] = self.period_s
        out["alias_candidates_hz"] = list(self.alias_candidates_hz)
        return out


@dataclass(frozen=True)
class FloorTest:
    """Per-bin outcome of the noise-floor test (bins outside the test hold NaN)."""

    floor: np.ndarray
    p_value: np.ndarray
    fap: np.ndarray
    tested_bins: int
    threshold: np.ndarray
    """Power at which a bin's false-alarm probability equals ``alpha``."""


def assess_noise_floor(psd: Psd, *, floor_bins: int = 63, alpha: float = 0.01) -> FloorTest:
    """Per-bin false-alarm probability of a Welch PSD against its local noise floor.

    Bins 0 and 1 (detrending, drift leakage) and the Nyquist bin are not tested.

    Parameters
    ----------
    psd : Psd
        The averaged spectrum.
    floor_bins : int
        Width of the running median that estimates the local noise level.
    alpha : float
        False-alarm probability at which ``threshold`` is drawn.

    Returns
    -------
    FloorTest
    """
    power = psd.psd
    last = power.size - 1 if psd.nperseg % 2 == 0 else power.size
    tested = slice(1, last)  # the floor is estimated from bin 1 on; peaks are tested from FIRST_TESTED_BIN
    width = min(floor_bins | 1, (last - 1) | 1 if last > 2 else 1)
    floor = np.full(power.size, np.nan)
    floor[tested] = ndimage.median_filter(power[tested], size=width, mode="reflect")
    level = floor / psd.null.median
    floor_sd = np.sqrt(np.pi / 2 * psd.null.variance / psd.null.median**2 * _HANN_BIN_CORRELATION / width)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_value = _sf_uncertain_level(psd.null, power / level, floor_sd)
    p_value[[*range(FIRST_TESTED_BIN), *range(last, power.size)]] = np.nan
    tested_bins = last - FIRST_TESTED_BIN
    fap = -np.expm1(tested_bins * np.log1p(-np.clip(p_value, 0.0, 1.0 - 1e-16)))
    per_bin = -np.expm1(np.log1p(-alpha) / max(tested_bins, 1))
    threshold = level * _threshold_ratio(psd.null, float(floor_sd), float(per_bin))
    return FloorTest(floor=floor, p_value=p_value, fap=fap, tested_bins=tested_bins, threshold=threshold)


@functools.lru_cache(maxsize=256)
def _threshold_ratio(null, floor_sd: float, per_bin: float) -> float:
    """The power / level whose p-value is ``per_bin`` (a root search of a hundred scipy calls: every thread's
    and every spectrum's of one shape asks the same, so it is computed once)."""
    excess = lambda x: _sf_uncertain_level(null, np.array([x]), floor_sd)[0] - per_bin  # noqa: E731
    top = float(null.isf(per_bin))
    while excess(top) > 0 and top < 1e6 * null.median:
        top *= 2
    return float(optimize.brentq(excess, null.median, top))


def _sf_uncertain_level(null, ratio: np.ndarray, relative_sd: float) -> np.ndarray:
    """P(null > ratio * (1 + e)) averaged over e ~ N(0, relative_sd^2): the level's estimation error."""
    nodes, weights = _QUADRATURE
    factors = np.maximum(1.0 + relative_sd * nodes, 0.05)
    ratio = np.asarray(ratio, dtype=np.float64)
    # every node in one scipy call (a call costs ~50 µs whatever its size; a root search makes dozens)
    p = np.nan_to_num(null.sf(factors[:, None] * ratio.reshape(1, -1)), nan=0.0)
    out = (weights / weights.sum()) @ p
    return np.where(np.isnan(ratio), np.nan, out.reshape(ratio.shape))


def find_welch_peaks(psd: Psd, *, alpha: float = 0.01, floor_bins: int = 63, max_peaks: int = 200) -> tuple[Peak, ...]:
    """Peaks of a Welch PSD whose false-alarm probability is below ``alpha``, strongest first.

    Parameters
    ----------
    psd : Psd
        The averaged spectrum.
    alpha : float
        Family-wise false-alarm probability over all tested bins.
    floor_bins : int
        Width of the running median that estimates the local noise level.
    max_peaks : int
        Keep at most this many peaks.

    Returns
    -------
    tuple of Peak
        Frequencies refined by Gaussian (log-parabolic) interpolation between bins.

    Notes
    -----
    Contiguous significant bins form one peak at their maximum; a peak within
    the Hann side-lobe envelope (+10 dB) of a stronger one nearby is dropped, and so
    is one with fewer than :data:`MIN_CYCLES` cycles in the record.
    """
    if not np.any(psd.psd[1:] > 0):
        return ()  # a constant series (e.g. no spikes at all) has no peaks
    test = assess_noise_floor(psd, floor_bins=floor_bins, alpha=alpha)
    significant = np.nan_to_num(test.fap, nan=1.0) < alpha
    labels, count = ndimage.label(significant)
    if count == 0:
        return ()
    power = psd.psd
    maxima = np.array(ndimage.maximum_position(power, labels, index=np.arange(1, count + 1))).ravel()
    maxima = _drop_sidelobes(maxima[np.argsort(power[maxima])[::-1]], power)
    # fewer than MIN_CYCLES cycles in the whole record (a long --nperseg leaves few segments): a burst
    record_s = psd.n_samples / psd.fs_hz
    maxima = maxima[maxima * psd.bin_width_hz * record_s >= MIN_CYCLES][:max_peaks]
    level_db = 10 * np.log10(np.maximum(power, np.finfo(float).tiny))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a region maximum on a plateau edge
        prominences = signal.peak_prominences(level_db, maxima)[0] if maxima.size else np.array([])
    peaks = []
    for idx, prominence in zip(maxima, prominences, strict=True):
        offset = _interpolate(power, int(idx))
        peaks.append(Peak(
            frequency_hz=float((idx + offset) * psd.bin_width_hz), power=float(power[idx]),
            snr=float(power[idx] / (test.floor[idx] / psd.null.median)), fap=float(test.fap[idx]),
            prominence_db=float(prominence), bin_index=int(idx), resolution_hz=psd.bin_width_hz,
            method=f"welch-{psd.average}",
        ))
    return tuple(peaks)


def _drop_sidelobes(order: np.ndarray, power: np.ndarray) -> np.ndarray:
    kept: list[int] = []
    for idx in order:
        leak = False
        for strong in kept:
            distance = abs(int(idx) - strong)
            if distance <= _SIDELOBE_REACH_BINS:
                decades = np.log10(max(distance, 1) / _SIDELOBE_DB_AT[0])
                envelope = _SIDELOBE_DB_AT[1] + _SIDELOBE_DB_PER_DECADE * decades
                if 10 * np.log10(power[idx] / power[strong]) < min(envelope, _SIDELOBE_DB_AT[1]) + _SIDELOBE_MARGIN_DB:
                    leak = True
                    break
        if not leak:
            kept.append(int(idx))
    return np.array(kept, dtype=np.int64)


def _interpolate(power: np.ndarray, idx: int) -> float:
    if idx <= 0 or idx >= power.size - 1 or np.any(power[idx - 1:idx + 2] <= 0):
        return 0.0
    a, b, c = np.log(power[idx - 1:idx + 2])
    denominator = a - 2 * b + c
    return float(np.clip(0.5 * (a - c) / denominator, -0.5, 0.5)) if denominator < 0 else 0.0


def fold_frequency(frequency_hz: float | np.ndarray, fs_hz: float) -> float | np.ndarray:
    """Where a frequency appears after sampling at ``fs_hz``: |f - k fs| folded into [0, fs/2]."""
    wrapped = np.mod(frequency_hz, fs_hz)
    return np.minimum(wrapped, fs_hz - wrapped)


def group_harmonics(peaks: tuple[Peak, ...], *, fs_hz: float | None, max_harmonic: int = 16,
                    seeds_hz: tuple[float, ...] = ()) -> tuple[Peak, ...]:
    """Label harmonic families f0, 2 f0, ... (harmonics above fs/2 matched where they fold to).

    Parameters
    ----------
    peaks : tuple of Peak
        Significant peaks (any order).
    fs_hz : float or None
        Sampling frequency for folding; None for no folding (irregular sampling).
    max_harmonic : int
        Highest harmonic number searched above fs/2 (all harmonics below it are searched).
    seeds_hz : tuple of float
        Fundamentals known from elsewhere (the inter-spike interval), tried first.

    Returns
    -------
    tuple of Peak
        The same peaks in the same order, with ``harmonic_group`` (1-based, in
        the order families were found) and ``harmonic_number`` set.  A peak
        belonging to no family is its own group with number 1.

    Notes
    -----
    Fundamentals are tried seeds first, then from the lowest frequency up.
    Harmonic n matches the nearest free peak within 0.75 resolution elements
    plus n times the fundamental's uncertainty (a quarter bin divided by the
    highest harmonic matched so far); each match refines the fundamental from
    the harmonic's unfolded frequency.  The search stops where that tolerance
    exceeds two bins.  A sampled spike train has lines at
    every k f0 folded, so its lowest line is often a folded harmonic: seeding
    with 1 / (inter-spike interval) keeps the family's true fundamental.
    """
    freqs = np.array([p.frequency_hz for p in peaks], dtype=np.float64)
    group = np.zeros(len(peaks), dtype=np.int64)
    number = np.ones(len(peaks), dtype=np.int64)
    next_group = 1
    starts: list[tuple[int, float]] = []
    for seed in seeds_hz:
        seen = seed if fs_hz is None else float(fold_frequency(seed, fs_hz))
        if freqs.size and seed > 0:
            nearest = int(np.argmin(np.abs(freqs - seen)))
            if abs(freqs[nearest] - seen) <= 0.75 * peaks[nearest].resolution_hz:
                starts.append((nearest, float(seed)))
    starts += [(int(i), float(freqs[i])) for i in np.argsort(freqs, kind="stable")]
    seeded = len(starts) - len(peaks)
    for rank, (i, f0) in enumerate(starts):
        if group[i]:
            continue
        group[i] = next_group
        # a seed from the mean inter-spike interval is as precise as a 16th harmonic, a peak as a first
        known_n = max_harmonic if rank < seeded else 1
        _collect_harmonics(freqs, group, number, next_group, f0, peaks[i].resolution_hz, fs_hz, max_harmonic,
                           known_n)
        next_group += 1
    return tuple(replace(p, harmonic_group=int(g), harmonic_number=int(n))
                 for p, g, n in zip(peaks, group, number, strict=True))


def _collect_harmonics(freqs: np.ndarray, group: np.ndarray, number: np.ndarray, family: int, f0: float,
                       resolution: float, fs_hz: float | None, max_harmonic: int, known_n: int) -> None:
    # every harmonic below fs/2 is searched; folded ones only up to max_harmonic
    top = max_harmonic if fs_hz is None or f0 <= 0 else max(max_harmonic, int(fs_hz / 2 / f0))
    best_n = known_n
    for n in range(2, top + 1):
        free = np.flatnonzero(group == 0)
        if free.size == 0:
            return
        predicted = n * f0 if fs_hz is None else float(fold_frequency(n * f0, fs_hz))
        tolerance = resolution * (0.75 + 0.25 * n / best_n)
        if tolerance > 2.0 * resolution:
            return  # the fundamental is too uncertain to name harmonic n: a family must grow step by step
        distance = np.abs(freqs[free] - predicted)
        j = int(np.argmin(distance))
        if distance[j] > tolerance:
            continue
        match = free[j]
        group[match], number[match] = family, n
        if fs_hz is not None:
            # the unfolded frequency k fs +- f nearest n f0 refines f0 (its error shrinks as 1/n)
            k = np.round(n * f0 / fs_hz)
            unfolded = min((k * fs_hz + freqs[match], k * fs_hz - freqs[match]), key=lambda u: abs(u - n * f0))
        else:
            unfolded = freqs[match]
        if n > best_n:
            f0, best_n = float(unfolded / n), n


def order_by_family(peaks: tuple[Peak, ...], max_peaks: int = MAX_PEAKS) -> tuple[Peak, ...]:
    """Grouped peaks in the order that keeps every independent family ahead of further harmonics.

    Round ``r`` holds each family's ``r``-th strongest member, families by their strongest member, and
    rounds follow each other; the first ``max_peaks`` are kept.  A comb of 50 harmonics from P-state
    steps every 50 ms therefore cannot push a weaker 113 Hz disturbance off the list: its fundamental
    comes in round 1, before the comb's second member.
    """
    families: dict[int, list[Peak]] = {}
    for peak in sorted(peaks, key=lambda p: p.power, reverse=True):
        families.setdefault(peak.harmonic_group, []).append(peak)
    ordered: list[Peak] = []
    rounds = max((len(m) for m in families.values()), default=0)
    for r in range(rounds):
        ordered += [members[r] for members in families.values() if r < len(members)]
    return tuple(ordered[:max_peaks])
