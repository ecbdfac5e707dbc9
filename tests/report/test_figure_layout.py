"""Every figure's text on the canvas and never on other text: the layout check, and the figures it passes (and
the caption check: units, n and uncertainty, empty panels explained).

:func:`~jitterscope.render.layout_problems` draws a figure with matplotlib's renderer and compares the boxes of
the texts it draws, and the legends and labels against the plotted data.  Checked here: what it catches (a
legend moved onto the title or onto the data, a label off the edge, on a mark or past its panel, a legend of too
many entries), and every figure of the report of a real traced capture, a cyclictest -v and a
jitterdebugger import and a simulation with every effect, at the report's A4 page and refitted to a paper's
column (a figure of panels side by side goes to the page width), and the compare and fleet PDFs' figures.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib
import pytest
from jitterscope.render import REPORT_RC, capped_legend, caption_problems, fit_for_paper, layout_problems
from jitterscope.render.layout import MAX_LEGEND_ENTRIES, long_titles, tidy_layout
from matplotlib.figure import Figure

DATA = Path(__file__).resolve().parents[1] / "data"


def _plot(*, entries: int = 2, size: tuple[float, float] = (6.0, 4.0)) -> Figure:
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.subplots()
    for i in range(entries):
        ax.plot([1, 2, 3], [i, i + 1, i + 3], label=f"series {i}")
    ax.set_title("Latency of every series over the whole run")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("latency [µs]")
    return fig


def test_a_legend_moved_onto_the_title_is_caught() -> None:
    fig = _plot()
    ax = fig.axes[0]
    ax.legend(loc="upper left")  # the series rise to the right: the upper left is free
    assert layout_problems(fig) == []
    # the same legend, anchored where the title is drawn
    ax.legend(loc="center", bbox_to_anchor=(0.5, 1.04))
    problems = layout_problems(fig)
    assert any("legend" in p and "title" in p and "overlaps" in p for p in problems), problems


def test_text_off_the_canvas_and_overlapping_labels_are_caught() -> None:
    fig = _plot()
    fig.axes[0].set_xlabel("a very long axis label " * 6)
    assert any("x-label" in p and "outside the canvas" in p for p in layout_problems(fig))
    fig = _plot()
    fig.axes[0].annotate("peak 113 Hz", (2, 2), xytext=(0, 0), textcoords="offset points")
    fig.axes[0].annotate("peak 114 Hz", (2, 2), xytext=(2, 1), textcoords="offset points")
    assert any("'peak 113 Hz'" in p and "'peak 114 Hz'" in p for p in layout_problems(fig))


def test_a_legend_holds_at_most_eight_entries() -> None:
    fig = _plot(entries=12)
    fig.axes[0].legend()
    assert any("legend of 12 entries" in p for p in layout_problems(fig))
    fig = _plot(entries=12)
    legend = capped_legend(fig.axes[0], outside=True)
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(texts) == MAX_LEGEND_ENTRIES and texts[-1] == "and 5 more (not listed)"
    assert layout_problems(fig) == []


def test_tidy_layout_clears_a_crowded_column_figure() -> None:
    fig = _plot(entries=8, size=(11.69, 8.27))
    fig.axes[0].legend(loc="upper left", ncols=4)  # fine on A4, over the data and the title at 3.5 in
    fig.axes[0].set_xlabel("time since the first wake-up of the run [s], every thread")
    fig.set_size_inches(3.5, 2.8)
    assert layout_problems(fig)
    assert tidy_layout(fig) == []


def _check(pages, problems: list[str], names: list[str], *, refit: bool = True) -> None:
    for page in pages:
        if page.kind != "figure":
            continue
        names.append(page.name)
        # units on every axis, n in a title, empty panels explained (test_figure_captions tests the check)
        problems += caption_problems(page.figure, name=page.name)
        problems += layout_problems(page.figure, name=f"{page.name} at A4")
        if refit:
            fit_for_paper(page.figure, "column")
            problems += layout_problems(page.figure, name=f"{page.name} at column width")
            problems += long_titles(page.figure, name=f"{page.name} at column width")  # two lines at most


def _report_figures(dataset: Path, tmp_path: Path, monkeypatch) -> tuple[list[str], list[str]]:
    """Every figure page of the report checked as the PDF has it and refitted as --figure-width column makes it."""
    from jitterscope.report import build, write_report

    problems: list[str] = []
    names: list[str] = []

    def export(page, directory, width=None):
        _check([page], problems, names)
        return []

    monkeypatch.setattr(build, "_export_figure", export)
    monkeypatch.setattr(build, "_export_table", lambda table, directory: [])
    # one process: a page drawn by a forked worker would be checked there, its findings lost (on 2 CPUs the
    # default drew every other page in a child, and those pages went unchecked)
    write_report(dataset, tmp_path / "r.pdf", figures_dir=tmp_path / "figures", figure_width="column", workers=1)
    return problems, names


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    from jitterscope.cli import main

    out = tmp_path_factory.mktemp("layout")
    traced = out / "traced"
    shutil.copytree(DATA / "capture" / "traced-2s", traced)
    formats = DATA / "formats"
    paths = {"traced capture": traced, "cyclictest -v": out / "ct.parquet", "jitterdebugger": out / "jd.parquet",
             "simulation": out / "sim.parquet", "poll simulation": out / "poll"}
    assert main(["import", str(formats / "ct-verbose.txt"), "-o", str(paths["cyclictest -v"]), "-q"]) == 0
    assert main(["import", str(formats / "jd-fresh"), "-o", str(paths["jitterdebugger"]), "-q"]) == 0
    # every simulated effect at once: P-states with coupling, SMIs, a 113 Hz line
    assert main(["simulate", "-o", str(paths["simulation"]), "--threads", "2", "--interval-us", "100", "--samples",
                 "50000", "--pstates", "800,2400", "--dwell-ms", "50", "--coupling", "0.5:30:3", "--smi", "0.5:200",
                 "--periodic", "113:3", "--seed", "1"]) == 0
    # a busy-poll dataset with every cause its report names: tick, throttling, an IRQ, a thread, hardware (4 s)
    assert main(["simulate", "--mode", "poll", "-o", str(paths["poll simulation"]), "--cpus", "0,1", "--duration",
                 "4", "--irq", "10:8:eth0", "--bursts", "3:30:spinner", "--hardware", "1:5", "--trace",
                 "--seed", "1"]) == 0
    return paths


# figure pages each report has at least (a poll report has three: rates, every interruption, all gaps)
MIN_FIGURES = {"poll simulation": 3}


@pytest.mark.parametrize("source", ["traced capture", "cyclictest -v", "jitterdebugger", "simulation",
                                    "poll simulation"])
def test_every_report_figure_is_laid_out_cleanly(inputs, source, tmp_path, monkeypatch) -> None:
    with matplotlib.rc_context(REPORT_RC):
        problems, names = _report_figures(inputs[source], tmp_path, monkeypatch)
    assert len(names) >= MIN_FIGURES.get(source, 6), names
    assert problems == [], "\n".join(problems)


def test_compare_and_fleet_figures_are_laid_out_cleanly(tmp_path) -> None:
    from jitterscope.compare import compare_runs
    from jitterscope.compare.pdf import compare_pages
    from jitterscope.dataset import open_dataset
    from jitterscope.fleet import run_fleet, write_simulated_fleet
    from jitterscope.fleet.pdf import fleet_pages
    from jitterscope.io import spec_from_options, write_simulation
    from jitterscope.io.simulate import BaseLatency

    runs = [write_simulation(spec_from_options(threads=2, samples=5_000, base=BaseLatency(median_ns=median)),
                             tmp_path / f"run{i}.parquet", seed=i) for i, median in enumerate((3000.0, 4000.0, 3000.0))]
    fleet = write_simulated_fleet(tmp_path / "fleet", hosts=20, nights=3, samples=2_000)
    problems: list[str] = []
    names: list[str] = []
    with matplotlib.rc_context(REPORT_RC):  # the compare and fleet PDFs are A4 only: no --figures
        _check(compare_pages(compare_runs([open_dataset(p) for p in runs], n_boot=100)), problems, names,
               refit=False)
        _check(fleet_pages(run_fleet(list(fleet.paths), scheduler="serial")), problems, names, refit=False)
    assert {"compare-pair-1", "compare-pair-2", "fleet-overview"} <= set(names)
    assert problems == [], "\n".join(problems)


def test_a_legend_moved_onto_the_data_is_caught_and_headroom_clears_it() -> None:
    from jitterscope.render import data_covers, legend_off_data

    fig = _plot()
    ax = fig.axes[0]  # the series rise to the upper right: the upper left is free
    ax.legend(loc="upper left")
    assert layout_problems(fig) == []
    ax.legend(loc="center right")  # the same legend on the lines
    problems = layout_problems(fig)
    assert any("legend" in p and "covers" in p and "data point" in p for p in problems), problems
    # bars and steps count as data too, a reference line across the panel does not
    fig = Figure(figsize=(6.0, 4.0), layout="constrained")
    ax = fig.subplots()
    ax.bar([1, 2, 3], [5, 9, 4], label="wake-ups")
    ax.axhline(8.5, color="0.3", label="threshold")
    ax.set_title("n = 18")
    ax.legend(loc="upper center")
    assert any(item.role == "legend" for item, _ in data_covers(fig))
    assert legend_off_data(ax) and data_covers(fig) == [] and layout_problems(fig) == []
    assert ax.get_ylim()[1] > 9.5  # by headroom above the bars, the bars unchanged


def test_a_label_on_a_plotted_mark_is_caught() -> None:
    fig = _plot()
    ax = fig.axes[0]
    ax.scatter([1.5, 2.5], [1.0, 4.0], s=30)
    ax.text(2.5, 4.0, "late: > 78.5 µs", ha="center", va="center", fontsize=7)  # on the second mark
    assert any("'late: > 78.5 µs'" in p and "covers" in p for p in layout_problems(fig))
    ax.texts[0].set_position((1.0, 4.5))  # where no mark is (a line may run under a label)
    assert layout_problems(fig) == []


def test_a_data_label_past_its_panel_is_caught_and_moved_inside() -> None:
    fig = Figure(figsize=(3.5, 2.8), layout="constrained")
    ax = fig.subplots(1, 2)[1]  # the left panel: a label past its right edge sits in the next panel
    fig.axes[0].plot([1, 2], [1, 2])
    ax.plot([1, 10], [1, 2])
    ax.set_title("n = 2")
    ax.annotate("10: 1356 Hz", (9.8, 1.5), textcoords="offset points", xytext=(3, 6), ha="left")
    problems = layout_problems(fig)
    assert any("'10: 1356 Hz'" in p and "past the frame of its panel" in p for p in problems), problems
    assert not any("'10: 1356 Hz'" in p for p in tidy_layout(fig))
    text = ax.texts[0]
    assert text.get_visible() and text.get_window_extent().x1 <= ax.get_window_extent().x1 + 0.5


def test_tidy_layout_makes_headroom_for_a_legend_at_the_top_before_moving_it() -> None:
    fig = Figure(figsize=(3.5, 2.8), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1, 2, 3], [1, 5, 2, 6], label="latency")
    ax.plot([0, 1, 2, 3], [0.5, 4.5, 1.5, 5.5], label="p99")
    ax.set_title("n = 4")
    ax.legend(loc="upper right")
    assert any("covers" in p for p in layout_problems(fig))
    top = ax.get_ylim()[1]
    assert tidy_layout(fig) == []
    assert ax.get_legend() is not None and not fig.legends  # still the panel's legend, at its top
    assert ax.get_ylim()[1] > top


def test_column_legends_of_full_panels_join_one_legend_below() -> None:
    """Three stacked panels whose data fill them, each with a legend taller than the headroom it may get: at a
    column's width the right side has no room and no corner is free, so a legend that covered the data inside
    too joins the figure's one legend below the panels, its labels wrapped to the width (the 10^6 simulation's
    frequency timeline kept a legend on its data)."""
    import numpy as np

    fig = Figure(figsize=(11.69, 8.27), layout="constrained")
    x = np.linspace(0.0, 10.0, 400)
    rng = np.random.default_rng(1)
    for i, ax in enumerate(fig.subplots(3, 1)):
        for k in range(2):
            ax.plot(x, rng.uniform(0, 1, x.size), ".", label=f"series {k} of panel {i}, measured every wake-up")
        ax.set_title(f"panel {i}: effective frequency")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("frequency [GHz]")
        ax.legend(loc="upper right")
    fig.set_size_inches(3.5, 8.0)
    assert any(" covers " in p for p in layout_problems(fig))
    assert tidy_layout(fig) == []
    # the upper panels' legends (inside, wrapped, they still covered the data) are one legend below the figure;
    # the last panel's sits below its axes, where there is room
    assert [ax.get_legend() is None for ax in fig.axes] == [True, True, False]
    assert len(fig.legends) == 1  # one legend below, not one per moved panel
    assert len(fig.legends[0].get_texts()) == 4


def test_a_title_that_would_wrap_past_two_lines_is_set_a_point_smaller_instead() -> None:
    """A two-line title in a clash (a neighbour's title, the canvas edge): wrapped again it would have four lines
    and take the panel's height, so tidy_layout's change to it is a point smaller (7 pt at least); a one-line
    title is still wrapped to two."""
    from jitterscope.render.layout import _fix, text_boxes

    fig = _plot()
    ax = fig.axes[0]
    ax.set_title("cpu 0: latency at frequency transitions\nn = 199; grey: 95 % band of surrogates", fontsize=9)
    title = next(b for b in text_boxes(fig) if b.role == "title")
    assert _fix(title, None, fig) and ax.title.get_fontsize() == 8.0 and ax.title.get_text().count("\n") == 1
    ax.title.set_fontsize(7.0)
    assert not _fix(title, None, fig) and ax.title.get_fontsize() == 7.0  # the smallest: the clash is reported
    ax.set_title("cpu 0: latency at frequency transitions", fontsize=9)
    title = next(b for b in text_boxes(fig) if b.role == "title")
    assert _fix(title, None, fig) and ax.title.get_text().count("\n") == 1 and ax.title.get_fontsize() == 9.0
