"""Figures: figdata turns summaries into exactly the series drawn; plots draw them legibly and compute nothing."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.io import spec_from_options, write_simulation
from jitterscope.render import PAGE_SIZE_IN, plot_note, plot_text_page
from jitterscope.summary import (
    bin_histograms,
    ccdf_curves,
    compute_timeline,
    log_density,
    percentile_curves,
    plot_ccdf,
    plot_latency_density,
    plot_latency_histogram,
    plot_percentiles,
    plot_period_error,
    plot_timeline,
    series_label,
    summarize,
)
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text


def _dataset(tmp_path, latencies: dict[int, list[int]], kind: str = "capture"):
    cols = {"cpu": [], "thread": [], "seq": [], "expected_ns": [], "actual_ns": []}
    threads = []
    for thread, values in latencies.items():
        n = len(values)
        expected = 10**12 + np.arange(n, dtype=np.int64) * 1_000_000
        cols["cpu"] += [thread] * n
        cols["thread"] += [thread] * n
        cols["seq"] += list(range(n))
        cols["expected_ns"] += expected.tolist()
        cols["actual_ns"] += (expected + np.asarray(values)).tolist()
        threads.append(ThreadInfo(thread=thread, cpu=thread, interval_ns=1_000_000, samples=n))
    table = pa.table({k: np.asarray(v) for k, v in cols.items()})
    path = write_dataset(table, Metadata(kind=kind, threads=tuple(threads)), tmp_path / f"{kind}.parquet")
    return open_dataset(path)


@pytest.fixture(scope="module")
def simulated_summary(tmp_path_factory):
    path = write_simulation(spec_from_options(threads=3, samples=30_000), tmp_path_factory.mktemp("s") / "s.parquet",
                            seed=4)
    dataset = open_dataset(path)
    return summarize(dataset), compute_timeline(dataset)


def _page():
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _assert_legible(fig):
    """Every visible text is >= 8 pt and no two tick labels of one axis overlap."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip():
            assert text.get_fontsize() >= 8, (text.get_text(), text.get_fontsize())
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            for a, b in itertools.combinations(boxes, 2):
                assert not a.overlaps(b), "tick labels overlap"


def test_osadl_bins_are_exact_on_hand_data(tmp_path):
    dataset = _dataset(tmp_path, {0: [1500, 1600, 2500, 2500, 9999], 1: [500, 700, 30_000]})
    summary = summarize(dataset)
    hists = bin_histograms(summary.threads)
    assert hists.bin_width_ns == 1000
    first, second = hists.series
    np.testing.assert_array_equal(first.edges_ns, np.arange(0, 32) * 1000.0)
    expected = np.zeros(31, int)
    expected[[1, 2, 9]] = [2, 2, 1]
    np.testing.assert_array_equal(first.counts, expected)
    expected = np.zeros(31, int)
    expected[[0, 30]] = [2, 1]
    np.testing.assert_array_equal(second.counts, expected)
    assert (first.label, first.n, first.max_ns) == ("CPU 0", 5, 9999)


def test_wide_ranges_coarsen_the_bins_and_keep_every_count(tmp_path):
    dataset = _dataset(tmp_path, {0: [1000, 2000, 100_000_000]})
    hists = bin_histograms(summarize(dataset).threads)
    assert hists.bin_width_ns == 8000  # 1 µs doubled until 100 ms spans <= 20 000 bins
    assert hists.series[0].counts.sum() == 3 and hists.series[0].counts[0] == 2


def test_percentile_curves_and_marks_come_from_the_histogram(simulated_summary):
    summary, _ = simulated_summary
    curves = percentile_curves((*summary.threads, summary.overall))
    assert [c.label for c in curves] == ["CPU 0", "CPU 1", "CPU 2", "all threads"]
    for curve, item in zip(curves, (*summary.threads, summary.overall), strict=True):
        levels = [q for q, _ in curve.marks]
        # n = 30 000 resolves up to 99.99 %; n = 90 000 (all) too, but not 99.999 %
        assert levels == [50.0, 90.0, 99.0, 99.9, 99.99]
        for q, value in curve.marks:
            assert value == item.histogram.percentile(q)
        assert curve.levels[-1] == pytest.approx(100 * (1 - 1 / item.n))
        assert np.all(np.diff(curve.values_ns) >= 0)


def test_ccdf_leaves_out_non_positive_latencies_and_says_how_many(tmp_path):
    dataset = _dataset(tmp_path, {0: [-300, 0, 1000, 2000, 4000]}, kind="import")
    (curve,) = ccdf_curves(summarize(dataset).threads)
    assert curve.excluded == 2 and curve.n == 5
    assert np.all(curve.x_ns > 0) and curve.p_exceed[0] == pytest.approx(0.4, abs=1e-9)


def test_series_labels():
    assert series_label(0, 0, 1) == "CPU 0"
    assert series_label(1, 3, 2) == "CPU 3 (T1)"
    assert series_label(2, -1, 3) == "thread 2"
    assert series_label(-1, -1, 3) == "all threads"


