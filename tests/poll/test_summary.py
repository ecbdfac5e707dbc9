"""summarize_poll: counts by size class, the worst gap, noise and the CPU available, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from jitterscope.io import import_oslat_poll
from jitterscope.poll import summarize_poll

from .conftest import T0, hand_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


def test_noise_and_available_percent_by_hand(tmp_path):
    # 2 s on CPU 1: a 2 µs gap, a 50 µs gap in the first second, a 5 ms gap in the second
    path = hand_dataset(tmp_path / "d", [(1, 100_000, 2_000), (1, 400_000_000, 50_000), (1, 1_300_000_000, 5_000_000)])
    summary = summarize_poll(path)
    cpu = summary.threads[0]
    assert cpu.noise_ns == 5_052_000
    assert cpu.available_percent == pytest.approx(100 * (1 - 5_052_000 / 2e9))  # 99.7474 %
    assert cpu.lost_percent == pytest.approx(0.2526)
    assert [(c.label, c.count) for c in cpu.classes] == [
        ("1 µs – 10 µs", 1), ("10 µs – 100 µs", 1), ("100 µs – 1 ms", 0), (">= 1 ms", 1)]
    assert cpu.per_second == pytest.approx(1.5)
    assert cpu.max_ns == 5_000_000 and cpu.max_at_ns == T0 + 1_300_000_000 and cpu.max_at_s == pytest.approx(1.3)
    assert cpu.rows_agree is True
    assert cpu.available_ci is None  # two whole windows: too few for an interval


def test_a_per_second_table_that_disagrees_with_the_rows_is_said(tmp_path):
    path = hand_dataset(tmp_path / "d", [(1, 100_000, 2_000), (1, 1_300_000_000, 5_000)],
                        windows_interruptions={1: [2, 1]})
    summary = summarize_poll(path)
    assert summary.threads[0].rows_agree is False
    assert any("count different interruptions" in note for note in summary.notes)


def test_interval_over_whole_windows(traced_poll):
    cpu = summarize_poll(traced_poll).threads[0]
    low, high = cpu.available_ci
    assert low <= cpu.available_percent <= high
    # throttling takes 50 ms of each second: about 95 % available, the tick and the rest a little more
    assert 94.8 < cpu.available_percent < 95.0
    ticks = next(c for c in cpu.classes if c.label == "1 µs – 10 µs")
    assert ticks.per_second_ci[0] <= ticks.per_second <= ticks.per_second_ci[1]


@pytest.mark.parametrize("name", ["oslat-fifo.txt", "oslat-poll.json"])
def test_real_oslat_output_imported_as_poll(tmp_path, name):
    source = DATA / name
    path = import_oslat_poll(source, tmp_path / "o")
    summary = summarize_poll(path)
    assert not summary.from_rows and any("histogram only" in note for note in summary.notes)
    cpu = summary.threads[0]
    # by hand from the file: every loop in the buckets '002 (us)' and up is an interruption (>= 1 µs)
    counts = _oslat_counts(source)
    assert cpu.interruptions == sum(count for label, count in counts.items() if label >= 2)
    assert cpu.iterations == sum(counts.values())
    ten = sum(count for label, count in counts.items() if 2 <= label <= 10)  # [1, 10) µs
    assert next(c.count for c in cpu.classes if c.label == "1 µs – 10 µs") == ten
    assert cpu.max_ns == {"oslat-fifo.txt": 46_222_000, "oslat-poll.json": 27_988_000}[name]
    assert cpu.max_at_ns is None
    assert any("open bucket" in note for note in summary.notes)


def _oslat_counts(path: Path) -> dict[int, int]:
    import json
    import re
    if path.suffix == ".json":
        histogram = json.loads(path.read_text())["thread"]["0"]["histogram"]
        return {int(k): int(v) for k, v in histogram.items()}
    return {int(m[1]): int(m[2]) for m in re.finditer(r"^\s*(\d+) \(us\):\s+(\d+)", path.read_text(), re.M)}
