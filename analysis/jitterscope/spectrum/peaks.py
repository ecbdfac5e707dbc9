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
from dataclasses import asdict, dataclass, replace

import numpy as np

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
MERGE_BINS = 2.0
"""Peaks closer than this many resolution elements are one line (the stronger one is kept): a line's main lobe,
its scalloping and a slightly unstable frequency must not be listed two or three times."""
FAMILY_SHARE = 0.9
"""A family with a higher fundamental that explains this share of a lower one's evidence is preferred: f0 / 2
explains every harmonic of f0 (and chance peaks on top), so it must explain clearly more to be chosen."""
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
    fundamental_hz: float | None = None
    """The family's fundamental (None before grouping); it need not be a peak of its own."""
    alias_candidates_hz: tuple[float, ...] = ()
    likely_source: str | None = None
    presence: float | None = None
    """Share of the record's time segments in which the line is present (None: not judged, or too weak to
    judge segment by segment); see :mod:`jitterscope.spectrum.stationarity`."""
    present_from_s: float | None = None
    present_to_s: float | None = None
    """Start of the first and end of the last segment where the line is present (relative to the record start)."""

    @property
    def through_run(self) -> bool:
        """Present through the run (a finding), or not judged: weakness is no evidence of intermittency."""
        from .stationarity import PRESENT_THROUGH
        return self.presence is None or self.presence >= PRESENT_THROUGH

    @property
    def period_s(self) -> float:
        return 1.0 / self.frequency_hz if self.frequency_hz > 0 else math.inf

    def to_json(self) -> dict:
        out = asdict(self)
        out["period_s"] = self.period_s
        out["alias_candidates_hz"] = list(self.alias_candidates_hz)
        out["through_run"] = self.through_run
        for key in ("present_from_s", "present_to_s"):
            if out[key] is not None and not math.isfinite(out[key]):
                out[key] = None
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
    floor[tested] = _running_median(power[tested], width)
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
    return float(brentq(excess, null.median, top))


# scipy.ndimage and scipy.optimize cost ~0.45 s of CPU to import, a sixth of what `spectrum --json` adds to a Welch
# of 10^7 wake-ups (issue 25), for a running median and one root search: both are here, the same numbers (tests
# check them bit for bit against scipy).

def _running_median(values: np.ndarray, width: int) -> np.ndarray:
    """``scipy.ndimage.median_filter(values, size=width, mode="reflect")`` for odd ``width``: the median of the
    ``width`` values centred on each, the ends mirrored (d c b a | a b c d | d c b a)."""
    half = width // 2
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(values, half, mode="symmetric"), width)
    return np.median(windows, axis=1)


