"""correlate with a turbostat timeline: transitions and SMIs at the turbostat interval's resolution."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset, write_dataset
from jitterscope.io import SimulationSpec, simulate
from jitterscope.power import SMI, TRANSITION, correlate_dataset, plot_frequency_timeline, timeline_counters
from matplotlib.figure import Figure

BLOCKS = 12


def _dataset(tmp_path, spike_blocks: set[int], mhz: list[float], smi: list[int], name: str = "d.parquet"):
    """12 s at 1 kHz on CPUs 0 and 1 without counters; +200 µs on 5 % of the wake-ups in ``spike_blocks``."""
    spec = SimulationSpec(threads=2, duration_ns=BLOCKS * 1_000_000_000, counters=())
    table, meta = simulate(spec, seed=11)
    offset = meta.clock["realtime_ns"] - meta.clock["monotonic_ns"]
    t0 = (spec.start_ns + offset) / 1e9 - 0.0004  # turbostat block k covers (t0 + k, t0 + k + 1]
    actual = table.column("actual_ns").to_numpy().copy()
    block = (actual + offset - round(t0 * 1e9) - 1) // 1_000_000_000
    rng = np.random.default_rng(5)
    spikes = np.isin(block, list(spike_blocks)) & (rng.random(actual.size) < 0.05)
    actual[spikes] += 200_000
    table = table.set_column(table.schema.get_field_index("actual_ns"), "actual_ns", pa.array(actual))
    ends = [round(t0 + k + 1, 6) for k in range(BLOCKS)]
    values = {str(cpu): {"Bzy_MHz": mhz, "Busy%": [1.0] * BLOCKS, "SMI": smi} for cpu in (0, 1)}
    timeline = {"source": "turbostat", "file": "ts.txt", "interval_s": 1.0, "clock": "realtime",
                "time_from": "Time_Of_Day_Seconds", "columns": ["Busy%", "Bzy_MHz", "SMI"], "cpus": [0, 1],
                "start_s": [round(t0, 6), *ends[:-1]], "end_s": ends, "values": values,
                "package": {"SMI": [2 * v for v in smi]}}
    path = write_dataset(table, meta.with_changes(timeline=timeline), tmp_path / name)
    return open_dataset(path)


STEPS = [2400.0] * 3 + [1200.0] * 3 + [2400.0] * 3 + [1200.0] * 3  # changes at the starts of blocks 3, 6, 9


def test_spikes_after_frequency_steps_are_attributed_via_the_timeline(tmp_path):
    dataset = _dataset(tmp_path, {3, 6, 9}, STEPS, [0] * BLOCKS)
    result, counters = correlate_dataset(dataset, n_surrogates=0)
    assert result.available and result.attributed[TRANSITION]
    assert SMI not in result.attributed
    assert result.verdicts[0].startswith("Frequency and SMIs come from the turbostat timeline ts.txt: their "
                                         "resolution is the turbostat interval (1 s), not the wake-up")
    assert "SMIs: none counted" in " ".join(result.verdicts)
    assert result.params["frequency_source"] == "turbostat timeline ts.txt" and result.params["resolution_s"] == 1.0
    assert result.event_averages == () and result.cross_correlations == ()
    test = next(t for t in result.tests if t.condition == TRANSITION and t.scope == "all")
    # near = blocks 2, 3, 5, 6, 8, 9 of 12: half the wake-ups
    assert test.n_in == pytest.approx(test.n_out, rel=0.01)
    assert test.exceedance[0].risk.ratio > 10
    f = counters.series[0].f_eff_hz
    assert set(np.unique(f).tolist()) == {1.2e9, 2.4e9}


def test_spikes_far_from_steps_are_not_attributed_to_them_but_to_an_smi(tmp_path):
    smi = [0] * BLOCKS
    smi[11] = 3  # one SMI burst, in a block away from the changes
    dataset = _dataset(tmp_path, {0, 11}, STEPS, smi)
    result, _ = correlate_dataset(dataset, n_surrogates=0)
    assert result.attributed[TRANSITION] is False and result.attributed[SMI] is True
    text = " ".join(result.verdicts)
    assert "with an SMI" in text
    counted = timeline_counters(dataset, relative_threshold=0.05)
    # 3 changes on each of the 2 CPUs; the SMI count is package-wide (3, not 3 per CPU or per wake-up)
    assert counted.to_json()["transitions"] == 6 and counted.smi_total == 3
    assert [n.mean() for n in counted.near_transition] == pytest.approx([0.5, 0.5], abs=0.01)


def test_wakeups_outside_the_timeline_are_left_out(tmp_path):
    dataset = _dataset(tmp_path, {3, 6, 9}, STEPS, [0] * BLOCKS)
    meta = dataset.metadata
    timeline = dict(meta.timeline)
    for key in ("start_s", "end_s"):
        timeline[key] = timeline[key][:10]  # the last 2 of 12 seconds are not covered
    timeline["values"] = {cpu: {k: v[:10] for k, v in cols.items()} for cpu, cols in timeline["values"].items()}
    timeline["package"] = {k: v[:10] for k, v in timeline["package"].items()}
    short = write_dataset(dataset.read(), meta.with_changes(timeline=timeline), tmp_path / "short.parquet")
    result, _ = correlate_dataset(open_dataset(short), n_surrogates=0)
    test = next(t for t in result.tests if t.condition == TRANSITION and t.scope == "all")
    assert test.n_in + test.n_out == pytest.approx(20_000, abs=2)  # 10 s x 1 kHz x 2 threads
    assert result.attributed[TRANSITION]


def test_flat_frequency_has_no_transition_condition(tmp_path):
    dataset = _dataset(tmp_path, {3, 6, 9}, [2400.0] * BLOCKS, [0] * BLOCKS)
    result, _ = correlate_dataset(dataset, n_surrogates=0)
    assert TRANSITION not in result.attributed
    assert any(v.startswith("Frequency transitions: none detected") for v in result.verdicts)


def test_cli_correlate_says_the_resolution(tmp_path, capsys):
    dataset = _dataset(tmp_path, {3, 6, 9}, STEPS, [0] * BLOCKS)
    assert main(["correlate", str(dataset.path)]) == 0
    assert "resolution is the turbostat interval (1 s), not the wake-up" in capsys.readouterr().out


def test_frequency_plot_names_turbostat_as_the_source(tmp_path):
    dataset = _dataset(tmp_path, {3}, STEPS, [0] * BLOCKS)
    result, counters = correlate_dataset(dataset, n_surrogates=0)
    top, bottom = Figure().subplots(2, 1)
    plot_frequency_timeline(counters.series[0], result.frequency.transitions[0], top, bottom)
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert labels[0].startswith("Bzy_MHz (turbostat, per interval)")  # the envelope: range, then mean
    assert any(label.startswith("3 transitions") for label in labels)
    means = set(top.get_lines()[0].get_ydata().tolist())
    # the mean of a column is a level, or a mix of both in a column a transition falls into (one per transition)
    assert {1200.0, 2400.0} <= means and len(means - {1200.0, 2400.0}) <= 3
    assert all(1200.0 <= m <= 2400.0 for m in means)


def test_streamed_timeline_equals_the_in_memory_join_and_reads_row_groups(tmp_path, monkeypatch):
    """correlate_dataset streams the timeline join (row group by row group, never the whole dataset) and gives
    what correlate gives on timeline_counters' in-memory series."""
    from jitterscope.dataset import Dataset
    from jitterscope.power import correlate

    smi = [0] * BLOCKS
    smi[11] = 3
    small = _dataset(tmp_path, {3, 6, 11}, STEPS, smi)
    dataset = open_dataset(write_dataset(small.read(), small.metadata, tmp_path / "groups.parquet",
                                         row_group_size=1500))
    monkeypatch.setattr(Dataset, "read", lambda *a, **k: pytest.fail("the streamed join read the whole dataset"))
    streamed, display = correlate_dataset(dataset, n_surrogates=0)
    monkeypatch.undo()
    counted = timeline_counters(dataset, relative_threshold=0.05)
    in_memory = correlate(counted.counters, dataset.metadata.environment, timeline=counted, n_surrogates=0,
                          thresholds_ns=list(streamed.thresholds_ns))
    assert streamed.tests == in_memory.tests and streamed.attributed == in_memory.attributed
    assert streamed.verdicts == in_memory.verdicts and streamed.smi_shares == in_memory.smi_shares
    assert [s.seq.size for s in display.series] == [s.seq.size for s in counted.counters.series]


