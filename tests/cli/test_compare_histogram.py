"""`jitterscope compare` on imported cyclictest histograms (kind histogram), alone and mixed with a sample run."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.io import spec_from_options, write_simulation

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture(scope="module")
def hists(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("hists")
    out = []
    for name in ("ct-hist.txt", "ct-histofall.txt"):
        path = folder / name.replace(".txt", ".parquet")
        assert main(["import", str(DATA / name), "-o", str(path)]) == 0
        out.append(path)
    out.append(write_simulation(spec_from_options(threads=1, samples=3000), folder / "sim.parquet", seed=1))
    return out


def test_two_histograms_text_and_json(hists, capsys) -> None:
    assert main(["compare", str(hists[0]), str(hists[1]), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "multinomial bootstrap" in out and "not judged" in out and "not available on binned data" in out
    assert "overflow wake-ups put in one bin" in out  # ct-histofall has one wake-up past its 400 µs range
    assert main(["compare", str(hists[0]), str(hists[1]), "--resamples", "50", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["kind"] for r in data["runs"]] == ["histogram", "histogram"]
    assert data["runs"][0]["n"] == 2000 and data["runs"][1]["n"] == 2000


def test_pdf_renders_for_histogram_and_mixed_runs(hists, tmp_path, capsys) -> None:
    out = tmp_path / "compare.pdf"
    assert main(["compare", *map(str, hists), "-o", str(out), "--resamples", "60"]) == 0
    capsys.readouterr()
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm not installed")
    text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout
    assert "sim.parquet against ct-hist.parquet" in text and "ct-histofall.parquet against" in text
    subprocess.run(["pdftoppm", "-png", "-r", "30", str(out), str(tmp_path / "page")], check=True)
    import matplotlib.image as mpimg

    pages = sorted(tmp_path.glob("page*.png"))
    assert len(pages) >= 4
    for png in pages:
        ink = (mpimg.imread(png)[:, :, :3] < 0.9).any(axis=2).mean()
        assert ink > 0.003, png


def test_tails_still_refuses_a_histogram_in_one_line(hists, capsys) -> None:
    assert main(["tails", str(hists[0])]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "histogram-only" in err and "in order" in err
