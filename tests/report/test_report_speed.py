"""A small report's work is done where it runs in parallel, and once (issue 25, "speed of small reports"): pages
are laid out for their legends in the drawing workers (not while the sections are built one after another, in
the report's process), each layout pass shared by the panels it checks."""

from __future__ import annotations

import functools

import matplotlib
import numpy as np
import pytest
from jitterscope.dataset import open_dataset
from jitterscope.io import BaseLatency, PeriodicDisturbance, SimulationSpec, write_simulation
from jitterscope.render import REPORT_RC, data_covers, legend_off_data, legends_off_data
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    spec = SimulationSpec(threads=1, samples=30_000, base=BaseLatency(median_ns=3_000, spread=0.3),
                          effects=(PeriodicDisturbance(frequency_hz=20.0, amplitude_ns=20_000, width_ns=1_000_000),))
    return write_simulation(spec, tmp_path_factory.mktemp("speed") / "s.parquet", 2)


def test_no_page_is_laid_out_while_the_sections_are_built(dataset, monkeypatch) -> None:
    """The layout passes that place the spectrum page's legends run where the page is drawn (a worker), not in
    the section, and once run there the legends are clear of the data."""
    from jitterscope.report.build import build_context
    from jitterscope.report.sections.spectrum import spectra_section

    draws = _count_layouts(monkeypatch)
    with matplotlib.rc_context(REPORT_RC):
        items = spectra_section(build_context(open_dataset(dataset)))
        assert draws == []  # the section only builds its pages
        spectra = [item for item in items if getattr(item, "name", "").startswith("spectrum-")]
        assert spectra and all(page.prepare is not None for page in spectra)
        for page in spectra:
            page.prepare(page.figure)
            assert [what for item, what in data_covers(page.figure) if item.role == "legend"] == []
    assert draws  # laid out by prepare


def _count_layouts(monkeypatch) -> list[int]:
    """A list that grows by one at each layout pass of a constrained figure (a draw's first step, or alone)."""
    passes: list[int] = []
    original = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", lambda self, fig: passes.append(1) or original(self, fig))
    return passes


def _two_panels() -> tuple[Figure, list]:
    fig = Figure(figsize=(6.0, 6.0), layout="constrained")
    axes = fig.subplots(2, 1)
    x = np.linspace(0.0, 1.0, 50)
    for ax in axes:
        ax.plot(x, x, label="rising")
        ax.set_title("n = 50")
    axes[0].legend(loc="upper left")  # clear: the line rises to the upper right
    axes[1].legend(loc="upper right")  # on the line's end: needs headroom
    return fig, list(axes)


def test_legends_share_the_layout_passes_and_end_as_one_panel_at_a_time(monkeypatch) -> None:
    draws = _count_layouts(monkeypatch)
    with matplotlib.rc_context(REPORT_RC):
        sequential, axes = _two_panels()
        assert [legend_off_data(ax) for ax in axes] == [True, True]  # each panel alone: a pass each, at least
        limits, alone = [ax.get_ylim() for ax in axes], len(draws)
        draws.clear()
        fig, axes = _two_panels()
        assert legends_off_data(fig) == []
    assert [ax.get_ylim() for ax in axes] == limits  # the same headroom as checking each panel alone
    assert limits[0] == sequential.axes[0].get_ylim() and limits[1][1] > axes[1].dataLim.y1 + 0.2
    # the first panel's pass is the second's first: one pass fewer, here 2 of 3 (the second panel's legend is
    # cleared by one raise, confirmed by one more pass)
    assert alone == 3 and len(draws) == alone - 1
    assert data_covers(fig) == []


def test_a_legend_is_cleared_in_one_raise_to_the_headroom_it_needs(monkeypatch) -> None:
    """The raise is computed, not stepped: the line's top end under an upper-right legend moves just below it
    in one raise (a pass to find it covered, one to confirm), however much headroom that takes."""
    draws = _count_layouts(monkeypatch)
    with matplotlib.rc_context(REPORT_RC):
        fig = Figure(figsize=(6.0, 3.0), layout="constrained")
        ax = fig.subplots()
        x = np.linspace(0.0, 1.0, 200)
        ax.plot(x, x ** 8, label="a steep rise")
        ax.legend(loc="upper right", fontsize=14)
        assert legend_off_data(ax)
        assert len(draws) == 2 and data_covers(fig) == []
        legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
        frame = ax.get_window_extent(fig.canvas.get_renderer())
        top = ax.transData.transform((1.0, 1.0))[1]  # the line's highest point: below the legend, not far
        # (a fixed 25 % per pass left it up to a quarter of the panel lower than it needed to be)
        assert legend.y0 - 0.1 * frame.height < top < legend.y0


