"""``jitterscope compare``: text, --json and the PDF (one page per pair, summary table); bad input is one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.io import BaseLatency, spec_from_options, write_simulation


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


@pytest.fixture(scope="module")
def replicates(tmp_path_factory) -> tuple[list[Path], list[Path], list[Path]]:
    """Three runs at a lognormal spread of 0.3, three more alike, three whose p99 is 20 % higher (median alike)."""
    folder = tmp_path_factory.mktemp("replicates")

    def make(name: str, spread: float, seed: int) -> Path:
        spec = spec_from_options(threads=1, samples=5000, base=BaseLatency(spread=spread))
        return write_simulation(spec, folder / name, seed=seed)
    same_a = [make(f"a{i}.parquet", 0.3, 10 + i) for i in range(3)]
    same_b = [make(f"b{i}.parquet", 0.3, 20 + i) for i in range(3)]
    slower = [make(f"c{i}.parquet", 0.3 + 0.0784, 30 + i) for i in range(3)]
    return same_a, same_b, slower


def test_groups_after_a_double_dash_are_judged_by_between_run_variation(replicates, capsys) -> None:
    same_a, same_b, slower = replicates
    assert main(["compare", *map(str, same_a), "--", *map(str, slower), "--fail-if", "regressed"]) == 3
    out = capsys.readouterr()
    assert "B (3 runs) against A (3 runs), between-run variation" in out.out
    assert re.search(r"; p99(–\S+)? regressed \(\+(1\d|2\d)\.\d%", out.out), out.out  # +20 % planted
    assert "FAILED fail-if regressed" in out.err and "B (3 runs) p99 regressed against A (3 runs)" in out.err
    # identical settings: the gate does not fire on noise; --vs is the same as --
    assert main(["compare", *map(str, same_a), "--vs", *map(str, same_b), "--fail-if", "regressed",
                 "--sides", "old,new"]) == 0
    out = capsys.readouterr().out
    assert "new (3 runs) against old (3 runs)" in out and "regressed" not in out.split("Runs (each one")[0]


def test_groups_json_and_pdf(replicates, tmp_path, capsys) -> None:
    same_a, _, slower = replicates
    pdf = tmp_path / "groups.pdf"
    assert main(["compare", *map(str, same_a[:2]), "--", *map(str, slower[:2]), "--json", "-o", str(pdf)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs_per_side"] == [2, 2]
    assert [m["metric"] for m in data["metrics"]] == ["p50", "p99", "p99.9", "p99.99", "max"]
    assert data["headline"].startswith("B (2 runs) against A (2 runs)")
    text = "\n".join(_page_texts(pdf))
    assert "B (2 runs) against A (2 runs)" in text and "each run one dot" in text


@pytest.mark.parametrize(("args", "message"), [
    (["{a}", "--", "{b}", "{b}"], "at least 2 runs per side (1 before --, 2 after)"),
    (["{a}", "{a}", "--vs", "{b}"], "at least 2 runs per side (2 before --, 1 after)"),
    (["{a}", "{a}", "--", "{b}", "{b}", "--sides", "x"], "--sides needs two names"),
])
def test_groups_bad_input_is_one_line_and_exit_2(replicates, capsys, args, message) -> None:
    a, b = replicates[0][0], replicates[1][0]
    assert main(["compare", *(x.format(a=a, b=b) for x in args)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("jitterscope compare: error:")
