"""Figures a paper can take as they are: units, n, empty panels explained, verdicts and machines told apart
without colour, model probabilities never printed as "5.5e-290".

The caption check itself (:func:`~jitterscope.render.caption_problems`) runs over every figure of the four
reports, the compare of 3 runs and the fleet of 20 machines in ``test_figure_layout`` (which draws them once);
here: what it catches, a group comparison's figure, and each fix on its own small input.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from jitterscope.render import EMPTY_NOTE_GID, REPORT_RC, caption_problems, empty_panel_note
from matplotlib.figure import Figure
from matplotlib.lines import Line2D


def _panel(ylabel: str, title: str, y=(3, 4)) -> Figure:
    fig = Figure()
    ax = fig.subplots()
    ax.plot([1, 2], list(y))
    ax.set_xlabel("time [s]")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


def test_the_check_catches_a_missing_unit_a_missing_n_and_a_silent_empty_panel() -> None:
    problems = caption_problems(_panel("latency", "latency over time"), name="f")
    assert any("y-axis label 'latency'" in p for p in problems), problems
    assert any("'n = …'" in p for p in problems), problems
    assert any("no uncertainty (an interval" in p for p in problems), problems
    assert caption_problems(_panel("latency [µs]", "latency over time (n = 2; 95 % interval shaded)")) == []
    fig = _panel("Spearman r [unitless]", "r per lag (n = 2, no uncertainty: exact)", y=(np.nan, np.nan))
    assert any("no data and no note" in p for p in caption_problems(fig))
    empty_panel_note(fig.axes[0], "no variation: constant input, n = 2")
    assert caption_problems(fig) == []


@pytest.mark.parametrize(("title", "stated"), [
    ("p99 change (n = 20,000; CI: bootstrap interval)", True), ("ξ = 0.213 ± 0.041 (n = 400)", True),
    ("Return levels (95% interval shaded), n = 400", True), ("histogram (n = 5; no uncertainty: exact counts)", True),
    # wrapped at a column's width, the words still count
    ("histogram (n = 5; no\nuncertainty: exact counts)", True), ("a 95 %\ninterval, n = 5", True),
    ("inter-spike intervals (n = 5)", False), ("no uncertainty (n = 5)", False), ("n = 5, 95 % of wake-ups", False)])
def test_an_uncertainty_is_an_interval_a_plus_minus_or_a_reason_for_none(title: str, stated: bool) -> None:
    problems = caption_problems(_panel("latency [µs]", title))
    assert (not any("no uncertainty (an interval" in p for p in problems)) is stated, problems


def test_a_category_axis_needs_no_unit_but_a_date_axis_does() -> None:
    fig = Figure()
    ax = fig.subplots()
    ax.scatter([0, 1], [3, 4])
    ax.set_xticks([0, 1], ["p99", "max"])
    ax.set_ylabel("latency [µs]")
    ax.set_title("n = 2; no uncertainty: exact")
    assert caption_problems(fig) == []
    from datetime import UTC, datetime

    fig = Figure()
    ax = fig.subplots()
    ax.plot([datetime(2026, 1, d, tzinfo=UTC) for d in (1, 2)], [3, 4])
    ax.set_ylabel("latency [µs]")
    ax.set_title("n = 2")
    assert any("x-axis label ''" in p for p in caption_problems(fig))


def test_a_lag_panel_of_constant_input_says_why_it_is_empty() -> None:
    from jitterscope.power.association import lagged_correlation
    from jitterscope.power.correlate import LaggedLink
    from jitterscope.power.plots import plot_lagged_correlation

    rng = np.random.default_rng(1)
    link = LaggedLink(cpu=0, other="C0 residency",
                      correlation=lagged_correlation(rng.normal(size=500), np.full(500, 0.5), max_lag=5))
    assert not np.isfinite(link.correlation.r).any()
    fig = Figure()
    ax = plot_lagged_correlation(link, fig.subplots())
    notes = [t.get_text() for t in ax.texts if t.get_gid() == EMPTY_NOTE_GID]
    assert len(notes) == 1 and "no variation" in notes[0] and "n = 500" in notes[0], notes
    assert caption_problems(fig) == []


def _verdict_marks(ax) -> list[tuple[str, str, str]]:
    """(verdict words, marker, colour) of each metric as drawn in a verdict panel."""
    words = [t for t in ax.texts if t.get_ha() == "right"]
    marks = [line for line in ax.lines if line.get_marker() not in ("None", None, "")]
    return [(w.get_text(), m.get_marker(), m.get_color()) for w, m in zip(words, marks, strict=True)]


def test_compare_verdicts_are_told_apart_without_colour(tmp_path) -> None:
    from jitterscope.compare import compare_runs
    from jitterscope.compare.plots import plot_verdicts
    from jitterscope.dataset import open_dataset
    from jitterscope.io import spec_from_options, write_simulation
    from jitterscope.io.simulate import BaseLatency
    from jitterscope.render import OKABE_ITO, VERDICT_STYLES

    runs = [write_simulation(spec_from_options(threads=2, samples=5_000, base=BaseLatency(median_ns=median)),
                             tmp_path / f"run{i}.parquet", seed=i) for i, median in enumerate((3000.0, 6000.0))]
    comparison = compare_runs([open_dataset(p) for p in runs], n_boot=100)
    fig = Figure(figsize=(8, 4))
    marks = _verdict_marks(plot_verdicts(comparison.pairs[0], fig.subplots()))
    verdicts = [m.verdict for m in comparison.pairs[0].metrics]
    assert "regressed" in verdicts  # the median doubled
    assert marks == [(f"{v} ({VERDICT_STYLES[v].word})", VERDICT_STYLES[v].marker, VERDICT_STYLES[v].colour)
                     for v in verdicts]
    assert VERDICT_STYLES["regressed"].marker == "^" and VERDICT_STYLES["improved"].marker == "v"
    # one marker per verdict, no two alike; colours from the colour-blind-safe set or grey, never red/green
    styles = set(VERDICT_STYLES.values())
    assert len({s.marker for s in styles}) == len({s.word for s in styles}) == len(styles)
    for style in styles:
        assert style.colour in OKABE_ITO or len(set(style.colour[1:].lower()[i:i + 2] for i in (0, 2, 4))) == 1
    assert caption_problems(fig) == [] or all("'n = …'" in p for p in caption_problems(fig))


def test_a_group_comparison_figure_says_its_units_n_and_verdict_words(tmp_path) -> None:
    from jitterscope.compare import compare_groups
    from jitterscope.compare.pdf import group_pages
    from jitterscope.dataset import open_dataset
    from jitterscope.io import spec_from_options, write_simulation
    from jitterscope.io.simulate import BaseLatency

    runs = [open_dataset(write_simulation(spec_from_options(threads=1, samples=3_000,
                                                            base=BaseLatency(median_ns=median)),
                                          tmp_path / f"run{i}.parquet", seed=i))
            for i, median in enumerate((3000.0, 3000.0, 3000.0, 6000.0, 6000.0, 6000.0))]
    with matplotlib.rc_context(REPORT_RC):
        pages = [p for p in group_pages(compare_groups(runs[:3], runs[3:])) if p.kind == "figure"]
    assert [p.name for p in pages] == ["compare-groups-runs"]
    assert caption_problems(pages[0].figure, name="groups") == []
    ticks = [t.get_text() for t in pages[0].figure.axes[0].get_xticklabels()]
    assert any("regressed\n(slower)" in t for t in ticks), ticks


def test_twenty_machines_each_look_different_and_are_named_at_their_line_ends(tmp_path) -> None:
    from jitterscope.fleet import run_fleet, write_simulated_fleet
    from jitterscope.fleet.plots import plot_fleet_over_time
    from jitterscope.render import layout_problems
    from jitterscope.render.pages import PAGE_SIZE_IN

    fleet = run_fleet(list(write_simulated_fleet(tmp_path / "fleet", hosts=20, nights=3, samples=1_000).paths),
                      scheduler="serial")
    assert len(fleet.histories) == 20
    fig = Figure(figsize=PAGE_SIZE_IN, layout="constrained")
    with matplotlib.rc_context(REPORT_RC):
        ax = plot_fleet_over_time(fleet, fig.subplots())
        lines = [line for line in ax.lines if isinstance(line, Line2D) and not line.get_label().startswith("_")]
        looks = {(matplotlib.colors.to_hex(line.get_color()), str(line.get_linestyle())) for line in lines}
        assert len(lines) == 20 and len(looks) == 20, looks
        names = {t.get_text() for t in ax.texts}
        assert {h.host for h in fleet.histories} <= names
        assert layout_problems(fig) == [] and caption_problems(fig) == []


def test_model_chances_are_never_printed_with_hundreds_of_digits_of_exponent() -> None:
    from jitterscope.compare.results import _tail_verdict
    from jitterscope.compare.tables import pair_tests_table
    from jitterscope.format import format_model_chance

    assert format_model_chance(5.5e-290) == "< 1e-6 (model)"
    assert format_model_chance(0.034) == "0.034" and format_model_chance(3.4e-5) == "3.4e-05"
    verdict, text = _tail_verdict("regressed", 5.5e-290, "baseline", 80_000.0, 5_000, 3)
    assert verdict == "regressed" and "e-290" not in text and "< 1e-6 (model)" in text, text

    class Test:
        name, statistic, p_value, sentence = "Kolmogorov-Smirnov", 0.9, 5.5e-290, "KS"

    class Pair:
        candidate, baseline, tests = "b", "a", (Test(),)

    table = pair_tests_table(Pair(), 1)
    assert table.rows[0][2] == 5.5e-290  # the number kept for CSV/JSON
    assert "e-290" not in " ".join(table.text_rows()[0]), table.text_rows()


@pytest.mark.parametrize("p", [0.2, 1e-300])
def test_episode_and_drift_p_values_are_written_as_p_values(p) -> None:
    from jitterscope.compare.episodes import EpisodeCheck

    text = EpisodeCheck(level_ns=50_000.0, baseline=3, candidate=9, p_value=p, shown=True).text()
    assert "e-300" not in text and ("p < 1e-12" in text if p < 1e-12 else "p = 0.2" in text), text


@pytest.mark.filterwarnings("ignore:constrained_layout not applied")  # the A4 legends at 3.5 in, before tidying
def test_at_column_width_legends_stay_off_the_right_and_titles_keep_whole_phrases() -> None:
    from jitterscope.render import fit_for_paper, layout_problems, tidy_layout

    # the latency-over-time page: two panels, each with a 3-column legend made for A4
    with matplotlib.rc_context(REPORT_RC):
        fig = Figure(figsize=(11.69, 8.27), layout="constrained")
        axes = fig.subplots(2, 1, sharex=True)
        for ax in axes:
            for i, name in enumerate(("max per 8 ms bin", "p99 per 8 ms bin", "peaks of the largest events")):
                ax.plot([0, 1, 2], [20 + i, 30 + i, 25 + i], label=name)
            ax.set_title("CPU 0: latency over time (n = 1,995)", fontsize=10)
            ax.set_ylabel("latency [µs]")
            ax.legend(loc="upper right", fontsize=8, ncols=3)
        axes[1].set_xlabel("time since first wake-up [s]")
        fig.suptitle("Latency over time (n = 3,989)")
        fit_for_paper(fig, "column")
        assert layout_problems(fig) == []
        fig.draw_without_rendering()
        width = fig.get_figwidth() * fig.dpi
        for ax in axes:  # a legend right of the axes left the data a third of the column (before: 105 of 350 px)
            frame = ax.get_window_extent()
            assert frame.width > 0.7 * width and ax.get_legend().get_window_extent().x0 < frame.x1, frame

    fig = Figure(figsize=(3.5, 2.8), layout="constrained")
    ax = fig.subplots()
    ax.plot([1, 2], [3, 4], label="latency")
    ax.legend(loc="upper left")
    ax.set_title("Latency of every measuring thread over the whole run of the capture (n = 40,000)", fontsize=14)
    assert tidy_layout(fig) == []
    lines = ax.title.get_text().split("\n")
    assert len(lines) > 1 and all(len(line.split()) > 1 for line in lines), lines  # never one word alone


def test_sweep_p_values_are_written_as_p_values() -> None:
    from types import SimpleNamespace

    from jitterscope.sweep.tables import effects_table

    effect = SimpleNamespace(label="governor menu vs ladder", metric="p99", ratio=1.5, low=1.2, high=1.9, p=1e-300,
                             p_holm=3e-299, verdict="effect")
    table = effects_table(SimpleNamespace(effects=(effect,), interactions=(), confidence=0.95, noise=0.1))
    assert table.rows[0][5] == 1e-300  # the number kept for CSV/JSON
    text = " ".join(table.text_rows()[0])
    assert "e-300" not in text and "e-299" not in text and "< 1e-12" in text, text
