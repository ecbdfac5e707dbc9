"""Histogram overflows: counted in n, a percentile among them is "> range", the all row from the merged bins."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from jitterscope.cli import main
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.summary import summarize, summary_table

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


def _hand_made(tmp_path: Path) -> Path:
    # thread 0: 10 wake-ups in [1, 2) µs, 80 in [2, 3), 10 overflows above the 4 µs range (max 9 µs);
    # thread 1: 100 in [1, 2), no overflow
    table = pa.table({"thread": [0, 0, 1], "cpu": [0, 0, 1], "bin_start_ns": [1000, 2000, 1000],
                      "bin_width_ns": [1000] * 3, "count": [10, 80, 100]})
    threads = (ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000, samples=100,
                          extra={"overflows": 10, "overflow_above_ns": 4000, "min_ns": 1000, "avg_ns": 2900,
                                 "max_ns": 9000}),
               ThreadInfo(thread=1, cpu=1, interval_ns=1_000_000, samples=100,
                          extra={"overflows": 0, "min_ns": 1000, "avg_ns": 1500, "max_ns": 1900}))
    return write_dataset(table, Metadata(kind="histogram", threads=threads), tmp_path / "h.parquet")


def test_hand_made_histogram_with_overflows(tmp_path):
    summary = summarize(open_dataset(_hand_made(tmp_path)))
    first = summary.thread(0)
    assert first.n == 100 and first.overflows == 10  # the overflows count in n
    assert first.percentiles["50"] == 2500  # rank 49.5: in the [2, 3) µs bin, at its midpoint
    # p90: rank 89.1 interpolates between rank 89 (the last in range, 2.5 µs) and rank 90 (an overflow, > 4 µs):
    # only "above 2.5 + 0.1 × (4 − 2.5) µs" is known
    assert first.percentiles["90"] is None and first.percentiles_above["90"] == pytest.approx(2650)
    assert first.percentiles["99"] is None and first.percentiles_above["99"] == 4000  # rank 98.01: an overflow
    assert first.percentiles["99.9"] is None and "99.9" not in first.percentiles_above  # n·0.001 < 1: n/a
    assert first.mean_ns == 2900 and first.std_ns is None  # the source's average; std of unknown values: unknown
    overall = summary.overall
    assert overall.n == 200 and overall.overflows == 10
    assert overall.percentiles["90"] == 2500  # rank 179.1 of 200: still below the 190 values in range
    assert overall.percentiles["99"] is None and overall.percentiles_above["99"] == 4000  # rank 197.01
    assert overall.mean_ns == pytest.approx((2900 * 100 + 1500 * 100) / 200)
    rows = {row[0]: row for row in summary_table(summary).rows}
    assert rows["0"][9] == "> 4.00" and rows["all"][9] == "> 4.00" and rows["1"][9] == pytest.approx(1.504)
    assert rows["0"][8] == "> 2.65"


def _cells(text: str) -> dict[str, dict[str, str]]:
    lines = text.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["thread", "cpu"])
    header = lines[header_at].split()
    rows = {}
    for line in lines[header_at + 1:]:
        cells = line.replace("> ", ">").split()
        if len(cells) == len(header):
            rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def test_real_cyclictest_histogram_with_overflows(tmp_path, capsys):
    # cyclictest -h 200 on the test VM: "# Histogram Overflows: 00013 00006", 2,000 cycles per thread
    out = tmp_path / "ct.parquet"
    assert main(["import", str(DATA / "shared" / "cyclictest-histogram.txt"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    rows = _cells(capsys.readouterr().out)
    assert rows["0"]["n"] == rows["1"]["n"] == "2000" and rows["all"]["n"] == "4000"
    # 13 and 6 of 2,000 wake-ups above 200 µs: p99.9 (rank 1997.0) is among them, never interpolated below
    assert rows["0"]["p99.9"] == rows["1"]["p99.9"] == rows["all"]["p99.9"] == ">200.00"
    assert rows["0"]["p99.99"] == rows["all"]["p99.99"] == "n/a"  # 2,000 × 10⁻⁴ < 1: not resolved
    assert main(["summary", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for row in (*doc["threads"], doc["overall"]):
        assert row["percentiles"]["99.9"] is None and row["percentiles_above"] == {"99.9": 200_000.0}
    # the all row is the merged histogram's and lies between the threads' at every resolved percentile
    threads, overall = doc["threads"], doc["overall"]
    for key, value in overall["percentiles"].items():
        if value is not None:
            values = [t["percentiles"][key] for t in threads]
            assert min(values) - 1000 <= value <= max(values) + 1000, key


def test_real_jitterdebugger_results_overflows_count(tmp_path, capsys):
    # jitterdebugger's results.json: cpu 0 counted 2,982 wake-ups, 2,967 of them in its 1,000 µs histogram
    out = tmp_path / "jd.parquet"
    assert main(["import", str(DATA / "jd-shared" / "results.json"), "-o", str(out)]) == 0
    summary = summarize(open_dataset(out))
    first = summary.thread(0)
    assert (first.n, first.overflows) == (2982, 15)
    # rank 2978.02 (p99.9) is above the 2,967 in range: "> 1000 µs", not a value inside the histogram
    assert first.percentiles_above["99.9"] == 1_000_000.0 and first.percentiles["99.9"] is None
    assert first.percentiles["99"] is not None and first.percentiles["99"] < 1_000_000


def test_a_gate_on_a_percentile_among_the_overflows_is_decided_by_its_bound(tmp_path, capsys):
    out = tmp_path / "ct.parquet"
    assert main(["import", str(DATA / "shared" / "cyclictest-histogram.txt"), "-o", str(out)]) == 0
    capsys.readouterr()
    # p99.9 > 200 µs is known (it lies among the overflows): "p99.9 > 150us" holds, "p99.9 < 150us" does not
    assert main(["summary", str(out), "-q", "--fail-if", "p99.9>150us", "--fail-if", "p99.9<150us"]) == 3
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].split(": ", 1)[1].startswith("FAILED fail-if p99.9>150us: p99.9 > 200")
    assert lines[1].split(": ", 1)[1].startswith("passed fail-if p99.9<150us: p99.9 > 200")
    # above the bound nothing is known: undecided, so the gate fails rather than passes
    assert main(["summary", str(out), "-q", "--fail-if", "p99.9>500us"]) == 3
    assert "cannot tell" in capsys.readouterr().err


def test_real_400us_cyclictest_histogram_counts_its_overflows_in_n(tmp_path, capsys):
    # cyclictest -l5000 -h400: "# Total: 000004993 000004989", "# Histogram Overflows: 00007 00011"
    out = tmp_path / "ct.parquet"
    assert main(["import", str(DATA / "ct-hist-overflows.txt"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    rows = _cells(capsys.readouterr().out)
    assert rows["0"]["n"] == rows["1"]["n"] == "5000" and rows["all"]["n"] == "10000"
    # 7 and 11 of 5,000 above 400 µs: p99.9 (rank 4995.0) lies among them; all: 18 of 10,000 (rank 9990.0)
    assert rows["0"]["p99.9"] == rows["1"]["p99.9"] == rows["all"]["p99.9"] == ">400.00"
    assert rows["all"]["p99.99"] == ">400.00"  # rank 9999.0 of 10,000, also an overflow: not "n/a", not a value
    doc_main = main(["summary", str(out), "--json"])
    assert doc_main == 0
    doc = json.loads(capsys.readouterr().out)
    for row in doc["threads"]:
        assert row["n"] == 5000 and row["percentiles"]["99.9"] is None
        assert row["percentiles_above"]["99.9"] == 400_000.0
    assert doc["overall"]["n"] == 10_000
