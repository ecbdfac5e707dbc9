"""Spectral analysis of a whole dataset, thread by thread, in one streaming pass.

Per thread: a Welch PSD and spectrogram of latency on the wake-up index
(fs = 1 / interval), the same for the spike-indicator series, the
inter-spike-interval histogram, and - when the thread has gaps (drops,
overruns) or irregular intervals - a Lomb-Scargle periodogram on the actual
wake-up times of its leading samples.  Peaks are tested, grouped into harmonic
families, given alias candidates and matched to likely sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..dataset import Dataset, column_values
from ..errors import AnalysisError
from .lombscargle import LombScargleSpectrum, lomb_scargle
from .peaks import (
    MIN_CYCLES,
    FloorTest,
    Peak,
    assess_noise_floor,
    families_of,
    find_welch_peaks,
    group_harmonics,
    merge_close_peaks,
    order_by_family,
)
from .sources import Source, attribute, default_sources
from .spikes import InterSpikeIntervals, IsiAccumulator, default_threshold_ns
from .stationarity import presence_in_samples, presence_in_spectrogram, with_presence
from .welch import MIN_NPERSEG, Psd, Spectrogram, WelchAccumulator

METHODS = ("auto", "welch", "lombscargle")
THRESHOLD_WINDOW = 1 << 16
"""Leading wake-ups per thread from which the default spike threshold is estimated."""


def default_nperseg(samples: int) -> int:
    """Segment length for a thread of ``samples`` wake-ups: a power of two giving ≥ 16 segments, in [64, 4096]."""
    target = max(samples // 16, 1)
    return int(min(4096, max(64, 1 << (target.bit_length() - 1))))


@dataclass(frozen=True)
class SpectralOptions:
    """Parameters of :func:`analyze_spectra` (recorded with the result)."""

    nperseg: int | None = None
    average: str = "mean"
    alpha: float = 0.01
    method: str = "auto"
    spike_threshold_ns: float | None = None
    columns: int = 64
    floor_bins: int = 63
    ls_max_points: int = 1 << 18
    """Lomb-Scargle runs on every wake-up up to this many, else on the means of k consecutive wake-ups
    (k a power of two, the fewest giving at most this many points), over the whole series."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise AnalysisError(f"unknown method {self.method!r}; use one of {', '.join(METHODS)}")
        if not 0 < self.alpha < 1:
            raise AnalysisError(f"false-alarm level {self.alpha} must be between 0 and 1, e.g. 0.01")
        if self.nperseg is not None and self.nperseg < MIN_NPERSEG:
            raise AnalysisError(f"--nperseg {self.nperseg} is too short; use at least {MIN_NPERSEG}")