def test_the_close_up_holds_about_twenty_transitions_from_the_middle_of_the_run():
    from jitterscope.power import close_up_window

    # 50 ms P-states over 10 s (199 transitions): the ten seconds close up were the whole run, a solid block
    assert close_up_window(10.0, np.arange(1, 200) * 0.05) == pytest.approx((4.0, 5.0))
    assert close_up_window(10.0, np.arange(1, 1000) * 0.01) == pytest.approx((4.8, 5.0))  # 0.2 s of 1, 2, 5
    assert close_up_window(5.0, np.array([1.0, 2.0])) == (0.0, 5.0)  # few transitions: all of it
    assert close_up_window(100.0, np.arange(5.0)) == (0.0, 10.0)  # at most ten seconds
    assert close_up_window(100.0, None) == (0.0, 10.0)


def test_a_timeline_of_fast_p_states_at_a_column_width_reads_as_range_mean_and_close_up(tmp_path):
    """2 s of 50 ms P-states in a 3.5 in column: the frequency panel draws a column per 2 pt (range and mean), not
    a vertex per wake-up, and the close-up shows about twenty transitions."""
    from jitterscope.power import close_up_window, plot_frequency_zoom
    from jitterscope.render import fit_for_paper
    from jitterscope.render.style import ENVELOPE_PT
    from matplotlib.collections import PolyCollection

    path = tmp_path / "p.parquet"
    assert main(["simulate", "-o", str(path), "--samples", "100000", "--interval-us", "20", "--pstates",
                 "800,2400", "--dwell-ms", "50", "--seed", "1"]) == 0
    result, counters = correlate_dataset(open_dataset(path), n_surrogates=0)
    series, transitions = counters.series[0], result.frequency.transitions[0]
    fig = Figure(figsize=(11.69, 8.27), layout="constrained")  # the report's page, refitted as --figures does
    top, middle, bottom = fig.subplots(3, 1)
    plot_frequency_timeline(series, transitions, top, middle)
    at_s = (np.asarray(transitions.time_ns, dtype=float) - series.expected_ns[0]) / 1e9
    start, stop = close_up_window(2.0, at_s)
    plot_frequency_zoom(series, transitions, bottom, start_s=start, stop_s=stop)
    fit_for_paper(fig, "column")
    assert fig.get_figwidth() == 3.5
    assert series.seq.size > 50_000 and transitions.count > 30
    room = top.get_window_extent().width * 72 / fig.dpi / ENVELOPE_PT
    assert max(len(line.get_xdata()) for line in top.get_lines()) <= room + 1  # not 100,000 vertices
    assert any(isinstance(c, PolyCollection) for c in top.collections)  # the range band
    means = top.get_lines()[0].get_ydata()
    assert np.nanmean(means) == pytest.approx(1600.0, abs=100.0)
    assert (stop - start) == pytest.approx(1.0) and 15 <= np.count_nonzero((at_s >= start) & (at_s <= stop)) <= 25
    steps = bottom.get_lines()[0].get_ydata()  # the states themselves, close up
    assert ((np.abs(steps - 800) < 50) | (np.abs(steps - 2400) < 50)).mean() > 0.95, np.unique(np.round(steps, -1))
    # the legends above the data: no corner of the frequency panel is free of a band that spans 800-2,400 MHz in
    # every column, so headroom is made above it; the close-up's twin axes get it both
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = top.get_legend().get_window_extent(renderer)
    assert top.transData.transform([[0.0, 2400.0]])[0, 1] < legend.y0
    legend = bottom.get_legend().get_window_extent(renderer)
    (twin,) = [ax for ax in fig.axes if ax is not bottom and ax.bbox.bounds == bottom.bbox.bounds]
    shown = (series.expected_ns - series.expected_ns[0]) / 1e9
    shown = (shown >= start) & (shown <= stop)
    assert bottom.transData.transform([[start, np.nanmax(steps)]])[0, 1] < legend.y0
    assert twin.transData.transform([[start, series.latency_ns[shown].max() / 1000]])[0, 1] < legend.y0
