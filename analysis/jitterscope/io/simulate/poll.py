"""Synthetic busy-poll datasets (kind ``poll``) with planted interruptions and their ground truth.

A polling loop reads a clock every ``iteration_ns``; anything that takes the CPU away makes one gap
between two reads.  Planted, per polling thread (one per CPU):

* the scheduler tick: a gap of ``tick_ns`` every ``1 / tick_hz`` s (a random phase, ±1 % jitter of the
  duration), recorded as ``environment.hz`` so the analyses can name it;
* RT throttling: once per ``period_us`` the loop is stopped for ``period_us - runtime_us`` µs (the ticks
  that would fall inside do not reach the loop: it is not running);
* periodic IRQs (``hz``, ``duration_ns``, handler name) and random bursts of a thread (Poisson rate,
  lognormal durations around ``burst_ns``, a command name), and random unexplained gaps (``hardware``:
  no kernel event covers them, as an SMI or the hypervisor);
* below the threshold: short hiccups (cache misses) that only the per-second histogram sees.

The dataset follows the ``poll`` contract exactly, written by the dataset layer's
:func:`~jitterscope.dataset.write_poll_dataset` in its schema: rows (one per gap >= threshold) in
``part-00000.parquet``, the per-second table in ``_poll/part-00000.parquet`` (iterations, noise, counts,
largest gap, a histogram of every gap in the capture's buckets), metadata ``jitterscope.poll``; with ``trace`` a kernel
events table ``_trace/part-00000.parquet`` whose events explain each planted gap as a capture's trace would
(a local-timer vector for the tick, irq entry/exit, a sched_switch to the bursting thread and back, the
polling thread switched out while runnable during throttling, nothing for the hardware gaps).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ... import __version__
from ...dataset import (
    TRACE_EVENTS,
    Metadata,
    ThreadInfo,
    events_from_rows,
    poll_bucket_column,
    poll_histogram_edges,
    write_poll_dataset,
)
from ...errors import JitterscopeError

WINDOW_NS = 1_000_000_000
_REALTIME_AT_START_NS = 1_764_460_800_000_000_000  # 2025-11-30T00:00:00Z, as the timer simulations
_START_NS = 1_000_000_000_000  # CLOCK_MONOTONIC at the start (1000 s after boot)
_TID = 30_000
KIND_CODES = {"tick": 0, "rt_throttling": 1, "irq": 2, "burst": 3, "hardware": 4}


class PollSpecError(JitterscopeError):
    """A poll simulation spec is malformed; the message names the field."""


@dataclass(frozen=True)
class PeriodicIrq:
    hz: float
    duration_ns: int
    name: str = "eth0"
    irq: int = 24


@dataclass(frozen=True)
class PollSpec:
    """What a poll simulation plants (times in ns unless the name says otherwise)."""

    cpus: tuple[int, ...] = (1,)
    duration_s: float = 10.0
    iteration_ns: int = 40
    threshold_ns: int = 1000
    tick_hz: float | None = 250.0
    tick_ns: int = 2000
    rt_runtime_us: int | None = 950_000
    rt_period_us: int = 1_000_000
    irqs: tuple[PeriodicIrq, ...] = ()
    burst_rate_hz: float = 0.0
    burst_ns: int = 20_000
    burst_command: str = "kworker/1:1"
    hardware_rate_hz: float = 0.0
    hardware_ns: int = 5_000
    hiccup_rate_hz: float = 2000.0
    hiccup_ns: int = 300
    policy: str = "fifo"
    priority: int = 80
    trace: bool = False
    record_hz: bool = True
    """Record ``tick_hz`` as the environment's CONFIG_HZ (a capture records None when the config is unreadable)."""

    def __post_init__(self) -> None:
        checks = [
            (bool(self.cpus) and all(c >= 0 for c in self.cpus) and len(set(self.cpus)) == len(self.cpus),
             "cpus", "distinct CPU numbers >= 0"),
            (0 < self.duration_s <= 3600, "duration_s", "in (0, 3600] s"),
            (0 < self.iteration_ns < self.threshold_ns, "iteration_ns", "positive and below threshold_ns"),
            (self.tick_hz is None or 0 < self.tick_hz <= 10_000, "tick_hz", "in (0, 10000] Hz"),
            (self.threshold_ns <= self.tick_ns < 1e9 / (self.tick_hz or 1), "tick_ns",
             ">= threshold_ns and shorter than a tick period"),
            (self.rt_runtime_us is None or 0 < self.rt_runtime_us < self.rt_period_us, "rt_runtime_us",
             "None (throttling off) or in (0, rt_period_us)"),
            (self.burst_rate_hz >= 0 and self.hardware_rate_hz >= 0 and self.hiccup_rate_hz >= 0, "rates",
             ">= 0 Hz"),
            (self.threshold_ns <= self.burst_ns and self.threshold_ns <= self.hardware_ns, "burst_ns/hardware_ns",
             ">= threshold_ns"),
            (self.iteration_ns < self.hiccup_ns < self.threshold_ns, "hiccup_ns",
             "between iteration_ns and threshold_ns"),
        ] + [(i.hz > 0 and i.duration_ns >= self.threshold_ns, "irqs", "hz > 0, duration_ns >= threshold_ns")
             for i in self.irqs]
        for ok, name, rule in checks:
            if not ok:
                raise PollSpecError(f"poll simulation: {name} must be {rule}")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["cpus"] = list(self.cpus)
        out["irqs"] = [asdict(i) for i in self.irqs]
        return out


