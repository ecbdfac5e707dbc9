"""explain_interruptions: each gap's cause from the trace, with the RT-throttling rule first."""

from __future__ import annotations

import numpy as np
from jitterscope.io import PollSpec, simulate_poll
from jitterscope.poll import HARDWARE, RT_THROTTLING, explain_interruptions, read_poll

from .conftest import hand_dataset


def test_planted_causes_are_named(traced_poll):
    data = read_poll(traced_poll)
    truth = data.dataset.metadata.ground_truth["cpus"]["1"]
    causes = explain_interruptions(data)
    totals = {t.cause: t for t in causes.totals}
    assert totals[RT_THROTTLING].count == truth["rt_throttling"]["count"] == 20
    assert totals[RT_THROTTLING].max_ns == 50_000_040
    assert totals["spinner (SCHED_FIFO/RR 90)"].count == truth["burst"]["count"]
    assert totals["irq 24 eth0"].count == truth["irq"]["count"]
    assert totals["vector local_timer (236)"].count >= truth["tick"]["count"] - 2  # the first/last: no trace yet
    assert totals[HARDWARE].count == truth["hardware"]["count"]
    assert totals[RT_THROTTLING].share_of_noise > 0.95


def test_throttling_needs_a_real_time_loop_and_the_period_pattern(tmp_path):
    throttling = {"runtime_us": 950_000, "period_us": 1_000_000}
    rows = [(1, 200_000_000, 50_000_000), (1, 1_200_000_000, 50_000_000), (1, 2_200_000_000, 50_000_000),
            (1, 2_700_000_000, 50_000_000)]  # the last is the budget's size but off the 1 s pattern
    fifo = explain_interruptions(hand_dataset(tmp_path / "f", rows, runtime_s=3, throttling=throttling))
    assert fifo.per_row[0] == (RT_THROTTLING, RT_THROTTLING, RT_THROTTLING, "not traced")
    other = explain_interruptions(hand_dataset(tmp_path / "o", rows, runtime_s=3, throttling=throttling,
                                               policy="other"))
    assert RT_THROTTLING not in other.per_row[0]
    off = explain_interruptions(hand_dataset(tmp_path / "n", rows, runtime_s=3, throttling=None))
    assert RT_THROTTLING not in off.per_row[0]


def test_without_a_trace_only_the_rules_name_anything(tmp_path):
    path = simulate_poll(PollSpec(cpus=(1,), duration_s=3), tmp_path / "d", seed=1)
    causes = explain_interruptions(path)
    assert not causes.traced and "no kernel trace" in causes.notes[0]
    names = np.asarray(causes.per_row[0])
    truth = read_poll(path).dataset.metadata.ground_truth["cpus"]["1"]
    assert (names == RT_THROTTLING).sum() == truth["rt_throttling"]["count"]
    assert set(names) == {RT_THROTTLING, "not traced"}


def test_an_smi_counter_step_across_a_gap_names_it_smi(tmp_path):
    rows = [(1, 100_000_000, 3_000), (1, 300_000_000, 90_000), (1, 600_000_000, 4_000)]
    causes = explain_interruptions(hand_dataset(tmp_path / "s", rows, runtime_s=1, smi=[7, 8, 8]))
    assert causes.per_row[0] == ("not traced", "SMI", "not traced")
    assert read_poll(tmp_path / "s").threads[0].smi.tolist() == [7, 8, 8]


def test_throttling_settings_from_the_environment_when_the_poll_key_lacks_them(tmp_path):
    rows = [(1, 200_000_000, 50_000_000), (1, 1_200_000_000, 50_000_000), (1, 2_200_000_000, 50_000_000)]
    path = hand_dataset(tmp_path / "e", rows, runtime_s=3, throttling=None,
                        environment={"rt_runtime_us": 950_000, "rt_period_us": 1_000_000})
    assert explain_interruptions(path).per_row[0] == (RT_THROTTLING,) * 3
    off = hand_dataset(tmp_path / "f", rows, runtime_s=3, throttling=None,
                       environment={"rt_runtime_us": -1, "rt_period_us": 1_000_000})
    assert RT_THROTTLING not in explain_interruptions(off).per_row[0]


def test_a_trace_of_kept_windows_tells_not_traced_from_hardware(tmp_path):
    """--trace-keep spikes on a poll dataset: three gaps on CPU 1 (thread tid 100).  The first lies in a kept
    window with an IRQ covering it, the second in a kept window where no kernel event covers it, the third (2 µs,
    below the 10 µs threshold) outside every window.  Only the second is "hardware/hypervisor"; the third is
    "not traced" (a gap nobody looked at is no evidence of the hardware)."""
    from jitterscope.dataset import TRACE_EVENTS as E
    from jitterscope.dataset import events_from_rows, open_dataset, write_trace_events

    from .conftest import T0

    rows = [(1, 1_000_000, 30_000), (1, 2_000_000, 20_000), (1, 3_000_000, 2_000)]
    path = hand_dataset(tmp_path / "k", rows, runtime_s=1)
    strings = ["js-cpu1", "eth0"]

    def row(ts, event, pid=100, comm=0, number=-1, name=-1, value=0):
        return [T0 + ts, 1, event, pid, comm, number, name, -1, -1, -1, -1, value]

    def window(start, end, flags=1, inside=()):
        return [row(start, E["window"], value=flags), *inside,
                row(end, E["window_end"], pid=-1, comm=-1, value=flags)]

    events = [
        *window(900_000, 1_080_000, inside=[row(1_000_000, E["irq_entry"], number=24, name=1),
                                           row(1_030_000, E["irq_exit"], number=24)]),
        *window(1_900_000, 2_070_000),
    ]
    info = {"version": 1, "clock": "mono", "resolution_ns": 1, "cpus": [1], "keep": "spikes",
            "events_seen": 500, "events_kept": 2, "lost": {"per_cpu": [{"cpu": 1, "overrun": 0, "dropped": 0}],
                                                        "total": 0},
            "windows": {"threshold_ns": 10_000, "threshold_mode": "fixed", "background_every_ns": 60 * 10**9,
                        "background_length_ns": 100 * 10**6, "spike": 2, "background": 0, "incomplete": 0}}
    write_trace_events(events_from_rows(events, strings, info), path)
    causes = explain_interruptions(open_dataset(path))
    assert causes.traced
    assert causes.per_row[0] == ("irq 24 eth0", HARDWARE, "not traced")
    assert causes.notes[0].startswith("kept windows only") and "every gap >= 10 us" in causes.notes[0]
    assert "2 of 500 kernel events kept" in causes.notes[0]
    # the same gaps with the same events as a full trace (no window rows): the third is covered by the trace
    # and nothing in it, so it is hardware too, the rule the kept windows must not apply outside a window
    full = [r for r in events if r[2] not in (E["window"], E["window_end"])]
    full.insert(0, row(0, E["switch"], pid=0, comm=-1))
    full[0][7], full[0][9], full[0][8] = 100, 0, 80
    full.append(row(3_500_000, E["irq_entry"], number=24, name=1))
    full_info = {k: v for k, v in info.items() if k not in ("keep", "windows", "events_seen", "events_kept")}
    write_trace_events(events_from_rows(full, strings, full_info), hand_dataset(tmp_path / "f", rows, runtime_s=1))
    assert explain_interruptions(open_dataset(tmp_path / "f")).per_row[0] == ("irq 24 eth0", HARDWARE, HARDWARE)
