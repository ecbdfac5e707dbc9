"""``jitterscope compare``: text, --json and the PDF (one page per pair, summary table); bad input is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.io import spec_from_options, write_simulation


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("runs")
    base = write_simulation(spec_from_options(threads=1, samples=4000), folder / "base.parquet", seed=1)
    slow = write_simulation(spec_from_options(threads=1, samples=4000, governor="powersave"),
                            folder / "slow.parquet", seed=2)
    third = write_simulation(spec_from_options(threads=1, samples=4000), folder / "third.parquet", seed=3)
    return [base, slow, third]


def test_text_output_has_verdicts_and_the_environment_diff(runs, capsys) -> None:
    assert main(["compare", str(runs[0]), str(runs[1]), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "Summary: every run against base.parquet" in out
    assert "within noise" in out
    assert "environment.cpufreq.governor" in out and "powersave" in out
    assert "block length" in out


def test_json_output_round_trips(runs, capsys) -> None:
    assert main(["compare", str(runs[0]), str(runs[0]), "--json", "--resamples", "50", "--labels", "a,b"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in data["runs"]] == ["a", "b"]
    metrics = data["pairs"][0]["metrics"]
    assert [m["metric"] for m in metrics] == ["p50", "p99", "p99.9", "p99.99", "max"]
    assert all(m["difference_ns"] == 0 and m["verdict"] in ("within noise", "inconclusive") for m in metrics)
    assert metrics[0]["verdict"] == "within noise"
    assert data["environment"] == []


def _page_texts(pdf: Path) -> list[str]:
    pages = int(next(line.split()[-1] for line in subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.startswith("Pages:")))
    return [subprocess.run(["pdftotext", "-f", str(i), "-l", str(i), str(pdf), "-"], capture_output=True,
                           text=True, check=True).stdout for i in range(1, pages + 1)]


def test_three_runs_pdf_one_page_per_pair_and_a_summary(runs, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    out = tmp_path / "compare.pdf"
    assert main(["compare", *map(str, runs), "-o", str(out), "--resamples", "60"]) == 0
    assert "pages" in capsys.readouterr().err
    texts = _page_texts(out)
    pair_pages = [t for t in texts if "against base.parquet" in t and "QQ plot" in t]
    assert len(pair_pages) == 2
    assert any("slow.parquet against" in t for t in pair_pages) and any("third.parquet against" in t
                                                                         for t in pair_pages)
    summary = texts[0]  # page 1: the headline per pair and what differs in the environment
    assert "What changed against base.parquet" in summary and "What differs between the runs" in summary
    assert "slow.parquet" in summary and "third.parquet" in summary
    assert "environment: cpufreq.governor performance → powersave" in summary.replace("\n", " ")
    assert "Summary: every run against base.parquet" in texts[1]
    fonts = subprocess.run(["pdffonts", str(out)], capture_output=True, text=True, check=True).stdout
    assert "TrueType" in fonts and "Type 3" not in fonts
    # no blank page
    subprocess.run(["pdftoppm", "-png", "-r", "30", str(out), str(tmp_path / "page")], check=True)
    import matplotlib.image as mpimg

    for png in sorted(tmp_path.glob("page*.png")):
        ink = (mpimg.imread(png)[:, :, :3] < 0.9).any(axis=2).mean()
        assert ink > 0.003, png
    # reproducible bytes
    again = tmp_path / "again.pdf"
    assert main(["compare", *map(str, runs), "-o", str(again), "--resamples", "60"]) == 0
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(("args", "message", "status"), [
    (["{base}"], "at least two datasets", 1),
    (["{base}", "{tmp}/missing.parquet"], "no such file or directory", 1),
    (["{base}", "{base}", "--labels", "one"], "one label per dataset", 1),
    (["{base}", "{base}", "--confidence", "120"], "--confidence", 2),  # a usage error: refused by the parser
    (["{base}", "{base}", "-o", "{tmp}/no/dir/c.pdf"], "does not exist; jitterscope creates no parent", 2),
])
def test_bad_input_is_one_line_and_exit_1(runs, tmp_path, capsys, args, message, status) -> None:
    argv = ["compare", *(a.format(base=runs[0], tmp=tmp_path) for a in args), "--resamples", "20"]
    assert main(argv) == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("jitterscope compare: error:")


def test_subprocess_runs_the_console_command(runs) -> None:
    command = Path(sys.executable).parent / "jitterscope"
    done = subprocess.run([str(command), "compare", str(runs[0]), str(runs[2]), "--resamples", "30"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "third.parquet vs base.parquet" in done.stdout
    assert "within noise" in done.stdout
    failed = subprocess.run([str(command), "compare", str(runs[0])], capture_output=True, text=True, check=False)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
