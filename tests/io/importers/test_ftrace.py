"""Kernel trace text (raw ftrace, trace-cmd report) into an events table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jitterscope.dataset import TRACE_EVENTS
from jitterscope.errors import ImportFormatError
from jitterscope.io import read_trace_text, sniff_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"
E = TRACE_EVENTS


def test_sniff() -> None:
    assert sniff_trace((DATA / "ftrace" / "instance-trace.txt").read_bytes()) == "ftrace"
    assert sniff_trace((DATA / "trace-cmd" / "report.txt").read_bytes()) == "trace-cmd-report"
    assert sniff_trace((DATA / "ct-verbose.txt").read_bytes()) is None
    assert sniff_trace((DATA / "turbostat" / "interval.txt").read_bytes()) is None


def test_real_instance_trace() -> None:
    events = read_trace_text(DATA / "ftrace" / "instance-trace.txt")
    c = events.columns
    assert events.num_rows == 200 and set(c["cpu"].tolist()) == {1} and events.resolution_ns == 1000
    assert events.info["source"] == {"format": "ftrace", "file": "instance-trace.txt", "unparsed_lines": 0}
    assert c["ts_ns"][0] == 3064_064012_000 and np.all(np.diff(c["ts_ns"]) >= 0)
    first = [events.string(int(n)) for n in c["name"][:3]]
    assert first == ["local_timer", "TIMER", "RCU"]  # local_timer_entry, softirq_raise TIMER, RCU
    assert c["event"][:3].tolist() == [E["vector_entry"], E["softirq_raise"], E["softirq_raise"]]
    switch = np.flatnonzero(c["event"] == E["switch"])[0]
    assert (events.string(int(c["comm"][switch])), int(c["pid"][switch]), int(c["prio"][switch])) == (
        "python", 15718, 120)
    assert (events.string(int(c["other_comm"][switch])), int(c["other_pid"][switch])) == ("kworker/1:2", 21239)
    assert int(c["value"][switch]) == 1  # prev_state=R: preempted
    irq = np.flatnonzero(c["event"] == E["irq_entry"])[0]
    assert (int(c["number"][irq]), events.string(int(c["name"][irq]))) == (36, "virtio1-req.0")


def test_trace_cmd_report_with_its_sched_plugin_and_drops() -> None:
    events = read_trace_text(DATA / "trace-cmd" / "report.txt")
    c = events.columns
    assert events.num_rows == 12
    wake = np.flatnonzero(c["event"] == E["wakeup"])[0]
    assert (events.string(int(c["other_comm"][wake])), int(c["other_pid"][wake]), int(c["other_prio"][wake]),
            int(c["number"][wake])) == ("js-cpu1", 500, 19, 1)
    switch = np.flatnonzero(c["event"] == E["switch"])[0]
    assert (int(c["pid"][switch]), int(c["prio"][switch]), int(c["other_pid"][switch]), int(c["other_prio"][switch]),
            events.string(int(c["other_comm"][switch])), int(c["value"][switch])) == (0, 120, 77, 9, "js-spinner", 1)
    nmi = np.flatnonzero(c["event"] == E["nmi"])[0]
    assert int(c["value"][nmi]) == 10_000 and events.string(int(c["name"][nmi])) == "perf_event_nmi_handler"
    lost = np.flatnonzero(c["event"] == E["lost"])[0]
    assert (int(c["cpu"][lost]), int(c["value"][lost]), int(c["ts_ns"][lost])) == (1, 12, 100_000_300_000)
    assert events.lost_by_cpu() == {1: 12}


def test_counter_clock_and_garbage_are_refused(tmp_path: Path) -> None:
    counter = tmp_path / "tsc.txt"
    counter.write_text("# tracer: nop\n          <idle>-0     [001] d.h..  123456789012: local_timer_entry: "
                       "vector=236\n")
    with pytest.raises(ImportFormatError, match=r"is a counter, not seconds.*mono clock"):
        read_trace_text(counter)
    empty = tmp_path / "empty.txt"
    empty.write_text("# tracer: nop\n#\n")
    with pytest.raises(ImportFormatError, match="no trace event line found"):
        read_trace_text(empty)
