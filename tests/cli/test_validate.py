"""jitterscope validate: exit 0 with "valid: ..." or exit 1 with the reasons, one per line."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pyarrow.parquet as pq
from jitterscope.cli import main
from jitterscope.io import SimulationSpec, simulate, write_simulation

CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"


def test_valid(tmp_path, capsys):
    path = write_simulation(SimulationSpec(threads=2, samples=100), tmp_path / "ok.parquet", 1)
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"valid: {path}: simulation dataset, 200 rows, 2 thread(s)\n"


def test_invalid_lists_reasons(tmp_path, capsys):
    table, meta = simulate(SimulationSpec(threads=2, samples=100), 1)
    wrong = dataclasses.replace(meta, threads=tuple(dataclasses.replace(t, samples=1, drops=3) for t in meta.threads))
    pq.write_table(table.replace_schema_metadata(wrong.to_kv()), tmp_path / "bad.parquet")
    assert main(["validate", str(tmp_path / "bad.parquet")]) == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 4 and all(line.startswith("jitterscope validate: invalid: thread") for line in lines)
    assert captured.out == ""


def test_subprocess_exit_status(tmp_path):
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    run = subprocess.run([sys.executable, "-c", CLI, "validate", str(tmp_path / "junk.parquet")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("jitterscope validate: invalid: ") and "Parquet" in run.stderr
