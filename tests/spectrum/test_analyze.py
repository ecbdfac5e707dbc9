"""jitterscope.spectrum.analyze_spectra on simulated datasets with planted periodic sources."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.dataset import open_dataset
from jitterscope.errors import AnalysisError
from jitterscope.io import BaseLatency, Drops, PeriodicDisturbance, SimulationSpec, Stalls, write_simulation
from jitterscope.spectrum import SpectralOptions, analyze_spectra, parse_sources

BASE = BaseLatency(distribution="lognormal", median_ns=3_000, spread=0.3)


def _write(tmp_path, name, seed=1, **spec):
    return open_dataset(write_simulation(SimulationSpec(base=BASE, **spec), tmp_path / f"{name}.parquet", seed))


def test_planted_sources_per_thread_with_alias_and_attribution(tmp_path):
    ds = _write(tmp_path, "two", threads=2, samples=120_000, effects=(
        PeriodicDisturbance(frequency_hz=37.0, amplitude_ns=20_000, width_ns=1_000_000, threads=(0,)),
        PeriodicDisturbance(frequency_hz=1230.0, amplitude_ns=800, shape="sine", threads=(1,)),
    ))
    result = analyze_spectra(ds, sources=parse_sources("daemon=37"))
    spikes, sine = result.threads
    resolution = spikes.psd.bin_width_hz
    fundamental = next(p for p in spikes.peaks if p.harmonic_number == 1 and p.harmonic_group == 1)
    assert abs(fundamental.frequency_hz - 37.0) <= resolution
    assert fundamental.likely_source == "daemon"
    harmonics = {p.harmonic_number for p in spikes.peaks if p.harmonic_group == fundamental.harmonic_group}
    assert {2, 3, 4, 5} <= harmonics
    assert spikes.isi.mode_s == pytest.approx(1 / 37.0, rel=0.02)  # periods of 27 or 28 wake-ups
    # the spike spectrum's first family is seeded by the inter-spike interval: 37 Hz, not a folded line
    spike_fundamental = next(p for p in spikes.spike_peaks if p.harmonic_group == 1 and p.harmonic_number == 1)
    assert abs(spike_fundamental.frequency_hz - 37.0) <= resolution
    # 1230 Hz sampled at 1 kHz: reported at 230 Hz with 1230 among the candidates
    assert len(sine.peaks) == 1
    assert abs(sine.peaks[0].frequency_hz - 230.0) <= resolution
    assert any(abs(c - 1230.0) <= resolution for c in sine.peaks[0].alias_candidates_hz)
    assert sine.isi.spikes == 0


def test_no_planted_source_gives_no_peak(tmp_path):
    ds = _write(tmp_path, "quiet", seed=3, threads=2, samples=60_000)
    result = analyze_spectra(ds)
    assert [t.peaks for t in result.threads] == [(), ()]


def test_intermittent_source_is_confined_to_its_time_span_in_the_spectrogram(tmp_path):
    ds = _write(tmp_path, "burst", threads=1, samples=200_000, effects=(
        PeriodicDisturbance(frequency_hz=83.0, amplitude_ns=2_000, shape="sine",
                            start_ns=80_000_000_000, stop_ns=120_000_000_000),
    ))
    thread = analyze_spectra(ds).threads[0]
    spec = thread.spectrogram
    bin83 = int(np.argmin(np.abs(spec.frequencies_hz - 83.0)))
    ratio = spec.power[:, bin83] / np.median(spec.power[:, bin83 + 20:bin83 + 80], axis=1)
    loud = spec.start_s[ratio > 20]
    # a column holds the segments that start in [start, start + span); each lasts nperseg / fs
    segment_s = thread.psd.nperseg / thread.fs_hz
    reach = spec.span_s + segment_s
    assert loud.size >= (40 - reach) / spec.span_s
    assert loud.min() + reach > 80 and loud.max() < 120
    assert np.all((loud + reach > 80) & (loud < 120))


def test_drops_and_overruns_go_through_lomb_scargle(tmp_path):
    ds = _write(tmp_path, "gappy", threads=1, samples=60_000, effects=(
        PeriodicDisturbance(frequency_hz=13.0, amplitude_ns=3_000, shape="sine"),
        Drops(probability=2e-3, mean_burst=5), Stalls(probability=2e-4),
    ))
    thread = analyze_spectra(ds).threads[0]
    assert thread.method == "lomb-scargle" and thread.gaps > 50
    assert abs(thread.peaks[0].frequency_hz - 13.0) <= thread.lomb_scargle.resolution_hz
    assert any("gaps" in note for note in thread.notes)


def test_tiny_dataset_is_too_short(tmp_path):
    ds = _write(tmp_path, "tiny", threads=1, samples=40)
    with pytest.raises(AnalysisError, match=r"too short for spectral analysis \(n=40, need ≥ 64"):
        analyze_spectra(ds)
    with pytest.raises(AnalysisError, match=r"too short for spectral analysis \(n=40, need ≥ 256"):
        analyze_spectra(ds, SpectralOptions(nperseg=256))


def test_median_average_and_json_round_trip(tmp_path):
    import json

    ds = _write(tmp_path, "median", threads=1, samples=50_000, effects=(
        PeriodicDisturbance(frequency_hz=50.0, amplitude_ns=1_000, shape="sine"),))
    result = analyze_spectra(ds, SpectralOptions(average="median"))
    assert result.threads[0].method == "welch-median"
    assert abs(result.threads[0].peaks[0].frequency_hz - 50.0) <= result.threads[0].psd.bin_width_hz
    text = json.dumps(result.to_json(), allow_nan=False)
    assert json.loads(text)["threads"][0]["peaks"][0]["harmonic_group"] == 1


def test_interleaved_threads_give_the_same_spectra_as_sorted_rows(tmp_path):
    import pyarrow as pa
    from jitterscope.dataset import write_dataset

    ds = _write(tmp_path, "sorted", threads=2, samples=20_000, effects=(
        PeriodicDisturbance(frequency_hz=40.0, amplitude_ns=1_000, shape="sine", threads=(1,)),))
    table = ds.read()
    order = np.lexsort((table.column("thread").to_numpy(), table.column("seq").to_numpy()))  # seq-major: interleaved
    interleaved = write_dataset(table.take(pa.array(order)), ds.metadata, tmp_path / "mixed.parquet",
                                row_group_size=3_000)
    a, b = analyze_spectra(ds), analyze_spectra(open_dataset(interleaved))
    for x, y in zip(a.threads, b.threads, strict=True):
        np.testing.assert_allclose(x.psd.psd, y.psd.psd, rtol=1e-12)
        assert [p.frequency_hz for p in x.peaks] == [p.frequency_hz for p in y.peaks]
    assert a.threads[0].peaks == () and abs(a.threads[1].peaks[0].frequency_hz - 40.0) <= a.threads[1].psd.bin_width_hz


def test_histogram_dataset_is_refused(tmp_path):
    import pyarrow as pa
    from jitterscope.dataset import Metadata, ThreadInfo, write_dataset

    table = pa.table({"thread": [0], "cpu": [0], "bin_start_ns": [1000], "bin_width_ns": [1000], "count": [5]})
    path = write_dataset(table, Metadata(kind="histogram", threads=(ThreadInfo(0, 0, 1_000_000),)), tmp_path / "h.pq")
    with pytest.raises(AnalysisError, match="histogram-only dataset has no time series"):
        analyze_spectra(open_dataset(path))


def test_lomb_scargle_covers_the_whole_series_as_stated_bin_means(tmp_path):
    """Above ls_max_points wake-ups Lomb-Scargle runs on means of k consecutive ones over the whole span, says
    so, and finds a slow line that starts after the first ls_max_points wake-ups (a leading cut misses it)."""
    ds = _write(tmp_path, "long", threads=1, samples=40_000, effects=(
        PeriodicDisturbance(frequency_hz=2.0, amplitude_ns=3_000, shape="sine", start_ns=10_000_000_000),
        Drops(probability=0.01)))
    options = SpectralOptions(method="lombscargle", ls_max_points=4096)
    (thread,) = analyze_spectra(ds, options).threads
    assert thread.method == "lomb-scargle (means of 16 wake-ups)"
    assert any("ran over all" in note and "means of 16 consecutive wake-ups" in note for note in thread.notes)
    assert thread.lomb_scargle.n_used <= 4096 and thread.lomb_scargle.span_s > 39.0
    assert any(abs(p.frequency_hz - 2.0) <= 2 * thread.lomb_scargle.resolution_hz for p in thread.peaks)
    # up to ls_max_points: every wake-up, as before
    (small,) = analyze_spectra(ds, SpectralOptions(method="lombscargle", ls_max_points=1 << 18)).threads
    assert small.method == "lomb-scargle" and small.lomb_scargle.n_used == small.samples
