"""Harmonic families and stationarity (issue 21): a periodic disturbance is reported once, as its family,
wherever its comb reaches; a line is a finding only when present through the run.

The full-size check (10^6 wake-ups per thread) is run by hand; these are reduced sizes for which the same
properties hold.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, write_dataset
from jitterscope.io import (
    BaseLatency,
    Drops,
    PeriodicDisturbance,
    PStates,
    SimulationSpec,
    recover_planted,
    write_simulation,
)
from jitterscope.spectrum import (
    MERGE_BINS,
    IsiAccumulator,
    Peak,
    analyze_spectra,
    families_of,
    fold_frequency,
    group_harmonics,
    merge_close_peaks,
)
from jitterscope.spectrum.text import format_spectral_analysis

BASE = BaseLatency(distribution="lognormal", median_ns=3_000, spread=0.3)
CAPTURE = Path(__file__).resolve().parents[2] / "data" / "capture-1khz-30s.parquet"
DWELL_NS = 150_000_000  # P-state steps every 150 ms: coupled spikes make a 6.67 Hz comb beside the train


def _spike_train(tmp_path: Path, frequency_hz: float, samples: int, seed: int = 2) -> Path:
    effects = (PeriodicDisturbance(frequency_hz=frequency_hz, amplitude_ns=30_000, width_ns=1_000_000),
               PStates(levels_mhz=(1200.0, 2400.0), dwell_ns=(DWELL_NS, DWELL_NS), coupling_probability=0.5,
                       coupling_amplitude_ns=20_000, coupling_window=2))
    spec = SimulationSpec(base=BASE, threads=2, samples=samples, effects=effects)
    return write_simulation(spec, tmp_path / f"train-{frequency_hz:g}.parquet", seed)


def _on_comb(frequency_hz: float, base_hz: float, fs_hz: float, tolerance_hz: float) -> bool:
    n = np.arange(1, int(4 * fs_hz / base_hz) + 1)
    return bool(np.min(np.abs(fold_frequency(n * base_hz, fs_hz) - frequency_hz)) <= tolerance_hz)


class _Context:
    """What findings._spectral_lines reads of a report context."""

    sections = ("spectrum",)

    def __init__(self, dataset, analysis):
        self.dataset, self._analysis = dataset, analysis

    def shared(self, name, compute):
        return self._analysis


@pytest.mark.parametrize("frequency_hz", [7.3, 13.7, 31.1])
def test_a_spike_train_beside_pstate_cycling_is_one_family_on_every_cpu(frequency_hz, tmp_path):
    from jitterscope.report.sections.findings import _spectral_lines

    dataset = open_dataset(_spike_train(tmp_path, frequency_hz, 300_000))
    analysis = analyze_spectra(dataset)
    coupled_hz = 1e9 / DWELL_NS  # a transition every dwell
    for thread in analysis.threads:
        resolution = thread.psd.bin_width_hz
        family = min(families_of(thread.peaks), key=lambda f: abs(f.fundamental_hz - frequency_hz))
        assert family.fundamental_hz == pytest.approx(frequency_hz, abs=resolution), thread.cpu
        # every significant peak on the train's comb (folded up to 4 fs), bar those also on the P-state comb,
        # belongs to this one family
        on_train = [p for p in thread.peaks if _on_comb(p.frequency_hz, frequency_hz, thread.fs_hz, resolution)
                    and not _on_comb(p.frequency_hz, coupled_hz, thread.fs_hz, resolution)]
        inside = [p for p in on_train if p.harmonic_group == family.group]
        assert len(on_train) >= 10 and len(inside) >= 0.9 * len(on_train), (thread.cpu, len(inside), len(on_train))
        assert all(p.fundamental_hz == family.fundamental_hz for p in family.members)
        assert family.through_run and family.strongest.presence == pytest.approx(1.0)
    rows = {row.effect: row for row in recover_planted(dataset, spectra=analysis).rows}
    assert rows["periodic[0]"].verdict == "recovered", rows["periodic[0]"].recovered
    assert "fundamental" in rows["periodic[0]"].recovered
    # no harmonic of the train below fs/2 is called a line not planted (its far folds may be: quantisation
    # sidebands of harmonics beyond 4 fs are not searched)
    unplanted = rows.get("spectrum: lines not planted")
    stray = [] if unplanted is None else unplanted.values["lines_hz"]
    assert not [f for f in stray if abs(f / frequency_hz - round(f / frequency_hz)) * frequency_hz <= 0.25], stray
    page1 = _spectral_lines(_Context(dataset, analysis))
    assert any(line.startswith(f"{frequency_hz:.4g} Hz on CPU 0, CPU 1 (fundamental of") for line in page1), page1
    text = format_spectral_analysis(analysis)
    assert text.count(f"{family.fundamental_hz:.4f} Hz (fundamental") == 2  # once per CPU, in the families line


def test_two_lines_three_bins_apart_in_one_significant_stretch_are_both_found(tmp_path):
    """7.3 Hz sits 2.6 bins from the 6.67 Hz P-state comb: their significant bins touch, both are lines."""
    analysis = analyze_spectra(open_dataset(_spike_train(tmp_path, 7.3, 300_000)))
    for thread in analysis.threads:
        resolution = thread.psd.bin_width_hz
        lows = sorted(p.frequency_hz for p in thread.peaks if p.frequency_hz < 8)
        assert any(abs(f - 20 / 3) <= resolution for f in lows) and any(abs(f - 7.3) <= resolution for f in lows)


def _peak(f: float, power: float = 1.0, resolution: float = 0.0024) -> Peak:
    return Peak(frequency_hz=f, power=power, snr=10 * power, fap=1e-6, prominence_db=10.0, bin_index=0,
                resolution_hz=resolution, method="test")


def test_peaks_within_two_bins_are_one_line_and_three_bins_apart_two():
    triplet = (_peak(132.4855, 1.0), _peak(132.4879, 3.0), _peak(132.4903, 2.0))
    merged = merge_close_peaks(triplet)
    assert [p.frequency_hz for p in merged] == [132.4879]
    apart = merge_close_peaks((_peak(100.0), _peak(100.0 + (MERGE_BINS + 1) * 0.0024)))
    assert len(apart) == 2


def test_a_missing_fundamental_is_named_from_its_harmonics():
    # harmonics 2..6 of 11 Hz, no peak at 11 Hz, and a stray 47.37 Hz line
    peaks = (*(_peak(n * 11.0, 1.0, 0.25) for n in range(2, 7)), _peak(47.37, 1.0, 0.25))
    grouped = {p.frequency_hz: p for p in group_harmonics(peaks, fs_hz=1000.0)}
    family = [grouped[n * 11.0] for n in range(2, 7)]
    assert {p.harmonic_group for p in family} == {family[0].harmonic_group}
    assert [p.harmonic_number for p in family] == [2, 3, 4, 5, 6]
    assert all(p.fundamental_hz == pytest.approx(11.0) for p in family)
    assert grouped[47.37].harmonic_group != family[0].harmonic_group


def test_episodes_of_consecutive_late_wake_ups_give_the_interval_between_disturbances():
    # a disturbance every 137 ms, late for 5 consecutive 1 ms wake-ups each time
    times = np.arange(200_000, dtype=np.int64) * 1_000_000
    latency = np.zeros(times.size)
    for start in np.arange(0, times.size - 5, 137):
        latency[start:start + 5] = 100.0
    isi = IsiAccumulator(50.0, merge_ns=1.5e6)
    isi.update(times[:70_000], latency[:70_000])
    isi.update(times[70_000:], latency[70_000:])  # an episode may straddle batches
    result = isi.result()
    assert result.mode_s == pytest.approx(0.137, rel=1e-3)
    assert result.episodes == pytest.approx(times.size / 137, abs=1)


def test_an_intermittent_line_is_reported_with_its_span_and_a_steady_one_as_a_finding(tmp_path):
    from jitterscope.report.sections.findings import _spectral_lines

    spec = SimulationSpec(base=BASE, threads=1, samples=100_000, effects=(
        PeriodicDisturbance(frequency_hz=37.0, amplitude_ns=20_000, width_ns=1_000_000, start_ns=60_000_000_000,
                            stop_ns=85_000_000_000),
        PeriodicDisturbance(frequency_hz=113.0, amplitude_ns=800, shape="sine")))
    dataset = open_dataset(write_simulation(spec, tmp_path / "intermittent.parquet", 1))
    analysis = analyze_spectra(dataset)
    families = families_of(analysis.threads[0].peaks)
    burst = min(families, key=lambda f: abs(f.fundamental_hz - 37.0))
    assert burst.fundamental_hz == pytest.approx(37.0, abs=0.25)
    top = burst.strongest
    assert not burst.through_run and top.presence <= 0.5
    # present from about 60 s to about 85 s (spectrogram columns of a few seconds)
    assert 50 <= top.present_from_s <= 62 and 84 <= top.present_to_s <= 95
    steady = [f for f in families if abs(f.strongest.frequency_hz - 113.0) <= 0.25]
    assert steady and steady[0].through_run
    page1 = " | ".join(_spectral_lines(_Context(dataset, analysis)))
    assert "37 Hz on CPU 0, only part of the run: present" in page1, page1


def _with_bursts(source: Path, path: Path, seed: int, clusters: int = 6) -> Path:
    """A real capture with clusters of stalls planted at random times: bursts, nothing periodic."""
    dataset = open_dataset(source)
    table = pq.read_table(source)
    rng = np.random.default_rng(seed)
    thread = table.column("thread").to_numpy()
    expected = table.column("expected_ns").to_numpy()
    actual = table.column("actual_ns").to_numpy().copy()
    for t in np.unique(thread):
        rows = np.flatnonzero(thread == t)
        e = expected[rows]
        for _ in range(clusters):
            centre = e[0] + rng.random() * (e[-1] - e[0])
            for _ in range(rng.integers(5, 20)):
                hit = rows[np.abs(e - (centre + rng.normal(0, 0.15e9))) < rng.uniform(0.5e6, 5e6)]
                actual[hit] += int(rng.uniform(200e3, 3e6))
    table = table.set_column(table.schema.get_field_index("actual_ns"), "actual_ns", pa.array(actual))
    return write_dataset(table, dataset.metadata, path)


def test_burst_clusters_in_a_real_capture_are_no_periodicity(tmp_path):
    """Clusters of stalls put broad low-frequency power into Lomb-Scargle (the capture has gaps); with the
    local-level test no line comes out, and none below 4 Hz."""
    lines = 0
    for seed in range(3):
        analysis = analyze_spectra(open_dataset(_with_bursts(CAPTURE, tmp_path / f"bursty-{seed}.parquet", seed)))
        for thread in analysis.threads:
            assert thread.method == "lomb-scargle"
            assert not [p for p in thread.peaks if p.frequency_hz < 4.0], (seed, thread.cpu)
            lines += len(thread.peaks)
    assert lines <= 1


def test_a_planted_line_survives_the_local_level_test_in_a_bursty_real_capture(tmp_path):
    table = pq.read_table(CAPTURE)
    dataset = open_dataset(CAPTURE)
    expected = table.column("expected_ns").to_numpy()
    actual = table.column("actual_ns").to_numpy() + np.round(
        30_000 * np.sin(2 * np.pi * 23.0 * (expected - expected[0]) / 1e9)).astype(np.int64)
    table = table.set_column(table.schema.get_field_index("actual_ns"), "actual_ns", pa.array(actual))
    path = _with_bursts(write_dataset(table, dataset.metadata, tmp_path / "line.parquet"), tmp_path / "b.parquet", 4)
    analysis = analyze_spectra(open_dataset(path))
    for thread in analysis.threads:
        assert any(abs(p.frequency_hz - 23.0) <= 2 * p.resolution_hz for p in thread.peaks), thread.cpu


def test_family_members_carry_their_true_frequency_not_folds_a_lone_line_keeps_them(tmp_path):
    spec = SimulationSpec(base=BASE, threads=1, samples=60_000, effects=(
        PeriodicDisturbance(frequency_hz=40.0, amplitude_ns=30_000, width_ns=1_000_000), Drops(probability=0.0)))
    analysis = analyze_spectra(open_dataset(write_simulation(spec, tmp_path / "comb.parquet", 3)))
    thread = analysis.threads[0]
    family = min(families_of(thread.peaks), key=lambda f: abs(f.fundamental_hz - 40.0))
    assert len(family.members) >= 5
    for peak in family.members:
        true = peak.harmonic_number * family.fundamental_hz
        assert peak.alias_candidates_hz == pytest.approx((peak.frequency_hz,) if true <= thread.fs_hz / 2
                                                         else (peak.frequency_hz, true), abs=1e-5)
    lone = group_harmonics((_peak(47.37, 1.0, 0.25),), fs_hz=1000.0)
    from jitterscope.spectrum import attribute
    assert len(attribute(lone, (), fs_hz=1000.0)[0].alias_candidates_hz) == 5
