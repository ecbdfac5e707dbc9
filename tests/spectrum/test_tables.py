"""tables_spectral.py: the public peak table lists a planted 20 Hz disturbance with its harmonics."""

from __future__ import annotations

import pytest
from jitterscope.dataset import open_dataset
from jitterscope.io import BaseLatency, PeriodicDisturbance, SimulationSpec, write_simulation
from jitterscope.spectrum import analyze_spectra, peak_table


def test_peak_table_lists_the_planted_fundamental(tmp_path):
    spec = SimulationSpec(threads=1, samples=30_000, base=BaseLatency(median_ns=3_000, spread=0.3),
                          effects=(PeriodicDisturbance(frequency_hz=20.0, amplitude_ns=20_000, width_ns=1_000_000),))
    analysis = analyze_spectra(open_dataset(write_simulation(spec, tmp_path / "s.parquet", 2)))
    table = peak_table(analysis)
    assert table.name == "spectral-peaks" and table.columns[1] == "freq [Hz]"
    peaks = analysis.threads[0].peaks
    assert 0 < len(table.rows) <= min(len(peaks), 15)
    width = analysis.threads[0].psd.bin_width_hz
    fundamental = next(r for r in table.rows if "×" not in r[5])
    assert fundamental[0] == analysis.threads[0].cpu
    assert fundamental[1] == pytest.approx(20.0, abs=width)
    assert fundamental[2] == pytest.approx(1e3 / fundamental[1])
    # harmonics of the same group are marked ×n and sit at n times the fundamental
    for row in table.rows:
        if row[5].startswith(fundamental[5] + " ×"):
            n = int(row[5].split("×")[1])
            assert row[1] == pytest.approx(n * fundamental[1], abs=n * width)


def test_the_report_section_uses_the_public_builder():
    from jitterscope.report.sections import spectrum as section

    assert section.peak_table is peak_table