@dataclass
class _Gaps:
    start_ns: np.ndarray
    duration_ns: np.ndarray
    kind: np.ndarray
    label: list[str] = field(default_factory=list)


def _planted(spec: PollSpec, cpu: int, rng: np.random.Generator, t0: int, span_ns: int) -> _Gaps:
    """Every planted gap of one thread, sorted, none starting inside an earlier one."""
    starts, durations, kinds, labels = [], [], [], []

    def add(times: np.ndarray, dur: np.ndarray, kind: str, label: str) -> None:
        starts.append(times.astype(np.int64))
        durations.append(dur.astype(np.int64))
        kinds.append(np.full(times.size, KIND_CODES[kind], np.int8))
        labels.extend([label] * times.size)

    if spec.rt_runtime_us is not None:
        period, off = spec.rt_period_us * 1000, (spec.rt_period_us - spec.rt_runtime_us) * 1000
        # the budget runs out runtime_us after each period starts; the first period begins at a random phase
        first = t0 + int(rng.integers(0, period)) - period
        times = np.arange(first + spec.rt_runtime_us * 1000, t0 + span_ns, period)
        times = times[(times >= t0) & (times + off < t0 + span_ns)]
        add(times, np.full(times.size, off), "rt_throttling", "RT throttling")
    if spec.tick_hz:
        period = 1e9 / spec.tick_hz
        times = t0 + float(rng.uniform(0, period)) + np.arange(0, span_ns / period) * period
        dur = spec.tick_ns * (1 + 0.01 * rng.standard_normal(times.size))
        add(times, dur, "tick", "local_timer")
    for irq in spec.irqs:
        period = 1e9 / irq.hz
        times = t0 + float(rng.uniform(0, period)) + np.arange(0, span_ns / period) * period
        add(times, irq.duration_ns * (1 + 0.02 * rng.standard_normal(times.size)), "irq", irq.name)
    for rate, median, kind, label in ((spec.burst_rate_hz, spec.burst_ns, "burst", spec.burst_command),
                                      (spec.hardware_rate_hz, spec.hardware_ns, "hardware", "hardware")):
        n = int(rng.poisson(rate * span_ns / 1e9))
        if n:
            dur = np.maximum(median * rng.lognormal(0.0, 0.3, n), spec.threshold_ns)
            add(t0 + np.sort(rng.uniform(0, span_ns, n)), dur, kind, label)
    if not starts:
        return _Gaps(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8), [])
    start = np.concatenate(starts)
    dur = np.concatenate(durations)
    kind = np.concatenate(kinds)
    order = np.argsort(start, kind="stable")
    start, dur, kind = start[order], dur[order], kind[order]
    label = [labels[i] for i in order.tolist()]
    # a gap that starts while the loop is already stopped does not reach it (one gap, the first one's);
    # throttling first: a tick inside a throttled stretch is no interruption of the loop
    keep = np.ones(start.size, bool)
    end = -1
    for i in range(start.size):
        if start[i] < end:
            keep[i] = False
            continue
        end = start[i] + dur[i] + spec.iteration_ns
    kept = [lab for lab, k in zip(label, keep.tolist(), strict=True) if k]
    return _Gaps(start[keep], dur[keep] + spec.iteration_ns, kind[keep], kept)


