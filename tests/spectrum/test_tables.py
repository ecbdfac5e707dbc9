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
    assert table.name == "spectral-peaks" and table.columns[4] == "freq [Hz]"
    col = {name: i for i, name in enumerate(table.columns)}
    peaks = analysis.threads[0].peaks
    assert 0 < len(table.rows) <= min(len(peaks), 15)
    width = analysis.threads[0].psd.bin_width_hz
    fundamental = next(r for r in table.rows if "×" not in r[col["group"]])
    assert fundamental[0] == analysis.threads[0].cpu
    assert fundamental[col["freq [Hz]"]] == pytest.approx(20.0, abs=width)
    assert fundamental[col["period [ms]"]] == pytest.approx(1e3 / fundamental[col["freq [Hz]"]])
    # the method and span of the record, and the cycles it holds, on every row; marks count 1, 2, ...
    assert {r[col["method"]] for r in table.rows} == {"Welch"}
    assert all(r[col["span [s]"]] == pytest.approx(30.0) for r in table.rows)
    assert all(r[col["cycles"]] == pytest.approx(r[col["freq [Hz]"]] * 30.0) and r[col["cycles"]] >= 10
               for r in table.rows)
    assert [r[col["mark"]] for r in table.rows] == list(range(1, len(table.rows) + 1))
    assert any("Welch, mean of" in note and "span 30 s" in note for note in table.notes)
    # tiny false-alarm probabilities print as "< 1e-12", never 0.0e+00
    fap_texts = [table.cell_text(i, col["FAP"]) for i in range(len(table.rows))]
    assert "< 1e-12" in fap_texts and not any("e+00" in t for t in fap_texts)
    # harmonics of the same group are marked ×n and sit at n times the fundamental
    for row in table.rows:
        if row[col["group"]].startswith(fundamental[col["group"]] + " ×"):
            n = int(row[col["group"]].split("×")[1])
            assert row[col["freq [Hz]"]] == pytest.approx(n * fundamental[col["freq [Hz]"]], abs=n * width)


def test_the_report_section_uses_the_public_builder():
    from jitterscope.report.sections import spectrum as section

    assert section.peak_table is peak_table
