"""export --event N --format perfetto: one event's window as Trace Event Format JSON, checked against the format."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from jitterscope.cli import main
from jitterscope.dataset import (
    TRACE_EVENTS,
    Metadata,
    ThreadInfo,
    events_from_rows,
    write_dataset,
    write_trace_events,
)
from jitterscope.io import export_event_perfetto, track_of

from .trace_event_format import check, cpu_tracks, load

E = TRACE_EVENTS
STRINGS = ["js-cpu0", "js-cpu1", "swapper", "js-spinner", "eth0", "NET_RX", "local_timer", "hrtimer_wakeup",
           "perf_event_nmi_handler", "virtio0"]
JS0, JS1, IDLE_COMM, SPIN_COMM, ETH0, NET_RX, TIMER, HRTIMER_WAKEUP, NMI, VIRTIO = range(10)
US = 1000


def _row(ts_us: float, cpu: int, event: int, *, number: int = -1, name: int = -1, other: tuple[int, int, int] | None
         = None, value: int = 0) -> list[int]:
    pid, comm, prio = other or (-1, -1, -1)
    return [int(ts_us * US), cpu, event, 0, IDLE_COMM, number, name, pid, prio, comm, -1, value]


def _switch(ts_us: float, cpu: int, to: tuple[int, int, int]) -> list[int]:
    return _row(ts_us, cpu, E["switch"], other=to)


def _with_previous(rows: list[list[int]]) -> list[list[int]]:
    current: dict[int, tuple[int, int, int]] = {}
    for row in rows:
        if row[2] == E["switch"]:
            row[3], row[4], row[10] = current.get(row[1], (0, IDLE_COMM, 120))
            current[row[1]] = (row[7], row[9], row[8])
    return rows


IDLE = (0, IDLE_COMM, 120)
JS = {0: (400, JS0, 19), 1: (500, JS1, 19)}
SPIN = (77, SPIN_COMM, 9)
WAKE_US = {0: [(k * 1000, k * 1000 + 8) for k in range(1, 6)],
           1: [(1000, 1008), (2000, 2300), (3000, 3008), (4000, 4008), (5000, 5008)]}


def _ordinary(cpu: int, a: int, b: int) -> list[list[int]]:
    return [_row(a, cpu, E["vector_entry"], number=236, name=TIMER),
            _row(a + 2, cpu, E["wakeup"], number=cpu, other=JS[cpu]),
            _row(a + 3, cpu, E["vector_exit"], number=236, name=TIMER),
            _switch(a + 4, cpu, JS[cpu]), _switch(b + 1, cpu, IDLE)]


ROWS = _with_previous(sorted([
    _switch(0, 0, IDLE), _switch(0, 1, IDLE),
    *[r for a, b in WAKE_US[0] for r in _ordinary(0, a, b)],
    *[r for a, b in WAKE_US[1] if a != 2000 for r in _ordinary(1, a, b)],
    # CPU 0: a long handler of irq 30 that began before the window (1500 µs) and ends at 1990 µs
    _row(1500, 0, E["irq_entry"], number=30, name=VIRTIO), _row(1990, 0, E["irq_exit"], number=30),
    # CPU 1, the spike 2000 -> 2300 µs: a FIFO 90 spinner runs 1950-2280; the timer interrupt 2010-2016 wakes
    # the measuring thread (interrupt latency 10 µs, thread latency 290 µs); irq 24 (2100-2120) holds an NMI
    # (2105-2110), then NET_RX 2120-2150 runs in the spinner's context
    _switch(1950, 1, SPIN),
    _row(2010, 1, E["vector_entry"], number=236, name=TIMER), _row(2012, 1, E["hrtimer"], name=HRTIMER_WAKEUP),
    _row(2013, 1, E["wakeup"], number=1, other=JS[1]), _row(2016, 1, E["vector_exit"], number=236, name=TIMER),
    _row(2100, 1, E["irq_entry"], number=24, name=ETH0), _row(2110, 1, E["nmi"], name=NMI, value=5 * US),
    _row(2120, 1, E["irq_exit"], number=24),
    _row(2120, 1, E["softirq_entry"], number=3, name=NET_RX), _row(2150, 1, E["softirq_exit"], number=3),
    _switch(2280, 1, JS[1]), _switch(2301, 1, IDLE),
], key=lambda r: (r[0], r[1])))


def _dataset(tmp_path: Path, *, trace: bool = True) -> Path:
    cpu, thread, seq, expected, actual = [], [], [], [], []
    for c in (0, 1):
        for k, (a, b) in enumerate(WAKE_US[c]):
            cpu.append(c), thread.append(c), seq.append(k), expected.append(a * US), actual.append(b * US)
    table = pa.table({"cpu": pa.array(cpu, pa.int32()), "thread": pa.array(thread, pa.int32()),
                      "seq": pa.array(seq, pa.int64()), "expected_ns": pa.array(expected, pa.int64()),
                      "actual_ns": pa.array(actual, pa.int64())})
    meta = Metadata(kind="capture", threads=tuple(
        ThreadInfo(thread=c, cpu=c, interval_ns=1_000_000, samples=5, tid=JS[c][0]) for c in (0, 1)))
    root = tmp_path / "ds"
    root.mkdir()
    write_dataset(table, meta, root / "part-00000.parquet")
    if trace:
        info = {"version": 1, "clock": "mono", "resolution_ns": 1, "cpus": [0, 1], "lost": None}
        write_trace_events(events_from_rows(ROWS, STRINGS, info), root)
    return root


def _slices(doc, cpu: int) -> list[tuple[str, float, float]]:
    return [(e["name"], e["ts"], round(e["ts"] + e["dur"], 3)) for e in doc["traceEvents"]
            if e["ph"] == "X" and e["tid"] == track_of(cpu)]


def test_the_window_of_the_event_on_every_cpu_passes_the_format_check(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    out = tmp_path / "spike.json"
    assert main(["export", str(root), "--event", "1", "--threshold", "100", "--margin", "300", "--format",
                 "perfetto", "-o", str(out)]) == 0
    doc = load(out)
    assert check(doc) == []
    assert cpu_tracks(doc) == {"CPU 0": track_of(0), "CPU 1": track_of(1)}
    # CPU 1: idle until the spinner, the timer vector, irq 24 holding the NMI, NET_RX, the measuring thread
    assert _slices(doc, 1) == [
        ("<idle>", 1700.0, 1950.0), ("js-spinner [77]", 1950.0, 2280.0), ("local_timer (236)", 2010.0, 2016.0),
        ("irq 24 eth0", 2100.0, 2120.0), ("NMI perf_event_nmi_handler", 2105.0, 2110.0),
        ("softirq NET_RX", 2120.0, 2150.0), ("js-cpu1 [500]", 2280.0, 2301.0), ("<idle>", 2301.0, 2600.0)]
    # CPU 0: the irq that began before the window starts at the window's start, inside the idle task
    assert _slices(doc, 0)[:2] == [("<idle>", 1700.0, 2004.0), ("irq 30 virtio0", 1700.0, 1990.0)]
    wake = next(e for e in doc["traceEvents"] if e["ph"] == "i" and e["cat"] == "wakeup" and e["args"]["seq"] == 1
                and e["tid"] == track_of(1))
    assert wake["ts"] == 2300.0 and wake["args"]["latency_us"] == 300.0 and wake["args"]["late"] is True
    assert (wake["args"]["interrupt_latency_us"], wake["args"]["thread_latency_us"], wake["args"]["split_at"]) == (
        10.0, 290.0, "local_timer_entry")
    latency = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "CPU 1 latency"]
    assert [e["args"]["µs"] for e in latency] == [300.0]
    assert doc["otherData"]["window_ns"] == [1700 * US, 2600 * US]


def test_the_checker_finds_what_a_viewer_would_draw_wrong() -> None:
    meta = {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "CPU 1"}}

    def x(name: str, ts: float, dur: float) -> dict:
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 2}
    assert check({"traceEvents": [meta, x("task", 0, 10), x("irq", 2, 3)]}) == []
    assert "crosses" in check({"traceEvents": [meta, x("task", 0, 10), x("irq", 8, 5)]})[0]
    assert "time goes back" in check({"traceEvents": [meta, x("a", 5, 1), x("b", 2, 1)]})[0]
    assert "no thread_name" in check({"traceEvents": [x("a", 5, 1)]})[0]
    assert "scope" in check({"traceEvents": [meta, {"name": "w", "ph": "i", "ts": 1, "pid": 1, "tid": 2}]})[0]
    assert "dur" in check({"traceEvents": [meta, {"name": "w", "ph": "X", "ts": 1, "pid": 1, "tid": 2}]})[0]


def test_bad_requests_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _dataset(tmp_path)
    out = str(tmp_path / "x.json")
    assert main(["export", str(root), "--format", "perfetto", "-o", out]) == 2
    assert "give --event N" in capsys.readouterr().err
    assert main(["export", str(root), "--event", "9", "--threshold", "100", "--format", "perfetto", "-o", out]) == 1
    err = capsys.readouterr().err
    assert "no event 9: it has 1 event(s)" in err and len(err.strip().splitlines()) == 1
    assert main(["export", str(root), "--event", "1", "--format", "csv", "-o", out]) == 2
    assert "belong to --format perfetto" in capsys.readouterr().err
    bare = tmp_path / "bare"
    bare.mkdir()
    untraced = _dataset(bare, trace=False)
    with pytest.raises(Exception, match="no kernel trace to export"):
        export_event_perfetto(untraced, tmp_path / "y.json", 1)