def brentq(f, xa: float, xb: float, xtol: float = 2e-12, rtol: float = 4 * np.finfo(float).eps,
           maxiter: int = 100) -> float:
    """``scipy.optimize.brentq(f, xa, xb)``: Brent's root search as scipy's C code runs it, step for step.

    Raises
    ------
    ValueError
        ``f(xa)`` and ``f(xb)`` have the same sign.
    RuntimeError
        No convergence in ``maxiter`` steps.
    """
    xpre, xcur = float(xa), float(xb)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = float(f(xpre)), float(f(xcur))
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):  # the best guess is the one with the smaller |f|
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate (inverse quadratic)
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # a good short step
                spre, scur = scur, stry
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = float(f(xcur))
    raise RuntimeError(f"brentq did not converge in {maxiter} steps")


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
    Every local maximum among significant bins is a candidate; one within :data:`MERGE_BINS` bins of a
    stronger one is the same line, one within the Hann side-lobe envelope (+10 dB) of a stronger one nearby
    is its leakage, and one with fewer than :data:`MIN_CYCLES` cycles in the record is a burst: all dropped.
    """
    if not np.any(psd.psd[1:] > 0):
        return ()  # a constant series (e.g. no spikes at all) has no peaks
    test = assess_noise_floor(psd, floor_bins=floor_bins, alpha=alpha)
    significant = np.nan_to_num(test.fap, nan=1.0) < alpha
    if not significant.any():
        return ()
    power = psd.psd
    # every local maximum of a significant stretch, not only its highest bin: two lines three bins apart
    # (a 7.3 Hz spike train beside a 6.67 Hz P-state comb) make one stretch of significant bins
    inner = np.r_[False, (power[1:-1] >= power[:-2]) & (power[1:-1] >= power[2:]), False]
    maxima = np.flatnonzero(significant & inner)
    if maxima.size == 0:
        from scipy import ndimage  # only here: a rare case (see _running_median)

        labels, count = ndimage.label(significant)
        maxima = np.array(ndimage.maximum_position(power, labels, index=np.arange(1, count + 1))).ravel()
    maxima = _drop_sidelobes(maxima[np.argsort(power[maxima])[::-1]], power)
    # fewer than MIN_CYCLES cycles in the whole record (a long --nperseg leaves few segments): a burst
    record_s = psd.n_samples / psd.fs_hz
    maxima = maxima[maxima * psd.bin_width_hz * record_s >= MIN_CYCLES][:max_peaks]
    level_db = 10 * np.log10(np.maximum(power, np.finfo(float).tiny))
    prominences = peak_prominences(level_db, maxima)
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


def peak_prominences(x: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """``scipy.signal.peak_prominences(x, peaks)[0]`` (no window), the same numbers: how far each peak stands
    above the higher of the lowest points either side before a higher sample (or the end).

    Here, not scipy's: ``scipy.signal`` costs 0.8 s of CPU to import (it parses the docstrings of its every
    function and brings ``scipy.stats``), half of what ``spectrum --json`` adds to a Welch of 10^7 wake-ups,
    for a loop over the few peaks found.  A peak on a plateau's edge has prominence 0 (scipy warns there).
    """
    x = np.asarray(x, dtype=np.float64)
    result = np.empty(len(peaks))
    for i, peak in enumerate(np.asarray(peaks, dtype=np.intp)):
        if not 0 <= peak < x.size:
            raise ValueError(f"peak {peak} is not an index of x (size {x.size})")
        top = x[peak]
        higher = np.flatnonzero(x[:peak] > top)
        left = x[(higher[-1] + 1 if higher.size else 0):peak + 1].min()
        higher = np.flatnonzero(x[peak + 1:] > top)
        right = x[peak:(peak + 1 + higher[0] if higher.size else x.size)].min()
        result[i] = top - max(left, right)
    return result


def _drop_sidelobes(order: np.ndarray, power: np.ndarray) -> np.ndarray:
    kept: list[int] = []
    for idx in order:
        leak = False
        for strong in kept:
            distance = abs(int(idx) - strong)
            if distance <= MERGE_BINS:
                leak = True  # within two bins of a stronger maximum: the same line
                break
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


_SUBHARMONICS = 3
"""Candidate fundamentals are each strong peak divided by 1 .. this (a fundamental may be weak or absent)."""
_CANDIDATE_PEAKS = 40
_SEED_ERROR = 0.005
"""Relative uncertainty of a seed: the mean interval of the most populated bin (12 % wide) of intervals
quantised to the timer's, or a spike-train family's fundamental."""
_COMB_FOLDS = 4
"""Harmonics are searched up to this many times fs: a sampled spike one interval wide has a sinc envelope whose
side lobes carry harmonics beyond fs (n x 37 Hz for n = 28 .. 108 fold to 36, 73, ... 406 Hz at 1 kHz)."""
_TOLERANCE_BINS = 0.75
_REACH_BINS = 2.0


def merge_close_peaks(peaks: tuple[Peak, ...], bins: float = MERGE_BINS) -> tuple[Peak, ...]:
    """Peaks with every weaker peak within ``bins`` resolution elements of a stronger one removed, strongest first."""
    kept: list[Peak] = []
    for peak in sorted(peaks, key=lambda p: p.power, reverse=True):
        reach = bins * peak.resolution_hz
        if not any(abs(peak.frequency_hz - k.frequency_hz) <= max(reach, bins * k.resolution_hz) for k in kept):
            kept.append(peak)
    return tuple(kept)


@dataclass(frozen=True)
class _Family:
    f0: float
    members: dict[int, int]  # peak index -> harmonic number
    weight: float
    top: int
    folded: int
    score: float


def group_harmonics(peaks: tuple[Peak, ...], *, fs_hz: float | None, max_harmonic: int = 16,
                    seeds_hz: tuple[float, ...] = ()) -> tuple[Peak, ...]:
    """Label harmonic families: each periodic disturbance once, as its fundamental and the harmonics it explains.

    Parameters
    ----------
    peaks : tuple of Peak
        Significant peaks (any order).
    fs_hz : float or None
        Sampling frequency for folding; None for no folding (irregular sampling).
    max_harmonic : int
        Harmonics searched at least this high (and, with folding, up to 4 fs / f0: a comb of spikes one
        interval wide reaches beyond fs and folds back below fs/2).
    seeds_hz : tuple of float
        Fundamentals known from elsewhere (the inter-spike interval, the spike train's spectrum), tried as
        known to a sixteenth of a bin at the 16th harmonic, and to 0.5 %.

    Returns
    -------
    tuple of Peak
        The same peaks in the same order, with ``harmonic_group`` (1-based, strongest family first),
        ``harmonic_number`` and ``fundamental_hz`` (the family's fundamental, which need not be a peak).  A
        peak belonging to no family is its own group, number 1, its own fundamental.

    Notes
    -----
    One decision for all the evidence: every seed, and every strong peak divided by 1, 2 or 3, is a
    candidate fundamental.  A candidate's family is grown step by step: harmonic n matches the nearest free
    peak (folded at fs/2) within 0.75 resolution elements plus n times the fundamental's uncertainty; each
    round refits f0 by least squares on the members' unfolded frequencies (its uncertainty shrinks as
    1 / sqrt(sum n^2)), and harmonics are searched only where the prediction is good to two bins.  A family
    needs two members (three without a peak at its fundamental) and more members than chance would put on
    its harmonics.  Families are taken greedily by evidence: the sum of log(1 + SNR) of their members times
    their fill (members per distinct place where harmonics 1 .. top fall: f0 / 2 leaves half of its places
    empty); among candidates within :data:`FAMILY_SHARE` of the best, the one needing the fewest folded
    members wins (the folded comb of 7 f0 reaches every harmonic of f0, but through folds), then the one
    with the fewest harmonics up to its highest member (f0 rather than f0 / 2).
    """
    if not peaks:
        return ()
    freqs = np.array([p.frequency_hz for p in peaks], dtype=np.float64)
    weights = np.log1p(np.maximum([p.snr for p in peaks], 0.0))
    resolution = np.array([p.resolution_hz for p in peaks], dtype=np.float64)
    free = np.ones(len(peaks), dtype=bool)
    families: list[_Family] = []
    while free.sum() >= 2:
        best = _best_family(freqs, weights, resolution, free, fs_hz, max_harmonic, seeds_hz)
        if best is None:
            break
        families.append(best)
        free[list(best.members)] = False
    if fs_hz is not None:
        _unfold_members(families, freqs, resolution, fs_hz)
        families = [f for f in families if len(f.members) >= 2]
    group = np.zeros(len(peaks), dtype=np.int64)
    number = np.ones(len(peaks), dtype=np.int64)
    fundamental = freqs.copy()
    for g, family in enumerate(families, start=1):
        for i, n in family.members.items():
            group[i], number[i], fundamental[i] = g, n, family.f0
    singles = [i for i in np.argsort(-weights, kind="stable") if group[i] == 0]
    for g, i in enumerate(singles, start=len(families) + 1):
        group[i] = g
    return tuple(replace(p, harmonic_group=int(g), harmonic_number=int(n), fundamental_hz=float(f))
                 for p, g, n, f in zip(peaks, group, number, fundamental, strict=True))


def _best_family(freqs: np.ndarray, weights: np.ndarray, resolution: np.ndarray, free: np.ndarray,
                 fs_hz: float | None, max_harmonic: int, seeds_hz: tuple[float, ...]) -> _Family | None:
    res = float(np.median(resolution[free]))
    order = [int(i) for i in np.argsort(-weights, kind="stable") if free[i]][:_CANDIDATE_PEAKS]
    # (f0, its uncertainty, whether a peak sits at f0)
    # a seed as precise as a mean interval can be (a sixteenth of the 16th harmonic's bin), and as rough as a
    # mean over a histogram bin may be: both compete
    candidates = [(float(s), error, False, True) for s in seeds_hz if s > 0
                  for error in (res / 64, max(res / 64, _SEED_ERROR * s))]
    candidates += [(float(freqs[i] / m), 0.25 * res / m, m == 1, False) for i in order
                   for m in range(1, _SUBHARMONICS + 1)]
    found = []
    for f0, sigma, own, seeded in candidates:
        if f0 < 2 * _REACH_BINS * res:
            continue  # harmonics closer than the matching tolerance would claim anything
        family = _grow(f0, sigma, freqs, weights, free, res, fs_hz, max_harmonic)
        if family is not None and family.folded and not seeded and not _comb_reaches_nyquist(family, fs_hz):
            # folds need evidence: a spike train (seed) or a comb seen reaching fs/2 unfolded; else chance
            # coincidences of leftover lines with folded harmonics would make families of unrelated lines
            family = _grow(f0, sigma, freqs, weights, free, res, fs_hz, max_harmonic, fold=False)
        if family is not None and len(family.members) >= (2 if own or 1 in family.members.values() else 3):
            found.append(family)
    if not found:
        return None
    top = max(f.score for f in found)
    close = [f for f in found if f.score >= FAMILY_SHARE * top]
    return min(close, key=lambda f: (f.folded, f.top, -f.score))


def _unfold_members(families: list[_Family], freqs: np.ndarray, resolution: np.ndarray, fs_hz: float) -> None:
    """A peak a family reached only through a fold goes to a family that explains it better.

    Taken greedily, a comb folded up to 4 fs reaches a good share of the band.  A peak that is a folded
    harmonic of one family and a harmonic of another below fs/2 is the other's (no fold needed); one folded
    in both is the family with the higher fundamental's, if that one has three members below fs/2 (its comb
    has fewer places: a coincidence with it is the less likely).
    """
    for a, family in enumerate(families):
        for i, n in list(family.members.items()):
            if n * family.f0 <= fs_hz / 2:
                continue
            best: tuple[int, int] | None = None
            for b, other in enumerate(families):
                if b == a:
                    continue
                m = _harmonic_at(freqs[i], other.f0, fs_hz, _TOLERANCE_BINS * resolution[i])
                if m is None:
                    continue
                if m * other.f0 <= fs_hz / 2 or (other.f0 > family.f0 and _unfolded_members(other, fs_hz) >= 3):
                    best = (b, m)
                    if m * other.f0 <= fs_hz / 2:
                        break
            if best is not None:
                del family.members[i]
                families[best[0]].members[i] = best[1]


def _unfolded_members(family: _Family, fs_hz: float) -> int:
    return sum(n * family.f0 <= fs_hz / 2 for n in family.members.values())


def _harmonic_at(frequency: float, f0: float, fs_hz: float, tolerance: float) -> int | None:
    """The lowest harmonic n <= 4 fs / f0 of f0 that folds within ``tolerance`` of ``frequency``, or None."""
    for k in range(_COMB_FOLDS + 1):
        for true in (k * fs_hz + frequency, k * fs_hz - frequency):
            n = round(true / f0)
            if n >= 1 and abs(n * f0 - true) <= tolerance and n * f0 <= _COMB_FOLDS * fs_hz + f0:
                return int(n)
    return None


def _comb_reaches_nyquist(family: _Family, fs_hz: float | None) -> bool:
    """At least three members below fs/2, the highest of them above fs/4."""
    if fs_hz is None:
        return True
    unfolded = [n * family.f0 for n in family.members.values() if n * family.f0 <= fs_hz / 2]
    return len(unfolded) >= 3 and max(unfolded) >= fs_hz / 4


def _grow(f0: float, sigma: float, freqs: np.ndarray, weights: np.ndarray, free: np.ndarray, res: float,
          fs_hz: float | None, max_harmonic: int, fold: bool = True) -> _Family | None:
    index = np.flatnonzero(free)
    sorted_at = np.argsort(freqs[index])
    cand = index[sorted_at]
    cand_f = freqs[cand]
    members: dict[int, int] = {}
    for _ in range(8):
        if fs_hz and not fold:
            cap = int(fs_hz / 2 / f0)
        else:
            cap = max(max_harmonic, int(np.ceil((_COMB_FOLDS * fs_hz if fs_hz else float(cand_f[-1])) / f0)))
        reach = int(min(cap, np.floor((_REACH_BINS - _TOLERANCE_BINS) * res / max(sigma, 1e-300))))
        if reach < 1:
            return None
        ns = np.arange(1, reach + 1)
        predicted = ns * f0 if fs_hz is None else fold_frequency(ns * f0, fs_hz)
        tolerance = _TOLERANCE_BINS * res + ns * sigma
        pos = np.clip(np.searchsorted(cand_f, predicted), 1, cand_f.size - 1) if cand_f.size > 1 else np.zeros(
            ns.size, dtype=np.int64)
        left = np.clip(pos - 1, 0, cand_f.size - 1)
        nearest = np.where(np.abs(cand_f[left] - predicted) <= np.abs(cand_f[pos] - predicted), left, pos)
        distance = np.abs(cand_f[nearest] - predicted)
        hit = distance <= tolerance
        new: dict[int, int] = {}
        for n, j in zip(ns[hit], nearest[hit], strict=True):
            new.setdefault(int(cand[j]), int(n))  # a peak is the lowest harmonic that reaches it
        if not new:
            return None
        # least-squares f0 from the members' unfolded frequencies (n f0 = u_n)
        n_arr = np.array(list(new.values()), dtype=np.float64)
        seen = freqs[list(new)]
        if fs_hz is None:
            unfolded = seen
        else:
            k = np.round(n_arr * f0 / fs_hz)
            both = np.stack([k * fs_hz + seen, k * fs_hz - seen])
            unfolded = both[np.argmin(np.abs(both - n_arr * f0), axis=0), np.arange(n_arr.size)]
        fitted = float(np.dot(n_arr, unfolded) / np.dot(n_arr, n_arr))
        fitted_sigma = 0.25 * res / float(np.sqrt(np.dot(n_arr, n_arr)))
        done = new == members and reach >= cap
        members, f0, sigma = new, fitted, min(sigma, fitted_sigma) if len(new) == 1 else fitted_sigma
        if done:
            break
    n_arr = np.array(list(members.values()))
    top = int(n_arr.max())
    # chance: free peaks that land in one of the windows of harmonics 1 .. top by accident (the share of the
    # band the windows cover: folded harmonics of a spike train often fall on or beside unfolded ones)
    ns = np.arange(1, top + 1)
    centres = np.sort(ns * f0 if fs_hz is None else fold_frequency(ns * f0, fs_hz))
    half = _TOLERANCE_BINS * res
    covered = float(np.sum(np.minimum(np.diff(centres), 2 * half))) + 2 * half
    coverage = min(1.0, covered / ((fs_hz / 2) if fs_hz else max(float(cand_f[-1]), f0)))
    expected = coverage * cand.size
    if len(members) > 1 and len(members) <= expected + 3 * np.sqrt(expected):
        return None
    folded = 0 if fs_hz is None else int(np.count_nonzero(n_arr * f0 > fs_hz / 2))
    # fill: members per distinct place (folded) where harmonics 1 .. top fall; f0 / 2 explains every harmonic
    # of f0 but leaves its odd harmonics empty, 7 f0 reaches them all only through folds that leave gaps
    places = 1 + int(np.count_nonzero(np.diff(centres) > 2 * half))
    fill = min(1.0, len(members) / places)
    weight = float(weights[list(members)].sum())
    return _Family(f0=f0, members=members, weight=weight, top=top, folded=folded, score=weight * fill)


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


@dataclass(frozen=True)
class Family:
    """One periodic disturbance: the family of peaks it explains, with its fundamental (which need not be a peak)."""

    group: int
    fundamental_hz: float
    members: tuple[Peak, ...]
    """Strongest first."""

    @property
    def strongest(self) -> Peak:
        return self.members[0]

    @property
    def fap(self) -> float:
        return min(p.fap for p in self.members)

    @property
    def has_fundamental(self) -> bool:
        return any(p.harmonic_number == 1 for p in self.members)

    @property
    def through_run(self) -> bool:
        return self.strongest.through_run

    def to_json(self) -> dict:
        top = self.strongest
        return {"harmonic_group": self.group, "fundamental_hz": self.fundamental_hz, "peaks": len(self.members),
                "harmonic_numbers": sorted(p.harmonic_number for p in self.members),
                "fundamental_is_a_peak": self.has_fundamental, "strongest_hz": top.frequency_hz, "snr": top.snr,
                "fap": self.fap, "presence": top.presence, "through_run": self.through_run,
                "present_from_s": top.to_json()["present_from_s"], "present_to_s": top.to_json()["present_to_s"],
                "likely_source": next((p.likely_source for p in self.members if p.harmonic_number == 1), None)}


def families_of(peaks: tuple[Peak, ...]) -> tuple[Family, ...]:
    """The harmonic families of grouped peaks, in order of their strongest member's SNR."""
    groups: dict[int, list[Peak]] = {}
    for peak in peaks:
        groups.setdefault(peak.harmonic_group, []).append(peak)
    out = []
    for group, members in groups.items():
        members.sort(key=lambda p: p.snr, reverse=True)
        f0 = members[0].fundamental_hz or min(members, key=lambda p: p.harmonic_number).frequency_hz
        out.append(Family(group, float(f0), tuple(members)))
    return tuple(sorted(out, key=lambda f: f.strongest.snr, reverse=True))
