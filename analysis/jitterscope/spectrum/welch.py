"""Streaming Welch PSD and spectrogram of a regularly sampled series (one thread's latency on the wake-up index).

One accumulator cuts the stream into Hann-windowed, mean-detrended segments, so
the FFT of each segment is computed once and feeds three things: the running
sum of periodograms (mean Welch average), a reservoir of non-overlapping
segment periodograms (median average), and a spectrogram with a fixed number
of time columns.  Memory is bounded by ``nperseg`` times (reservoir size +
columns), whatever the length of the stream.

A segment never spans a gap in the wake-up index (dropped samples, overruns):
at a gap the carried tail is discarded and segmentation restarts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import AnalysisError
from .null import NullDistribution, mean_null, median_null

AVERAGES = ("mean", "median")
MIN_NPERSEG = 16
# Samples transformed per FFT call (segments x nperseg): temporaries of a few MiB, which the allocator reuses
# (bigger ones are mapped afresh each call: page faults were a third of a cold run at 10^7 wake-ups)
_CHUNK_SAMPLES = 1 << 18


@dataclass(frozen=True)
class Psd:
    """A Welch power spectral density estimate of one series.

    ``psd`` is one-sided, in (series unit)^2 / Hz (ns^2/Hz for latency).
    ``null`` is the distribution of ``psd / true_psd`` for Gaussian noise,
    used by the noise-floor peak test.
    """

    frequencies_hz: np.ndarray
    psd: np.ndarray
    fs_hz: float
    nperseg: int
    noverlap: int
    n_segments: int
    n_samples: int
    average: str
    window: str
    null: NullDistribution

    @property
    def bin_width_hz(self) -> float:
        return self.fs_hz / self.nperseg

    def to_json(self) -> dict:
        return {
            "frequencies_hz": self.frequencies_hz.tolist(), "psd": self.psd.tolist(),
            "fs_hz": self.fs_hz, "nperseg": self.nperseg, "noverlap": self.noverlap,
            "n_segments": self.n_segments, "n_samples": self.n_samples, "average": self.average,
            "window": self.window, "null": self.null.to_json(), "unit": "unit^2/Hz",
        }


@dataclass(frozen=True)
class Spectrogram:
    """Time-frequency power: each column is the mean periodogram of the segments that start in its span.

    ``start_s`` is the start time of each column relative to the first sample
    (wake-up index / fs); columns without a segment hold NaN.
    """

    frequencies_hz: np.ndarray
    start_s: np.ndarray
    span_s: float
    power: np.ndarray  # shape (n_columns, n_frequencies)
    segments: np.ndarray  # segments averaged into each column

    def to_json(self) -> dict:
        return {
            "frequencies_hz": self.frequencies_hz.tolist(), "start_s": self.start_s.tolist(),
            "span_s": self.span_s, "power": np.where(np.isnan(self.power), None, self.power).tolist(),
            "segments": self.segments.tolist(),
        }


class WelchAccumulator:
    """Streaming Welch PSD, median reservoir and spectrogram of one regularly sampled series.

    Parameters
    ----------
    fs_hz : float
        Sampling frequency (1 / timer interval).
    nperseg : int
        Segment length in samples (at least 16).
    noverlap : int, optional
        Overlap of consecutive segments; default ``nperseg // 2``.
    average : {"mean", "median"}
        How :meth:`result` averages the segment periodograms.
    reservoir_size : int
        Number of non-overlapping segment periodograms kept for the median.
    columns : int
        Maximum number of spectrogram time columns.
    span_hint : int, optional
        Expected number of samples; sizes the spectrogram columns so that none
        has to be merged later.
    seed : int
        Seed of the reservoir's random replacement.

    Notes
    -----
    Mean averaging is Welch's method [1]_ with a periodic Hann window.  The
    median average is the ``ceil(K/2)``-th order statistic over a uniform
    random reservoir of at most ``reservoir_size`` non-overlapping segments
    (exact when there are no more segments than that); only segments starting
    at multiples of ``nperseg`` enter it, so its members are independent.

    .. [1] P. D. Welch, "The use of fast Fourier transform for the estimation
       of power spectra", IEEE Trans. Audio Electroacoust. 15 (1967) 70-73.
    """

    def __init__(self, fs_hz: float, nperseg: int, *, noverlap: int | None = None, average: str = "mean",
                 reservoir_size: int = 512, columns: int = 64, span_hint: int | None = None, seed: int = 0,
                 single: bool = False):
        if not fs_hz > 0:
            raise AnalysisError(f"sampling frequency must be positive, got {fs_hz}; check the thread's interval_ns")
        if nperseg < MIN_NPERSEG:
            raise AnalysisError(f"segment length {nperseg} is too short; use at least {MIN_NPERSEG}")
        noverlap = nperseg // 2 if noverlap is None else noverlap
        if not 0 <= noverlap < nperseg:
            raise AnalysisError(f"overlap {noverlap} must be in [0, {nperseg}); use a smaller --overlap")
        if average not in AVERAGES:
            raise AnalysisError(f"unknown average {average!r}; use one of {', '.join(AVERAGES)}")
        if columns < 2:
            raise AnalysisError(f"spectrogram needs at least 2 columns, got {columns}")
        self.fs_hz = float(fs_hz)
        self.nperseg = int(nperseg)
        self.noverlap = int(noverlap)
        self.step = self.nperseg - self.noverlap
        self.average = average
        self.reservoir_size = int(reservoir_size)
        self.max_columns = int(columns)
        # single precision halves the FFTs' cost; for a 0/1 spike indicator its ~1e-6 relative rounding is far
        # below the spectrum's own scatter (chi2 of 2K degrees of freedom: a few % for K in the thousands)
        self.dtype = np.float32 if single else np.float64
        self.window = np.hanning(self.nperseg + 1)[:-1].astype(self.dtype)  # periodic Hann
        nfreq = self.nperseg // 2 + 1
        # one-sided density scaling: |X|^2 / (fs * sum w^2), doubled except at DC and Nyquist
        self._scale = np.full(nfreq, 2.0 / (self.fs_hz * np.sum(self.window**2)))
        self._scale[0] /= 2.0
        if self.nperseg % 2 == 0:
            self._scale[-1] /= 2.0
        self.sum = np.zeros(nfreq)
        self.count = 0
        # per-segment mean level, summed and squared: segments of unequal level (a burst, a heavy-tailed
        # spike) make the average less stable than chi2(2K)/2K; Satterthwaite's dof accounts for it
        self.level_sum = 0.0
        self.level_sq = 0.0
        self.samples = 0
        self.reservoir = np.empty((0, nfreq), dtype=np.float32)
        self.reservoir_seen = 0
        self._seed, self._generator = seed, None  # made on first use (_rng): only the median's reservoir draws
        span = self.step * 4 if span_hint is None else max(self.step, -(-int(span_hint) // self.max_columns))
        self.column_span = int(span)
        self.column_sum = np.zeros((self.max_columns, nfreq))
        self.column_count = np.zeros(self.max_columns, dtype=np.int64)
        self._tail = np.empty(0, dtype=self.dtype)
        self._tail_start = 0  # index (relative to origin) of _tail[0]
        self._origin: int | None = None

    @property
    def _rng(self) -> np.random.Generator:
        """The reservoir's generator, seeded with ``seed``: made when first drawn from, so a mean spectrum does not
        import numpy.random (0.02-0.05 s of CPU, most of a small spectrum's fixed cost besides numpy itself)."""
        if self._generator is None:
            self._generator = np.random.default_rng(self._seed)
        return self._generator

    # -- streaming ---------------------------------------------------------------------------------------------

    def update(self, values: np.ndarray, index: np.ndarray | None = None) -> None:
        """Add the next samples of the series.

        Parameters
        ----------
        values : ndarray
            Sample values in stream order.
        index : ndarray of int, optional
            Wake-up index of each sample (strictly increasing); a step larger
            than one is a gap.  Without it the samples continue the stream
            without a gap.
        """
        values = np.asarray(values, dtype=self.dtype)
        self.samples += values.size
        if values.size == 0:
            return
        if index is None:
            if self._origin is None:
                self._origin = 0
            self._extend(values, self._tail_start + self._tail.size)
            return
        index = np.asarray(index, dtype=np.int64)
        if index.shape != values.shape:
            raise AnalysisError("values and index differ in length; pass one index per sample")
        if self._origin is None:
            self._origin = int(index[0])
        rel = index - self._origin
        breaks = np.flatnonzero(np.diff(rel) != 1) + 1
        for start, stop in zip(np.r_[0, breaks], np.r_[breaks, rel.size], strict=True):
            self._extend(values[start:stop], int(rel[start]))

    def _extend(self, run: np.ndarray, run_start: int) -> None:
        if run_start != self._tail_start + self._tail.size:
            self._tail, self._tail_start = np.empty(0, dtype=self.dtype), run_start  # gap: no segment spans it
        buf = np.concatenate((self._tail, run)) if self._tail.size else run
        if buf.size < self.nperseg:
            self._tail = buf.copy()
            return
        nseg = (buf.size - self.nperseg) // self.step + 1
        windows = sliding_window_view(buf, self.nperseg)[:: self.step][:nseg]
        per_chunk = max(1, _CHUNK_SAMPLES // self.nperseg)
        for first in range(0, nseg, per_chunk):
            chunk = windows[first:first + per_chunk]
            starts = self._tail_start + self.step * np.arange(first, first + chunk.shape[0])
            self._add_segments(self._periodograms(chunk), starts)
        consumed = nseg * self.step
        self._tail = buf[consumed:].copy()
        self._tail_start += consumed

    def _periodograms(self, segments: np.ndarray) -> np.ndarray:
        detrended = segments - segments.mean(axis=1, keepdims=True)
        spectrum = np.fft.rfft(detrended * self.window, axis=1)
        power = (spectrum.real**2 + spectrum.imag**2).astype(np.float64, copy=False)
        power *= self._scale
        return power

    def _add_segments(self, power: np.ndarray, starts: np.ndarray) -> None:
        self.sum += power.sum(axis=0)
        self.count += power.shape[0]
        level = power[:, 1:-1].mean(axis=1)
        self.level_sum += float(level.sum())
        self.level_sq += float(np.dot(level, level))
        if self.average == "median":
            self._reserve(power[starts % self.nperseg == 0])
        self._add_columns(power, starts)

    def _reserve(self, power: np.ndarray) -> None:
        for row in power:  # a handful per batch: one in nperseg / step segments
            self.reservoir_seen += 1
            if self.reservoir.shape[0] < self.reservoir_size:
                self.reservoir = np.vstack((self.reservoir, row.astype(np.float32)))
            else:
                slot = self._rng.integers(self.reservoir_seen)
                if slot < self.reservoir_size:
                    self.reservoir[slot] = row

    def _add_columns(self, power: np.ndarray, starts: np.ndarray) -> None:
        while starts[-1] // self.column_span >= self.max_columns:
            self._coarsen()
        cols = starts // self.column_span
        edges = np.flatnonzero(np.diff(cols)) + 1
        firsts = np.r_[0, edges]
        self.column_sum[cols[firsts]] += np.add.reduceat(power, firsts, axis=0)
        self.column_count[cols[firsts]] += np.diff(np.r_[firsts, cols.size])

    def _coarsen(self) -> None:
        half = self.max_columns // 2
        summed = self.column_sum[0:2 * half:2] + self.column_sum[1:2 * half:2]
        counted = self.column_count[0:2 * half:2] + self.column_count[1:2 * half:2]
        self.column_sum[:] = 0
        self.column_count[:] = 0
        self.column_sum[:half] = summed
        self.column_count[:half] = counted
        if self.max_columns % 2:
            self.column_sum[half] = 0
        self.column_span *= 2

    def merge(self, other: WelchAccumulator) -> WelchAccumulator:
        """Add another accumulator's segments (same fs and segmentation; a disjoint part of the same stream).

        Segments that would have spanned the boundary between the two parts
        are lost; spectrogram columns are aligned on the shared wake-up index
        origin of ``self``.
        """
        if (other.fs_hz, other.nperseg, other.noverlap, other.average) != (
                self.fs_hz, self.nperseg, self.noverlap, self.average):
            raise AnalysisError("cannot merge spectra computed with different fs, segment length, overlap or average")
        self.sum += other.sum
        self.count += other.count
        self.level_sum += other.level_sum
        self.level_sq += other.level_sq
        self.samples += other.samples
        if self.average == "median":
            self._merge_reservoir(other)
        self._merge_columns(other)
        return self

    def _merge_reservoir(self, other: WelchAccumulator) -> None:
        pool = np.vstack((self.reservoir, other.reservoir))
        total = self.reservoir_seen + other.reservoir_seen
        if pool.shape[0] > self.reservoir_size:
            # keep each side in proportion to how many segments it stands for
            weights = np.r_[np.full(self.reservoir.shape[0], self.reservoir_seen / max(self.reservoir.shape[0], 1)),
                            np.full(other.reservoir.shape[0], other.reservoir_seen / max(other.reservoir.shape[0], 1))]
            keep = self._rng.choice(pool.shape[0], self.reservoir_size, replace=False, p=weights / weights.sum())
            pool = pool[np.sort(keep)]
        self.reservoir, self.reservoir_seen = pool, total

    def _merge_columns(self, other: WelchAccumulator) -> None:
        offset = 0 if other._origin is None or self._origin is None else other._origin - self._origin
        used = np.flatnonzero(other.column_count)
        if used.size == 0:
            return
        starts = offset + used * other.column_span
        while max(starts[-1], 0) // self.column_span >= self.max_columns or self.column_span < other.column_span:
            self._coarsen()
        cols = np.clip(starts // self.column_span, 0, self.max_columns - 1)
        np.add.at(self.column_sum, cols, other.column_sum[used])
        np.add.at(self.column_count, cols, other.column_count[used])

    # -- results -----------------------------------------------------------------------------------------------

    def frequencies(self) -> np.ndarray:
        return np.fft.rfftfreq(self.nperseg, d=1.0 / self.fs_hz)

    def result(self) -> Psd:
        """The averaged PSD.

        Raises
        ------
        AnalysisError
            Fewer samples than one segment (or no contiguous run that long).
        """
        if self.count == 0 or (self.average == "median" and self.reservoir.shape[0] == 0):
            longest = max(self._tail.size, self.samples if self.samples < self.nperseg else 0)
            raise AnalysisError(
                f"too short for spectral analysis (n={longest if longest else self.samples}, need ≥ {self.nperseg} "
                "contiguous wake-ups); capture longer or pass a smaller --nperseg"
            )
        if self.average == "mean":
            psd = self.sum / self.count
            equivalent = self.level_sum**2 / self.level_sq if self.level_sq > 0 else float(self.count)
            null = mean_null(self.count, self.window, self.step, equivalent_segments=min(equivalent, self.count))
        else:
            k = self.reservoir.shape[0]
            order = (k + 1) // 2 - 1
            psd = np.partition(self.reservoir, order, axis=0)[order].astype(np.float64)
            null = median_null(k)
            psd = psd / null.mean  # unbiased for the noise level; the null is rescaled to match
            null = null.rescaled(1.0 / null.mean)
        return Psd(
            frequencies_hz=self.frequencies(), psd=psd, fs_hz=self.fs_hz, nperseg=self.nperseg,
            noverlap=self.noverlap, n_segments=self.count if self.average == "mean" else self.reservoir.shape[0],
            n_samples=self.samples, average=self.average, window="hann", null=null,
        )

    def spectrogram(self) -> Spectrogram:
        """The spectrogram: columns up to the last one holding a segment."""
        used = np.flatnonzero(self.column_count)
        if used.size == 0:
            raise AnalysisError(
                f"too short for spectral analysis (n={self.samples}, need ≥ {self.nperseg}); capture longer"
            )
        n = used[-1] + 1
        counts = self.column_count[:n]
        with np.errstate(invalid="ignore", divide="ignore"):
            power = self.column_sum[:n] / counts[:, None]
        power[counts == 0] = np.nan
        return Spectrogram(
            frequencies_hz=self.frequencies(), start_s=np.arange(n) * self.column_span / self.fs_hz,
            span_s=self.column_span / self.fs_hz, power=power, segments=counts.copy(),
        )
