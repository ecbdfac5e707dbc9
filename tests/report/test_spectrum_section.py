"""Spectral figures and the report section: drawn data equals the results; pages exist and render."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.dataset import open_dataset
from jitterscope.io import BaseLatency, PeriodicDisturbance, SimulationSpec, write_simulation
from jitterscope.render import new_page
from jitterscope.report import write_report
from jitterscope.spectrum import analyze_spectra, peak_table, plot_isi, plot_psd, plot_spectrogram


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    spec = SimulationSpec(threads=1, samples=30_000, base=BaseLatency(median_ns=3_000, spread=0.3),
                          effects=(PeriodicDisturbance(frequency_hz=20.0, amplitude_ns=20_000, width_ns=1_000_000),))
    return write_simulation(spec, tmp_path_factory.mktemp("specreport") / "s.parquet", 2)


def test_plots_draw_the_results_unchanged(dataset):
    thread = analyze_spectra(open_dataset(dataset)).threads[0]
    _fig, axes = new_page(3, 1)
    plot_psd(thread, axes[0])
    line = axes[0].get_lines()[0]
    np.testing.assert_array_equal(line.get_xdata(), thread.psd.frequencies_hz[1:])
    np.testing.assert_array_equal(line.get_ydata(), thread.psd.psd[1:])
    # exactly the table's peaks are marked, numbered as its "mark" column
    markers = [ln for ln in axes[0].get_lines() if ln.get_marker() == "v"]
    table = peak_table(analyze_spectra(open_dataset(dataset)))
    assert [m.get_xdata()[0] for m in markers] == [row[4] for row in table.rows]
    assert [t.get_text().split(":")[0] for t in axes[0].texts] == [str(row[1]) for row in table.rows]
    fundamental = next(p for p in thread.peaks if p.harmonic_group == thread.peaks[0].harmonic_group
                       and p.harmonic_number == 1)
    assert fundamental.frequency_hz == pytest.approx(20.0, abs=thread.psd.bin_width_hz)
    assert any(t.get_text() == f"1: {fundamental.frequency_hz:.4g} Hz" for t in axes[0].texts)
    # how it was computed: in the legend (the title is two lines at a column's width)
    assert line.get_label().startswith("Welch mean of") and "record 30 s" in line.get_label()
    assert axes[0].get_xscale() == "log" and axes[0].get_yscale() == "log"
    plot_spectrogram(thread.spectrogram, axes[1])
    plot_isi(thread.isi, axes[2])
    assert axes[2].patches  # the histogram


def test_report_has_the_spectral_pages(dataset, tmp_path):
    info = write_report(dataset, tmp_path / "r.pdf", figures_dir=tmp_path / "fig", sections=["spectrum"])
    names = {p.name for p in (tmp_path / "fig").iterdir()}
    assert {"spectrum-cpu0.pdf", "spikes-cpu0.pdf", "spectral-peaks.csv"} <= names
    csv = (tmp_path / "fig" / "spectral-peaks.csv").read_text()
    assert "20.0" in csv
    assert info.pages >= 3


def test_peaks_of_lomb_scargle_over_means_are_marked_on_its_own_panel(dataset):
    from jitterscope.spectrum import SpectralOptions, plot_lomb_scargle

    # more wake-ups than ls_max_points: Lomb-Scargle runs on means of k, its peaks in its own power unit
    thread = analyze_spectra(open_dataset(dataset), SpectralOptions(method="lombscargle",
                                                                    ls_max_points=4096)).threads[0]
    assert thread.method.startswith("lomb-scargle (means of") and thread.peaks
    _fig, axes = new_page(2, 1)
    plot_psd(thread, axes[0])
    plot_lomb_scargle(thread, axes[1])
    # before: the method's name was compared whole, and the LS peaks were drawn at their LS power on the PSD
    assert not [ln for ln in axes[0].get_lines() if ln.get_marker() == "v"]
    assert axes[0].get_title().endswith("no uncertainty: peaks tested below")
    marked = [ln.get_xdata()[0] for ln in axes[1].get_lines() if ln.get_marker() == "v"]
    assert marked and any(abs(f - 20.0) < 0.5 for f in marked), marked


# the PSD title before: six lines at a column's width (the Welch details belong in the legend)
OLD_PSD_TITLE = ("CPU 0 (thread 0): latency PSD, Welch mean of 448 segments of 0.041 s, record 10 s, n=999972 "
                 "(peaks: Lomb-Scargle, below)\nno uncertainty: each peak is judged against the FAP threshold")


def test_spectral_titles_are_two_lines_at_most_at_a_column_width(dataset):
    from jitterscope.render import fit_for_paper, long_titles
    from jitterscope.spectrum import SpectralOptions, plot_lomb_scargle, plot_spike_psd

    for options in (SpectralOptions(), SpectralOptions(method="lombscargle", ls_max_points=4096)):
        thread = analyze_spectra(open_dataset(dataset), options).threads[0]
        fig, axes = new_page(3, 1)
        plot_psd(thread, axes[0])
        plot_lomb_scargle(thread, axes[1])
        plot_spectrogram(thread.spectrogram, axes[2], title="thread 0 (CPU unknown): spectrogram")
        spikes, (left, right) = new_page(1, 2)
        plot_spike_psd(thread.spike_psd, thread.spike_peaks, left, title="thread 0 (CPU unknown): spectrum of spikes")
        plot_isi(thread.isi, right)
        for figure in (fig, spikes):
            fit_for_paper(figure, "column")
            assert long_titles(figure) == [], [ax.get_title() for ax in figure.axes]
    fig, axes = new_page(3, 1)
    axes[0].set_title(OLD_PSD_TITLE)
    fit_for_paper(fig, "column")
    assert any("a title of" in p and "latency PSD" in p for p in long_titles(fig))