def test_a_held_layout_is_not_laid_out_again_by_the_draw(monkeypatch) -> None:
    """``hold``: the draw after the checks prints the panels where the last pass put them, which is where a
    draw's own layout would settle them, without a pass of its own."""
    import io

    draws = _count_layouts(monkeypatch)
    with matplotlib.rc_context(REPORT_RC):
        reference, _ = _two_panels()
        assert legends_off_data(reference) == []
        reference.draw_without_rendering()  # laid out once more by the draw: where the panels settle
        settled = [ax.get_position().bounds for ax in reference.axes]
        fig, axes = _two_panels()
        assert legends_off_data(fig, hold=True) == []
        passes = len(draws)
        fig.savefig(io.BytesIO(), format="pdf")
    assert len(draws) == passes  # the draw laid nothing out
    assert [ax.get_position().bounds for ax in axes] == pytest.approx(settled, abs=1e-9)
    assert data_covers(fig) == []


def test_the_report_puts_a_held_layout_engine_back_after_the_page(dataset, tmp_path) -> None:
    from jitterscope.render import Page
    from jitterscope.report.build import _draw_page, build_context
    from matplotlib.backends.backend_pdf import PdfPages

    ctx = build_context(open_dataset(dataset))
    with matplotlib.rc_context(REPORT_RC):
        fig, _ = _two_panels()
        engine = fig.get_layout_engine()
        page = Page("two-panels", fig, prepare=functools.partial(legends_off_data, hold=True))
        with PdfPages(tmp_path / "p.pdf") as pdf:
            _draw_page(page, ctx, 1, None, None, pdf)
    assert fig.get_layout_engine() is engine


def test_a_legend_that_needs_more_than_the_rounds_allow_stays_and_is_reported() -> None:
    with matplotlib.rc_context(REPORT_RC):
        fig = Figure(figsize=(3.0, 1.2), layout="constrained")
        ax = fig.subplots()
        ax.plot([0.0, 1.0], [0.0, 1.0], label="a legend as tall as the panel\nin two lines")
        ax.legend(loc="upper right")
        before = ax.get_ylim()
        assert legends_off_data(fig, rounds=1) == [ax]
        assert ax.get_ylim()[1] <= before[0] + 1.25 * (before[1] - before[0]) + 1e-9  # one round's headroom


def test_text_boxes_are_measured_on_the_figure_as_it_is_now(monkeypatch) -> None:
    from jitterscope.render import text_boxes

    draws = _count_layouts(monkeypatch)
    with matplotlib.rc_context(REPORT_RC):
        fig, axes = _two_panels()
        legends_off_data(fig)
        laid_out = len(draws)
        boxes = [item.box.bounds for item in text_boxes(fig)]
        assert len(draws) == laid_out + 1  # the legends' passes only placed the panels: a draw measures the text
        axes[1].set_ylim(0.0, 3.0)  # a change: laid out again
        moved = [item.box.bounds for item in text_boxes(fig)]
        assert len(draws) == laid_out + 2 and moved != boxes


def test_heavy_pages_are_shared_between_the_workers() -> None:
    from jitterscope.render import Page, new_page
    from jitterscope.report.build import page_weight
    from jitterscope.report.drawing import assign_pages

    # equal weights go round, as before
    assert assign_pages([1.0] * 5, 2) == [0, 1, 0, 1, 0]
    # a real capture's report on 2 CPUs: its spectrum pages (laid out again first) are pages 10 and 12
    fig, _ = new_page()
    plain, text = Page("plain", fig), Page("text", fig, kind="text")
    spectrum = Page("spectrum-cpu0", fig, prepare=lambda figure: None)
    pages = [plain, text, text] + [plain] * 6 + [spectrum, plain, spectrum, plain] + [plain] * 11
    owners = assign_pages([page_weight(page) for page in pages], 2)
    assert owners[9] != owners[11]  # round, both went to worker 1
    assert assign_pages([page_weight(page) for page in pages], 2) == owners  # the same every time
