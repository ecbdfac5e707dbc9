"""Spectral analysis of jitter: periodic disturbances found, tested for significance, and attributed.

Modules, in the order data flows through them: :mod:`.welch` (streaming Welch
PSD, median reservoir, spectrogram), :mod:`.null` (null distributions for the
noise-floor test), :mod:`.peaks` (significant peaks, harmonic families),
:mod:`.sources` (alias candidates, known sources), :mod:`.stationarity` (where in
time a line is present), :mod:`.lombscargle` (gapped or irregular series), :mod:`.spikes`
(spike threshold, inter-spike intervals),
:mod:`.analyze` (a whole dataset in one pass).
Views: :mod:`.plots` (matplotlib, loaded on first use), :mod:`.tables`, :mod:`.text`.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "analyze": ["SpectralAnalysis", "SpectralOptions", "ThreadSpectra", "analyze_spectra", "default_nperseg"],
        "lombscargle": ["LombScargleSpectrum", "lomb_scargle"],
        "null": ["mean_null", "median_null"],
        "peaks": [
            "MAX_PEAKS", "MERGE_BINS", "MIN_CYCLES", "Family", "FloorTest", "Peak", "assess_noise_floor",
            "families_of", "find_welch_peaks", "fold_frequency", "group_harmonics", "merge_close_peaks",
            "order_by_family",
        ],
        "plots": ["plot_isi", "plot_lomb_scargle", "plot_psd", "plot_spectrogram", "plot_spike_psd", "table_peaks"],
        "sources": ["Source", "alias_candidates", "attribute", "default_sources", "match_source", "parse_sources"],
        "stationarity": ["PRESENT_THROUGH", "Presence", "presence_in_samples", "presence_in_spectrogram"],
        "spikes": ["InterSpikeIntervals", "IsiAccumulator", "default_threshold_ns", "threshold_from_histogram"],
        "tables": ["peak_table"],
        "text": [
            "PEAKS_SHOWN", "family_text", "fap_text", "format_spectral_analysis", "peaks_by_family", "presence_text",
        ],
        "welch": ["Psd", "Spectrogram", "WelchAccumulator"],
    },
)
