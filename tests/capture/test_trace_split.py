"""The interrupt/thread split on real captures of this machine, as root: a planted delay lands on its side.

(a) a FIFO 90 spinner on the measured CPU: the timer interrupt arrives on time (user code runs with interrupts
on), the measuring thread (FIFO 80) waits for the spinner: *thread* latency.
(b) writes of an error line to ``/dev/kmsg`` from the measured CPU: the kernel prints it on the serial console
(``console=ttyS0``, console_loglevel 4 prints level 3) with the port lock held and interrupts off, so the timer
interrupt waits: *interrupt* latency.  (The issue's other way, a deeper idle state, moves nothing here: this VM
has no cpuidle driver, and the interrupt latency of an idle CPU and a busy one measured the same, p50 3.1 and
3.4 µs.)  Each writes a line to the kernel log (it cannot be taken back; it says what wrote it).

The machine is shared with other tests: spikes outside the planted bursts (hypervisor, other load) are left out;
the planted bursts log their own times (CLOCK_MONOTONIC), and only spikes overlapping them count.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from jitterscope.dataset import open_dataset
from jitterscope.derive import STATUS_ATTRIBUTED, attribute_spikes
from jitterscope.io import export_event_perfetto, track_of

from ..io.trace_event_format import check, cpu_tracks, load
from .test_trace import _args, _mount_tracefs, _spinner, _switch_in_is_traced, pytestmark  # noqa: F401

THRESHOLD_NS = 100_000

KMSG = """
import os, sys, time
cpu, period, total, log = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
open('/proc/self/comm', 'w').write('js-kmsg')
os.sched_setaffinity(0, {cpu})
fd = os.open('/dev/kmsg', os.O_WRONLY)
bursts = []
end = time.monotonic() + total
nxt = time.monotonic() + period
while nxt < end:
    time.sleep(max(0.0, nxt - time.monotonic()))
    t0 = time.monotonic_ns()
    os.write(fd, b'<3>jitterscope test_trace_split: a console line that holds the timer interrupt ' + b'.' * 120)
    bursts.append((t0, time.monotonic_ns()))
    nxt += period
open(log, 'w').write(chr(10).join(f'{a} {b}' for a, b in bursts))
"""


@pytest.fixture(scope="module")
def cpu() -> int:
    if not _mount_tracefs():
        pytest.skip("no tracefs on this kernel")
    for candidate in sorted(__import__("os").sched_getaffinity(0), reverse=True):
        if _switch_in_is_traced(candidate):
            return candidate
    pytest.skip("this kernel traces no sched_switch into a woken task on any CPU (checked with a probe instance)")


def _in_bursts(result, log: Path) -> list:
    bursts = np.loadtxt(log, dtype=np.int64).reshape(-1, 2)
    return [s for s in result.spikes if s.status == STATUS_ATTRIBUTED
            and bool(((s.actual_ns >= bursts[:, 0]) & (s.expected_ns <= bursts[:, 1])).any())]


def test_a_fifo_spinner_lands_in_thread_latency(run_capture, tmp_path: Path, cpu: int) -> None:
    # 7 s of bursts: with 4 s a loaded CI machine named the spinner in as few as 5 spikes, and two hypervisor
    # delays among them were 40 % of the sample
    spinner = _spinner(tmp_path, cpu, 0.001, 0.2, 7.0)
    try:
        done = run_capture(*_args(cpu, "-D", "8", "--trace"))
    finally:
        spinner.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    result = attribute_spikes(open_dataset(done.output), THRESHOLD_NS)
    named = [s for s in _in_bursts(result, tmp_path / "bursts.txt")
             if any(c.cause.startswith("js-spinner") and c.share >= 0.1 for c in s.contributions)]
    assert len(named) >= 5, f"only {len(named)} spinner spikes of {result.n_spikes}"
    split = [s.split for s in named if s.split.known]
    assert len(split) >= 0.9 * len(named), [s.split.reason for s in named if not s.split.known]
    # the spinner's spikes are hundreds of µs after an interrupt a few µs late: the median spike is thread
    # latency; a vCPU the host descheduled makes a few interrupt-late (CI: 2.2 ms before the interrupt), so
    # not a share of the summed time, which one such spike decides
    shares = sorted(s.thread_ns / (s.interrupt_ns + s.thread_ns) for s in split)
    assert shares[len(shares) // 2] >= 0.9, [(s.interrupt_ns, s.thread_ns) for s in split]
    assert sum(share > 0.5 for share in shares) >= 0.75 * len(shares), [(s.interrupt_ns, s.thread_ns) for s in split]
    # the worst event of the run in a trace viewer: the format holds, the CPU's track shows the spinner
    written = export_event_perfetto(done.output, tmp_path / "spike.json", 1, threshold_ns=THRESHOLD_NS)
    doc = load(tmp_path / "spike.json")
    assert check(doc) == []
    assert cpu_tracks(doc) == {f"CPU {cpu}": track_of(cpu)}
    assert written.slices > 0 and written.instants > 0


def test_interrupts_held_off_by_the_serial_console_land_in_interrupt_latency(run_capture, tmp_path: Path,
                                                                             cpu: int) -> None:
    if "console=ttyS0" not in Path("/proc/cmdline").read_text():
        pytest.skip("no serial console: a kernel log line does not hold interrupts off here")
    writer = subprocess.Popen([sys.executable, "-c", KMSG, str(cpu), "0.4", "4.5", str(tmp_path / "kmsg.txt")])
    try:
        done = run_capture(*_args(cpu, "-D", "5", "--trace"))
    finally:
        writer.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    result = attribute_spikes(open_dataset(done.output), THRESHOLD_NS)
    inside = _in_bursts(result, tmp_path / "kmsg.txt")
    split = [s.split for s in inside if s.split.known]
    assert len(split) >= 5, f"only {len(split)} split spikes during the console writes of {result.n_spikes}"
    # by time, not by count: a spike of other load may fall inside a write (the machine is shared)
    interrupt = sum(s.interrupt_ns for s in split) / sum(s.interrupt_ns + s.thread_ns for s in split)
    assert interrupt >= 0.7, [(s.interrupt_ns, s.thread_ns) for s in split]
