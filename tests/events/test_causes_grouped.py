"""Issue 21: causes grouped for a reader (one per command, by class, the top ones and "other"), and hypervisor
steal matched to the events it overlaps (a planted steal series beside planted stalls)."""

from __future__ import annotations

import subprocess

import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, write_dataset
from jitterscope.events import (
    HYPERVISOR,
    MAX_GROUPS,
    Cause,
    Event,
    Events,
    find_events,
    format_events,
    group_causes,
    plot_events,
)
from jitterscope.io import SharedStalls, SimulationSpec, write_simulation
from matplotlib.figure import Figure

MS = 1_000_000


def _event(i: int, kind: str, cls: str, peak: int = 100_000) -> Event:
    cause = Cause(kind=kind, evidence=f"CPU 0, seq {i}: held by {kind}", source="kernel trace",
                  values={"class": cls})
    return Event(index=i, start_ns=i * 10 * MS, end_ns=i * 10 * MS + 1000, start_s=i * 0.01, start_utc=None, cpus=(0,),
                 threads=(0,), wakeups=1, late_wakeups=1, catch_up_wakeups=0, missed_periods=0, peak_latency_ns=peak,
                 peak_cpu=0, peak_thread=0, causes=(cause,))


def _events(kinds: list[tuple[str, str]]) -> Events:
    events = tuple(_event(i, kind, cls) for i, (kind, cls) in enumerate(kinds))
    return Events(threshold_ns=50_000.0, threshold_rule="given", wakeups=10_000, observed_s=10.0, first_expected_ns=0,
                  interval_ns=1_000_000, events=events, rates=(), halves=None, cause_sources=("kernel trace",),
                  policy="fifo", priority=99)


# 12 distinct first causes, the first ones the most frequent: 12 + 11 + ... + 1 = 78 events
TWELVE = [(f"kernel: cmd{k} (nice 0)", "thread") if k % 3 else (f"kernel: irq {k} dev{k}", "IRQ") for k in range(12)]
MANY = _events([TWELVE[k] for k in range(12) for _ in range(12 - k)])


def test_top_causes_and_other_count_every_event_once() -> None:
    groups = group_causes(MANY)
    assert len(groups) == MAX_GROUPS == 8
    assert [len(g.events) for g in groups[:7]] == [12, 11, 10, 9, 8, 7, 6]
    other = groups[-1]
    assert other.name == "other (5 causes)" and len(other.events) == 5 + 4 + 3 + 2 + 1
    assert sum(len(g.events) for g in groups) == len(MANY.events)
    assert groups[0].label == "irq 0 dev0" and groups[1].label == "thread: cmd1 (nice 0)"  # the class named once
    assert groups[1].cause_class == "thread" and groups[0].cause_class == "IRQ"
    assert set(other.cause_class.split(", ")) == {"thread", "IRQ"}
    assert "cmd7 (nice 0): 5" in other.evidence


def test_few_causes_have_no_other_row() -> None:
    groups = group_causes(_events([TWELVE[1], TWELVE[1], TWELVE[0]]))
    assert [g.label for g in groups] == ["thread: cmd1 (nice 0)", "irq 0 dev0"]


def test_the_legend_has_at_most_eight_entries_told_apart_by_marker() -> None:
    ax = Figure().subplots()
    plot_events(MANY, ax)
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) == 8 and labels[-1] == "other (5 causes) (15)" and "thread: cmd1 (nice 0) (11)" in labels
    markers = [c.get_paths()[0].vertices.round(3).tobytes() for c in ax.collections]
    assert len(set(markers)) == len(markers) == 8  # each entry its own marker shape: readable in grey


def test_the_events_text_says_what_held_by_means_for_a_fifo_thread() -> None:
    text = format_events(MANY, top=3)
    assert "held by" in text and "not necessarily what blocked it" in text
    assert "SCHED_FIFO 99" in text and "not yet runnable" in text


# ---- steal --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stalls(tmp_path_factory):
    """Two 72 ms stalls of both CPUs (1.0 s and 2.5 s after the start), 1 kHz, 5 s."""
    spec = SimulationSpec(threads=2, interval_ns=1_000_000, samples=5_000, effects=(
        SharedStalls(times_ns=(1_000 * MS, 2_500 * MS), duration_ns=72 * MS),))
    path = write_simulation(spec, tmp_path_factory.mktemp("steal") / "plain.parquet", 3)
    return path, open_dataset(path)


