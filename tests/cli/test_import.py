"""jitterscope import: detection, companions, notes, one-line errors."""

from __future__ import annotations

from pathlib import Path

from jitterscope.cli import main
from jitterscope.dataset import open_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


def test_import_cyclictest_with_json(tmp_path, capsys):
    out = tmp_path / "ct.parquet"
    assert main(["import", str(DATA / "ct-verbose.txt"), str(DATA / "ct-verbose.json"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"{out}: import dataset from cyclictest-verbose, 1671 rows, 2 thread(s)" in text
    assert "reconstructed expected_ns:" in text
    assert "note: cyclictest printed 671 samples for thread 1 but counted 678 wake-ups: 7 missing" in text
    dataset = open_dataset(out)
    assert dataset.metadata.source["files"] == [str(DATA / "ct-verbose.txt"), str(DATA / "ct-verbose.json")]


def test_import_directory_and_forced_format(tmp_path, capsys):
    assert main(["import", str(DATA / "jd-fresh"), "-o", str(tmp_path / "jd.parquet")]) == 0
    assert "from jitterdebugger-samples, 1999 rows" in capsys.readouterr().out
    assert main(["import", "--format", "cyclictest-histogram", str(DATA / "ct-hist.txt"),
                 "-o", str(tmp_path / "h.parquet")]) == 0
    assert open_dataset(tmp_path / "h.parquet").is_histogram


def test_import_errors_are_one_line(tmp_path, capsys):
    cases = [
        [str(DATA / "shared" / "cyclictest-quiet.txt")],  # no format: only the cpu_dma_latency note
        ["--format", "oslat", str(DATA / "ct-verbose.txt")],  # another format
        [str(tmp_path / "missing.txt")],
    ]
    for args in cases:
        assert main(["import", *args, "-o", str(tmp_path / "x.parquet")]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("jitterscope import: error:"), err
    (tmp_path / "exists.parquet").write_text("")
    assert main(["import", str(DATA / "ct-hist.txt"), "-o", str(tmp_path / "exists.parquet")]) == 1
    assert "already exists" in capsys.readouterr().err
