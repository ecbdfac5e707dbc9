"""``jitterscope fleet``: text, --json, the PDF, --glob, --scheduler against a running cluster.

Bad input is one line (usage errors exit 2, unusable data 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from jitterscope.cli import main
from jitterscope.fleet import write_simulated_fleet

distributed = pytest.importorskip("distributed")
JITTERSCOPE = [sys.executable, "-c", "import sys; from jitterscope.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return write_simulated_fleet(tmp_path_factory.mktemp("fleet"), hosts=6, nights=3, samples=2_000, bad_every=3)


@pytest.fixture(scope="module")
def scheduler():
    """A cluster started apart from the command, as a cluster someone else runs would be."""
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=50)
    yield cluster.scheduler_address
    cluster.close()


def test_text_json_and_pdf_through_a_running_scheduler(planted, scheduler, tmp_path, capsys) -> None:
    root = os.path.dirname(os.path.dirname(planted.paths[0]))
    pdf = tmp_path / "fleet.pdf"
    assert main(["fleet", "--glob", f"{root}/**/*.parquet", "--by", "governor", "--scheduler", scheduler,
                 "-o", str(pdf), "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["by"] == "governor" and data["groups"][0]["value"] == "powersave"
    assert data["runs"] == 18 and data["execution"]["scheduler"] == scheduler
    assert "fleet.pdf: " in captured.err
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 10_000
    assert main(["fleet", *planted.paths, "--by", "cmdline", "idle", "--scheduler", scheduler]) == 0
    out = capsys.readouterr().out
    assert "Groups by cmdline idle" in out and "Regression: " + planted.regressed_host in out


def test_the_pdf_never_replaces_an_input_and_needs_force_over_a_file(planted, tmp_path, capsys) -> None:
    victim = planted.paths[0]
    before = open(victim, "rb").read()
    assert main(["fleet", *planted.paths[:3], "--scheduler", "serial", "-o", victim]) == 1
    assert "an input of this command" in capsys.readouterr().err
    assert open(victim, "rb").read() == before
    pdf = tmp_path / "fleet.pdf"
    pdf.write_text("last night's report")
    assert main(["fleet", *planted.paths[:3], "--scheduler", "serial", "-o", str(pdf)]) == 1
    assert "--force" in capsys.readouterr().err and pdf.read_text() == "last night's report"
    assert main(["fleet", *planted.paths[:3], "--scheduler", "serial", "-o", str(pdf), "--force"]) == 0
    assert pdf.read_bytes().startswith(b"%PDF")


def test_by_words_and_datasets_mix(planted, capsys) -> None:
    # datasets after --by governor are datasets, not more words of the key
    assert main(["fleet", "--by", "governor", *planted.paths[:6], "/no/such.parquet", "--scheduler", "serial"]) == 0
    out = capsys.readouterr().out
    assert "Datasets skipped (1)" in out and "/no/such.parquet" in out and "no such file" in out


@pytest.mark.parametrize(("argv", "status", "message"), [
    (["fleet"], 2, "no datasets"),
    (["fleet", "a.parquet", "--by", "colour"], 2, "--by: expected one of"),
    (["fleet", "--by", "env"], 2, "--by env needs a name"),
    (["fleet", "--glob", "/no/such/dir/*.parquet"], 2, "matches nothing"),
    (["fleet", "a.parquet", "--workers", "0"], 2, "argument --workers: '0' is out of range"),
    (["fleet", "/no/such.parquet", "--scheduler", "serial"], 1, "no usable dataset"),
])
def test_bad_input_is_one_line(argv, status, message) -> None:
    result = subprocess.run([*JITTERSCOPE, *argv], capture_output=True, text=True, check=False)
    assert result.returncode == status
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("jitterscope fleet: error:")


def test_an_unreachable_scheduler_is_one_line(planted, monkeypatch, capsys) -> None:
    import jitterscope.fleet.engine as engine
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT", "1s")  # the default 10 s is for real networks
    assert main(["fleet", planted.paths[0], "--scheduler", "tcp://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err and len(err.strip().splitlines()) == 1


def test_help_loads_no_dask() -> None:
    code = ("import sys\nfrom jitterscope.cli import main\ntry:\n    main(['fleet', '--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in ('dask', 'distributed', 'numpy', 'tqdm') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--scheduler ADDRESS" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_progress_bar_on_stderr(planted, capsys) -> None:
    from jitterscope.fleet import run_fleet
    run_fleet(list(planted.paths[:6]), scheduler="serial", progress=True)
    err = capsys.readouterr().err
    assert "fleet" in err and "6/6" in err
