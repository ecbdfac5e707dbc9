"""Interrupt versus thread latency of each late wake-up, on hand-made traces whose every split is computed by hand."""

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
    open_dataset,
    write_dataset,
    write_trace_events,
)
from jitterscope.derive import attribute_spikes, trace_attribution_text
from jitterscope.derive.split import NO_TIMER_INTERRUPT, NOT_FOUND, NOT_RECORDED

E = TRACE_EVENTS
STRINGS = ["js-cpu1", "swapper/1", "js-spinner", "eth0", "NET_RX", "local_timer", "hrtimer_wakeup", "other"]
JS_COMM, IDLE_COMM, SPIN_COMM, ETH0, NET_RX, TIMER, HRTIMER_WAKEUP = range(7)
US = 1000
JS = (500, JS_COMM, 19)       # the measuring thread: tid 500, FIFO 80
IDLE = (0, IDLE_COMM, 120)
SPIN = (77, SPIN_COMM, 9)     # FIFO 90


def _row(ts_us: float, event: int, *, number: int = -1, name: int = -1, other_pid: int = -1, other_prio: int = -1,
         other_comm: int = -1) -> list[int]:
    return [int(ts_us * US), 1, event, 0, IDLE_COMM, number, name, other_pid, other_prio, other_comm, -1, 0]


def _switch(ts_us: float, to: tuple[int, int, int]) -> list[int]:
    return _row(ts_us, E["switch"], other_pid=to[0], other_comm=to[1], other_prio=to[2])


def _timer(entry_us: float, exit_us: float, *inside: list[int]) -> list[list[int]]:
    return [_row(entry_us, E["vector_entry"], number=236, name=TIMER), *inside,
            _row(exit_us, E["vector_exit"], number=236, name=TIMER)]


def _wakeup(ts_us: float, pid: int = 500) -> list[int]:
    return _row(ts_us, E["wakeup"], number=1, other_pid=pid, other_prio=19, other_comm=JS_COMM if pid == 500 else 7)


def _hrtimer(ts_us: float) -> list[int]:
    return _row(ts_us, E["hrtimer"], name=HRTIMER_WAKEUP)


def _with_previous(rows: list[list[int]]) -> list[list[int]]:
    current = IDLE
    for row in rows:
        if row[2] == E["switch"]:
            row[3], row[4], row[10] = current
            current = (row[7], row[9], row[8])
    return rows


ROWS = _with_previous([
    _switch(0, IDLE),
    # A 1000 -> 1100: idle until the timer interrupt at 1060 (interrupt latency 60); in it the hrtimer and the
    # wake-up; a FIFO 90 spinner then runs 1066-1096 before the measuring thread (thread latency 40)
    *_timer(1060, 1066, _hrtimer(1062), _wakeup(1064)), _switch(1066, SPIN), _switch(1096, JS), _switch(1101, IDLE),
    # B 2000 -> 2200: irq 24 holds the CPU 1990-2050 (the timer interrupt waits: interrupt latency 50); after
    # the timer interrupt NET_RX runs 2055-2190 (thread latency 150)
    _row(1990, E["irq_entry"], number=24, name=ETH0), _row(2050, E["irq_exit"], number=24),
    *_timer(2050, 2055, _wakeup(2053)),
    _row(2055, E["softirq_entry"], number=3, name=NET_RX), _row(2190, E["softirq_exit"], number=3, name=NET_RX),
    _switch(2190, JS), _switch(2201, IDLE),
    # C 3000 -> 3100: only the hrtimer expiry recorded (no vector, no wake-up): split at 3030
    _hrtimer(3030), _switch(3090, JS), _switch(3101, IDLE),
    # D 4000 -> 4150: only the wake-up recorded: split at the wake-up, 4020
    _wakeup(4020), _switch(4100, JS), _switch(4151, IDLE),
    # E 5000 -> 5200: the CPU was already in the timer interrupt at 5000 (entered 4995): interrupt latency 0
    *_timer(4995, 5004, _wakeup(5002)), _switch(5010, JS), _switch(5201, IDLE),
    # F 6000 -> 6300: a wake-up of another task only: no split
    _wakeup(6010, pid=600), _switch(6290, JS), _switch(6301, IDLE),
    # G 7000 -> 7005: ordinary
    *_timer(7000, 7002, _wakeup(7001)), _switch(7003, JS), _switch(7006, IDLE),
])
WINDOWS_US = [(1000, 1100), (2000, 2200), (3000, 3100), (4000, 4150), (5000, 5200), (6000, 6300), (7000, 7005)]