@dataclass(frozen=True)
class ThreadSpectra:
    """Everything spectral about one measuring thread."""

    thread: int
    cpu: int
    fs_hz: float
    samples: int
    gaps: int
    irregular: bool
    method: str
    peaks: tuple[Peak, ...]
    psd: Psd | None
    """None when gaps leave no contiguous run of one segment (the peaks then come from Lomb-Scargle)."""
    floor: FloorTest | None
    spectrogram: Spectrogram | None
    spike_psd: Psd | None
    spike_peaks: tuple[Peak, ...]
    isi: InterSpikeIntervals
    lomb_scargle: LombScargleSpectrum | None = None
    notes: tuple[str, ...] = ()

    @property
    def span_s(self) -> float:
        """Length of the record the peaks come from: Lomb-Scargle's time span, else wake-ups / fs."""
        if self.method == "lomb-scargle" and self.lomb_scargle is not None:
            return self.lomb_scargle.span_s
        return self.samples / self.fs_hz

    @property
    def method_text(self) -> str:
        """How the peaks were found, in words: the method, its segments or the samples it used."""
        if self.method == "lomb-scargle" and self.lomb_scargle is not None:
            ls = self.lomb_scargle
            used = f"first {ls.n_used} of {self.samples}" if ls.n_used < self.samples else f"all {ls.n_used}"
            return f"Lomb-Scargle on actual times ({used} wake-ups, Baluev FAP)"
        if self.psd is None:
            return self.method
        return (f"Welch, {self.psd.average} of {self.psd.n_segments} Hann segments of "
                f"{self.psd.nperseg / self.fs_hz:.3g} s (noise-floor FAP)")

    def to_json(self) -> dict:
        return {
            "thread": self.thread, "cpu": self.cpu, "fs_hz": self.fs_hz, "samples": self.samples,
            "gaps": self.gaps, "irregular": self.irregular, "method": self.method,
            "method_text": self.method_text, "span_s": self.span_s,
            "peaks": [p.to_json() for p in self.peaks],
            "families": [f.to_json() for f in families_of(self.peaks)], "psd": _json(self.psd), "floor_threshold": (
                None if self.floor is None else np.nan_to_num(self.floor.threshold, nan=0.0).tolist()),
            "spectrogram": _json(self.spectrogram), "spike_psd": _json(self.spike_psd),
            "spike_peaks": [p.to_json() for p in self.spike_peaks], "isi": self.isi.to_json(),
            "lomb_scargle": None if self.lomb_scargle is None else self.lomb_scargle.to_json(),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class SpectralAnalysis:
    """Spectral results of every analysable thread of a dataset."""

    threads: tuple[ThreadSpectra, ...]
    sources: tuple[Source, ...]
    options: SpectralOptions
    skipped: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        from dataclasses import asdict

        return {"threads": [t.to_json() for t in self.threads], "sources": [s.to_json() for s in self.sources],
                "options": asdict(self.options), "skipped": list(self.skipped)}


def _json(result) -> dict | None:
    return None if result is None else result.to_json()


class _ThreadState:
    """Accumulators of one thread while the dataset streams by."""

    def __init__(self, thread: int, cpu: int, interval_ns: int, expected_samples: int, gaps_expected: bool,
                 options: SpectralOptions):
        self.thread, self.cpu, self.interval_ns = thread, cpu, interval_ns
        self.fs_hz = 1e9 / interval_ns
        nperseg = options.nperseg or default_nperseg(expected_samples)
        common = {"average": options.average, "columns": options.columns, "span_hint": expected_samples}
        self.welch = WelchAccumulator(self.fs_hz, nperseg, **common)
        self.spike_welch = WelchAccumulator(self.fs_hz, nperseg, **common, single=True)
        self.options = options
        self.threshold = options.spike_threshold_ns
        self.isi: IsiAccumulator | None = None
        if self.threshold is not None:
            self.isi = IsiAccumulator(self.threshold, "given", merge_ns=1.5 * interval_ns)
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.pending_n = 0
        self.want_ls = options.method == "lombscargle" or (options.method == "auto" and gaps_expected)
        self.ls_times: list[np.ndarray] = []
        self.ls_values: list[np.ndarray] = []
        self.ls_n = 0
        # the whole series for Lomb-Scargle, in bounded memory: sums over bins of ls_k consecutive wake-ups,
        # bins merged pairwise (ls_k doubles) whenever there are more than ls_max_points of them
        self.ls_k = 1
        self._ls_buffer = np.zeros((0, 3))  # per bin: sum of actual_ns - first, sum of latency, count
        self._ls_bins = 0  # bins of the buffer in use (it grows by doubling: no copy of every bin per chunk)
        self.first_expected: int | None = None
        self.last_index: int | None = None
        self.gaps = 0
        self.irregular = False
        self.samples = 0

    def update(self, expected_ns: np.ndarray, actual_ns: np.ndarray, latency_ns: np.ndarray) -> None:
        if self.first_expected is None:
            self.first_expected = int(expected_ns[0])
        offset = expected_ns - self.first_expected
        index = offset // self.interval_ns
        if np.any(offset % self.interval_ns):
            self.irregular = True
        steps = np.diff(index if self.last_index is None else np.r_[self.last_index, index])
        self.gaps += int(np.count_nonzero(steps != 1))
        self.last_index = int(index[-1])
        latency = latency_ns.astype(np.float64)
        self.samples += latency.size
        self.welch.update(latency, None if self.irregular else index)
        self._spikes(index, actual_ns, latency)
        if self.ls_n < self.options.ls_max_points:
            take = self.options.ls_max_points - self.ls_n
            self.ls_times.append(actual_ns[:take])
            self.ls_values.append(latency[:take])
            self.ls_n += min(take, latency.size)
        self._bin_means(actual_ns, latency)  # cheap, and gaps found later may still call for Lomb-Scargle

    @property
    def ls_sums(self) -> np.ndarray:
        """Per bin of ls_k consecutive wake-ups: sum of actual_ns - first, sum of latency, count."""
        return self._ls_buffer[:self._ls_bins]

    def _bin_means(self, actual_ns: np.ndarray, latency: np.ndarray) -> None:
        """Add wake-ups to the bins of ls_k consecutive ones (rows counted from the thread's first)."""
        start = self.samples - latency.size
        first_bin = start // self.ls_k
        n = latency.size
        # the chunk's rows split into runs of ls_k at fixed places: sums over runs (reduceat), no scatter
        cuts = np.arange((-start) % self.ls_k, n, self.ls_k)
        cuts = cuts if cuts.size and cuts[0] == 0 else np.concatenate(([0], cuts))
        size = cuts.size
        t = (actual_ns - self.first_expected).astype(np.float64)
        end = first_bin + size
        if end > self._ls_buffer.shape[0]:
            grown = np.zeros((max(end, 2 * self._ls_buffer.shape[0]), 3))
            grown[:self._ls_bins] = self._ls_buffer[:self._ls_bins]
            self._ls_buffer = grown
        target = self._ls_buffer[first_bin:end]  # the chunk's first bin may continue the last one: add
        target[:, 0] += np.add.reduceat(t, cuts)
        target[:, 1] += np.add.reduceat(latency, cuts)
        target[:, 2] += np.diff(cuts, append=n)
        self._ls_bins = end
        while self._ls_bins > self.options.ls_max_points:  # merge bins pairwise, in place
            pairs = self._ls_bins // 2
            odd = self._ls_bins % 2
            merged = self._ls_buffer[0:2 * pairs:2] + self._ls_buffer[1:2 * pairs:2]
            if odd:
                merged = np.concatenate([merged, self._ls_buffer[2 * pairs:self._ls_bins]])
            self._ls_buffer[:merged.shape[0]] = merged
            self._ls_buffer[merged.shape[0]:] = 0.0
            self._ls_bins = merged.shape[0]
            self.ls_k *= 2

    def _spikes(self, index: np.ndarray, actual_ns: np.ndarray, latency: np.ndarray) -> None:
        if self.isi is None:
            self.pending.append((index, actual_ns, latency))
            self.pending_n += latency.size
            if self.pending_n >= THRESHOLD_WINDOW:
                self._fix_threshold()
            return
        indicator = self.isi.update(actual_ns, latency)
        self.spike_welch.update(indicator, None if self.irregular else index)

    def _fix_threshold(self) -> None:
        leading = np.concatenate([lat for _, _, lat in self.pending])[:THRESHOLD_WINDOW]
        rule = f"median + 10 IQR of the first {leading.size} wake-ups"
        self.isi = IsiAccumulator(default_threshold_ns(leading), rule, merge_ns=1.5 * self.interval_ns)
        pending, self.pending = self.pending, []
        for index, actual_ns, latency in pending:
            self._spikes(index, actual_ns, latency)

    def result(self, sources: tuple[Source, ...]) -> ThreadSpectra:
        if self.isi is None:
            if not self.pending:
                raise AnalysisError(f"too short for spectral analysis (n=0, need ≥ {self.welch.nperseg})")
            self._fix_threshold()
        assert self.isi is not None
        options = self.options
        notes = []
        # gaps the metadata did not announce (an import) also send the peaks through Lomb-Scargle
        use_ls = self.want_ls or self.irregular or (options.method == "auto" and self.gaps > 0)
        try:
            psd, spike_psd = self.welch.result(), self.spike_welch.result()
        except AnalysisError as exc:
            if not use_ls or self.ls_n < 2 * self.welch.nperseg:
                raise
            psd = spike_psd = None
            notes.append(f"no Welch spectrum: {exc}")
        fs = None if self.irregular else self.fs_hz
        peaks = () if psd is None else find_welch_peaks(psd, alpha=options.alpha, floor_bins=options.floor_bins)
        method = f"welch-{options.average}"
        ls = None
        times = values = None
        if use_ls:
            if self.samples <= options.ls_max_points or self.ls_k == 1 or not self.ls_sums.size:
                times, values = np.concatenate(self.ls_times) / 1e9, np.concatenate(self.ls_values)
                reduction = None
            else:
                # the whole series, as means of ls_k consecutive wake-ups (a stated reduction, not a cut)
                full = self.ls_sums[self.ls_sums[:, 2] > 0]
                times, values = full[:, 0] / full[:, 2] / 1e9, full[:, 1] / full[:, 2]
                reduction = (f"Lomb-Scargle ran over all {self.samples:,} wake-ups as {values.size:,} means of "
                             f"{self.ls_k} consecutive wake-ups: lines above the means' Nyquist frequency "
                             f"(≈ {self.fs_hz / (2 * self.ls_k):.4g} Hz) are not searched and lines near it are "
                             "attenuated (averaging is a sinc filter); Welch covers the full band")
            ls = lomb_scargle(times, values, alpha=options.alpha)
            peaks, method = ls.peaks, "lomb-scargle"
            if reduction is not None:
                notes.append(reduction)
                method = f"lomb-scargle (means of {self.ls_k} wake-ups)"
            elif ls.n_used < self.samples:
                notes.append(f"Lomb-Scargle used the first {ls.n_used} of {self.samples} wake-ups")
        if self.irregular:
            notes.append("intervals are not whole multiples of interval_ns: Welch ran on row order, "
                         "peaks come from Lomb-Scargle")
        if self.gaps:
            notes.append(f"{self.gaps} gaps in the wake-up index (drops or overruns): Welch segments do not span them")
        isi = self.isi.result()
        # one family decision from three views of a periodic disturbance: the interval between episodes of
        # spikes names its period, the spike train's spectrum its comb, and the latency spectrum's harmonic sum
        # (group_harmonics) weighs them against every other explanation
        seeds = (1.0 / isi.mode_s,) if isi.mode_s and isi.episodes >= MIN_CYCLES else ()
        spike_peaks = () if spike_psd is None else group_harmonics(merge_close_peaks(
            find_welch_peaks(spike_psd, alpha=options.alpha, floor_bins=options.floor_bins)), fs_hz=self.fs_hz,
            seeds_hz=seeds)
        seeds += _family_fundamentals(spike_peaks)
        # group first, then keep families ahead of further harmonics (a comb must not crowd out a family)
        peaks = attribute(order_by_family(group_harmonics(merge_close_peaks(peaks), fs_hz=self.fs_hz,
                                                          seeds_hz=seeds)), sources, fs_hz=fs)
        spike_peaks = attribute(order_by_family(spike_peaks), sources, fs_hz=fs)
        spectrogram = None if psd is None else self.welch.spectrogram()
        if method.startswith("lomb-scargle"):
            peaks = with_presence(peaks, lambda p: presence_in_samples(times, values, p.frequency_hz))
        elif spectrogram is not None and psd is not None:
            # the spectrogram is at hand: every member is judged
            peaks = with_presence(peaks, lambda p: presence_in_spectrogram(spectrogram, psd, p.frequency_hz, p.snr),
                                  len(peaks))
        return ThreadSpectra(
            thread=self.thread, cpu=self.cpu, fs_hz=self.fs_hz, samples=self.samples, gaps=self.gaps,
            irregular=self.irregular, method=method, peaks=peaks, psd=psd,
            floor=None if psd is None else assess_noise_floor(psd, floor_bins=options.floor_bins, alpha=options.alpha),
            spectrogram=spectrogram, spike_psd=spike_psd,
            spike_peaks=spike_peaks,
            isi=isi, lomb_scargle=ls, notes=tuple(notes),
        )


def analyze_spectra(dataset: Dataset, options: SpectralOptions | None = None, *,
                    sources: Sequence[Source] = ()) -> SpectralAnalysis:
    """Spectra, significant peaks and likely sources of every thread of a dataset, in one streaming pass.

    Parameters
    ----------
    dataset : Dataset
        A sample dataset (not a histogram import).
    options : SpectralOptions, optional
        Segment length, averaging, false-alarm level, method, spike threshold.
    sources : sequence of Source
        User-supplied candidate sources, preferred over the built-in ones.

    Returns
    -------
    SpectralAnalysis

    Raises
    ------
    AnalysisError
        A histogram dataset, or every thread too short for one segment.
    """
    options = options or SpectralOptions()
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: a histogram-only dataset has no time series; spectra need wake-ups")
    states: dict[int, _ThreadState] = {}
    skipped: list[str] = []
    for info in dataset.metadata.threads:
        # the metadata's samples add up to the rows (the gate checked it on opening): a thread too short for
        # one segment is skipped before anything of nperseg's size is allocated for it
        if info.samples == 0:
            continue
        nperseg = options.nperseg or default_nperseg(info.samples)
        if nperseg > info.samples:
            skipped.append(f"thread {info.thread}: too short for spectral analysis (n={info.samples}, "
                           f"need ≥ {nperseg} for one segment of --nperseg)")
            continue
        states[info.thread] = _ThreadState(info.thread, info.cpu, info.interval_ns, info.samples,
                                           info.drops + info.overruns > 0, options)
    known = {info.thread for info in dataset.metadata.threads}
    for batch in dataset.iter_batches(["thread", "expected_ns", "actual_ns"]):
        threads, expected, actual = (column_values(batch, i) for i in range(3))
        latency = actual - expected  # derive.latency_ns, without its to_numpy (which imports pandas)
        for thread, rows in _rows_by_thread(threads):
            if thread not in known:
                raise AnalysisError(f"{dataset.path}: rows of thread {thread} but no metadata for it; "
                                    "run 'jitterscope validate' on the dataset")
            if thread in states:
                states[thread].update(expected[rows], actual[rows], latency[rows])
    all_sources = tuple(sources) + default_sources(dataset.metadata.environment, None)
    results = []
    for thread, state in sorted(states.items()):
        thread_sources = tuple(sources) + default_sources(dataset.metadata.environment, state.fs_hz)
        try:
            results.append(state.result(thread_sources))
        except AnalysisError as exc:
            skipped.append(f"thread {thread}: {exc}")
    if not results:
        raise AnalysisError(skipped[0].split(": ", 1)[1] if skipped else f"{dataset.path}: no threads")
    return SpectralAnalysis(tuple(results), all_sources, options, tuple(skipped))


def _family_fundamentals(peaks: tuple[Peak, ...]) -> tuple[float, ...]:
    """The fundamentals of the families of three or more members among grouped peaks, largest family first."""
    sizes: dict[int, list[Peak]] = {}
    for peak in peaks:
        sizes.setdefault(peak.harmonic_group, []).append(peak)
    families = sorted((m for m in sizes.values() if len(m) >= 3), key=len, reverse=True)
    return tuple(float(m[0].fundamental_hz) for m in families if m[0].fundamental_hz)


def _rows_by_thread(threads: np.ndarray):
    first = threads[0]
    if threads.size and np.all(threads == first):
        yield int(first), slice(None)
        return
    order = np.argsort(threads, kind="stable")
    values, starts = np.unique(threads[order], return_index=True)
    for value, start, stop in zip(values, starts, np.r_[starts[1:], threads.size], strict=True):
        yield int(value), order[start:stop]
