"""--trace and --break on this machine's kernel, as root: the instance, the events table, losses, planted causes.

Each test measures the last CPU and leaves CPU 0 to the writer and the trace reader.  Planted disturbances
log their own bursts (CLOCK_MONOTONIC, as ``time.monotonic_ns``), which is the ground truth: a spike is
caused by a disturbance when its window overlaps a burst; the background rate outside the bursts, times the
wake-ups inside them, is the number of coincident spikes allowed not to name it.
"""

from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import (
    TRACE_COLUMNS,
    TRACE_EVENTS,
    open_dataset,
    open_trace,
    read_trace_events,
    trace_part_paths,
)
from jitterscope.derive import PRESENT_SHARE, STATUS_ATTRIBUTED, STATUS_INCOMPLETE, attribute_spikes

from .conftest import is_root

TRACEFS = Path("/sys/kernel/tracing")
GLOBAL_FILES = ("current_tracer", "tracing_on", "set_event", "trace_clock")


def _mount_tracefs() -> bool:
    if not (TRACEFS / "instances").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, check=False)
    return (TRACEFS / "instances").is_dir()


pytestmark = [
    pytest.mark.skipif(not is_root(), reason="tracefs instances and SCHED_FIFO need root"),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a measured CPU and a housekeeping CPU"),
]


def _switch_in_is_traced(cpu: int) -> bool:
    """Does the kernel trace sched_switch *into* a woken task on ``cpu``?

    The attribution needs both ends of every switch.  On this VM's kernel one CPU was seen, after hours of
    tests, to stop emitting the idle -> task switch (the task -> idle one still came), in the kernel's own
    text trace too; the tests then measure on a CPU where both ends are traced, or skip saying why.
    """
    instance = TRACEFS / "instances" / f"js-probe-{os.getpid()}"
    instance.mkdir()
    try:
        (instance / "tracing_cpumask").write_text(f"{1 << cpu:x}")
        (instance / "set_event").write_text("sched:sched_switch")
        (instance / "tracing_on").write_text("1")
        child = subprocess.Popen([sys.executable, "-c", "import os, time\n"
                                  f"os.sched_setaffinity(0, {{{cpu}}})\n"
                                  "[time.sleep(0.002) for _ in range(30)]"])
        child.wait(timeout=30)
        (instance / "tracing_on").write_text("0")
        return f"next_pid={child.pid} " in (instance / "trace").read_text()
    finally:
        instance.rmdir()


@pytest.fixture(scope="module")
def cpu() -> int:
    if not _mount_tracefs():
        pytest.skip("no tracefs on this kernel")
    for candidate in sorted(os.sched_getaffinity(0), reverse=True):
        if _switch_in_is_traced(candidate):
            return candidate
    pytest.skip("this kernel traces no sched_switch into a woken task on any CPU (checked with a probe instance)")


def _global() -> dict[str, str]:
    return {name: (TRACEFS / name).read_text() for name in GLOBAL_FILES}


def _ours() -> list[str]:
    return sorted(p.name for p in (TRACEFS / "instances").iterdir() if p.name.startswith("jitterscope-"))


def _args(cpu: int, *extra: str) -> tuple[str, ...]:
    return ("-a", str(cpu), "-p", "80", "-q", *extra)


# ---- the instance, the table, the global trace -------------------------------------------------