def _dataset(tmp_path: Path, rows: list[list[int]] | None = ROWS, *, name: str = "ds", tid: int | None = 500):
    n = len(WINDOWS_US)
    table = pa.table({"cpu": pa.array([1] * n, pa.int32()), "thread": pa.array([0] * n, pa.int32()),
                      "seq": pa.array(range(n), pa.int64()),
                      "expected_ns": pa.array([a * US for a, _ in WINDOWS_US], pa.int64()),
                      "actual_ns": pa.array([b * US for _, b in WINDOWS_US], pa.int64())})
    meta = Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=1, interval_ns=1_000_000, samples=n, tid=tid),))
    root = tmp_path / name
    root.mkdir()
    write_dataset(table, meta, root / "part-00000.parquet")
    if rows is not None:
        info = {"version": 1, "clock": "mono", "resolution_ns": 1000, "cpus": [1], "lost": None}
        write_trace_events(events_from_rows(rows, STRINGS, info), root)
    return open_dataset(root)


EXPECTED = {  # seq: (source, split µs, interrupt µs, thread µs, unexplained before, unexplained after)
    0: ("local_timer_entry", 1060, 60, 40, 60, 4),
    1: ("local_timer_entry", 2050, 50, 150, 0, 10),
    2: ("hrtimer_expire_entry", 3030, 30, 70, 30, 70),
    3: ("sched_wakeup", 4020, 20, 130, 20, 130),
    4: ("local_timer_entry", 4995, 0, 200, 0, 196),
}


