"""jitterscope-bench-trace: a synthetic trace through the real --trace-keep reader and events-table writer."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jitterscope.dataset import WINDOW_BACKGROUND, WINDOW_SPIKE, read_trace_events
from jitterscope.io import capture_binary


def _bench(tmp_path: Path, spec: str, *extra: str) -> dict[str, float]:
    binary = capture_binary().with_name("jitterscope-bench-trace")
    done = subprocess.run([str(binary), spec, "--trace", "--sync", "none", "-o", str(tmp_path / "out"), *extra],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return {k: float(v) for k, v in (line.split() for line in done.stdout.splitlines()[1:])}


def test_spikes_keep_a_window_per_spike_on_every_cpu_and_a_background_sample(tmp_path: Path) -> None:
    # 2 simulated minutes of 4 CPUs at 1 kHz with 1 spike/s per CPU, a background window every 30 s
    v = _bench(tmp_path, "0.0333,4,1000,1", "--trace-background", "30,100")
    assert 0 < v["windows_spike"] <= v["late_notices"] and v["windows_background"] == 4
    assert v["windows_incomplete"] == 0 and v["events_kept"] < 0.05 * v["events_seen"]
    events = read_trace_events(tmp_path / "out")
    c = events.columns
    opens = c["event"] == 16
    assert sorted(set(c["cpu"][opens].tolist())) == [0, 1, 2, 3]
    per_cpu = [int((opens & (c["cpu"] == cpu)).sum()) for cpu in range(4)]
    assert per_cpu == [int(v["windows"])] * 4  # every window on every CPU
    flags = c["value"][opens]
    assert ((flags & WINDOW_SPIKE) > 0).sum() == 4 * v["windows_spike"]
    assert ((flags & WINDOW_BACKGROUND) > 0).sum() == 4 * v["windows_background"]
    assert events.info["events_kept"] == v["events_kept"] and events.num_rows == v["rows"]


def test_keep_all_keeps_every_event(tmp_path: Path) -> None:
    v = _bench(tmp_path, "0.002,2,1000,1", "--trace-keep", "all")
    assert v["events_kept"] == v["events_seen"] == v["rows"] > 0 and v["windows"] == 0


def test_a_thread_that_posts_late_holds_its_windows_back(tmp_path: Path) -> None:
    # CPU 0's notices come a read interval late (a preempted measuring thread) while its next target says
    # where it is: no window may be written before the notices that would extend it, so none comes late
    v = _bench(tmp_path, "0.02,4,1000,3,1")
    assert v["late_notices"] > 100 and v["late_windows"] == 0
    info = read_trace_events(tmp_path / "out").info
    assert info["windows"]["late_windows"] == 0 and info["windows"]["total"] == v["windows"]
