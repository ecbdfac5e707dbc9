"""Spectral analysis of jitter: periodic disturbances found, tested for significance, and attributed.

Modules, in the order data flows through them: :mod:`.welch` (streaming Welch
PSD, median reservoir, spectrogram), :mod:`.null` (null distributions for the
noise-floor test), :mod:`.peaks` (significant peaks, harmonic families),
:mod:`.sources` (alias candidates, known sources), :mod:`.lombscargle` (gapped
or irregular series), :mod:`.spikes` (spike threshold, inter-spike intervals),
:mod:`.analyze` (a whole dataset in one pass).
"""

from .analyze import SpectralAnalysis, SpectralOptions, ThreadSpectra, analyze_spectra, default_nperseg
from .lombscargle import LombScargleSpectrum, lomb_scargle
from .peaks import FloorTest, Peak, assess_noise_floor, find_welch_peaks, fold_frequency, group_harmonics
from .sources import Source, alias_candidates, attribute, default_sources, parse_sources
from .spikes import InterSpikeIntervals, IsiAccumulator, default_threshold_ns
from .welch import Psd, Spectrogram, WelchAccumulator

__all__ = [
    "FloorTest", "InterSpikeIntervals", "IsiAccumulator", "LombScargleSpectrum", "Peak", "Psd", "Source",
    "SpectralAnalysis", "SpectralOptions", "Spectrogram", "ThreadSpectra", "WelchAccumulator",
    "alias_candidates", "analyze_spectra", "assess_noise_floor", "attribute", "default_nperseg",
    "default_sources", "default_threshold_ns", "find_welch_peaks", "fold_frequency", "group_harmonics",
    "lomb_scargle", "parse_sources",
]
