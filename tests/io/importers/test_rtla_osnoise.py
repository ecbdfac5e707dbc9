"""``import --as poll`` of rtla osnoise top / hwnoise / osnoise hist text (the kernel documentation's examples,
tests/data/formats/README.md): what rtla prints is kept, what it does not print is not invented."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset, read_poll_table, validate_dataset
from jitterscope.poll import poll_findings, summarize_poll

RTLA = Path(__file__).resolve().parents[2] / "data" / "formats" / "rtla"


def _import(source: Path, out: Path) -> Path:
    assert main(["import", str(source), "--as", "poll", "-o", str(out), "-q"]) == 0
    verdict = validate_dataset(out)
    assert verdict.valid and verdict.kind == "poll", verdict.problems
    return out


def test_osnoise_top_keeps_every_column_and_counts_no_gap(tmp_path):
    out = _import(RTLA / "osnoise-top.txt", tmp_path / "top")
    meta = open_dataset(out).metadata
    assert [t.cpu for t in meta.threads] == [0, 1, 2, 3] and meta.source["gap_counts"] is False
    assert meta.threads[0].extra["osnoise"] == {
        "cpu": 0, "periods": 59, "runtime_us": 53100000, "noise_us": 304896, "cpu_available_percent": 99.4258,
        "max_noise_us": 6978, "max_single_us": 56, "hw_count": 549, "nmi_count": 0, "irq_count": 53111,
        "softirq_count": 1590, "thread_count": 13}
    windows = read_poll_table(out)
    assert windows.column("window_ns").to_pylist()[0] == 53_100_000_000
    assert windows.column("noise_ns").to_pylist()[3] == 204_935_000
    assert sum(windows.column("iterations").to_pylist()) == 0  # rtla counts neither iterations nor gaps
    summary = summarize_poll(out)
    cpu0 = summary.threads[0]
    assert cpu0.max_ns == 56_000 and cpu0.classes == () and math.isnan(cpu0.per_second)
    # rtla printed 99.42580 (truncated); the same noise over the same runtime
    assert math.floor(cpu0.available_percent * 1e5) == 9942580
    assert "no interruption rate" in summary.notes[0]
    head = poll_findings(summary).headline
    assert all("how many gaps is not in the source" in h and "nan" not in h for h in head), head


def test_hwnoise_has_its_two_counts_only(tmp_path):
    out = _import(RTLA / "hwnoise.txt", tmp_path / "hw")
    osnoise = open_dataset(out).metadata.threads[0].extra["osnoise"]
    assert osnoise["cpu"] == 1 and osnoise["hw_count"] == 4 and osnoise["nmi_count"] == 74
    assert "irq_count" not in osnoise and osnoise["runtime_us"] == 599_000_000


def test_osnoise_hist_buckets_become_the_histogram(tmp_path):
    out = _import(RTLA / "osnoise-hist.txt", tmp_path / "hist")
    meta = open_dataset(out).metadata
    edges = meta.poll["histogram_edges_ns"]
    assert edges[:4] == [0, 1000, 10_000, 20_000] and len(meta.threads) == 12
    summary = summarize_poll(out)
    cpu0 = summary.threads[0]
    assert cpu0.interruptions == 55215 and cpu0.runtime_ns == 60 * 10**9 and cpu0.max_ns == 30_000
    assert [c.count for c in cpu0.classes] == [42982, 12224 + 8 + 1, 0, 0]
    # noise from the bucket midpoints: [1, 10) µs at 5.5 µs, [10, 20) at 15, ...
    assert cpu0.noise_ns == 42982 * 5500 + 12224 * 15000 + 8 * 25000 + 1 * 35000
    assert meta.threads[11].extra["osnoise"]["max"] == 50 and meta.threads[11].extra["osnoise"]["count"] == 54880


def test_a_terminal_session_keeps_its_last_block(tmp_path):
    """Without -q rtla refreshes the screen (ESC c, colours): every block is the total so far, the last one wins."""
    text = (RTLA / "osnoise-top.txt").read_text()
    title, rest = text.split("\n", 1)
    first = "\x1bc\x1b[2;37;40m" + title + "\x1b[0;0;0m\n" + rest.replace(" #59 ", " #1  ")
    (tmp_path / "session.txt").write_text("\n".join(first.splitlines()[:4]) + "\n" + "\x1bc" + text)
    out = _import(tmp_path / "session.txt", tmp_path / "s")
    assert open_dataset(out).metadata.threads[0].extra["osnoise"]["periods"] == 59


@pytest.mark.parametrize(("name", "change", "says"), [
    ("osnoise-top.txt", lambda t: t.replace("99.42580", "99.52580"), "'% CPU Aval' 99.52580 is not"),
    ("osnoise-top.txt", lambda t: t.replace("    0 #59", "    0 #x59").replace("  0 #59", "  0 #x9"),
     "line 4: '0 #x9"),
    ("osnoise-top.txt", lambda t: t.split("\n  0 #59")[0] + "\n", "a header without any CPU row"),
    ("osnoise-top.txt", lambda t: t.replace("        6978 ", "     6978000 "), "Max Noise above the noise"),
    ("osnoise-hist.txt", lambda t: t.replace("count:    55215", "count:    55216"), "count says 55216"),
    ("osnoise-hist.txt", lambda t: t.replace("count:", "cnt:"), "line 12"),
    ("osnoise-hist.txt", lambda t: "\n".join(t.splitlines()[:-5]) + "\n", "'over:' line: missing"),
    ("osnoise-hist.txt", lambda t: t.replace("# Duration:   0 00:01:00\n", ""), "'# Duration:' line"),
    ("osnoise-hist.txt", lambda t: t.replace("CPU-003", "CPU-x"), "column 'CPU-x' is not CPU-NNN"),
    ("osnoise-hist.txt", lambda t: t.replace("\n20 ", "\n5  "), "index 5 after 10"),
])
def test_malformed_output_is_one_line(tmp_path, capsys, name, change, says):
    bad = tmp_path / name
    bad.write_text(change((RTLA / name).read_text()))
    assert main(["import", str(bad), "--as", "poll", "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "rtla-osnoise" in err, err
    assert not (tmp_path / "out").exists()
