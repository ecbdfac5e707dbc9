"""cyclictest importers: -v (with --json/-q companions), -h/-H histograms, --json, -q summaries."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from jitterscope.cli import main
from jitterscope.errors import ImportFormatError, UnknownFormatError
from jitterscope.io import detect, import_files, parse_cmdline, reconstruct, resolve_intervals

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"


def _latency(table, thread: int) -> np.ndarray:
    rows = table.filter(np.asarray(table.column("thread")) == thread)
    return np.asarray(rows.column("actual_ns")) - np.asarray(rows.column("expected_ns"))


def _verbose_lines(path: Path) -> dict[int, list[int]]:
    """Independent reading of a -v file: thread -> latencies, by a plain split."""
    out: dict[int, list[int]] = {}
    for line in path.read_text().splitlines():
        parts = line.split(":")
        if len(parts) == 3 and parts[0].strip().isdigit():
            out.setdefault(int(parts[0]), []).append(int(parts[2]))
    return out


def _assert_matches_json(table, metadata, json_path: Path, unit_ns: int) -> list[int]:
    """Per thread: exact min/max/avg when complete; the missing count when not.  Returns the missing counts."""
    doc = json.loads(json_path.read_text())
    missing = []
    for info in metadata.threads:
        reported = doc["thread"][str(info.thread)]
        latency = _latency(table, info.thread) // unit_ns
        lost = reported["cycles"] - len(latency)
        missing.append(lost)
        assert info.extra["missing"] == lost
        if lost == 0:
            assert latency.min() == reported["min"]
            assert latency.max() == reported["max"]
            assert f"{latency.sum() / len(latency):.2f}" == f"{reported['avg']:.2f}"
        else:
            note = f"printed {len(latency)} samples for thread {info.thread} but counted {reported['cycles']}"
            assert any(note in n and f"{lost} missing" in n for n in metadata.source["notes"])
    return missing


def test_verbose_with_json_matches_cyclictest_and_reports_missing_samples():
    table, metadata = import_files([DATA / "ct-verbose.txt", DATA / "ct-verbose.json"])
    assert metadata.kind == "import"
    assert _assert_matches_json(table, metadata, DATA / "ct-verbose.json", 1000) == [0, 7]
    assert [t.interval_ns for t in metadata.threads] == [1_000_000, 1_500_000]
    assert [t.cpu for t in metadata.threads] == [0, 1]
    printed = _verbose_lines(DATA / "ct-verbose.txt")
    for thread, values in printed.items():
        assert np.array_equal(_latency(table, thread), np.asarray(values) * 1000)


def test_verbose_nanoseconds_with_json():
    table, metadata = import_files([DATA / "ct-verbose-ns.txt", DATA / "ct-verbose-ns.json"])
    assert _assert_matches_json(table, metadata, DATA / "ct-verbose-ns.json", 1) == [0, 8]
    # thread 1 woke 7.57 ms late at 1.5 ms: cyclictest skipped periods, reconstructed as overruns
    rows = table.filter(np.asarray(table.column("thread")) == 1)
    late = int(np.argmax(_latency(table, 1)))
    assert _latency(table, 1)[late] == 7_571_176
    assert np.asarray(rows.column("overruns"))[late + 1] == (7_571_176 - 1) // 1_500_000


@pytest.mark.slow
def test_live_cyclictest_run_imports_to_its_own_numbers(tmp_path):
    if shutil.which("cyclictest") is None:
        pytest.skip("cyclictest (rt-tests) is not installed")
    out, js = tmp_path / "v.txt", tmp_path / "run.json"
    with out.open("w") as handle:
        proc = subprocess.run(["cyclictest", "-v", f"--json={js}", "-l", "2000", "-i", "1000", "-t2", "-m",
                               "-p", "80"], stdout=handle, stderr=subprocess.PIPE, timeout=60, check=False)
    if proc.returncode != 0 or not js.exists():
        pytest.skip(f"cyclictest could not run here: {proc.stderr.decode(errors='replace').strip()[:200]}")
    table, metadata = import_files([out, js])
    missing = _assert_matches_json(table, metadata, js, 1000)
    assert missing[0] == 0  # the fastest thread reaches -l and ends the run: it is complete
    assert [t.interval_ns for t in metadata.threads] == [1_000_000, 1_500_000]


def test_headers_are_shifted_by_the_distance():
    # cyclictest prints "Thread N Interval" after adding -d for the next thread: headers 1000/1500
    # in the shared file mean intervals 500/1000 µs; thread 1 then wakes about half as often.
    _, metadata = import_files([DATA / "shared" / "cyclictest-verbose.txt"])
    assert [t.interval_ns for t in metadata.threads] == [500_000, 1_000_000]
    counts = [t.samples for t in metadata.threads]
    assert counts == [1500, 760]
    assert any("µs" in n for n in metadata.source["notes"])  # unit assumed without the JSON: said so
    assert resolve_intervals([1500], None)[0] == [1000]
    assert "ASSUMED" in resolve_intervals([1500], None)[1]
    assert resolve_intervals([1000, 1000], {"histogram": 100})[0] == [1000, 1000]
    assert resolve_intervals([1500, 2000], {"interval_us": 1000, "distance_us": 500})[0] == [1000, 1500]


def test_reconstruct_hand_computed():
    # interval 1 ms; a 2.5 ms late wake-up makes cyclictest skip 2 periods before the next one
    latency = np.array([10_000, 2_500_000, 30_000, 1_000_000], dtype=np.int64)
    seq = np.arange(4, dtype=np.int64)
    expected, overruns = reconstruct(latency, seq, 1_000_000, resolution_ns=1)
    assert overruns.tolist() == [0, 0, 2, 0]  # exactly 1 ms late: now == next, nothing skipped
    assert expected.tolist() == [0, 1_000_000, 4_000_000, 5_000_000]
    # µs data: a printed 1000 µs latency was really 1000.x µs, so one period was skipped
    expected, overruns = reconstruct(latency, seq, 1_000_000, resolution_ns=1000)
    assert overruns.tolist() == [0, 0, 2, 0]
    _, overruns = reconstruct(np.array([1_000_000, 5_000], np.int64), np.arange(2), 1_000_000, 1000)
    assert overruns.tolist() == [0, 1]


def test_smi_field(tmp_path):
    # cyclictest --smi prints "%8d:%8lu:%8ld%8ld": the SMI count glued to the latency
    lines = ["Thread 0 Interval: 1000"]
    for cycle, (lat, smi) in enumerate([(12, 0), (15, 1), (12345678, 2), (11, 0)]):
        lines.append(f"{0:8d}:{cycle:8d}:{lat:8d}{smi:8d}")
    path = tmp_path / "smi.txt"
    path.write_text("\n".join(lines) + "\n")
    table, _ = import_files([path])
    assert np.asarray(table.column("smi")).tolist() == [0, 1, 3, 3]
    assert (_latency(table, 0) // 1000).tolist() == [12, 15, 12345678, 11]


def test_histogram_footer_equals_bins():
    table, metadata = import_files([DATA / "ct-hist.txt"])
    text = (DATA / "ct-hist.txt").read_text()
    footer = {k: [int(v) for v in vals.split()] for k, vals in re.findall(r"# ([A-Za-z ]+): ([\d ]+)\n", text)}
    for info in metadata.threads:
        rows = table.filter(np.asarray(table.column("thread")) == info.thread)
        starts_us = np.asarray(rows.column("bin_start_ns")) // 1000
        counts = np.asarray(rows.column("count"))
        assert counts.sum() == footer["Total"][info.thread]
        assert counts.sum() + info.extra["overflows"] == info.samples
        assert info.extra["overflows"] == footer["Histogram Overflows"][info.thread] == 0
        assert starts_us[counts > 0].min() == footer["Min Latencies"][info.thread]
        assert starts_us[counts > 0].max() == footer["Max Latencies"][info.thread]
        assert int((starts_us * counts).sum() / counts.sum()) == footer["Avg Latencies"][info.thread]
    assert set(np.asarray(table.column("bin_width_ns")).tolist()) == {1000}


def test_histogram_overflows_accounted_against_json():
    for hist, js in ((DATA / "shared" / "cyclictest-histogram.txt", DATA / "shared" / "cyclictest-summary.json"),
                     (DATA / "ct-histofall.txt", DATA / "ct-histofall.json")):
        table, metadata = import_files([hist, js])
        doc = json.loads(js.read_text())
        for info in metadata.threads:
            reported = doc["thread"][str(info.thread)]
            counts = np.asarray(table.filter(np.asarray(table.column("thread")) == info.thread).column("count"))
            assert counts.sum() + info.extra["overflows"] == reported["cycles"] == info.samples
            assert info.extra["min_ns"] == reported["min"] * 1000
            assert info.extra["max_ns"] == reported["max"] * 1000
            assert info.cpu == reported["cpu"]
    _, metadata = import_files([DATA / "shared" / "cyclictest-histogram.txt"])
    assert [t.extra["overflows"] for t in metadata.threads] == [13, 6]
    assert any("13 of 2000" in n for n in metadata.source["notes"])


def test_json_alone_is_a_histogram_with_exact_average():
    table, metadata = import_files([DATA / "ct-hist.json"])
    doc = json.loads((DATA / "ct-hist.json").read_text())
    assert metadata.kind == "histogram"
    for info in metadata.threads:
        rows = table.filter(np.asarray(table.column("thread")) == info.thread)
        us = np.asarray(rows.column("bin_start_ns")) // 1000
        counts = np.asarray(rows.column("count"))
        reported = doc["thread"][str(info.thread)]
        assert f"{(us * counts).sum() / counts.sum():.2f}" == f"{reported['avg']:.2f}"
        assert counts.sum() == reported["cycles"]


def test_quiet_summary_lines():
    table, metadata = import_files([DATA / "ct-quiet.txt"])
    assert metadata.kind == "histogram" and table.num_rows == 0
    first = metadata.threads[0]
    assert (first.samples, first.extra["min_ns"], first.extra["avg_ns"], first.extra["max_ns"]) == (
        1000, 9000, 13000.0, 208000)
    assert first.interval_ns == 1_000_000 and metadata.threads[1].interval_ns == 1_500_000
    assert first.extra["summary_only"] and first.extra["overflows"] == 1000
    _, with_json = import_files([DATA / "ct-quiet.txt", DATA / "ct-quiet.json"])
    assert with_json.threads[0].extra["avg_ns"] == 13450.0  # the JSON's two decimals
    assert with_json.threads[1].interval_ns == 1_500_000


def test_quiet_summary_checks_verbose_counts(tmp_path):
    # A -q line for the same run as ct-verbose.txt, written as cyclictest prints it
    doc = json.loads((DATA / "ct-verbose.json").read_text())
    lines = []
    for t, entry in doc["thread"].items():
        lines.append(f"T:{int(t):2d} ({1000 + int(t):5d}) P:80 I:{1000 + 500 * int(t)} C:{entry['cycles']:7d} "
                     f"Min:{entry['min']:7d} Act:{15:5d} Avg:{int(entry['avg']):5d} Max:{entry['max']:8d}")
    quiet = tmp_path / "q.txt"
    quiet.write_text("\n".join(lines) + "\n")
    _, metadata = import_files([DATA / "ct-verbose.txt", quiet])
    assert [t.extra["missing"] for t in metadata.threads] == [0, 7]
    assert "summary lines" in metadata.source["reconstructed"]["expected_ns"]


def test_mismatched_companion_is_refused():
    with pytest.raises(ImportFormatError, match="not from the same run"):
        import_files([DATA / "ct-verbose.txt", DATA / "ct-hist.json"])
    with pytest.raises(ImportFormatError, match="different tools"):
        import_files([DATA / "ct-verbose.txt", DATA / "oslat.txt"])


def test_other_format_or_corruption_is_one_clear_line(tmp_path):
    with pytest.raises(ImportFormatError, match=r"not valid cyclictest-verbose output: line 1"):
        import_files([DATA / "oslat.txt"], fmt="cyclictest-verbose")
    with pytest.raises(ImportFormatError, match=r"cyclictest-histogram.*'# Histogram'"):
        import_files([DATA / "ct-verbose.txt"], fmt="cyclictest-histogram")
    with pytest.raises(ImportFormatError, match="no 'T: n"):
        import_files([DATA / "shared" / "cyclictest-quiet.txt"], fmt="cyclictest-quiet")
    with pytest.raises(UnknownFormatError):
        import_files([DATA / "shared" / "cyclictest-quiet.txt"])
    lines = (DATA / "ct-verbose.txt").read_text().splitlines()
    lines[40] = lines[40].replace(":", ";", 1)
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines))
    with pytest.raises(ImportFormatError, match=r"line 41: .* is not a 'thread:cycle:latency' line") as info:
        import_files([bad])
    assert "\n" not in str(info.value)
    hist = (DATA / "ct-hist.txt").read_text().splitlines()
    del hist[100]
    (tmp_path / "h.txt").write_text("\n".join(hist))
    with pytest.raises(ImportFormatError, match=r"line 101: bin 100 where bin 99 was expected"):
        import_files([tmp_path / "h.txt"])


def test_detect_names_every_fixture():
    expected = {
        "ct-verbose.txt": "cyclictest-verbose", "ct-verbose.json": "cyclictest-json",
        "ct-hist.txt": "cyclictest-histogram", "ct-histofall.txt": "cyclictest-histogram",
        "ct-quiet.txt": "cyclictest-quiet", "shared/cyclictest-summary.json": "cyclictest-json",
        "shared/cyclictest-verbose.txt": "cyclictest-verbose",
    }
    for name, fmt in expected.items():
        assert detect(DATA / name) == fmt, name


def test_parse_cmdline():
    options = parse_cmdline("cyclictest -t2 -a -p99 -i1000 -l2000 -q -m --histogram=200 --json=x.json -d 250 -N")
    assert options == {"threads": 2, "priority": 99, "interval_us": 1000, "loops": 2000, "quiet": True,
                       "mlockall": True, "histogram": 200, "distance_us": 250, "nsecs": True, "affinity": True}
    assert parse_cmdline("cyclictest -a 0-1 -y rr --priority=80 -mq") == {
        "affinity": "0-1", "policy": "rr", "priority": 80, "mlockall": True, "quiet": True}
    assert parse_cmdline("cyclictest --affinity=1,3 --policy=FIFO -i 100") == {
        "affinity": "1,3", "policy": "fifo", "interval_us": 100}
    assert parse_cmdline("cyclictest -a -i 100")["affinity"] is True


def test_verbose_and_quiet_in_one_file():
    # "cyclictest -v -q" prints the samples and, at exit, the summary lines: the file checks itself
    _, metadata = import_files([DATA / "ct-vq.txt"])
    summary_lines = [line for line in (DATA / "ct-vq.txt").read_text().splitlines() if line.startswith("T:")]
    assert len(summary_lines) == 2
    assert [t.extra["missing"] for t in metadata.threads] == [0, 208 - 201]
    assert [t.interval_ns for t in metadata.threads] == [1_000_000, 1_500_000]
    assert "I: field" in metadata.source["reconstructed"]["expected_ns"]
    _, with_json = import_files([DATA / "ct-vq.txt", DATA / "ct-vq.json"])
    assert with_json.threads[0].extra["source_avg_ns"] == 20690.0  # the JSON's two decimals win


def test_policy_and_priority_come_from_the_json_command_line(tmp_path):
    # ct-verbose.json ran "-m -p 80 -i 1000 -t2": SCHED_FIFO 80 (cyclictest's rule for -p without -y)
    _, metadata = import_files([DATA / "ct-verbose.txt", DATA / "ct-verbose.json"])
    assert metadata.granted == {"policy": "fifo", "priority": 80}
    assert metadata.settings["asked"] == {"interval_ns": 1_000_000, "loops": 1000, "priority": 80, "policy": "fifo",
                                          "mlockall": True}
    assert [t.tid for t in metadata.threads] == [None, None]  # neither -v nor --json prints tids
    doc = json.loads((DATA / "ct-verbose.json").read_text())
    doc["cmdline:"] = "cyclictest -v -y rr -p 42 -a 1,0 -d 0 -i 1000 -t2 --json=x.json"
    (tmp_path / "rr.json").write_text(json.dumps(doc))
    _, rr = import_files([DATA / "ct-verbose.txt", tmp_path / "rr.json"])
    assert rr.granted == {"policy": "rr", "priority": 42}
    assert rr.settings["asked"]["affinity"] == "1,0" and rr.settings["asked"]["distance_ns"] == 0


def test_unknown_priority_and_tid_stay_unknown():
    _, alone = import_files([DATA / "ct-verbose.txt"])
    assert alone.settings is None and [t.tid for t in alone.threads] == [None, None]
    # -v -q: the summary lines give each thread's tid and the P: field
    _, vq = import_files([DATA / "ct-vq.txt"])
    assert [t.tid for t in vq.threads] == [2511, 2512]
    assert vq.granted == {"priority": 80}
    _, quiet = import_files([DATA / "ct-quiet.txt"])
    assert [t.tid for t in quiet.threads] == [11295, 11296] and quiet.granted == {"priority": 80}


def test_summary_prints_the_imported_priority_and_question_marks_for_unknowns(tmp_path, capsys):
    lines = {}
    for name, files in (("json", ["ct-verbose.txt", "ct-verbose.json"]), ("alone", ["ct-verbose.txt"]),
                        ("vq", ["ct-vq.txt"])):
        out = tmp_path / f"{name}.parquet"
        assert main(["import", *(str(DATA / f) for f in files), "-o", str(out)]) == 0
        capsys.readouterr()
        assert main(["summary", str(out), "-q"]) == 0
        lines[name] = capsys.readouterr().out.splitlines()[0]
    assert lines["json"].startswith("T: 0 (    ?) P:80 I:1000 C:   1000 ")
    assert lines["alone"].startswith("T: 0 (    ?) P: ? I:1000 C:   1000 ")
    assert lines["vq"].startswith("T: 0 ( 2511) P:80 I:1000 C:    300 ")
