"""jitterscope summary: cyclictest's line and periodic_timer's blocks reproduced from independent arithmetic."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.io import BaseLatency, Drops, PeriodicDisturbance, SimulationSpec, Stalls, write_simulation

SPEC = SimulationSpec(
    threads=2, samples=3000, interval_ns=250_000,
    base=BaseLatency(distribution="lognormal", median_ns=4_000, spread=0.6),
    effects=(PeriodicDisturbance(frequency_hz=20, amplitude_ns=80_000, width_ns=250_000), Stalls(probability=2e-3),
             Drops(probability=2e-3)),
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_simulation(SPEC, tmp_path_factory.mktemp("summary") / "s.parquet", 17)


def _rows(path):
    df = open_dataset(path).read().to_pandas()
    return {t: g for t, g in df.groupby("thread")}


def _calcdiff_us(actual: int, expected: int) -> int:
    # cyclictest's calcdiff on timespecs, with C's truncating integer division
    seconds = actual // 10**9 - expected // 10**9
    nsec = actual % 10**9 - expected % 10**9
    return seconds * 10**6 + int(nsec / 1000)


def test_cyclictest_line_reproduces_independent_numbers(dataset, capsys):
    assert main(["summary", str(dataset), "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    for thread, rows in _rows(dataset).items():
        us = [_calcdiff_us(a, e) for a, e in zip(rows.actual_ns.tolist(), rows.expected_ns.tolist(), strict=True)]
        avg = int(sum(us) / len(us))
        line = ("T:%2d (%5d) P:%2d I:%d C:%7d Min:%7d Act:%5d Avg:%5d Max:%8d"  # noqa: UP031
                % (thread, 20_000 + thread, 99, 250, len(us), min(us), us[-1], avg, max(us)))
        assert out[thread] == line


def test_table_has_every_statistic_with_units(dataset, capsys):
    assert main(["summary", str(dataset), "-q"]) == 0
    out = capsys.readouterr().out
    assert "latency in µs" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("thread"))
    assert header.split() == ["thread", "cpu", "n", "min", "p50", "mean", "std", "MAD", "p90", "p99", "p99.9",
                              "p99.99", "p99.999", "max", "overruns", "drops"]
    rows = _rows(dataset)
    table = {line.split()[0]: line.split() for line in out.splitlines()[len(rows) + 3:] if line.strip()}
    for thread, g in rows.items():
        lat = (g.actual_ns - g.expected_ns).to_numpy()
        cells = table[str(thread)]
        assert cells[2] == str(len(g))
        assert cells[3] == f"{lat.min() / 1000:.2f}" and cells[13] == f"{lat.max() / 1000:.2f}"
        assert cells[5] == f"{lat.mean() / 1000:.2f}"
        for column, q in ((9, 99.0), (10, 99.9), (11, 99.99)):
            if len(lat) * (1 - q / 100) < 1:  # not resolved by n wake-ups: n/a, as in the report and the JSON
                assert cells[column] == "n/a"
            else:
                assert float(cells[column]) == pytest.approx(np.percentile(lat, q) / 1000, rel=1e-3, abs=0.006)
        assert cells[14] == str(int(g.overruns.sum()))
    assert table["all"][2] == str(sum(len(g) for g in rows.values()))


def _periodic_blocks(rows, block, tolerance_us, interval_us):
    seq, actual = rows.seq.tolist(), rows.actual_ns.tolist()
    periods = [(actual[i] - actual[i - 1]) / 1000 for i in range(1, len(seq)) if seq[i] - seq[i - 1] == 1]
    lines = []
    for start in range(0, len(periods) - block + 1, block):
        p = periods[start:start + block]
        lines.append(f"period: {interval_us:.2f} usecs min: {min(p):.2f} max: {max(p):.2f} "
                     f"mean: {statistics.fmean(p):.2f} stddev: {statistics.pstdev(p):.2f}")
        errors = [interval_us - v for v in p if abs(interval_us - v) > tolerance_us]
        line = f"{len(errors)} > {tolerance_us:g} usec errors"
        if errors:
            line += (f" min: {min(errors):.2f} max: {max(errors):.2f} mean: {statistics.fmean(errors):.2f} "
                     f"stddev: {statistics.pstdev(errors):.2f}")
        lines.append(line)
    return lines


def test_interval_stats_blocks_reproduce_periodic_timer_shape(dataset, capsys):
    assert main(["summary", str(dataset), "-q", "--interval-stats", "500", "--tolerance", "2.5"]) == 0
    out = capsys.readouterr().out.splitlines()
    for thread, rows in _rows(dataset).items():
        heading = out.index(f"thread {thread} (cpu {thread}):")
        expected = _periodic_blocks(rows, 500, 2.5, 250.0)
        assert len(expected) >= 5
        assert out[heading + 1: heading + 1 + len(expected)] == expected


def test_json_has_the_same_numbers(dataset, capsys):
    assert main(["summary", str(dataset), "--json", "--interval-stats", "500"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = _rows(dataset)
    for entry in doc["threads"]:
        g = rows[entry["thread"]]
        lat = (g.actual_ns - g.expected_ns).to_numpy()
        assert entry["n"] == len(g) and entry["max_ns"] == lat.max()
        assert entry["mean_ns"] == pytest.approx(lat.mean(), rel=1e-12)
        assert entry["percentiles"]["99.9"] == pytest.approx(np.percentile(lat, 99.9), rel=1e-3)
        assert entry["cyclictest"]["cycles"] == len(g)
        assert "histogram" not in entry
    assert len(doc["intervals"]["blocks"]) >= 10
    assert not math.isnan(doc["overall"]["std_ns"])


@pytest.mark.parametrize("args, words", [
    (["--interval-stats", "0"], "--interval-stats"),
    (["--tolerance", "-1"], "--tolerance"),
])
def test_bad_options_one_line(dataset, capsys, args, words):
    assert main(["summary", str(dataset), *args]) == 2  # a usage error, refused by the number parser
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_missing_dataset_one_line(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "nope.parquet")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture(scope="module")
def quiet_import(tmp_path_factory):
    """cyclictest -q --json (no histogram) with its -q stdout: count/min/avg/max per thread only."""
    out = tmp_path_factory.mktemp("quiet") / "q.parquet"
    assert main(["import", str(FORMATS / "ct-quiet.json"), str(FORMATS / "ct-quiet.txt"), "-o", str(out)]) == 0
    return out


def test_summary_only_source_prints_what_it_knows(quiet_import, capsys):
    assert main(["summary", str(quiet_import), "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    # ct-quiet.json: thread 0 cycles 1000 min 9 max 208 avg 13.45; thread 1 cycles 678 min 12 max 46 avg 22.84 (µs)
    assert out[0].startswith("T: 0 (11295) P:") and out[0].endswith("I:1000 C:   1000 Min:      9 Act:    - "
                                                                     "Avg:   13 Max:     208")
    assert out[1].endswith("I:1500 C:    678 Min:     12 Act:    - Avg:   22 Max:      46")
    rows = {line.split()[0]: line.split() for line in out if line.strip()[:1] in "01a" and "n/a" in line}
    header = next(line.split() for line in out if line.strip().startswith("thread"))
    col = {name: i for i, name in enumerate(header)}
    assert rows["0"][col["n"]] == "1000" and rows["0"][col["min"]] == "9.00"
    assert rows["0"][col["mean"]] == "13.45" and rows["0"][col["max"]] == "208.00"
    assert rows["1"][col["mean"]] == "22.84" and rows["1"][col["max"]] == "46.00"
    mean_all = (1000 * 13.45 + 678 * 22.84) / 1678  # the mean of all wake-ups, from the two threads' means
    assert rows["all"][col["n"]] == "1678" and rows["all"][col["mean"]] == f"{mean_all:.2f}"
    assert rows["all"][col["min"]] == "9.00" and rows["all"][col["max"]] == "208.00"
    for row in rows.values():
        assert all(row[col[c]] == "n/a" for c in ("p50", "std", "MAD", "p90", "p99", "p99.999", "overruns"))
    assert any(line.startswith("n/a (summary-only source)") for line in out)


def test_summary_only_source_json_has_nulls(quiet_import, capsys):
    assert main(["summary", str(quiet_import), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    first, overall = data["threads"][0], data["overall"]
    assert first["summary_only"] is True and first["n"] == 1000
    assert (first["min_ns"], first["mean_ns"], first["max_ns"]) == (9000, 13450, 208000)
    assert first["std_ns"] is None and first["mad_ns"] is None and set(first["percentiles"].values()) == {None}
    assert first["cyclictest"] == {"cycles": 1000, "min_us": 9, "act_us": None, "avg_us": 13, "max_us": 208}
    assert overall["n"] == 1678 and overall["mean_ns"] == pytest.approx((1000 * 13450 + 678 * 22840) / 1678)


def test_summary_of_jitterdebugger_stdout_alone(tmp_path, capsys):
    out = tmp_path / "jd.parquet"
    assert main(["import", str(FORMATS / "jd-fresh" / "stdout.txt"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    text = (FORMATS / "jd-fresh" / "stdout.txt").read_text()
    lines = re.findall(r"C:\s*(\d+) Min:\s*(\d+) Avg:\s*([\d.]+) Max:\s*(\d+)", text)
    assert len(lines) == len(data["threads"]) == 2
    for thread, (count, low, avg, high) in zip(data["threads"], lines, strict=True):
        assert (thread["n"], thread["min_ns"], thread["max_ns"]) == (int(count), int(low) * 1000, int(high) * 1000)
        assert thread["mean_ns"] == pytest.approx(float(avg) * 1000)
    assert data["overall"]["n"] == sum(int(c) for c, *_ in lines)
    assert all(t["summary_only"] and t["percentiles"]["99"] is None for t in data["threads"])