def test_trace_stores_events_and_leaves_the_global_trace_as_found(run_capture, cpu: int) -> None:
    before, instances = _global(), _ours()
    done = run_capture(*_args(cpu, "-l", "500", "--trace", "--trace-keep", "all"))
    assert done.returncode == 0, done.stderr
    assert _global() == before
    assert _ours() == instances
    events = read_trace_events(done.output)
    assert events is not None and events.num_rows > 500  # at least a timer vector per wake-up
    table = pq.read_table(done.output / "_trace" / "part-00000.parquet")
    assert [(f.name, f.type) for f in table.schema] == [(c.name, c.arrow_type) for c in TRACE_COLUMNS]
    assert set(np.unique(events.columns["cpu"]).tolist()) == {cpu}  # tracing_cpumask: the measured CPU only
    info = events.info
    assert info["clock"] == "mono" and info["cpus"] == [cpu] and info["state"] == "complete"
    assert info["lost"]["total"] == 0 and info["reader_cpu"] != cpu
    env = json.loads(pq.read_schema(done.output / "part-00000.parquet").metadata[b"jitterscope.environment"])
    assert env["tracing"]["enabled"] and env["tracing"]["instance"] == info["instance"]
    # event times are the samples' clock: every wake-up of the measuring thread has its timer interrupt (the
    # default events' split point) and its switch-in a few µs before its clock read; either will do (this VM's
    # kernel was seen to drop the idle -> task switch for the rest of a run on a loaded machine, and the default
    # events no longer hold the thread's sched_wakeup)
    samples = pq.read_table(done.output / "part-00000.parquet").to_pandas()
    mine = events.columns["other_comm"] == events.strings.index(f"js-cpu{cpu}")
    switch_in = mine & (events.columns["event"] == TRACE_EVENTS["switch"])
    timer = (events.columns["event"] == TRACE_EVENTS["vector_entry"]) & \
        (events.columns["name"] == events.strings.index("local_timer"))
    woken = np.sort(events.columns["ts_ns"][switch_in | timer])
    late = samples.actual_ns.to_numpy()[10:-10]
    nearest = woken[np.clip(np.searchsorted(woken, late) - 1, 0, woken.size - 1)]
    assert np.median(late - nearest) < 50_000


def _keep(keep: str) -> tuple[str, ...]:
    """--trace-keep KEEP; spikes with a background window 1 s after the start, so a short run keeps events."""
    return ("--trace-keep", keep, *(("--trace-background", "1,100") if keep == "spikes" else ()))


