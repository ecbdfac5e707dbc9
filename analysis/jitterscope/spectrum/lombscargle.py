"""Lomb-Scargle periodogram on actual wake-up times, for series with gaps, drops or irregular intervals.

Uses :class:`astropy.timeseries.LombScargle` (standard normalisation, floating
mean) and Baluev's (2008) analytic false-alarm probability of each peak over
the searched band.  Not streaming: it runs on at most ``max_points`` samples
(the leading ones) and says how many it used.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError
from .peaks import MIN_CYCLES, Peak

MIN_POINTS = 64
# A weaker peak within this many resolution elements of a stronger one, and below this fraction of its
# power, is the stronger one's spectral-window side lobe (sinc: -13 dB first lobe).
_SIDELOBE_REACH = 3.0
_SIDELOBE_FRACTION = 0.25
_GATED_REACH = 16.0
_GATED_FRACTION = 0.1
LOCAL_REACH = 32
"""A Lomb-Scargle peak's local level is the median power from 2 to this many resolution elements either side."""


@dataclass(frozen=True)
class LombScargleSpectrum:
    """A Lomb-Scargle periodogram (power normalised to [0, 1]) and its significant peaks."""

    frequencies_hz: np.ndarray
    power: np.ndarray
    peaks: tuple[Peak, ...]
    n_used: int
    n_total: int
    span_s: float
    resolution_hz: float
    alpha: float

    def to_json(self) -> dict:
        return {
            "frequencies_hz": self.frequencies_hz.tolist(), "power": self.power.tolist(),
            "peaks": [p.to_json() for p in self.peaks], "n_used": self.n_used, "n_total": self.n_total,
            "span_s": self.span_s, "resolution_hz": self.resolution_hz, "alpha": self.alpha,
            "method": "lomb-scargle (astropy, standard normalisation), Baluev FAP",
        }