def test_histogram_plot_draws_the_binned_counts(simulated_summary):
    summary, _ = simulated_summary
    hists = bin_histograms(summary.threads)
    fig, ax = _page()
    assert plot_latency_histogram(hists, ax) is ax
    assert ax.get_yscale() == "log" and "[µs]" in ax.get_xlabel() and "1 µs bin" in ax.get_ylabel()
    stairs = [p for p in ax.patches if p.__class__.__name__ == "StepPatch"]
    assert len(stairs) == 3
    for patch, series in zip(stairs, hists.series, strict=True):
        values, edges, _ = patch.get_data()
        np.testing.assert_array_equal(values[series.counts > 0], series.counts[series.counts > 0])
        np.testing.assert_allclose(edges, series.edges_ns / 1000)
    markers = [line for line in ax.lines if line.get_marker() == "v"]
    assert [m.get_xdata()[0] for m in markers] == pytest.approx([s.max_ns / 1000 for s in hists.series])
    assert len(ax.get_legend().get_texts()) == 3
    _assert_legible(fig)


def test_osadl_histogram_keeps_its_bulk_linear_and_a_far_maximum_on_a_log_continuation(tmp_path):
    """OSADL style: a linear µs axis where the wake-ups are; a 5 ms outlier 500 times past a 7 µs bulk is drawn on
    a logarithmic continuation instead of squeezing the bulk into the left 0.2 %; every count still drawn."""
    rng = np.random.default_rng(3)
    body = (5000 + 500 * rng.standard_normal(2000)).astype(int).tolist()
    dataset = _dataset(tmp_path, {0: [*body, 5_000_000], 1: body})
    hists = bin_histograms(summarize(dataset).threads)
    fig, ax = _page()
    plot_latency_histogram(hists, ax)
    assert ax.get_xscale() == "symlog" and ax.get_yscale() == "log"
    assert ax.xaxis.get_transform().linthresh == 10.0  # 99 % of the wake-ups are below 7 µs: switch at 10 µs
    assert ax.get_xlabel() == "latency [µs]; linear to 10, logarithmic beyond"
    assert [line.get_xdata()[0] for line in ax.lines if line.get_gid() == "jitterscope-scale-switch"] == [10.0]
    for patch, series in zip([p for p in ax.patches if p.__class__.__name__ == "StepPatch"], hists.series,
                             strict=True):
        values, _edges, _ = patch.get_data()
        np.testing.assert_array_equal(values[series.counts > 0], series.counts[series.counts > 0])
    low, high = ax.get_xlim()
    assert low == 0 and 5000 < high < 5500  # the maximum inside, no margin reaching below zero
    # the bulk (5-7 µs) is drawn in the right half of the linear part, not in the axis's first percent
    fraction = ax.transAxes.inverted().transform(ax.transData.transform([[6.0, 1.0]]))[0, 0]
    assert 0.2 < fraction < 0.5
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("max 5,000.0 µs" in t for t in legend) and len(legend) == 2
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["0", "5", "10", "100", "1000"] and ax.xaxis.get_offset_text().get_text() == ""
    _assert_legible(fig)


def test_osadl_histogram_without_a_far_tail_stays_linear(tmp_path):
    rng = np.random.default_rng(5)
    body = (5000 + 500 * rng.standard_normal(2000)).astype(int).tolist()
    dataset = _dataset(tmp_path, {0: [*body, 60_000]})  # 60 µs: within 10x of the 10 µs switch
    _fig, ax = _page()
    plot_latency_histogram(bin_histograms(summarize(dataset).threads), ax)
    assert ax.get_xscale() == "linear" and ax.get_xlabel() == "latency [µs]"


def test_period_error_with_far_tails_is_linear_within_plus_minus_its_bulk(tmp_path):
    """Period errors have both signs: a late wake-up makes one long and one short period."""
    rng = np.random.default_rng(6)
    values = np.abs(3000 + 300 * rng.standard_normal(4000)).astype(int)
    values[1000] = 8_000_000  # one 8 ms stall: periods of +8 ms and about -8 ms around it
    dataset = _dataset(tmp_path, {0: values.tolist()})
    hists = bin_histograms(summarize(dataset).threads, "period error", attribute="period_error")
    fig, ax = _page()
    plot_period_error(hists, ax, interval_ns=1_000_000)
    assert ax.get_xscale() == "symlog"
    switch = ax.xaxis.get_transform().linthresh
    assert switch in (1.0, 2.0, 5.0)  # 99 % of the errors within a microsecond or two of zero
    assert ax.get_xlabel() == f"period error: period − interval (1000 µs) [µs]; linear within ±{switch:g}, " \
                              "logarithmic beyond"
    assert ax.child_axes == []  # no shifted period axis on top of a symlog axis: the label names the interval
    low, high = ax.get_xlim()
    assert low < -7000 and high > 7000
    dotted = sorted(line.get_xdata()[0] for line in ax.lines if line.get_gid() == "jitterscope-scale-switch")
    assert dotted == [-switch, switch]
    _assert_legible(fig)


