"""jitterscope import TRACE --onto DATASET -o OUT: a trace of the same run becomes the dataset's events table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from jitterscope.cli import main
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, read_trace_events, write_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Wake-ups on CPU 1 at 100.0001 s + k ms (CLOCK_MONOTONIC): the span of trace-cmd/report.txt."""
    n = 20
    expected = [100_000_100_000 + k * 1_000_000 for k in range(n)]
    actual = [e + 10_000 for e in expected]
    actual[0] = expected[0] + 500_000  # the spike report.txt explains
    table = pa.table({"cpu": pa.array([1] * n, pa.int32()), "thread": pa.array([0] * n, pa.int32()),
                      "seq": pa.array(range(n), pa.int64()), "expected_ns": pa.array(expected, pa.int64()),
                      "actual_ns": pa.array(actual, pa.int64())})
    meta = Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=1, interval_ns=1_000_000, samples=n, tid=500),))
    return write_dataset(table, meta, tmp_path / "run.parquet")


def test_attach_then_summary_trace(dataset: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "with-trace"
    assert main(["import", str(DATA / "trace-cmd" / "report.txt"), "--onto", str(dataset), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "trace-cmd-report trace of" in text and "_trace/part-00000.parquet (12 events, CPUs [1], 1000 ns" in text
    assert open_dataset(out).num_rows == 20
    events = read_trace_events(out)
    assert events.num_rows == 12 and events.info["source"]["onto"] == str(dataset)
    assert main(["summary", str(out), "--trace", "--spike-us", "100"]) == 0
    report = capsys.readouterr().out
    assert "1 spike(s) over 100 µs among 20 wake-up(s)" in report
    # the drop line sits inside the spike's window: not given a cause
    assert "500 µs late: incomplete trace" in report


def test_clock_that_cannot_be_aligned_is_refused_in_one_line(dataset: Path, tmp_path: Path, capsys) -> None:
    shifted = tmp_path / "local.txt"
    shifted.write_text((DATA / "trace-cmd" / "report.txt").read_text().replace("   100.000", "  5100.000"))
    assert main(["import", str(shifted), "--onto", str(dataset), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be aligned with the dataset's" in err[0] and "trace-cmd record -C mono" in err[0]
    assert not (tmp_path / "o").exists()


def test_trace_without_onto_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["import", str(DATA / "ftrace" / "instance-trace.txt"), "-o", str(tmp_path / "x.parquet")]) == 1
    assert "kernel trace text is not latency data; attach it" in capsys.readouterr().err


def test_summary_trace_json_and_usage(dataset: Path, tmp_path: Path, capsys) -> None:
    import json
    out = tmp_path / "with-trace"
    assert main(["import", str(DATA / "trace-cmd" / "report.txt"), "--onto", str(dataset), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["summary", str(out), "--trace", "--spike-us", "100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trace"]["n_spikes"] == 1 and doc["trace"]["spikes"][0]["status"] == "incomplete trace"
    assert doc["trace"]["lost_events"] == {"1": 12}
    # the default threshold: the spectrum's rule (median + 10 IQR) from the summary's streamed histogram
    assert main(["summary", str(out), "--trace", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the fixture's latencies: 19 of 10 µs and one of 500 µs, so p25 = p50 = p75 = 10 µs: 10 µs + 10 x 1 ns
    assert doc["trace"]["threshold_ns"] == pytest.approx(10_000 + 10, rel=2e-3)
    assert doc["trace"]["n_spikes"] == 1
    assert main(["summary", str(out), "--spike-us", "100"]) == 2  # a usage error
    assert "--spike-us and --worst go with --trace" in capsys.readouterr().err
    assert main(["summary", str(dataset), "--trace"]) == 1
    assert "no kernel trace in this dataset" in capsys.readouterr().err


def test_pack_says_the_trace_stays_behind(dataset: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "with-trace"
    assert main(["import", str(DATA / "trace-cmd" / "report.txt"), "--onto", str(dataset), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["pack", str(out), "-o", str(tmp_path / "packed.parquet")]) == 0
    assert "note: the kernel trace" in capsys.readouterr().out