def lomb_scargle(times_s: np.ndarray, values: np.ndarray, *, alpha: float = 0.01, max_frequency_hz: float | None = None,
                 samples_per_peak: int = 5, max_points: int = 1 << 20, max_frequencies: int = 1 << 19,
                 max_peaks: int = 1000) -> LombScargleSpectrum:
    """Lomb-Scargle periodogram and its peaks with Baluev false-alarm probability below ``alpha``.

    Parameters
    ----------
    times_s : ndarray
        Sample times in seconds (any origin), increasing.
    values : ndarray
        Sample values (latency in ns).
    alpha : float
        Keep peaks whose false-alarm probability is below this.
    max_frequency_hz : float, optional
        Top of the searched band; default the Nyquist frequency of the median sampling interval.
    samples_per_peak : int
        Grid oversampling of the resolution 1 / span.
    max_points : int
        Use at most this many (leading) samples.
    max_frequencies : int
        Cap on the grid size; the oversampling is reduced to respect it.
    max_peaks : int
        Keep at most this many peaks (before harmonic grouping: the caller selects by family).

    Returns
    -------
    LombScargleSpectrum

    Raises
    ------
    AnalysisError
        Fewer than 64 samples, or all values equal.
    """
    times_s = np.asarray(times_s, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    n_total = values.size
    if n_total < MIN_POINTS:
        raise AnalysisError(f"too short for spectral analysis (n={n_total}, need ≥ {MIN_POINTS}); capture longer")
    times_s, values = times_s[:max_points] - times_s[0], values[:max_points]
    span = float(times_s[-1])
    if not span > 0 or np.ptp(values) == 0:
        raise AnalysisError("latency is constant or all samples share one time; nothing to analyse spectrally")
    resolution = 1.0 / span
    nyquist = 0.5 / float(np.median(np.diff(times_s)))
    # Not within one resolution element of the Nyquist frequency: there the sine term vanishes for (nearly)
    # regular sampling, the power has one degree of freedom, not Baluev's two, and heavy-tailed latency gave
    # false peaks at fs/2 in 9 of 100 shuffled copies of a real capture (the Welch test skips that bin too).
    top = nyquist - resolution if max_frequency_hz is None else float(max_frequency_hz)
    per_peak = samples_per_peak
    while (top - resolution) / (resolution / per_peak) > max_frequencies and per_peak > 1:
        per_peak -= 1
    step = resolution / per_peak
    # from MIN_CYCLES cycles in the record up: slower "periods" are bursts (and Baluev's FAP counts this band)
    frequencies = np.arange(MIN_CYCLES * resolution, top, step)
    if frequencies.size < 2:
        raise AnalysisError(f"the record ({span:.3g} s) is too short to hold {MIN_CYCLES} cycles of anything "
                            "below the Nyquist frequency; capture longer")
    from astropy.timeseries import LombScargle  # here: astropy takes ~1 s to import, and only gaps need it
    from scipy import signal  # here too: 0.8 s of CPU, and a Welch spectrum needs none of it

    model = LombScargle(times_s, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # astropy warns about the fast method's approximations
        power = np.asarray(model.power(frequencies, method="fast" if values.size > 20_000 else "auto",
                                       assume_regular_frequency=True))
    candidates, _ = signal.find_peaks(power)
    if candidates.size == 0:
        return LombScargleSpectrum(frequencies, power, (), values.size, n_total, span, resolution, alpha)
    fap = np.asarray(model.false_alarm_probability(power[candidates], method="baluev",
                                                   minimum_frequency=frequencies[0], maximum_frequency=top))
    # Baluev's FAP measures a peak against the whole band's noise; bursts (a few clusters of stalls) put
    # broad, bumpy power at low frequencies that passes it (20 "lines" at 0.69-3.6 Hz in a real 15 s run).
    # A line must also stand above its own neighbourhood, as a Welch peak must stand above its local floor.
    local = _local_fap(power, candidates, per_peak)
    fap = np.maximum(fap, local)
    keep = fap < alpha
    candidates, fap = candidates[keep], fap[keep]
    order = np.argsort(power[candidates])[::-1]
    kept: list[int] = []
    for i in order:
        idx = candidates[i]
        near = [k for k in kept if abs(frequencies[candidates[k]] - frequencies[idx]) <= _SIDELOBE_REACH * resolution]
        if any(power[idx] < _SIDELOBE_FRACTION * power[candidates[k]] for k in near):
            continue
        # a line present for part of the record has the spectral window of that part: side lobes of -13 dB and
        # less up to a few of its (wider) resolution elements away
        far = [k for k in kept if abs(frequencies[candidates[k]] - frequencies[idx]) <= _GATED_REACH * resolution]
        if any(power[idx] < _GATED_FRACTION * power[candidates[k]] for k in far):
            continue
        kept.append(int(i))
        if len(kept) == max_peaks:
            break
    level = np.median(power)
    db = 10 * np.log10(np.maximum(power, np.finfo(float).tiny))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prominence = signal.peak_prominences(db, candidates[kept])[0] if kept else []
    peaks = tuple(
        Peak(frequency_hz=float(frequencies[candidates[i]]), power=float(power[candidates[i]]),
             snr=float(power[candidates[i]] / level), fap=float(fap[i]), prominence_db=float(prom),
             bin_index=int(candidates[i]), resolution_hz=resolution, method="lomb-scargle")
        for i, prom in zip(kept, prominence, strict=True)
    )
    return LombScargleSpectrum(frequencies, power, peaks, values.size, n_total, span, resolution, alpha)


def _local_fap(power: np.ndarray, candidates: np.ndarray, per_peak: int) -> np.ndarray:
    """False-alarm probability of each candidate against its local level (median power 2 .. LOCAL_REACH
    resolution elements either side, over ln 2: the mean of an exponential), Šidák over the band's resolution
    elements.  Far from a line the standard-normalised power is exponential about its local mean."""
    tested = max(power.size / per_peak, 1.0)
    out = np.ones(candidates.size)
    reach, gap = LOCAL_REACH * per_peak, 2 * per_peak
    # the candidates whose whole neighbourhood lies in the band: their levels in one median over a window of
    # indices each (thousands of candidates in a real capture, one np.median each was 40% of the periodogram)
    whole = (candidates >= reach) & (candidates + reach < power.size)
    if whole.any() and 2 * (reach - gap) >= 4 * per_peak:
        offsets = np.r_[-reach:-gap, gap + 1:reach + 1]
        levels = np.median(power[candidates[whole, None] + offsets], axis=1) / np.log(2.0)
        out[whole] = _sidak(power[candidates[whole]], levels, tested)
    for k in np.flatnonzero(~whole):  # near the band's ends: what is there of the neighbourhood
        idx = candidates[k]
        lo, hi = max(idx - reach, 0), min(idx + reach + 1, power.size)
        near = np.r_[lo:max(idx - gap, lo), min(idx + gap + 1, hi):hi]
        if near.size < 4 * per_peak:
            continue
        out[k] = _sidak(power[idx:idx + 1], np.array([float(np.median(power[near]))]) / np.log(2.0), tested)[0]
    return out


def _sidak(power: np.ndarray, levels: np.ndarray, tested: float) -> np.ndarray:
    """Šidák's family-wise probability over ``tested`` elements of an exponential tail exp(-power / level)."""
    with np.errstate(divide="ignore"):
        p = np.where(levels > 0, np.exp(-power / np.where(levels > 0, levels, 1.0)), 1.0)
    return -np.expm1(tested * np.log1p(-np.minimum(p, 1.0 - 1e-16)))
