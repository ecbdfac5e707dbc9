"""--trace-keep spikes on this machine's kernel, as root: windows around planted spikes on every measured CPU.

A FIFO 90 spinner on one CPU makes the FIFO 80 measuring thread late; the capture measures every CPU, so each
window must be written on the other CPU too.  The machine is shared with other test runs: the checks are of
rules (every late wake-up inside a window, every window on every CPU, counts that add up), not of rates.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from jitterscope.dataset import (
    TRACE_EVENTS,
    WINDOW_BACKGROUND,
    WINDOW_INCOMPLETE,
    WINDOW_SPIKE,
    open_dataset,
    read_trace_events,
)
from jitterscope.derive import STATUS_INCOMPLETE, STATUS_UNTRACED, attribute_spikes

from .test_trace import (  # noqa: F401  (pytestmark: root, two CPUs)
    _assert_named,
    _mount_tracefs,
    _skip_if_switches_dropped,
    _spinner,
    _switch_in_is_traced,
    pytestmark,
)

THRESHOLD_NS = 100_000


@pytest.fixture(scope="module")
def cpu() -> int:
    """The CPU the spinner disturbs: the last one whose switches into a woken task the kernel traces."""
    if not _mount_tracefs():
        pytest.skip("no tracefs on this kernel")
    for candidate in sorted(os.sched_getaffinity(0), reverse=True):
        if _switch_in_is_traced(candidate):
            return candidate
    pytest.skip("this kernel traces no sched_switch into a woken task on any CPU (checked with a probe instance)")


def _windows(events, cpu_: int) -> dict[int, tuple[int, int, int]]:
    """window id -> (start, end, flags) on one CPU, from its window and window_end rows."""
    c = events.columns
    on = c["cpu"] == cpu_
    opens = on & (c["event"] == TRACE_EVENTS["window"])
    ends = on & (c["event"] == TRACE_EVENTS["window_end"])
    start = dict(zip(c["number"][opens].tolist(), zip(c["ts_ns"][opens].tolist(), c["value"][opens].tolist(),
                                                      strict=True), strict=True))
    end = dict(zip(c["number"][ends].tolist(), c["ts_ns"][ends].tolist(), strict=True))
    assert start.keys() == end.keys(), cpu_  # every window that opens closes
    return {w: (start[w][0], end[w], start[w][1]) for w in start}


def _capture(run_capture, tmp_path: Path, cpu_: int, *extra: str):
    cpus = sorted(os.sched_getaffinity(0))
    spinner = _spinner(tmp_path, cpu_, 0.001, 0.1, 3.5)
    try:
        done = run_capture("-a", ",".join(map(str, cpus)), "-p", "80", "-q", "-D", "4", "--trace",
                           "--trace-background", "1,100", *extra)
    finally:
        spinner.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    return done, cpus, spinner


def test_windows_around_every_late_wake_up_on_every_cpu(run_capture, tmp_path: Path, cpu: int) -> None:
    done, cpus, spinner = _capture(run_capture, tmp_path, cpu)
    events = read_trace_events(done.output)
    info = events.info
    win = info["windows"]
    assert info["keep"] == "spikes" and win["threshold_ns"] == THRESHOLD_NS and win["threshold_mode"] == "fixed"
    per_cpu = {c: _windows(events, c) for c in cpus}
    # every window on every measured CPU, with the same span and flags
    assert all(per_cpu[c] == per_cpu[cpus[0]] for c in cpus)
    windows = per_cpu[cpus[0]]
    assert len(windows) == win["total"] > 0
    spans = sorted((s, e) for s, e, _ in windows.values())
    # overlapping windows merge into one: none starts where the one before ended (a window cut at the end of
    # the one written before it, which only a notice later than a read interval gives, starts 1 ns after it)
    assert all(a_end + 1 < b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    flags = np.array([f for _, _, f in windows.values()])
    assert win["spike"] == int(np.count_nonzero(flags & WINDOW_SPIKE)) > 0
    assert win["background"] == int(np.count_nonzero(flags & WINDOW_BACKGROUND)) >= 2  # at 1 s, 2 s, 3 s
    assert win["incomplete"] <= 0.02 * win["total"]
    # every row lies inside a window of its CPU, in time order
    starts, ends = np.array([s for s, _ in spans]), np.array([e for _, e in spans])
    for c in cpus:
        ts = events.columns["ts_ns"][events.columns["cpu"] == c]
        assert np.all(np.diff(ts) >= 0)
        k = np.searchsorted(starts, ts, side="right") - 1
        assert np.all((k >= 0) & (ts <= ends[np.maximum(k, 0)]))
    # the counts add up: what was kept is a part of what was seen, the rest are the window and context rows
    assert 0 < info["events_kept"] < info["events_seen"]
    assert info["rows"] == events.num_rows == info["events_kept"] + win["context_rows"]
    assert win["late_dropped"] == 0
    # every wake-up later than the threshold, on any CPU, lies inside a window
    ds = open_dataset(done.output)
    result = attribute_spikes(ds, THRESHOLD_NS)
    assert result.n_spikes > 0 and not [s for s in result.spikes if s.status == STATUS_UNTRACED]
    assert sum(s.status == STATUS_INCOMPLETE for s in result.spikes) <= 0.02 * result.n_spikes
    # and the spinner, whose switch in is usually before the window opens, is named by the window's context
    bursts = np.loadtxt(tmp_path / "bursts.txt", dtype=np.int64).reshape(-1, 2)
    _skip_if_switches_dropped(done.output, spinner.pid, len(bursts))
    on_cpu = replace(result, spikes=tuple(s for s in result.spikes if s.cpu == cpu))  # the other CPU's own
    _assert_named(on_cpu, bursts, 0, lambda cause: cause == "js-spinner (SCHED_FIFO/RR 90)")
    assert any("background sample" in note for note in result.notes)


def test_a_ring_too_small_for_a_window_flags_it_incomplete(run_capture, tmp_path: Path, cpu: int) -> None:
    # 16 rows per CPU and a read every 0.5 s: a window's start has left the ring before the reader writes it
    done, cpus, _ = _capture(run_capture, tmp_path, cpu, "--trace-ring", "16", "--trace-read-interval", "0.5")
    events = read_trace_events(done.output)
    win = events.info["windows"]
    assert win["ring_rows_per_cpu"] == 16 and win["incomplete"] > 0
    flagged = {w for c in cpus for w, (_, _, f) in _windows(events, c).items() if f & WINDOW_INCOMPLETE}
    assert len(flagged) == win["incomplete"]
    result = attribute_spikes(open_dataset(done.output), THRESHOLD_NS)
    assert sum(s.status == STATUS_INCOMPLETE for s in result.spikes) > 0


def test_keep_options_are_checked(run_capture, cpu: int) -> None:
    for args, says in [(("--trace-keep", "some"), "invalid --trace-keep 'some'"),
                       (("--trace", "--trace-window", "100"), "invalid --trace-window '100'"),
                       (("--trace", "--trace-threshold", "0"), "invalid --trace-threshold '0'"),
                       (("--trace", "--trace-background", "1,2000"), "invalid --trace-background '1,2000'"),
                       (("--trace-threshold", "50",), "need --trace")]:
        done = run_capture("-a", str(cpu), "-l", "10", "-q", *args)
        assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1, (args, done.stderr)
