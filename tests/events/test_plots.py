"""plots.py: the event raster draws every event up to DISPLAY_EVENTS, else the largest of each run of k, and says so."""

from __future__ import annotations

from jitterscope.events import DISPLAY_EVENTS, Event, Events, plot_events
from matplotlib.figure import Figure


def _events(peaks: list[int]) -> Events:
    events = tuple(Event(index=i, start_ns=i * 1000, end_ns=i * 1000 + 10, start_s=i * 1e-6, start_utc=None,
                         cpus=(0,), threads=(0,), wakeups=1, late_wakeups=1, catch_up_wakeups=0, missed_periods=0,
                         peak_latency_ns=p, peak_cpu=0, peak_thread=0, causes=())
                   for i, p in enumerate(peaks))
    return Events(threshold_ns=10.0, threshold_rule="given", wakeups=len(peaks) * 10, observed_s=1.0,
                  first_expected_ns=0, interval_ns=None, events=events, rates=(), halves=None, cause_sources=())


def test_few_events_are_all_drawn() -> None:
    events = _events([50, 20, 30])
    drawn, k = events.drawn(10)
    assert k == 1 and drawn == events.events


def test_many_events_keep_the_largest_of_each_run_and_the_worst_five() -> None:
    peaks = [100 + (i * 7919) % 1000 for i in range(1000)]
    peaks[3] = 10_000  # the worst five sit in one run of k: all five are drawn beside the runs' maxima
    peaks[4], peaks[5], peaks[6], peaks[7] = 9_000, 8_000, 7_000, 6_000
    events = _events(peaks)
    drawn, k = events.drawn(100)
    assert k == 10
    runs = {i // k for i in range(len(peaks))}
    chosen = {e.index for e in drawn}
    for run in runs:  # the run's largest peak is drawn
        members = range(run * k, run * k + k)
        assert max(members, key=lambda i: (peaks[i], -i)) in chosen
    assert {3, 4, 5, 6, 7} <= chosen
    assert len(drawn) == len(runs) + 4  # one per run, and the four other worst ones of run 0
    assert [e.index for e in drawn] == sorted(chosen)  # still in time order


def test_the_raster_says_how_many_it_drew() -> None:
    events = _events([100 + i % 17 for i in range(2 * DISPLAY_EVENTS + 1)])
    ax = Figure().subplots()
    plot_events(events, ax)
    drawn = sum(len(c.get_offsets()) for c in ax.collections)
    assert drawn <= DISPLAY_EVENTS + 5
    assert f"n = {2 * DISPLAY_EVENTS + 1:,}" in ax.get_title() and f"{drawn:,} drawn" in ax.get_title()
    assert "largest of each 3" in ax.get_title()  # of 3 consecutive events
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"unexplained ({2 * DISPLAY_EVENTS + 1:,})" in legend  # the legend counts every event


def test_a_small_raster_draws_everything_and_says_nothing_more() -> None:
    events = _events([100, 200])
    ax = Figure().subplots()
    plot_events(events, ax)
    assert sum(len(c.get_offsets()) for c in ax.collections) == 2
    assert "drawn" not in ax.get_title()


def test_the_threshold_is_named_under_its_line_where_no_mark_can_hide_it() -> None:
    from jitterscope.render.layout import data_covers

    # the last event peaks just above the threshold at the right end, where the name used to sit on it
    events = _events([5_000, 40, 20, 12, 11])
    fig = Figure(figsize=(3.5, 3.0), layout="constrained")
    ax = fig.subplots()
    plot_events(events, ax)
    name = next(t for t in ax.texts if t.get_text().startswith("late: >"))
    fig.draw_without_rendering()
    line_y = ax.transData.transform((0, events.threshold_ns / 1000.0))[1]
    assert name.get_window_extent().y1 < line_y  # under the line
    assert [(item.what, what) for item, what in data_covers(fig)] == []
    assert ax.get_window_extent().y0 < name.get_window_extent().y0  # and inside the panel


def test_peaks_within_a_decade_are_labelled_in_plain_microseconds() -> None:
    """13-42 µs peaks on the log axis: 20, 30, 40, not 2 x 10^1, 3 x 10^1, 4 x 10^1."""
    events = _events([13_000, 20_000, 33_000, 42_000])
    events = Events(threshold_ns=12_000.0, threshold_rule="given", wakeups=40, observed_s=1.0, first_expected_ns=0,
                    interval_ns=None, events=events.events, rates=(), halves=None, cause_sources=())
    fig = Figure(figsize=(3.5, 3.0), layout="constrained")
    ax = fig.subplots()
    plot_events(events, ax)
    fig.draw_without_rendering()
    labels = [t.get_text() for t in (*ax.get_yticklabels(), *ax.get_yticklabels(minor=True)) if t.get_text()]
    assert labels and not any("10^" in t or "times" in t for t in labels), labels
    assert {"20", "30", "40"} <= set(labels), labels