@pytest.mark.parametrize("keep", ["all", "spikes"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_instance_removed_after_a_signal_and_the_trace_kept(capture_bin, tmp_path: Path, cpu: int, sig,
                                                             keep: str) -> None:
    before, instances = _global(), _ours()
    proc = subprocess.Popen([str(capture_bin), *_args(cpu, "-D", "60", "--trace", *_keep(keep),
                                                      "-o", str(tmp_path / "out"))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5 if keep == "all" else 2.0)
    assert len(_ours()) == len(instances) + 1
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert _ours() == instances and _global() == before
    events = read_trace_events(tmp_path / "out")
    assert events.info["stop_reason"] == sig.name and events.num_rows > 0
    assert events.info["keep"] == keep


@pytest.mark.parametrize("keep", ["all", "spikes"])
def test_stale_instance_of_a_killed_capture_is_removed_by_the_next(capture_bin, run_capture, tmp_path: Path,
                                                                   cpu: int, keep: str) -> None:
    before, instances = _global(), _ours()
    proc = subprocess.Popen([str(capture_bin), *_args(cpu, "-D", "60", "--trace", *_keep(keep), "--trace-flush",
                                                      "0.5", "-o", str(tmp_path / "killed"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5 if keep == "all" else 2.5)
    proc.kill()
    proc.wait(timeout=30)
    stale = f"jitterscope-{proc.pid}"
    assert stale in _ours()
    assert read_trace_events(tmp_path / "killed").num_rows > 0  # the flushed events survive the kill
    done = run_capture(*_args(cpu, "-l", "50"))
    assert done.returncode == 0, done.stderr
    assert f"removed the tracefs instance {stale} left by a capture that was killed" in done.stderr
    assert _ours() == instances and _global() == before


def _dead_bytes(path: Path) -> tuple[int, int]:
    """(bytes that are neither column chunks nor the footer nor magic, footer bytes) of one Parquet file."""
    meta = pq.read_metadata(path)
    raw = path.read_bytes()
    footer = int.from_bytes(raw[-8:-4], "little")
    chunks = sum(meta.row_group(g).column(c).total_compressed_size
                 for g in range(meta.num_row_groups) for c in range(meta.num_columns))
    return len(raw) - 4 - chunks - footer - 8, footer


def test_events_rotate_into_parts_with_bounded_footers_and_a_sigkill_keeps_every_flush(
        capture_bin, run_capture, tmp_path: Path, cpu: int) -> None:
    """The events table is the samples' part container: parts of --part-seconds, one footer each, no dead bytes,
    every visible part complete at every instant, so a SIGKILL loses at most the last flush interval."""
    out = tmp_path / "killed"
    proc = subprocess.Popen([str(capture_bin), *_args(cpu, "-D", "60", "--trace", "--trace-keep", "all",
                                                      "--part-seconds", "1", "--group-seconds", "0.5",
                                                      "--flush-interval", "0.25",
                                                      "--trace-flush", "0.25", "-o", str(out))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(4.5)
    killed_ns = time.monotonic_ns()
    proc.kill()
    proc.wait(timeout=30)
    parts = trace_part_paths(out)
    assert len(parts) >= 3 and [p.name for p in parts] == [f"part-{i:05d}.parquet" for i in range(len(parts))]
    for part in parts:
        dead, footer = _dead_bytes(part)
        assert dead == 0, part  # no superseded footer anywhere
        # a part of 1 s holds at most 2 row groups of 0.5 s (+1 at a boundary): its footer cannot grow with time
        assert pq.read_metadata(part).num_row_groups <= 3 and footer < 8192, (part, footer)
    table = open_trace(out)
    assert table.info["state"] == "running" and table.num_rows == sum(pq.read_metadata(p).num_rows for p in parts)
    assert all(n <= table.part_strings[-1] for n in table.part_strings)  # the last dictionary covers every part
    events = read_trace_events(out)
    ts = events.columns["ts_ns"][events.columns["cpu"] == cpu]
    assert ts.size == table.num_rows and np.all(np.diff(ts) >= 0)  # parts in order, nothing twice
    # every flush before the kill is on disk: at most a --trace-flush (0.25 s) plus a read interval (0.25 s) and
    # a loaded machine's scheduling delay are missing
    assert ts[-1] > killed_ns - 1_500_000_000
    hidden = sorted(p.name for p in (out / "_trace").iterdir() if p.name.startswith("."))
    assert all(name.startswith(".part-") for name in hidden)  # only the current part's twins, as for the samples
    # --force replaces the killed dataset, its trace parts and twins included (and removes its instance)
    done = run_capture(*_args(cpu, "-l", "50", "--trace", "--trace-keep", "all", "--force"), output=out)
    assert done.returncode == 0, done.stderr
    assert f"jitterscope-{proc.pid}" not in _ours()
    assert [p.name for p in (out / "_trace").iterdir()] == ["part-00000.parquet"]
    assert read_trace_events(out).info["state"] == "complete"


def test_trace_option_errors_are_one_line(run_capture, cpu: int) -> None:
    instances = _ours()
    done = run_capture(*_args(cpu, "-l", "10", "--trace=no_such_event"))
    assert done.returncode != 0 and len(done.stderr_lines) == 1
    assert "cannot enable the trace event 'no_such_event'" in done.stderr
    done = run_capture(*_args(cpu, "-l", "10", "--trace"), output=None)
    assert done.returncode == 2 and "--trace needs -o DIR" in done.stderr
    assert _ours() == instances


# ---- losses -------------------------------------------------------------------------------------


def _gaps(events, cpu: int) -> list[tuple[int, int]]:
    """Independently of derive: [ts of the lost row, ts of the next event on the CPU]."""
    c = events.columns
    on = np.flatnonzero(c["cpu"] == cpu)
    out = []
    for k, row in enumerate(on.tolist()):
        if c["event"][row] == TRACE_EVENTS["lost"]:
            nxt = on[k + 1:]
            out.append((int(c["ts_ns"][row]), int(c["ts_ns"][nxt[0]]) if nxt.size else 2**62))
    return out


def test_tiny_buffer_counts_the_loss_and_marks_every_touched_spike_incomplete(run_capture, cpu: int) -> None:
    done = run_capture(*_args(cpu, "-D", "2", "--trace", "--trace-keep", "all", "--trace-buffer", "4",
                                  "--trace-read-interval", "0.5"))
    assert done.returncode == 0, done.stderr
    events = read_trace_events(done.output)
    lost = events.info["lost"]["total"]
    assert lost > 0 and events.lost_by_cpu()[cpu] == lost
    gaps = _gaps(events, cpu)
    assert gaps
    result = attribute_spikes(open_dataset(done.output), 1_000)  # nearly every wake-up is a "spike"
    assert result.n_incomplete > 0
    for spike in result.spikes:
        touched = any(spike.actual_ns >= lo and spike.expected_ns <= hi for lo, hi in gaps)
        assert (spike.status == STATUS_INCOMPLETE) == touched, spike
        if touched:
            assert spike.contributions == () and spike.longest is None
    assert result.n_windows + result.n_incomplete <= result.n_wakeups


# ---- --break ------------------------------------------------------------------------------------

# Each burst starts at a random point of a millisecond after its slot: with a period that is a whole number
# of the capture's 1 ms intervals, a fixed phase would give every burst the same delay, and where the phase put
# each burst's end within 100 µs after a wake-up no burst made a spike (seen in CI: 10 spikes for 174 bursts,
# and in 1 of 3 runs here).  A random phase makes the delay of each burst uniform over 0-1 ms.
SPINNER = """
import os, random, sys, time
cpu, prio, burst, period, total, log = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), \\
    float(sys.argv[5]), sys.argv[6]
open('/proc/self/comm', 'w').write('js-spinner')
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
bursts = []
end = time.monotonic() + total
nxt = time.monotonic() + period
while nxt < end:
    time.sleep(max(0.0, nxt + random.uniform(0.0, 0.001) - time.monotonic()))
    t0 = time.monotonic_ns()
    while time.monotonic_ns() - t0 < burst * 1e9:
        pass
    bursts.append((t0, time.monotonic_ns()))
    nxt += period
open(log, 'w').write(chr(10).join(f'{a} {b}' for a, b in bursts))
"""


def _spinner(tmp_path: Path, cpu: int, burst_s: float, period_s: float, total_s: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SPINNER, str(cpu), "90", str(burst_s), str(period_s),
                             str(total_s), str(tmp_path / "bursts.txt")])


@pytest.mark.parametrize("keep", ["all", "spikes"])  # spikes: the marker is kept in a window of its own
def test_break_stops_at_the_first_late_wake_up_with_its_marker(run_capture, tmp_path: Path, cpu: int,
                                                               keep: str) -> None:
    spinner = _spinner(tmp_path, cpu, 0.002, 0.5, 3.0)  # a 2 ms burst after 0.5 s: a wake-up > 500 µs late
    try:
        done = run_capture(*_args(cpu, "-D", "10", "--trace", "--trace-keep", keep, "--break", "500"))
    finally:
        spinner.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    samples = pq.read_table(done.output / "part-00000.parquet")
    latency = samples.column("actual_ns").to_numpy() - samples.column("expected_ns").to_numpy()
    seq = samples.column("seq").to_numpy()
    first = int(np.flatnonzero(latency > 500_000)[0])
    assert first == latency.size - 1  # stopped at the first wake-up over the threshold: within one interval
    status = json.loads(samples.schema.metadata[b"jitterscope.status"])
    assert status["reason"].startswith(f"break: thread 0 (CPU {cpu}) seq {seq[first]} ")
    events = read_trace_events(done.output)
    markers = [events.string(int(n)) for n in events.columns["name"][events.columns["event"] == TRACE_EVENTS["marker"]]]
    assert markers == [f"jitterscope break: thread 0 cpu {cpu} seq {seq[first]} latency_ns {latency[first]} "
                       "threshold_ns 500000"]
    assert events.columns["ts_ns"].max() >= samples.column("actual_ns").to_numpy()[first] - 1000


# ---- planted causes -------------------------------------------------------------------------------

FLOOD = """
import socket, sys, time
packets, period, total, log = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
open('/proc/self/comm', 'w').write('js-flood')
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rx.bind(('127.0.0.1', 0)); rx.setblocking(False)
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
addr, payload, bursts = rx.getsockname(), b'x' * 1024, []
end = time.monotonic() + total
nxt = time.monotonic() + period
while nxt < end:
    time.sleep(max(0.0, nxt - time.monotonic()))
    t0 = time.monotonic_ns()
    for _ in range(packets):
        tx.sendto(payload, addr)
    bursts.append((t0, time.monotonic_ns()))
    try:
        while True:
            rx.recv(2048)
    except BlockingIOError:
        pass
    nxt += period
open(log, 'w').write(chr(10).join(f'{a} {b}' for a, b in bursts))
"""


def _caused(result, bursts: np.ndarray, slack_ns: int, counts=lambda spike: True) -> tuple[list, float]:
    """Spikes overlapping a burst (+ slack), and how many of them the background alone would give.

    The background is the rate of the spikes outside the bursts for which ``counts`` holds.
    """
    lo, hi = bursts[:, 0], bursts[:, 1] + slack_ns
    attributed = [s for s in result.spikes if s.status == STATUS_ATTRIBUTED]
    is_inside = [bool(((s.actual_ns >= lo) & (s.expected_ns <= hi)).any()) for s in attributed]
    inside = [s for s, yes in zip(attributed, is_inside, strict=True) if yes]
    span_in = float(np.sum(hi - lo))
    span_total = float(max(s.actual_ns for s in result.spikes) - min(s.expected_ns for s in result.spikes))
    outside = sum(counts(s) for s, yes in zip(attributed, is_inside, strict=True) if not yes)
    background = outside / max(span_total - span_in, 1.0) * span_in
    return inside, background


def _named(spike, match) -> bool:
    return any(match(c.cause) for c in spike.contributions if c.share >= 0.10)


def _bystander_present(spike, planted: tuple[str, ...]) -> bool:
    """Did a thread that is not part of the planted disturbance hold the spike's CPU (a present cause)?"""
    return any(c.kind == "thread" and c.share >= PRESENT_SHARE and not c.cause.startswith(planted)
               for c in spike.contributions)


def _assert_named(result, bursts: np.ndarray, slack_ns: int, match, bystanders_from: tuple[str, ...] = ()) -> None:
    """At least 95 % of the spikes inside the bursts name the disturbance, less the background's share.

    ``bystanders_from``: the comms of the disturbance's own threads.  When given, the spikes inside the
    bursts where a *different* thread is present (and the disturbance is not named) are background, counted
    one by one, and the rate outside the bursts estimates only the rest: a disturbance that keeps the
    other CPU busy makes the scheduler move runnable tasks onto the measured CPU during its bursts (seen
    in CI beside the other test worker), a background tied to the bursts that a rate outside them cannot
    estimate.  At most half the spikes may be excused so.
    """
    def bystander(spike) -> bool:
        return bool(bystanders_from) and not _named(spike, match) and _bystander_present(spike, bystanders_from)

    inside, background = _caused(result, bursts, slack_ns, lambda spike: not bystander(spike))
    named = sum(_named(s, match) for s in inside)
    assert len(inside) >= 20, f"too few spikes in the bursts ({len(inside)}): the disturbance did not disturb"
    bystanders = sum(bystander(s) for s in inside)
    assert bystanders <= 0.5 * len(inside), (bystanders, len(inside))
    assert named >= 0.95 * (len(inside) - background - bystanders), (named, len(inside), background, bystanders)


def _skip_if_switches_dropped(dataset: Path, pid: int, bursts: int) -> None:
    """Skip, saying why, when the kernel recorded the spinner's runs without any switch into or out of it.

    Seen on this VM's kernel after hours of tests: the switch into a task is intermittently not traced
    (its own text trace shows the same); attribution then infers the run from the switch out of it.  With
    neither end traced nothing can name the task; with either, attribution must name the spinner.
    """
    events = read_trace_events(dataset)
    switch = events.columns["event"] == TRACE_EVENTS["switch"]
    into = int(np.count_nonzero(switch & (events.columns["other_pid"] == pid)))
    out_of = int(np.count_nonzero(switch & (events.columns["pid"] == pid)))
    if max(into, out_of) < 0.5 * bursts:
        pytest.skip(f"the kernel traced {into} switches into the spinner (pid {pid}) and {out_of} out of it for "
                    f"{bursts} bursts: no attribution can name it")


def test_higher_priority_fifo_spinner_is_named_by_command_with_its_pid(run_capture, tmp_path: Path, cpu: int) -> None:
    spinner = _spinner(tmp_path, cpu, 0.001, 0.020, 3.5)
    try:
        done = run_capture(*_args(cpu, "-D", "4", "--trace", "--trace-keep", "all"))
    finally:
        spinner.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    bursts = np.loadtxt(tmp_path / "bursts.txt", dtype=np.int64).reshape(-1, 2)
    _skip_if_switches_dropped(done.output, spinner.pid, len(bursts))
    result = attribute_spikes(open_dataset(done.output), 100_000)
    label = "js-spinner (SCHED_FIFO/RR 90)"  # one cause per command (issue 21); its pids are listed
    _assert_named(result, bursts, 0, lambda cause: cause == label)
    top = result.causes[0]
    assert top.cause.label == label and top.cause.pids == (spinner.pid,) and top.cause.priority == 90
    # a window the spinner held is late unless the burst ended within 100 µs after the wake-up: 90 % of them
    # at a uniform phase (6 standard deviations above 75 % for 170 bursts); how often the others were late
    # depends on what else ran on the machine (CI saw 18 % of them beside another worker): the interval's low
    # end, not the ratio, is the claim
    assert top.risk.exceed_in >= 0.75 * top.risk.n_in and top.risk.ci_low > 3 and top.p_holm < 1e-6


@pytest.fixture
def flood_cpu() -> int:
    """The NET_RX test's measured CPU: the last one (the flood is sent from CPU 0); it needs no switch-ins."""
    if not _mount_tracefs():
        pytest.skip("no tracefs on this kernel")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs: one sends the flood, the other receives it")
    return max(os.sched_getaffinity(0))


@pytest.fixture
def rps_on(flood_cpu: int):
    """Loopback's receive processing (NET_RX) steered to the measured CPU, restored afterwards."""
    path = Path("/sys/class/net/lo/queues/rx-0/rps_cpus")
    if not path.exists():
        pytest.skip("no RPS on loopback: cannot put its NET_RX on the measured CPU")
    saved = path.read_text().strip()
    path.write_text(f"{1 << flood_cpu:x}")
    try:
        yield
    finally:
        path.write_text(saved)


def _bulk_edge_ns(dataset, quantile: float = 0.75) -> int:
    """The run's own ``quantile`` of wake-up latency, in ns: a spike threshold set by the machine, not by us."""
    table = dataset.read(columns=["expected_ns", "actual_ns"])
    latency = table["actual_ns"].to_numpy() - table["expected_ns"].to_numpy()
    return int(np.quantile(latency, quantile))


def test_loopback_udp_flood_is_named_net_rx(run_capture, tmp_path: Path, flood_cpu: int, rps_on) -> None:
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, "1500", "0.05", "3.5", str(tmp_path / "bursts.txt")],
                             preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    try:
        done = run_capture(*_args(flood_cpu, "-D", "4", "--trace", "--trace-keep", "all"))
    finally:
        flood.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    # NET_RX of one loopback datagram holds the CPU 10-25 µs: its spikes stand 10-25 µs above the bulk, so the
    # threshold sits just above the bulk, at the run's own 75th percentile (the bursts hold under a tenth of
    # the wake-ups).  A fixed 25 µs (this machine's p75) failed in CI, whose bulk lay above it: 3,776 of the
    # 3,792 wake-ups outside the bursts exceeded it, so no rise in risk could show.
    dataset = open_dataset(done.output)
    result = attribute_spikes(dataset, _bulk_edge_ns(dataset))
    _assert_named(result, np.loadtxt(tmp_path / "bursts.txt", dtype=np.int64).reshape(-1, 2), 2_000_000,
                  lambda cause: cause == "softirq NET_RX", bystanders_from=("js-flood", "ksoftirqd/"))
    net_rx = next(c for c in result.causes if c.cause.label == "softirq NET_RX")
    assert net_rx.cause.number == 3 and net_rx.risk.ci_low > 1  # a significant rise in spike risk


def test_plain_run_names_no_planted_cause(run_capture, cpu: int) -> None:
    done = run_capture(*_args(cpu, "-D", "3", "--trace", "--trace-keep", "all"))
    assert done.returncode == 0, done.stderr
    result = attribute_spikes(open_dataset(done.output), 50_000)
    attributed = [s for s in result.spikes if s.status == STATUS_ATTRIBUTED]
    for planted in (lambda c: c == "softirq NET_RX", lambda c: "js-spinner" in c or "js-flood" in c,
                    lambda c: "SCHED_FIFO/RR 90" in c):
        assert sum(_named(s, planted) for s in attributed) <= 0.05 * max(len(attributed), 1)


def test_binary_table_equals_the_kernels_own_text_of_the_same_events(run_capture, cpu: int) -> None:
    """A second instance records the same events as text; the importer's rows equal the capture's binary ones."""
    from jitterscope.io import read_trace_text
    other = TRACEFS / "instances" / f"js-crosscheck-{os.getpid()}"
    other.mkdir()
    try:
        (other / "tracing_on").write_text("0")
        (other / "trace_clock").write_text("mono")
        (other / "tracing_cpumask").write_text(f"{1 << cpu:x}")
        (other / "set_event").write_text("irq:irq_handler_entry irq:irq_handler_exit irq:softirq_entry "
                                         "irq:softirq_exit sched:sched_switch sched:sched_wakeup")
        (other / "tracing_on").write_text("1")
        done = run_capture(*_args(cpu, "-l", "300", "--trace-keep", "all",
                                  "--trace=irq:irq_handler_entry,irq:irq_handler_exit,"
                                  "irq:softirq_entry,irq:softirq_exit,sched:sched_switch,sched:sched_wakeup"))
        (other / "tracing_on").write_text("0")
        text = done.output.parent / "other.trace"
        text.write_text((other / "trace").read_text())
    finally:
        other.rmdir()
    assert done.returncode == 0, done.stderr
    binary, kernel_text = read_trace_events(done.output), read_trace_text(text)

    def rows(events, lo: int, hi: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
        c = events.columns
        keep = (c["ts_ns"] // 1000 >= lo) & (c["ts_ns"] // 1000 <= hi)
        return c["ts_ns"][keep] // 1000, list(zip(
            c["event"][keep].tolist(), c["number"][keep].tolist(), c["other_pid"][keep].tolist(),
            c["other_prio"][keep].tolist(), c["value"][keep].tolist(), [events.string(int(n)) for n in c["name"][keep]],
            [events.string(int(n)) for n in c["other_comm"][keep]], strict=True))

    # the two instances stamp the same event one after the other, mostly within the same µs; a vCPU preempted
    # between the two writes puts more between them, so: the same clock (median 0), nearly always within 2 µs.
    # An interrupt that lands between the two writes records its own events in both buffers before the
    # interrupted event reaches the second one, so the orders may differ by such a nesting (seen in CI: a
    # softirq_entry before a sched_wakeup in one buffer, after it in the other): the same events, in nearly
    # the same order.
    lo = max(binary.columns["ts_ns"].min(), kernel_text.columns["ts_ns"].min()) // 1000 + 5
    hi = min(binary.columns["ts_ns"].max(), kernel_text.columns["ts_ns"].max()) // 1000 - 5
    (ts_ours, ours), (ts_theirs, theirs) = rows(binary, lo, hi), rows(kernel_text, lo, hi)
    assert len(ours) > 500
    # the same events: each of one table is in the other, counted alike, once the other's window is widened by
    # the 2 µs the two stamps may differ (an event stamped just inside the window in one buffer and just outside
    # in the other made the plain counts differ in 3 of 4 runs on a quiet machine, 2026-12-02)
    ours_wide, theirs_wide = rows(binary, lo - 3, hi + 3)[1], rows(kernel_text, lo - 3, hi + 3)[1]
    assert not Counter(ours) - Counter(theirs_wide) and not Counter(theirs) - Counter(ours_wide)
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    in_order = sum(b.size for b in blocks)
    assert in_order >= 0.98 * len(ours), f"{len(ours) - in_order} of {len(ours)} events out of order"
    gap = np.abs(np.concatenate([ts_ours[b.a:b.a + b.size] - ts_theirs[b.b:b.b + b.size] for b in blocks]))
    assert np.median(gap) == 0 and np.quantile(gap, 0.99) <= 2
