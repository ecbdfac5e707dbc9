"""The report's power section (report/sections/power.py, power/plots.py, power/tables.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import matplotlib.image as mpimg
import numpy as np
import pytest
from jitterscope.dataset import write_dataset
from jitterscope.io import simulate_story
from jitterscope.report import write_report

SECTION = ["power"]


def _pages(pdf, tmp_path) -> list[np.ndarray]:
    subprocess.run(["pdftoppm", "-png", "-r", "30", str(pdf), str(tmp_path / "page")], check=True)
    return [mpimg.imread(p) for p in sorted(tmp_path.glob("page-*.png"))]


def _ink(image: np.ndarray) -> float:
    return float(np.mean(image[..., :3].min(axis=2) < 0.9))


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="needs pdftoppm (poppler-utils)")
def test_section_pages_figures_and_tables(tmp_path):
    table, metadata = simulate_story("performance", 2, seconds=60,
                                     smis={"rate_hz": 1.0, "duration_ns": 3_000_000})
    dataset = write_dataset(table, metadata, tmp_path / "perf.parquet")
    figures = tmp_path / "figures"
    info = write_report(dataset, tmp_path / "r.pdf", figures_dir=figures, sections=SECTION)
    assert info.sections == ("power",)
    names = {p.name for p in figures.iterdir()}
    for stem in ("frequency-timeline-cpu0", "latency-vs-feff-c0", "event-averages", "lagged-correlation"):
        assert {f"{stem}.pdf", f"{stem}.svg", f"{stem}.png"} <= names
    for stem in ("correlation-verdict", "cpufreq-claims", "correlation-tests", "time-in-frequency"):
        assert {f"{stem}.csv", f"{stem}.json", f"{stem}.tex"} <= names
    assert "\\toprule" in (figures / "correlation-tests.tex").read_text()
    claims = json.loads((figures / "cpufreq-claims.json").read_text())
    assert "DISAGREE" in json.dumps(claims)
    images = _pages(tmp_path / "r.pdf", tmp_path)
    assert len(images) == info.pages >= 6
    assert min(_ink(im) for im in images) > 0.005  # no blank page


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_no_counters_gives_one_line_and_no_figure_pages(tmp_path):
    table, metadata = simulate_story("powersave", 1, seconds=5)
    why = "cannot open /dev/cpu/0/msr: No such file or directory"
    metadata = metadata.with_changes(counters={"source": "none", "columns": [],
                                               "missing": {"aperf": why, "mperf": why, "smi": why}})
    dataset = write_dataset(table.drop_columns(["aperf", "mperf", "smi"]), metadata, tmp_path / "plain.parquet")
    figures = tmp_path / "figures"
    info = write_report(dataset, tmp_path / "r.pdf", figures_dir=figures, sections=SECTION)
    assert info.pages == 1
    assert not any(p.suffix == ".png" and p.stem != "power-management" and "tables" not in p.stem
                   for p in figures.iterdir())
    text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True).stdout
    assert "counters not recorded (counter source none; aperf: cannot open /dev/cpu/0/msr" in " ".join(text.split())


def test_large_datasets_get_the_whole_section_with_figure_rows_said(tmp_path, monkeypatch):
    """No size cut-off: above DISPLAY_ROWS per thread the figures draw one wake-up in k and say so."""
    import jitterscope.power.stream as stream

    table, metadata = simulate_story("performance", 1, seconds=5)
    dataset = write_dataset(table, metadata, tmp_path / "d.parquet")
    monkeypatch.setattr(stream, "DISPLAY_ROWS", 50)
    figures = tmp_path / "figures"
    info = write_report(dataset, tmp_path / "r.pdf", figures_dir=figures, sections=SECTION)
    assert info.pages > 3
    methods = json.loads((figures / "power-methods.json").read_text())
    assert "histogram" in json.dumps(methods) and "blocks" in json.dumps(methods)
    text = " ".join(subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True,
                                   text=True).stdout.split())
    drawn = re.search(rf"([\d,]+) of {table.num_rows:,} wake-ups drawn", text)
    assert drawn and 0 < int(drawn.group(1).replace(",", "")) <= 50 * len(metadata.threads)
