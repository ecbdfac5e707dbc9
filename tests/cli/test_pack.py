"""jitterscope pack: bytes per wake-up overall and per column, --anonymize report."""

from __future__ import annotations

import re
from pathlib import Path

from jitterscope.cli import main
from jitterscope.dataset import open_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


def test_pack_prints_sizes_and_anonymized_fields(tmp_path, capsys):
    dataset = tmp_path / "ct.parquet"
    assert main(["import", str(DATA / "ct-verbose.txt"), str(DATA / "ct-verbose.json"), "-o", str(dataset)]) == 0
    capsys.readouterr()
    packed = tmp_path / "packed.parquet"
    assert main(["pack", str(dataset), "-o", str(packed), "--anonymize"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"1671 rows, \d+ bytes, [\d.]+ bytes per wake-up \(1671 wake-ups\), sha256 [0-9a-f]{64}", out)
    for column in ("cpu", "thread", "seq", "expected_ns", "actual_ns", "overruns"):
        assert re.search(rf"^  {column}\s+\d+\s+[\d.]+  (DELTA_BINARY_PACKED|BYTE_STREAM_SPLIT|DICTIONARY)$", out,
                         re.M), column
    assert "anonymized: environment.hostname" in out
    metadata = open_dataset(packed).metadata
    assert metadata.environment["hostname"].startswith("anon-")
    assert metadata.pack["anonymized"][0] == "environment.hostname"
    assert "source.files[]" in metadata.pack["anonymized"]  # absolute paths of the inputs: hashed
    assert main(["pack", str(dataset), "-o", str(packed)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err
