"""``report --figures DIR --figure-width column|page``: paper sizes, 8-9 pt text, 300 dpi PNG, the real -o path."""

from __future__ import annotations

import csv
import io
import re
import subprocess

import pytest
from jitterscope.cli import main
from jitterscope.io import spec_from_options, write_simulation
from jitterscope.render import FIGURE_WIDTHS_IN
from PIL import Image


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_simulation(spec_from_options(threads=2, samples=6000), tmp_path_factory.mktemp("fig") / "run.parquet",
                            seed=3)


def _page_width_in(pdf) -> float:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    width_pt = float(re.search(r"Page size:\s+([\d.]+) x", info).group(1))
    return width_pt / 72


def _svg_font_sizes(svg) -> set[float]:
    text = svg.read_text(encoding="utf-8")
    return {float(size) for size in re.findall(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([\d.]+)px", text)}


@pytest.mark.parametrize("width", ["column", "page"])
def test_figures_at_paper_width_with_8_to_9_pt_text(dataset, tmp_path, width):
    out, fig = tmp_path / "my-report.pdf", tmp_path / "figures"
    assert main(["report", str(dataset), "-o", str(out), "--figures", str(fig), "--figure-width", width, "-q",
                 "--sections", "distributions,tails,appendix"]) == 0
    # a single-panel figure gets the asked width; panels side by side (tails' 2 x 2) span the page
    assert _page_width_in(fig / "latency-histogram.pdf") == pytest.approx(FIGURE_WIDTHS_IN[width], abs=0.01)
    assert _page_width_in(fig / "tails-thread-0.pdf") == pytest.approx(FIGURE_WIDTHS_IN["page"], abs=0.01)
    for name in ("latency-histogram", "latency-density", "tails-thread-0"):
        # text at 8-9 pt; the only smaller glyphs are the exponents of 10^k tick labels (superscripts at 70 %)
        sizes = _svg_font_sizes(fig / f"{name}.svg") - {0.7 * 8}
        assert sizes and min(sizes) >= 8 and max(sizes) <= 9, (name, sizes)
        png = Image.open(fig / f"{name}.png")
        assert round(png.info["dpi"][0]) == 300
    # no file name in any exported figure (the PDF's footer names the dataset; the paper's caption does)
    for svg in fig.glob("*.svg"):
        if not svg.stem.startswith(("appendix", "provenance", "tails-tables", "distributions-tables")):
            assert "run.parquet" not in svg.read_text(encoding="utf-8"), svg.name
    # the methods paragraph for the paper, as Markdown and LaTeX (tests/report/test_methods.py checks its facts)
    assert "synthetic" in (fig / "methods.md").read_text(encoding="utf-8")
    assert (fig / "methods.tex").read_text(encoding="ascii").startswith("The wake-ups are synthetic")
    # the report's own pages stay A4 landscape
    assert _page_width_in(out) == pytest.approx(11.69, abs=0.01)
    # the reproducibility page repeats the real -o path and the figure options
    rows = list(csv.reader(io.StringIO((fig / "reproducibility.csv").read_text(encoding="utf-8"))))
    command = next(value for key, value, *_ in rows if key == "command")
    assert f"-o {out}" in command and f"--figures {fig}" in command and f"--figure-width {width}" in command


def test_figure_width_needs_figures_and_a_known_width(dataset, tmp_path, capsys):
    # usage errors: one line, exit 2 (main turns argparse's SystemExit into the status)
    assert main(["report", str(dataset), "-o", str(tmp_path / "r.pdf"), "--figure-width", "column"]) == 2
    assert "--figure-width needs --figures" in capsys.readouterr().err
    assert main(["report", str(dataset), "--figures", str(tmp_path / "f"), "--figure-width", "poster"]) == 2
