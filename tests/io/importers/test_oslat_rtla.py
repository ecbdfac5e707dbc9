"""oslat (text and --json) and rtla timerlat hist importers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from jitterscope.errors import ImportFormatError
from jitterscope.io import detect, import_files

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"


def test_oslat_text_and_json_agree():
    text_table, text_meta = import_files([DATA / "oslat.txt"])
    json_table, json_meta = import_files([DATA / "oslat.json"])
    assert detect(DATA / "oslat.txt") == "oslat" and detect(DATA / "oslat.json") == "oslat-json"
    doc = json.loads((DATA / "oslat.json").read_text())["thread"]
    for text_info, json_info in zip(text_meta.threads, json_meta.threads, strict=True):
        reported = doc[str(text_info.thread)]
        assert text_info.cpu == json_info.cpu == reported["cpu"]
        assert text_info.samples == json_info.samples == sum(reported["histogram"].values())
        assert text_info.extra["max_ns"] == reported["max"] * 1000
    assert np.array_equal(np.asarray(text_table.column("count")), np.asarray(json_table.column("count")))


def test_oslat_bucket_edges_and_open_last_bucket():
    table, metadata = import_files([DATA / "oslat.txt"])
    rows = table.filter(np.asarray(table.column("thread")) == 0)
    starts = np.asarray(rows.column("bin_start_ns"))
    widths = np.asarray(rows.column("bin_width_ns"))
    assert starts[0] == 0  # "001 (us)" holds loops of [0, 1) µs
    assert starts[-1] == 31_000 and widths[-1] == (32023 - 32 + 1) * 1000  # runs to the 32023 µs maximum
    assert metadata.threads[0].interval_ns == 0


def test_rtla_thread_columns():
    path = DATA / "rtla" / "timerlat-hist.txt"
    table, metadata = import_files([path])
    assert detect(path) == "rtla-timerlat-hist"
    assert [t.cpu for t in metadata.threads] == [0, 1, 2, 3, 4]
    lines = path.read_text().splitlines()
    header = lines[3].split()
    column = header.index("Thr-001")
    rows = [line.split() for line in lines[4:] if re.match(r"\d", line)]
    expected = {int(r[0]) * 1000: int(r[column]) for r in rows if int(r[column])}
    got = table.filter(np.asarray(table.column("thread")) == 1)
    assert dict(zip(np.asarray(got.column("bin_start_ns")).tolist(), np.asarray(got.column("count")).tolist(),
                    strict=True)) == expected
    assert metadata.threads[1].samples == 600002 and metadata.threads[1].extra["max_ns"] == 58000


def test_rtla_damaged_counts_refused(tmp_path):
    lines = (DATA / "rtla" / "timerlat-hist.txt").read_text().splitlines()
    del lines[10]
    (tmp_path / "t.txt").write_text("\n".join(lines))
    with pytest.raises(ImportFormatError, match=r"column Thr-000: bins hold .* but count says 600002"):
        import_files([tmp_path / "t.txt"])


def test_oslat_other_format_refused():
    with pytest.raises(ImportFormatError, match="not valid oslat output"):
        import_files([DATA / "ct-hist.txt"], fmt="oslat")
    with pytest.raises(ImportFormatError, match="not valid rtla-timerlat-hist output"):
        import_files([DATA / "oslat.txt"], fmt="rtla-timerlat-hist")
