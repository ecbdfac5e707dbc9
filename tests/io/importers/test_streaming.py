"""Streaming text import (issue 15): cyclictest -v read a few MiB at a time, the numpy fast path agreeing with
the line parser sample for sample, and its refusals still naming the line.

Peak RSS on a 2 GB file is measured by benchmarks/untrusted_memory.py, not here.
"""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.errors import ImportFormatError
from jitterscope.io.importers import _common, cyclictest_verbose


def _log(path, lines_per_thread: int = 30_000, threads: int = 2, tail: str = "") -> None:
    rng = np.random.default_rng(4)
    head = ["# /dev/cpu_dma_latency set to 0us", "Max CPUs = 2", "Online CPUs = 2"]
    head += [f"Thread {t} Interval: {1000 + 500 * t}" for t in range(threads)]
    body = []
    for cycle in range(lines_per_thread):
        for t in range(threads):
            body.append(f"{t:8d}:{cycle:8d}:{int(rng.integers(-3, 90)):8d}")
    path.write_text("\n".join(head + body) + "\n" + tail)


@pytest.mark.parametrize("chunk", [4096, 100_003, 64 << 20])
def test_chunked_parse_equals_the_line_parser(tmp_path, monkeypatch, chunk) -> None:
    path = tmp_path / "v.txt"
    _log(path)
    monkeypatch.setattr(_common, "CHUNK_BYTES", 64 << 20)
    monkeypatch.setattr(cyclictest_verbose, "_fast_chunk", lambda *args: False)
    reference = cyclictest_verbose.parse(path)
    monkeypatch.undo()
    monkeypatch.setattr(_common, "CHUNK_BYTES", chunk)
    calls = []
    fast = cyclictest_verbose._fast_chunk

    def spy(*args):
        calls.append(fast(*args))
        return calls[-1]

    monkeypatch.setattr(cyclictest_verbose, "_fast_chunk", spy)
    streamed = cyclictest_verbose.parse(path)
    if chunk < 1 << 20:
        assert any(calls), "the numpy path never ran"
    assert reference.settings == streamed.settings
    for a, b in zip(reference.samples, streamed.samples, strict=True):
        assert a.thread == b.thread and a.seq.dtype == np.int64
        np.testing.assert_array_equal(a.seq, b.seq)
        np.testing.assert_array_equal(a.latency_ns, b.latency_ns)
    assert sum(s.seq.size for s in streamed.samples) == 60_000


@pytest.mark.parametrize(("bad", "message"), [
    ("       1:   29999:      12\n", "cycle 29999 of thread 1 does not follow cycle 29999"),
    ("       7:   30000:      12\n", "thread 7 has no 'Thread 7 Interval:' header"),
    ("       0 :  30000:      12\n", "is not a 'thread:cycle:latency' line"),
    ("       0:   30000:     1-2\n", "is not a 'thread:cycle:latency' line"),
])
def test_refusals_name_the_line_in_a_late_chunk(tmp_path, monkeypatch, bad, message) -> None:
    path = tmp_path / "v.txt"
    _log(path, tail=bad)
    monkeypatch.setattr(_common, "CHUNK_BYTES", 50_000)
    with pytest.raises(ImportFormatError, match=message) as info:
        cyclictest_verbose.parse(path)
    assert "line 60006" in str(info.value)