def _windows(spec: PollSpec, thread: int, cpu: int, gaps: _Gaps, t0: int, span_ns: int,
             rng: np.random.Generator, edges: np.ndarray) -> dict[str, np.ndarray]:
    """The per-second table of one thread: every gap accounted to the window holding its start."""
    n_windows = math.ceil(span_ns / WINDOW_NS)
    starts = t0 + np.arange(n_windows, dtype=np.int64) * WINDOW_NS
    lengths = np.minimum(WINDOW_NS, t0 + span_ns - starts)
    which = (gaps.start_ns - t0) // WINDOW_NS
    counts = np.bincount(which, minlength=n_windows)
    noise = np.bincount(which, weights=gaps.duration_ns, minlength=n_windows).astype(np.int64)
    hist = np.zeros((n_windows, edges.size - 1), np.int64)
    bucket = np.searchsorted(edges, gaps.duration_ns, side="right") - 1
    np.add.at(hist, (which, bucket), 1)
    biggest = np.zeros(n_windows, np.int64)
    np.maximum.at(biggest, which, gaps.duration_ns)
    hiccups = rng.poisson(spec.hiccup_rate_hz * lengths / 1e9)
    hiccup_bucket = np.searchsorted(edges, spec.hiccup_ns, side="right") - 1
    hist[:, hiccup_bucket] += hiccups
    biggest = np.maximum(biggest, np.where(hiccups > 0, spec.hiccup_ns, spec.iteration_ns))
    plain = np.maximum((lengths - noise - hiccups * spec.hiccup_ns) // spec.iteration_ns, 0)
    hist[:, np.searchsorted(edges, spec.iteration_ns, side="right") - 1] += plain
    columns = {
        "cpu": np.full(n_windows, cpu, np.int32), "thread": np.full(n_windows, thread, np.int32),
        "window_start_ns": starts, "window_ns": lengths.astype(np.int64),
        "iterations": (plain + hiccups + counts).astype(np.int64), "noise_ns": noise,
        "interruptions": counts.astype(np.int64), "max_gap_ns": biggest,
    }
    columns.update({poll_bucket_column(k): hist[:, k] for k in range(hist.shape[1])})
    return columns


def _trace_rows(spec: PollSpec, cpu: int, thread: int, gaps: _Gaps, strings: dict[str, int]) -> list[list[int]]:
    """Kernel events that explain each planted gap, as a capture's trace records them."""
    E = TRACE_EVENTS
    me = _TID + thread
    my_comm = strings.setdefault(f"js-poll{cpu}", len(strings))
    my_prio = 99 - spec.priority
    rows: list[list[int]] = []

    def row(ts: int, event: int, *, pid: int = me, comm: int = my_comm, number: int = -1, name: int = -1,
            other_pid: int = -1, other_prio: int = -1, other_comm: int = -1, prio: int = -1, value: int = 0) -> None:
        rows.append([ts, cpu, event, pid, comm, number, name, other_pid, other_prio, other_comm, prio, value])

    for start, dur, kind, label in zip(gaps.start_ns.tolist(), gaps.duration_ns.tolist(), gaps.kind.tolist(),
                                       gaps.label, strict=True):
        a, b = start + spec.iteration_ns // 2, start + dur - spec.iteration_ns // 2
        if kind == KIND_CODES["tick"]:
            name = strings.setdefault("local_timer", len(strings))
            row(a, E["vector_entry"], number=236, name=name)
            row(b, E["vector_exit"], number=236, name=name)
        elif kind == KIND_CODES["irq"]:
            name = strings.setdefault(label, len(strings))
            row(a, E["irq_entry"], number=24, name=name)
            row(b, E["irq_exit"], number=24, name=name)
        elif kind in (KIND_CODES["burst"], KIND_CODES["rt_throttling"]):
            # throttled: the polling thread leaves the CPU still runnable and the idle task runs
            comm, pid, prio = ((label, 40_000 + cpu, 9) if kind == KIND_CODES["burst"] else (f"swapper/{cpu}", 0, 120))
            other = strings.setdefault(comm, len(strings))
            row(a, E["switch"], other_pid=pid, other_comm=other, other_prio=prio, prio=my_prio, value=1)
            row(b, E["switch"], pid=pid, comm=other, other_pid=me, other_comm=my_comm, other_prio=my_prio,
                prio=prio, value=kind == KIND_CODES["burst"])
        # hardware: no event at all (what a trace cannot see)
    return rows


def simulate_poll(spec: PollSpec, path: str | os.PathLike[str], seed: int = 0, *, overwrite: bool = False) -> Path:
    """Write a poll dataset directory at ``path`` with the effects of ``spec`` planted; return the path.

    Raises
    ------
    DatasetError
        ``path`` exists (without ``overwrite``) or cannot be written.
    """
    out = Path(path)
    rng = np.random.default_rng(seed)
    edges = np.asarray(poll_histogram_edges(), np.int64)
    span_ns = round(spec.duration_s * 1e9)
    rows, windows, threads, truth, trace_rows = [], [], [], {}, []
    strings: dict[str, int] = {}
    for thread, cpu in enumerate(spec.cpus):
        # threads start 1 µs apart, as pthreads do; the CPUs are independent, so no shared stalls here
        t0 = _START_NS + thread * 1000
        gaps = _planted(spec, cpu, rng, t0, span_ns)
        n = gaps.start_ns.size
        rows.append({"cpu": np.full(n, cpu, np.int32), "thread": np.full(n, thread, np.int32),
                     "seq": np.arange(n, dtype=np.int64), "start_ns": gaps.start_ns, "duration_ns": gaps.duration_ns})
        table = _windows(spec, thread, cpu, gaps, t0, span_ns, rng, edges)
        windows.append(table)
        threads.append(ThreadInfo(thread=thread, cpu=cpu, tid=_TID + thread, interval_ns=0, samples=n, drops=0,
                                  extra={"iterations": int(table["iterations"].sum()),
                                         "noise_ns": int(gaps.duration_ns.sum())}))
        truth[str(cpu)] = {name: {"count": int((gaps.kind == code).sum()),
                                  "noise_ns": int(gaps.duration_ns[gaps.kind == code].sum())}
                           for name, code in KIND_CODES.items()}
        truth[str(cpu)]["rt_throttling"]["start_ns"] = gaps.start_ns[gaps.kind == KIND_CODES["rt_throttling"]].tolist()
        if spec.trace:
            trace_rows += _trace_rows(spec, cpu, thread, gaps, strings)
    main = pa.table({k: np.concatenate([r[k] for r in rows]) for k in rows[0]})
    per_second = pa.table({k: np.concatenate([w[k] for w in windows]) for k in windows[0]})
    metadata = _metadata(spec, seed, tuple(threads), edges, truth)
    trace = None
    if spec.trace:
        trace_rows.sort(key=lambda r: (r[1], r[0]))
        ordered = [s for s, _ in sorted(strings.items(), key=lambda item: item[1])]
        info = {"clock": "mono", "resolution_ns": 1, "cpus": list(spec.cpus), "simulated": True,
                "events": ["irq", "softirq", "vectors", "sched_switch", "nmi"], "lost": {}}
        trace = events_from_rows(trace_rows, ordered, info, source="jitterscope simulate --mode poll")
    return write_poll_dataset(out, main, per_second, metadata, trace=trace, overwrite=overwrite)


def _metadata(spec: PollSpec, seed: int, threads: tuple[ThreadInfo, ...], edges: np.ndarray,
              truth: Mapping[str, Any]) -> Metadata:
    throttling = None if spec.rt_runtime_us is None else {"runtime_us": spec.rt_runtime_us,
                                                          "period_us": spec.rt_period_us}
    poll = {"threshold_ns": spec.threshold_ns, "clock": "tsc", "clock_read_ns": spec.iteration_ns / 2,
            "iteration_ns": {"min": float(spec.iteration_ns), "median": float(spec.iteration_ns)},
            "histogram_edges_ns": edges.tolist(), "window_ns": WINDOW_NS, "rt_throttling": throttling,
            "rows_dropped": 0}
    cpus = ",".join(str(c) for c in spec.cpus)
    environment = {
        "simulated": True, "hostname": "simulated", "kernel_release": "simulated", "kernel_version": "simulated",
        "cmdline": "", "preempt": None, "preempt_rt": False,
        "hz": None if spec.tick_hz is None or not spec.record_hz else (
            int(spec.tick_hz) if float(spec.tick_hz).is_integer() else spec.tick_hz),
        "no_hz": "NO_HZ_IDLE", "cpus_online": cpus, "isolated_cpus": "", "nohz_full_cpus": "",
        "rt_runtime_us": -1 if spec.rt_runtime_us is None else spec.rt_runtime_us, "rt_period_us": spec.rt_period_us,
        "cpu_model": "simulated CPU", "clocksource": "tsc",
    }
    granted = {"policy": spec.policy, "priority": spec.priority, "mlockall": True, "mode": "poll",
               "degraded": [], "simulated": True}
    asked = {"mode": "poll", "cpus": list(spec.cpus), "policy": spec.policy, "priority": spec.priority,
             "duration_ns": round(spec.duration_s * 1e9), "poll_threshold_ns": spec.threshold_ns,
             "trace": spec.trace}
    return Metadata(
        kind="poll", threads=threads, tool={"name": "jitterscope simulate", "version": __version__},
        settings={"asked": asked, "granted": granted}, environment=environment,
        clock={"realtime_ns": _REALTIME_AT_START_NS, "monotonic_ns": _START_NS, "tsc_hz": 2.5e9,
               "tsc_hz_source": "simulation spec"},
        status={"state": "complete", "reason": "simulation finished", "flushes": 1},
        ground_truth={"seed": seed, "spec": spec.to_json(), "mode": "poll", "cpus": dict(truth)},
        poll=poll,
    )


def poll_spec_from_options(*, cpus: Sequence[int], duration_s: float, threshold_ns: int, tick_hz: float | None,
                           tick_ns: int, throttle: tuple[int, int] | None, irqs: Sequence[PeriodicIrq],
                           burst: tuple[float, int, str] | None, hardware: tuple[float, int] | None,
                           trace: bool, priority: int = 80) -> PollSpec:
    """A :class:`PollSpec` from the ``simulate --mode poll`` options (the CLI only parses)."""
    burst_rate, burst_ns, command = burst if burst else (0.0, 20_000, "kworker/1:1")
    hw_rate, hw_ns = hardware if hardware else (0.0, 5_000)
    return PollSpec(cpus=tuple(cpus), duration_s=duration_s, threshold_ns=threshold_ns, tick_hz=tick_hz,
                    tick_ns=tick_ns, rt_runtime_us=None if throttle is None else throttle[0],
                    rt_period_us=1_000_000 if throttle is None else throttle[1], irqs=tuple(irqs),
                    burst_rate_hz=burst_rate, burst_ns=burst_ns, burst_command=command, hardware_rate_hz=hw_rate,
                    hardware_ns=hw_ns, trace=trace, priority=priority)