def _with_steal(stalls, tmp_path, rises: list[list[int]]):
    path, plain = stalls
    total: dict[str, int] = {}
    for cpu, _, _, ns in rises:
        total[str(cpu)] = total.get(str(cpu), 0) + ns
    first = _start(stalls)
    steal = {"source": "/proc/stat", "tick_ns": 10 * MS, "period_ns": 10 * MS, "cpus": [0, 1], "samples": 501,
             "failed": 0, "first_ns": first, "last_ns": first + 5_000 * MS, "max_gap_ns": 10 * MS,
             "total_ns": total, "rises": rises, "left_out": 0}
    out = tmp_path / "stolen.parquet"
    write_dataset(pq.read_table(path), plain.metadata.with_changes(steal=steal), out)
    return open_dataset(out)


def _start(stalls) -> int:
    return int(stalls[1].metadata.ground_truth["spec"]["start_ns"])


def _stall_times(stalls) -> list[int]:
    """The planted stalls, CLOCK_MONOTONIC: 1.0 s and 2.5 s after the run start."""
    return [_start(stalls) + t * MS for t in (1_000, 2_500)]


def test_planted_steal_names_the_stall_it_overlaps_and_only_that(stalls, tmp_path) -> None:
    times = _stall_times(stalls)
    a = times[0]  # the first 72 ms stall of both CPUs
    # the kernel accounts the stolen time at the next tick after the vCPU runs again: read in the sample that ends
    # 8 ms after the stall; the second 72 ms stall has no steal; steal at 4.0 s falls where no event is
    quiet = _start(stalls) + 4_000 * MS
    dataset = _with_steal(stalls, tmp_path, [[0, a + 70 * MS, a + 80 * MS, 70 * MS],
                                             [1, a + 70 * MS, a + 80 * MS, 80 * MS],
                                             [1, quiet, quiet + 20 * MS, 20 * MS]])
    from jitterscope.events import CauseSource
    other = CauseSource("lock", lambda episodes, start, end: [Cause("lock held", "a held lock", "lock")])
    events = find_events(dataset, threshold_ns=1 * MS, cause_sources=[other])
    assert "steal" in events.cause_sources
    big = sorted((e for e in events.events if e.peak_latency_ns > 50 * MS), key=lambda e: e.start_ns)
    assert len(big) == 2 and all(len(e.cpus) == 2 for e in big)
    first, second = big
    assert first.cause_kinds[0] == HYPERVISOR and first.cause_class == "hypervisor"
    cause = first.causes[0]
    assert cause.values["covers_peak"] and cause.values["steal_ns"] == {"0": 70 * MS, "1": 80 * MS}
    assert "CPU 0 by 70 ms" in cause.evidence and "CPU 1 by 80 ms" in cause.evidence
    assert HYPERVISOR not in second.cause_kinds  # no steal then: not the hypervisor's
    assert sum(HYPERVISOR in e.cause_kinds for e in events.events) == 1


def test_steal_on_another_cpu_or_outside_the_event_says_nothing() -> None:
    from jitterscope.events import Episode, decode_steal, steal_source
    steal = decode_steal({"source": "/proc/stat", "tick_ns": 10 * MS, "period_ns": 10 * MS, "cpus": [0, 1],
                          "total_ns": {"1": 20 * MS}, "rises": [[1, 100 * MS, 120 * MS, 20 * MS]], "left_out": 0})
    on = {cpu: Episode(thread=cpu, cpu=cpu, start_ns=95 * MS, end_ns=110 * MS, first_seq=95, wakeups=2,
                       late_wakeups=1, catch_up_wakeups=1, missed_periods=14, peak_latency_ns=15 * MS,
                       peak_at_ns=110 * MS) for cpu in (0, 1)}
    find = steal_source(steal).find
    assert find([on[0]], 95 * MS, 110 * MS) == []  # steal on CPU 1 says nothing about CPU 0
    assert find([on[1]], 95 * MS, 110 * MS)[0].kind == HYPERVISOR
    assert find([on[1]], 85 * MS, 98 * MS)[0].kind == HYPERVISOR  # accounted within a tick after the event ended
    assert find([on[1]], 60 * MS, 89 * MS) == []  # read more than a tick after the event ended: another stall's
    assert find([on[1]], 121 * MS, 130 * MS) == []  # accounted before the event began