def _splits(result) -> dict[int, tuple]:
    return {s.seq: (s.split.source, s.split.split_ns // US, s.split.interrupt_ns // US, s.split.thread_ns // US,
                    s.split.unexplained_interrupt_ns // US, s.split.unexplained_thread_ns // US)
            for s in result.spikes if s.split.known}


def test_each_spike_splits_at_its_timer_interrupt(tmp_path: Path) -> None:
    result = attribute_spikes(_dataset(tmp_path), 10 * US)
    assert result.n_spikes == 6
    assert _splits(result) == EXPECTED
    by_seq = {s.seq: s for s in result.spikes}
    assert by_seq[5].split.reason == NOT_FOUND  # only another task's wake-up: no guess
    # the causes on each side: the irq before B's timer interrupt, NET_RX and the timer vector after it
    held = {c.cause: (c.ns // US, c.interrupt_ns // US) for c in by_seq[1].contributions}
    assert held == {"irq 24 eth0": (50, 50), "softirq NET_RX": (135, 0), "vector local_timer (236)": (5, 0)}
    held = {c.cause: (c.ns // US, c.interrupt_ns // US) for c in by_seq[0].contributions}
    assert held == {"js-spinner (SCHED_FIFO/RR 90)": (30, 0), "vector local_timer (236)": (6, 0)}
    summary = result.split
    assert (summary.n_spikes, summary.n_split) == (6, 5)
    assert summary.by_source == {"local_timer_entry": 3, "hrtimer_expire_entry": 1, "sched_wakeup": 1}
    assert summary.median_interrupt_ns == 30 * US and summary.median_thread_ns == 130 * US
    assert (summary.unexplained_interrupt_ns, summary.unexplained_thread_ns) == (110 * US, 410 * US)
    spikes = {s["seq"]: s for s in result.to_json()["spikes"]}
    assert spikes[0]["split"]["source"] == "local_timer_entry" and spikes[0]["split"]["interrupt_ns"] == 60 * US
    assert spikes[5]["split"] == {"source": None, "split_ns": None, "interrupt_ns": None, "thread_ns": None,
                                  "unexplained_interrupt_ns": None, "unexplained_thread_ns": None,
                                  "reason": NOT_FOUND}
    text = trace_attribution_text(result)
    assert "interrupt latency" in text and "5 of 6" in text


def test_the_measuring_thread_is_found_by_name_without_tids(tmp_path: Path) -> None:
    result = attribute_spikes(_dataset(tmp_path, tid=None), 10 * US)
    assert _splits(result) == EXPECTED


def test_the_default_events_split_at_the_first_timer_interrupt(tmp_path: Path) -> None:
    """The capture's default events hold no wake-up and no hrtimer expiry (they cost the latency measured): the
    split is the timer interrupt open at the programmed time, else the first to enter after it (rule 4); a
    wake-up with no timer interrupt before it gets none (never the next one after the thread ran)."""
    kept = [r for r in ROWS if r[2] not in (E["wakeup"], E["hrtimer"])]
    result = attribute_spikes(_dataset(tmp_path, kept), 10 * US)
    assert _splits(result) == {seq: EXPECTED[seq] for seq in (0, 1, 4)}
    by_seq = {s.seq: s for s in result.spikes}
    assert [by_seq[seq].split.reason for seq in (2, 3, 5)] == [NO_TIMER_INTERRUPT] * 3
    assert result.split.by_source == {"local_timer_entry": 3}


def test_no_wake_up_event_recorded_says_so(tmp_path: Path) -> None:
    kept = [r for r in ROWS if r[2] not in (E["wakeup"], E["hrtimer"], E["vector_entry"], E["vector_exit"])]
    result = attribute_spikes(_dataset(tmp_path, kept), 10 * US)
    assert all(s.split.reason == NOT_RECORDED for s in result.spikes)
    assert result.split.n_split == 0 and result.split.median_interrupt_ns is None


def test_an_incomplete_window_has_no_split(tmp_path: Path) -> None:
    lost = [2100 * US, 1, E["lost"], -1, -1, -1, -1, -1, -1, -1, -1, 3]
    rows = sorted([*ROWS, lost], key=lambda r: r[0])
    by_seq = {s.seq: s for s in attribute_spikes(_dataset(tmp_path, rows), 10 * US).spikes}
    assert not by_seq[1].split.known and by_seq[1].split.reason == "incomplete trace"


FTRACE = Path(__file__).resolve().parents[1] / "data" / "trace" / "split-planted.txt"


def test_an_imported_ftrace_text_splits_the_same(tmp_path: Path) -> None:
    _dataset(tmp_path, None)
    out = tmp_path / "with-trace"
    assert main(["import", str(FTRACE), "--onto", str(tmp_path / "ds"), "-o", str(out)]) == 0
    result = attribute_spikes(open_dataset(out), 10 * US)
    got = _splits(result)
    assert got == {0: EXPECTED[0], 1: EXPECTED[1]}


@pytest.mark.parametrize("threshold_us", [10, 45])
def test_the_split_adds_up_to_the_delay(tmp_path: Path, threshold_us: int) -> None:
    for s in attribute_spikes(_dataset(tmp_path, name=f"t{threshold_us}"), threshold_us * US).spikes:
        if s.split.known:
            assert s.split.interrupt_ns + s.split.thread_ns == s.delay_ns
            assert s.split.unexplained_interrupt_ns + s.split.unexplained_thread_ns == s.unexplained_ns


def test_events_show_the_split_of_their_worst_traced_wake_up(tmp_path: Path) -> None:
    from jitterscope.events import event_split_text, events_table, find_events
    # above 120 µs: B alone (A and C are not late), then D, E, F as one event whose worst, F, has no split
    events = find_events(_dataset(tmp_path), threshold_ns=120 * US)
    assert len(events.events) == 2
    by_start = sorted(events.events, key=lambda e: e.start_ns)
    assert by_start[0].latency_split["interrupt_ns"] == 50 * US
    assert by_start[0].latency_split["thread_ns"] == 150 * US
    assert by_start[1].latency_split["source"] is None
    table = events_table(events)
    cells = {row[0]: row[table.columns.index("interrupt [µs]"):table.columns.index("thread [µs]") + 1]
             for row in table.rows}
    assert sorted(cells.values(), key=str) == [(50.0, 150.0), (None, None)]
    assert events.to_json()["events"][0]["latency_split"] is not None
    text = event_split_text(events)
    assert text.startswith("median interrupt latency 50.0 µs") and "1 event(s) without a split" in text


def test_page_one_has_the_split_of_the_traced_events(tmp_path: Path) -> None:
    import json

    from jitterscope.report import write_report
    _dataset(tmp_path)
    figures = tmp_path / "figures"
    write_report(tmp_path / "ds", tmp_path / "r.pdf", figures_dir=figures, sections=("findings",))
    rows = json.loads((figures / "findings-causes.json").read_text())["rows"]
    split = next(r for r in rows if r["cause"] == "interrupt vs thread latency")
    # the default threshold finds the two events of the test above: B split, the one ending in F not
    assert split["how many"] == "1 of 2 traced events"
    assert split["evidence"].startswith("median interrupt latency 50.0 µs (programmed time to the timer interrupt")
    assert "thread latency 150 µs" in split["evidence"] and "0.00 µs before the interrupt, 10.0 µs after" in \
        split["evidence"] and "split at local_timer_entry (1); 1 event(s) without a split" in split["evidence"]