def test_log_density_sums_to_the_counts_in_log_spaced_bins(tmp_path):
    rng = np.random.default_rng(4)
    values = (5000 * np.exp(0.5 * rng.standard_normal(5000))).astype(int)
    values[:3] = [2_000_000, 3_000_000, 9_000_000]  # a tail of single counts
    summary = summarize(_dataset(tmp_path, {0: values.tolist()}))
    density = log_density(summary.threads)
    (series,) = density.series
    ratios = series.edges_ns[1:] / series.edges_ns[:-1]
    np.testing.assert_allclose(ratios, 10 ** (1 / density.bins_per_decade))
    assert series.counts.sum() == values.size
    # density x bin width (µs) x n gives back the counts
    np.testing.assert_allclose(density.density_per_us[0] * np.diff(series.edges_ns) / 1000 * values.size,
                               series.counts)
    # the three tail values are in three bins, not a barcode of 1-µs bins
    assert np.count_nonzero(series.counts[series.edges_ns[:-1] >= 1_000_000]) == 3
    fig, ax = _page()
    plot_latency_density(density, ax)
    assert ax.get_xscale() == ax.get_yscale() == "log" and "per µs" in ax.get_ylabel()
    _assert_legible(fig)


def test_percentile_plot_axis_is_labelled_in_percent(simulated_summary):
    summary, _ = simulated_summary
    curves = percentile_curves((*summary.threads, summary.overall))
    fig, ax = _page()
    plot_percentiles(curves, ax)
    assert ax.get_xscale() == "log"
    fig.canvas.draw()
    # all threads: n = 90 000, the axis runs to 1.6 n, past x = 10^5
    assert [t.get_text() for t in ax.get_xticklabels()] == ["50%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
    line = ax.lines[0]
    np.testing.assert_allclose(line.get_ydata(), curves[0].values_ns / 1000)
    np.testing.assert_allclose(line.get_xdata(), 1 / (1 - curves[0].levels / 100))
    _assert_legible(fig)


def test_ccdf_and_period_plots(simulated_summary):
    summary, _ = simulated_summary
    fig, ax = _page()
    plot_ccdf(ccdf_curves(summary.threads), ax)
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_ylabel() == "P(latency > x) [fraction]"
    _assert_legible(fig)
    fig, ax = _page()
    hists = bin_histograms(summary.threads, "period error", attribute="period_error")
    plot_period_error(hists, ax, interval_ns=1_000_000)
    assert "period error" in ax.get_xlabel() and "[µs]" in ax.get_xlabel()
    (top,) = ax.child_axes  # the period itself, on a secondary axis: error 0 is period 1000 µs
    assert top.get_xlabel() == "period = actual[i] − actual[i−1] [µs] (interval 1000 µs)"
    fig.canvas.draw()
    np.testing.assert_allclose(top.get_xlim(), np.array(ax.get_xlim()) + 1000.0)
    assert sum(s.counts.sum() for s in hists.series) == sum(t.period_error.count for t in summary.threads)
    _assert_legible(fig)


def test_timeline_plot_draws_max_p99_and_spikes(simulated_summary):
    summary, timeline = simulated_summary
    fig, ax = _page()
    item = timeline.thread(1)
    spikes = summary.threads[1].spikes.spikes
    plot_timeline(item, ax, origin_ns=timeline.origin_ns, spikes=spikes, label="CPU 1")
    max_line, p99_line, spike_line = ax.lines
    np.testing.assert_allclose(max_line.get_ydata(), item.max_ns / 1000)
    np.testing.assert_allclose(p99_line.get_ydata(), item.p99_ns / 1000)
    np.testing.assert_allclose(spike_line.get_ydata(), [s.latency_ns / 1000 for s in spikes])
    assert spike_line.get_xdata()[0] == pytest.approx((spikes[0].actual_ns - timeline.origin_ns) / 1e9)
    assert ax.get_ylim()[1] > item.max_ns.max() / 1000 * 1.3  # headroom for the legend
    assert ax.get_xlabel() == "time since first wake-up [s]" and ax.get_ylabel() == "latency [µs]"
    _assert_legible(fig)


def test_note_and_text_pages_show_their_text():
    fig, ax = _page()
    plot_note("Spectra", "not available for histogram-only data", ax)
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert "Spectra" in texts and any("histogram-only" in t for t in texts)
    fig = Figure(figsize=PAGE_SIZE_IN)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.04, 0.05, 0.92, 0.9))
    plot_text_page("Heading", [("Block", ["line 1", "line 2"])], ax, banner="SIMULATED")
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert {"Heading", "Block", "line 1\nline 2", "SIMULATED"} <= set(texts)
    _assert_legible(fig)


def test_colours_stay_distinct_for_many_cpus():
    from jitterscope.render import colour
    from matplotlib.colors import to_hex

    for total in (4, 16, 40):
        colours = {to_hex(colour(i, total)) for i in range(total)}
        assert len(colours) == total
