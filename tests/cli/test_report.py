"""``jitterscope report``: writes the PDF (and --figures), prints the path; bad input is one line and exit 1."""

from __future__ import annotations

import subprocess
import sys

import pytest
from jitterscope.cli import main
from jitterscope.io import PeriodicDisturbance, spec_from_options, write_simulation


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    spec = spec_from_options(threads=2, samples=3000, effects=[PeriodicDisturbance(frequency_hz=10.0)])  # 30 events
    return write_simulation(spec, tmp_path_factory.mktemp("d") / "d.parquet", seed=2)


def test_report_writes_pdf_and_figures_and_prints_the_path(dataset, tmp_path, capsys):
    out = tmp_path / "r.pdf"
    assert main(["report", str(dataset), "-o", str(out), "--figures", str(tmp_path / "figs"), "--top", "5",
                 "--sections", "provenance,distributions, events"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{out}\n"
    assert out.read_bytes().startswith(b"%PDF") and out.stat().st_size > 10_000
    assert "pages" in captured.err and "files in" in captured.err
    assert (tmp_path / "figs" / "latency-histogram.svg").exists()
    assert not (tmp_path / "figs" / "latency-over-time.svg").exists()  # not among --sections
    events = (tmp_path / "figs" / "events.csv").read_text().splitlines()
    assert len(events) == 1 + 5  # header + --top 5
    assert not (tmp_path / "r.pdf.tmp").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["{missing}"], "no such file or directory"),
    (["{garbage}"], "not a readable Parquet file"),
    (["{dataset}", "-o", "{tmp}"], "is a directory"),
    (["{dataset}", "--sections", "spectrum,nonsense"], "unknown report section(s) nonsense; known: findings"),
])
def test_bad_input_is_one_line_and_exit_1(dataset, tmp_path, capsys, args, message):
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all" * 10)
    values = {"missing": tmp_path / "missing.parquet", "garbage": garbage, "dataset": dataset, "tmp": tmp_path}
    argv = ["report", *(a.format(**values) for a in args)]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "r.pdf")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jitterscope report: error: ") and message in err
    assert "Traceback" not in err


def test_bad_option_value_is_a_usage_error(dataset, tmp_path, capsys):
    assert main(["report", str(dataset), "-o", str(tmp_path / "r.pdf"), "--top", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jitterscope report: error: argument --top: '0' is out of range")
    assert not (tmp_path / "r.pdf").exists()


def test_full_report_with_every_registered_section(dataset, tmp_path, capsys):
    # the whole report, later analyses' sections included, on a small dataset
    out = tmp_path / "all.pdf"
    assert main(["report", str(dataset), "-o", str(out), "-q"]) == 0
    assert capsys.readouterr().out == f"{out}\n"
    assert out.read_bytes().startswith(b"%PDF")


def test_console_script_error_has_no_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import sys; from jitterscope.cli import main; sys.exit(main())",
                           "report", str(tmp_path / "nothing.parquet"), "-o", str(tmp_path / "r.pdf"), "-q"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "no such file or directory" in done.stderr
