"""find_poll_events: one stall seen by several loops is one event; a small gap inside a long one is not."""

from __future__ import annotations

from jitterscope.poll import find_poll_events

from .conftest import hand_dataset


def test_shared_stall_is_one_event_and_a_tick_inside_a_long_gap_is_not_joined(tmp_path):
    rows = [(0, 100_000_000, 30_000), (1, 100_000_400, 29_800),            # one 30 µs stall of both CPUs
            (0, 500_000_000, 5_000_000), (1, 501_000_000, 2_000),           # a 5 ms gap; a tick of the other CPU
            (1, 900_000_000, 12_000)]                                       # a lone 12 µs gap
    events = find_poll_events(hand_dataset(tmp_path / "d", rows, runtime_s=1, cpus=(0, 1)))
    spans = [(e.cpus, e.duration_ns) for e in events.events]
    assert spans == [((0,), 5_000_000), ((0, 1), 30_200), ((1,), 12_000)]  # first start to last end
    assert len(events.shared) == 1 and events.shared[0].rows == 2
