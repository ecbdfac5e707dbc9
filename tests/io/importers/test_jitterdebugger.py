"""jitterdebugger importer: samples.raw (28-byte packed records) with results.json and stdout."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from jitterscope.errors import ImportFormatError
from jitterscope.io import detect, import_files

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"


def _records(path: Path) -> list[tuple[int, int, int, int]]:
    """Independent decoding with struct: u32 cpu, i64 sec, i64 nsec, u64 latency, packed little-endian."""
    data = path.read_bytes()
    return [struct.unpack_from("<IqqQ", data, offset) for offset in range(0, len(data), 28)]


@pytest.mark.parametrize("folder", ["jd-fresh", "jd-shared"])
def test_samples_give_results_json_numbers(folder):
    table, metadata = import_files([DATA / folder])
    results = json.loads((DATA / folder / "results.json").read_text())["cpu"]
    records = _records(DATA / folder / "samples.raw")
    assert table.num_rows == len(records)
    for info in metadata.threads:
        rows = table.filter(np.asarray(table.column("thread")) == info.thread)
        latency_us = (np.asarray(rows.column("actual_ns")) - np.asarray(rows.column("expected_ns"))) // 1000
        mine = [r for r in records if r[0] == info.thread]
        assert latency_us.tolist() == [r[3] for r in mine]
        assert np.asarray(rows.column("actual_ns")).tolist() == [r[1] * 10**9 + r[2] for r in mine]
        reported = results[str(info.thread)]
        missing = reported["count"] - len(mine)
        assert info.extra["missing"] == missing
        if missing == 0:
            assert (latency_us.min(), latency_us.max()) == (reported["min"], reported["max"])
            assert f"{latency_us.sum() / len(latency_us):.2f}" == f"{reported['avg']:.2f}"
        else:
            assert any(f"{missing} missing" in n and f"thread {info.thread}" in n for n in metadata.source["notes"])
            assert latency_us.min() >= reported["min"] and latency_us.max() <= reported["max"]
        assert info.interval_ns == 1_000_000  # recovered from the timestamps: jitterdebugger -i 1000
        steps = np.diff(np.asarray(rows.column("expected_ns")))
        assert np.all(steps == np.diff(np.asarray(rows.column("seq"))) * info.interval_ns)  # the contract's grid
    total_missing = sum(t.extra["missing"] for t in metadata.threads)
    assert total_missing == {"jd-fresh": 1, "jd-shared": 3}[folder]


def test_fresh_run_thread_zero_is_complete_and_exact():
    _, metadata = import_files([DATA / "jd-fresh"])
    assert [t.extra["missing"] for t in metadata.threads] == [0, 1]


def test_stdout_companion_gives_cpu_and_tid():
    _, metadata = import_files([DATA / "jd-fresh" / "samples.raw", DATA / "jd-fresh" / "results.json",
                                DATA / "jd-fresh" / "stdout.txt"])
    assert [t.tid for t in metadata.threads] == [11545, 11547]
    assert "stdout" in metadata.source["reconstructed"]["cpu"]
    _, alone = import_files([DATA / "jd-fresh" / "samples.raw"])
    assert "ASSUMED" in alone.source["reconstructed"]["cpu"]


def test_results_json_alone_is_a_histogram():
    table, metadata = import_files([DATA / "jd-shared" / "results.json"])
    results = json.loads((DATA / "jd-shared" / "results.json").read_text())["cpu"]
    assert metadata.kind == "histogram"
    for info in metadata.threads:
        counts = np.asarray(table.filter(np.asarray(table.column("thread")) == info.thread).column("count"))
        assert counts.sum() + info.extra["overflows"] == results[str(info.thread)]["count"] == info.samples


def test_stdout_alone_is_a_summary():
    _, metadata = import_files([DATA / "shared" / "jitterdebugger-stdout.json"])
    assert detect(DATA / "shared" / "jitterdebugger-stdout.json") == "jitterdebugger-stdout"
    assert [(t.cpu, t.samples, t.extra["max_ns"]) for t in metadata.threads] == [(0, 2982, 2962000),
                                                                               (1, 2963, 1770000)]


def test_truncated_or_damaged_samples_name_the_byte(tmp_path):
    data = (DATA / "jd-fresh" / "samples.raw").read_bytes()
    (tmp_path / "samples.raw").write_bytes(data[:-5])
    with pytest.raises(ImportFormatError, match=r"byte 55944: .*not a whole number of 28-byte records"):
        import_files([tmp_path / "samples.raw"], fmt="jitterdebugger-samples")
    broken = bytearray(data)
    broken[28 * 10 + 12 + 7] = 0x7F  # record 10's tv_nsec becomes huge
    (tmp_path / "samples.raw").write_bytes(bytes(broken))
    with pytest.raises(ImportFormatError, match=r"byte 280 \(record 10\): tv_nsec .* is .*impossible"):
        import_files([tmp_path / "samples.raw"], fmt="jitterdebugger-samples")


def test_samples_from_another_run_are_refused(tmp_path):
    shutil.copy(DATA / "jd-shared" / "samples.raw", tmp_path / "samples.raw")
    shutil.copy(DATA / "jd-fresh" / "results.json", tmp_path / "results.json")
    with pytest.raises(ImportFormatError, match="not from the same run"):
        import_files([tmp_path])


def test_other_format_refused():
    with pytest.raises(ImportFormatError, match=r"not valid jitterdebugger-samples output: byte \d+"):
        import_files([DATA / "ct-verbose.txt"], fmt="jitterdebugger-samples")
    with pytest.raises(ImportFormatError, match="not valid jitterdebugger-results output"):
        import_files([DATA / "ct-verbose.txt"], fmt="jitterdebugger-results")


@pytest.mark.parametrize("folder", ["jd-fresh", "jd-shared"])
def test_overruns_are_the_catch_up_wake_ups_the_capture_would_have_skipped(folder):
    # independently, from the raw records: jitterdebugger fires every 1 ms target; a target at or before the
    # previous wake-up's time had passed when that wake-up happened, so an absolute-time loop that skips missed
    # targets (jitterscope-capture) would have counted it as an overrun
    _, metadata = import_files([DATA / folder])
    records = _records(DATA / folder / "samples.raw")
    for info in metadata.threads:
        actual = np.array([r[1] * 10**9 + r[2] for r in records if r[0] == info.thread])
        latency_ns = np.array([r[3] for r in records if r[0] == info.thread]) * 1000
        target = actual - latency_ns  # within one µs of the reconstructed target
        passed = int(np.sum(target[1:] + 1000 <= actual[:-1]))
        assert info.overruns == passed
        assert info.extra["late_wakeups"] == int(np.sum(latency_ns > 1_000_000))
    if folder == "jd-shared":  # the shared run has stalls of up to 2.96 ms
        assert sum(t.overruns for t in metadata.threads) > 0
    assert "overruns" in metadata.source["reconstructed"]