def test_steal_too_small_for_the_delay_is_named_after_the_other_causes(stalls, tmp_path) -> None:
    from jitterscope.events import CauseSource
    a = _stall_times(stalls)[0]
    dataset = _with_steal(stalls, tmp_path, [[0, a + 70 * MS, a + 80 * MS, 10 * MS]])
    other = CauseSource("lock", lambda episodes, start, end: [Cause("lock held", "a held lock", "lock")])
    first = min((e for e in find_events(dataset, threshold_ns=1 * MS, cause_sources=[other]).events
                 if e.peak_latency_ns > 50 * MS), key=lambda e: e.start_ns)
    steal = first.causes[-1]
    assert steal.kind == HYPERVISOR and first.cause_kinds[0] == "lock held"  # 10 ms cannot explain 72 ms: not first
    assert not steal.values["covers_peak"] and "at most 20 ms of the" in steal.evidence


def test_page_one_says_virtualised_and_names_the_hypervisor(stalls, tmp_path) -> None:
    from jitterscope.report import write_report
    a = _stall_times(stalls)[0]
    dataset = _with_steal(stalls, tmp_path, [[0, a + 70 * MS, a + 80 * MS, 70 * MS],
                                             [1, a + 70 * MS, a + 80 * MS, 80 * MS]])
    write_report(dataset.path, tmp_path / "r.pdf", sections=("findings",))
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "r.pdf"), "-"], check=True, capture_output=True,
                          text=True).stdout
    page = " ".join(" ".join(p for p in text.split("\f") if "Findings:" in p).split())
    assert "virtualised 1 of " in page and "events coincide with steal" in page and "expected by chance" in page
    assert "hypervisor (steal) 1 of " in page


def test_the_chance_of_a_match_is_the_time_the_windows_cover() -> None:
    from jitterscope.events import decode_steal, steal_by_chance
    # 1 s observed; CPU 0 rose in (100, 110] and (110, 120] ms (one long steal), CPU 1 in (500, 510] ms
    steal = decode_steal({"source": "/proc/stat", "tick_ns": 10 * MS, "period_ns": 10 * MS, "cpus": [0, 1],
                          "first_ns": 0, "last_ns": 1_000 * MS, "total_ns": {"0": 20 * MS, "1": 10 * MS},
                          "rises": [[0, 100 * MS, 110 * MS, 10 * MS], [0, 110 * MS, 120 * MS, 10 * MS],
                                    [1, 500 * MS, 510 * MS, 10 * MS]], "left_out": 0})
    # a 5 ms event on CPU 0 matches when it starts in (100 - 5 - 10, 120) ms: 35 ms of the 1,000
    assert steal.chance([0], 5 * MS) == pytest.approx(0.035)
    assert steal.chance([1], 5 * MS) == pytest.approx(0.025) and steal.chance([0, 1], 5 * MS) == pytest.approx(0.06)
    events = [_event(i, "kernel: x", "thread") for i in range(10)]  # on CPU 0, 1 µs long: the 1 ms bin
    assert steal_by_chance(steal, events) == pytest.approx(10 * (20 + 1 + 10) / 1000)


def test_page_one_groups_trace_causes_and_says_what_held_by_means(tmp_path) -> None:
    """The hand-made trace of tests/derive/test_trace.py (cscope in two pids, two kworkers, FIFO 80) on page 1."""
    import importlib.util
    from pathlib import Path

    from jitterscope.report import write_report
    spec = importlib.util.spec_from_file_location("trace_fixture_grouped",
                                                  Path(__file__).parents[1] / "derive" / "test_trace.py")
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)  # type: ignore[union-attr]
    dataset = fixture._grouping_dataset(tmp_path)
    write_report(dataset.path, tmp_path / "r.pdf", sections=("findings",))
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "r.pdf"), "-"], check=True, capture_output=True,
                          text=True).stdout
    page = " ".join(" ".join(p for p in text.split("\f") if "Findings:" in p).split())
    assert "thread: cscope (nice 0)" in page and "thread: kworker (nice 0)" in page
    assert "pid" not in page.split("Why: causes")[1].split("'held by X'")[0]  # one row per command, no pids
    assert "'held by X' means X ran on the CPU while the measuring thread was late" in page
    assert "SCHED_FIFO 80" in page and "non-preemptibly" in page and "not yet runnable" in page
