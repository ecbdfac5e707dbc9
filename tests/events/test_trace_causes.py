"""Kernel-trace causes in events: the hand-made trace of tests/derive/test_trace.py, seen through find_events."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.events import TRACE_INCOMPLETE, find_events

_SPEC = importlib.util.spec_from_file_location("trace_fixture", Path(__file__).parents[1] / "derive" / "test_trace.py")
trace_fixture = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(trace_fixture)  # type: ignore[union-attr]
dataset = trace_fixture.dataset  # the fixture: 5 wake-ups on CPU 1, a FIFO 90 spinner in the second
US = 1000


def test_the_spinner_is_the_cause_of_its_event_and_a_lossy_window_claims_nothing(dataset) -> None:
    result = find_events(dataset, threshold_ns=100 * US)
    assert "kernel trace" in result.cause_sources
    traced = [[c for c in event.causes if c.source == "kernel trace"] for event in result.events]
    # seq 1 (500 µs late, the spinner) and seq 2 (200 µs late, events lost) are one run of late wake-ups;
    # seq 4 is after the end of the trace
    assert [len(causes) for causes in traced] == [2, 0]
    spinner, lossy = traced[0]
    assert spinner.kind == "kernel: js-spinner (SCHED_FIFO/RR 90)" and spinner.values["seq"] == 1
    assert "js-spinner (SCHED_FIFO/RR 90) 370.0 µs (74%)" in spinner.evidence
    assert spinner.values["unexplained_ns"] == 50 * US and spinner.values["delay_ns"] == 500 * US
    assert lossy.kind == TRACE_INCOMPLETE and lossy.values["wakeups"] == [{"cpu": 1, "seq": 2}]
    assert "no cause is claimed" in lossy.evidence
    assert any("incomplete trace" in note for note in result.notes)


def test_events_json_carries_the_trace_cause(dataset, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["events", str(dataset.path), "--threshold", "100", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    kinds = {cause["kind"] for event in document["events"] for cause in event["causes"]}
    assert "kernel: js-spinner (SCHED_FIFO/RR 90)" in kinds and TRACE_INCOMPLETE in kinds
