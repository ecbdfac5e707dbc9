"""periodic_timer interval-statistics logs: blocks kept per thread in a summary-only dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from jitterscope.errors import ImportFormatError
from jitterscope.io import detect, import_files

DATA = Path(__file__).resolve().parents[2] / "data" / "formats" / "periodic-timer"


def test_issue_example_block():
    path = DATA / "issue-example.log"
    assert detect(path) == "periodic-timer"
    table, metadata = import_files([path])
    assert table.num_rows == 0 and metadata.kind == "histogram"
    (info,) = metadata.threads
    assert info.interval_ns == 16_666_670
    assert info.extra["period_blocks"] == [{
        "nominal_us": 16666.67, "min_us": 16552.33, "max_us": 16772.62, "mean_us": 16667.12, "stddev_us": 5.72,
        "errors": 585, "tolerance_us": 1.0, "error_min_us": -105.95, "error_max_us": 114.34,
        "error_mean_us": -0.48, "error_stddev_us": 28.12,
    }]
    assert any("period statistics" in n for n in metadata.source["notes"])


def test_blocks_under_thread_headings():
    _, metadata = import_files([DATA / "blocks.log"])
    assert [t.cpu for t in metadata.threads] == [0, 1]
    assert [len(t.extra["period_blocks"]) for t in metadata.threads] == [2, 2]
    lines = (DATA / "blocks.log").read_text().splitlines()
    assert metadata.threads[1].extra["period_blocks"][1]["max_us"] == float(lines[-2].split("max: ")[1].split()[0])
    assert metadata.threads[0].extra["period_blocks"][0]["errors"] == int(lines[2].split()[0])


def test_damaged_log_names_the_line(tmp_path):
    lines = (DATA / "blocks.log").read_text().splitlines()
    del lines[2]
    (tmp_path / "x.log").write_text("\n".join(lines))
    with pytest.raises(ImportFormatError, match=r"line 3: a 'period:' line follows a 'period:' line"):
        import_files([tmp_path / "x.log"])
    with pytest.raises(ImportFormatError, match=r"not valid periodic-timer output: line 1"):
        import_files([DATA.parent / "ct-verbose.txt"], fmt="periodic-timer")
