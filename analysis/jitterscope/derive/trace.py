"""Per-CPU trace noise: what the CPU did between a programmed wake-up and the actual one.

For each wake-up, the window ``[expected_ns, actual_ns]`` on its CPU is split
by the kernel events of the dataset's events table into the contexts that held
the CPU: NMIs, hard-IRQ handlers (by irq number and name), interrupt vectors
(local timer, IPIs, ... by vector), softirqs (by vector: NET_RX, TIMER, RCU,
...), and threads that ran instead of the measuring thread (comm, pid, policy
and priority, grouped by command: the twelve pids of one program are one cause, and per-CPU kernel
threads such as ``kworker/0:1`` and ``kworker/1:2`` are ``kworker``).  What no event covers (the CPU
idle or the measuring thread itself in its wake-up path, or nothing visible at all) is the unexplained rest.

Method (per CPU): the events are swept in time order keeping the context
stack (a task from ``sched_switch``; IRQs, vectors and softirqs nest on it;
an NMI, recorded at its end with its duration, is inserted as an interval), so
every instant between the first and last event belongs to exactly one context
(the innermost).  Bounded memory: the wake-ups stream thread by thread
(:func:`jitterscope.dataset.iter_thread_batches`) and each CPU's events stream
alongside (every part of the events table, 65,536 rows at a time), the sweep
holding only the segments the coming windows can still meet; what is kept is a
count per cause and the spikes themselves.  A window's share of a context is their overlap divided by
the window's length.  A cause is *present* in a wake-up when it holds at least
``max(2 × resolution, 10 % of the delay)`` of its window.

Across spikes (latency above a threshold): per cause, the spikes it is present
in and the spikes it is the longest contributor of, and the risk ratio
P(spike | cause present) / P(spike | absent) over every completely traced
wake-up, with Fisher's exact p and Holm's correction over the causes
(:func:`jitterscope.power.risk_ratio`, :func:`jitterscope.power.holm`).

A window overlapping a loss of events on its CPU (a ``LOST`` row up to the
next event, or losses the kernel counted that the rows cannot place) is
"incomplete trace": its causes are not computed, never guessed.  A window
outside the traced span is "no trace".

A trace of kept windows (``--trace-keep spikes``) holds each CPU's events only between a ``window``
row (which names the task holding the CPU at its start; the interrupts in progress follow, re-stated)
and its ``window_end`` row: a wake-up not wholly inside one is "no trace", one inside a window flagged
incomplete is "incomplete trace".  Its risk ratios come from the background sample alone (the
wake-ups inside background windows, spikes and ordinary ones alike: a random sample of the run), so
they carry the sample's uncertainty in their intervals; presence in spikes counts every kept spike.

Event times have the trace clock's resolution (1 µs for ``mono`` text), so shares carry about ±1 µs per context.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..dataset import (
    TRACE_EVENTS,
    WINDOW_BACKGROUND,
    WINDOW_INCOMPLETE,
    Dataset,
    TraceEvents,
    TraceTable,
    iter_thread_batches,
    open_trace,
)
from ..errors import AnalysisError
from ..power import RiskRatio, holm, risk_ratio
from .split import (
    HRTIMER_WAKEUP,
    TIMER_VECTOR,
    LatencySplit,
    SplitSummary,
    WakeMarks,
    split_of,
    summarize_splits,
    unknown,
)

PRESENT_SHARE = 0.10
"""A cause is present in a wake-up when it holds at least this share of its delay (and 2 resolutions)."""

SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")

STATUS_ATTRIBUTED = "attributed"
STATUS_INCOMPLETE = "incomplete trace"
STATUS_UNTRACED = "no trace"

KIND_UNEXPLAINED = "unexplained"
_NEUTRAL = ("idle", "self", "unknown")  # contexts that are no cause: their time is the unexplained rest
_LEVEL = {"task": 0, "softirq": 1, "vector": 2, "irq": 3, "nmi": 4}

CLASS_OF_KIND = {"irq": "IRQ", "vector": "IRQ", "softirq": "softirq", "thread": "thread", "nmi": "NMI"}
"""The class of a context kind, as causes are grouped for a reader: hard interrupts (device IRQs and the local
vectors: timer, IPIs) are one class."""

_PER_CPU_SUFFIX = re.compile(r"^(?!irq/)([^/]+)/u?\d+(?::\d+H?)?(?:-.*)?$")


def command_of(comm: str) -> str:
    """The command a thread belongs to: its ``comm`` without a per-CPU or per-worker suffix.

    ``kworker/0:1H-kblockd``, ``kworker/u4:2`` → ``kworker``; ``ksoftirqd/1`` → ``ksoftirqd``; a threaded IRQ
    handler (``irq/24-virtio0``) keeps its name (it says which device); any other comm is itself.
    """
    match = _PER_CPU_SUFFIX.match(comm)
    return match.group(1) if match else comm


def held_by_meaning(policy: str | None = None, priority: int | None = None) -> str:
    """What "held by X" means, and what it implies for a real-time measuring thread (one sentence each).

    ``policy``/``priority``: the measuring threads' granted policy ("fifo", "rr", "other") and priority, when
    known; for a FIFO/RR thread the implication is spelled out.
    """
    text = ("'held by X' means X ran on the CPU while the measuring thread was late; X is not necessarily what "
            "blocked it (it may only have run in the gap another delay opened).")
    if policy in ("fifo", "rr"):
        prio = f" {priority}" if isinstance(priority, int) else ""
        text += (f" The measuring thread is SCHED_{policy.upper()}{prio}: a lower-priority X on its CPU means X ran "
                 "non-preemptibly (kernel code with preemption or interrupts off) or the measuring thread was "
                 "not yet runnable (its timer had not fired or its wake-up was not yet delivered); only a thread "
                 "of higher real-time priority preempts it.")
    return text


@dataclass(frozen=True)
class Cause:
    """One context that can hold a CPU: its kind and what identifies it."""

    label: str
    kind: str  # irq, vector, softirq, thread, nmi
    number: int | None = None
    comm: str | None = None
    pid: int | None = None
    policy: str | None = None
    priority: int | None = None
    pids: tuple[int, ...] | None = None
    """Threads: every pid of the command seen holding the CPU (``pid`` is the first)."""

    @property
    def cause_class(self) -> str:
        """IRQ, softirq, thread or NMI (:data:`CLASS_OF_KIND`)."""
        return CLASS_OF_KIND.get(self.kind, self.kind)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.pids is not None:
            out["pids"] = list(self.pids)
        out["class"] = self.cause_class
        return out


@dataclass(frozen=True)
class Contribution:
    """Time a cause held the CPU inside one window, and its share of the delay."""

    cause: str
    kind: str
    ns: int
    share: float
    interrupt_ns: int | None = None
    """The part of ``ns`` before the wake-up's timer interrupt (its interrupt latency); ``None``: no split."""

    def to_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "kind": self.kind, "ns": self.ns, "share": self.share,
                "interrupt_ns": self.interrupt_ns}


@dataclass(frozen=True)
class SpikeAttribution:
    """One spike: where and when, how late, and what held its CPU (largest first)."""

    thread: int
    cpu: int
    seq: int
    expected_ns: int
    actual_ns: int
    delay_ns: int
    status: str
    contributions: tuple[Contribution, ...]
    unexplained_ns: int | None
    longest: str | None
    split: LatencySplit | None = None
    """Interrupt versus thread latency (:mod:`jitterscope.derive.split`); unknown ones say why."""

    def to_json(self) -> dict[str, Any]:
        return {"thread": self.thread, "cpu": self.cpu, "seq": self.seq, "expected_ns": self.expected_ns,
                "actual_ns": self.actual_ns, "delay_ns": self.delay_ns, "status": self.status,
                "longest": self.longest, "unexplained_ns": self.unexplained_ns,
                "split": self.split.to_json() if self.split is not None else None,
                "contributions": [c.to_json() for c in self.contributions]}


@dataclass(frozen=True)
class CauseStat:
    """One cause across the spikes: how many it is present in, leads, and its risk ratio."""

    cause: Cause
    spikes_present: int
    spikes_longest: int
    share_of_spikes: float
    windows_present: int
    total_ns: int
    risk: RiskRatio | None
    p_holm: float | None

    def to_json(self) -> dict[str, Any]:
        return {"cause": self.cause.to_json(), "spikes_present": self.spikes_present,
                "spikes_longest": self.spikes_longest, "share_of_spikes": self.share_of_spikes,
                "windows_present": self.windows_present, "total_ns": self.total_ns,
                "risk": self.risk.to_json() if self.risk else None, "p_holm": self.p_holm}


@dataclass(frozen=True)
class TraceAttribution:
    """Every spike of a dataset explained from its kernel trace, and the causes across spikes.

    ``n_windows`` counts the completely traced wake-ups the risk ratios use; spikes with
    an incomplete or no trace are counted and listed, never given a cause.
    """

    threshold_ns: float
    resolution_ns: int
    n_wakeups: int
    n_windows: int
    n_spikes: int
    n_attributed: int
    n_incomplete: int
    n_untraced: int
    lost_events: Mapping[int, int]
    spikes: tuple[SpikeAttribution, ...]
    causes: tuple[CauseStat, ...]
    unexplained_spikes: int
    unexplained_note: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    policy: str | None = None
    """The measuring threads' granted policy ("fifo", "rr", "other"), for what "held by" implies."""
    priority: int | None = None
    split: SplitSummary | None = None
    """Interrupt versus thread latency across the attributed spikes."""

    def cause_of(self, spike: SpikeAttribution) -> Contribution | None:
        """The longest contributor of a spike (``None`` when incomplete or unexplained)."""
        return next((c for c in spike.contributions if c.cause == spike.longest), None)

    def to_json(self) -> dict[str, Any]:
        return {"threshold_ns": self.threshold_ns, "resolution_ns": self.resolution_ns,
                "n_wakeups": self.n_wakeups, "n_windows": self.n_windows, "n_spikes": self.n_spikes,
                "n_attributed": self.n_attributed, "n_incomplete": self.n_incomplete,
                "n_untraced": self.n_untraced, "lost_events": {str(k): v for k, v in self.lost_events.items()},
                "unexplained_spikes": self.unexplained_spikes, "unexplained_note": self.unexplained_note,
                "present_share": PRESENT_SHARE, "notes": list(self.notes),
                "held_by": held_by_meaning(self.policy, self.priority),
                "split": self.split.to_json() if self.split is not None else None,
                "causes": [c.to_json() for c in self.causes], "spikes": [s.to_json() for s in self.spikes]}


# ---- contexts on one CPU -------------------------------------------------------------------


def _policy(prio: int) -> tuple[str, int | None]:
    """Kernel priority (sched_switch's prio) to a policy and priority a user knows."""
    if prio < 0:
        return "SCHED_DEADLINE", None
    if prio < 100:
        return "SCHED_FIFO/RR", 99 - prio  # the event does not say which of the two
    return "SCHED_OTHER", prio - 120  # nice


class _Labels:
    """Cause labels of one analysis, by id; ids 0-2 are the neutral contexts.

    Threads are one label per command and policy (:func:`command_of`): a program's many pids are one cause
    (``pids`` lists them, :meth:`finished`).
    """

    def __init__(self) -> None:
        self.causes: list[Cause] = [Cause(n, n) for n in _NEUTRAL]
        self._ids: dict[tuple[Any, ...], int] = {}
        self._pids: dict[int, set[int]] = {}
        self._task_ids: dict[tuple[int, str, int], int] = {}  # memo: sched_switch repeats the same few tasks

    def finished(self) -> list[Cause]:
        """The causes with each command's pids filled in."""
        return [replace(c, pids=tuple(sorted(self._pids[i]))) if i in self._pids else c
                for i, c in enumerate(self.causes)]

    def get(self, key: tuple[Any, ...], make: Any) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.causes)
            self.causes.append(make())
        return found

    def task(self, pid: int, comm: str, prio: int, own: set[int], cpu: int) -> int:
        if pid == 0:
            return 0
        if pid in own or (not own and comm == f"js-cpu{cpu}"):
            return 1
        memo = self._task_ids.get((pid, comm, prio))
        if memo is not None:
            return memo
        policy, priority = _policy(prio)
        shown = f"nice {priority}" if policy == "SCHED_OTHER" else (
            "SCHED_DEADLINE" if priority is None else f"{policy} {priority}")
        command = command_of(comm)
        found = self.get(("thread", command, shown), lambda: Cause(f"{command} ({shown})", "thread", comm=command,
                                                                   pid=pid, policy=policy, priority=priority))
        self._pids.setdefault(found, set()).add(pid)
        self._task_ids[(pid, comm, prio)] = found
        return found

    def context(self, kind: str, number: int, name: str) -> int:
        if kind == "softirq":
            name = name or (SOFTIRQ_NAMES[number] if 0 <= number < len(SOFTIRQ_NAMES) else f"vec {number}")
            label = f"softirq {name}"
        elif kind == "irq":
            label = f"irq {number} {name}".rstrip()
        elif kind == "vector":
            label = f"vector {name} ({number})"
        else:
            label = f"NMI {name}".rstrip()
        return self.get((kind, number, label), lambda: Cause(label, kind, number=number))


@dataclass
class _CpuTimeline:
    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    first_ns: int
    last_ns: int
    gaps: list[tuple[int, int]]
    untraced: list[tuple[int, int]] = field(default_factory=list)  # between kept windows
    sample: list[tuple[int, int]] = field(default_factory=list)  # background windows


_ENTRY = {TRACE_EVENTS["irq_entry"]: "irq", TRACE_EVENTS["vector_entry"]: "vector",
          TRACE_EVENTS["softirq_entry"]: "softirq"}
_EXIT = {TRACE_EVENTS["irq_exit"]: "irq", TRACE_EVENTS["vector_exit"]: "vector",
         TRACE_EVENTS["softirq_exit"]: "softirq"}
_NMI_ENTRY, _NMI_EXIT = -1, -2  # synthetic, from the NMI event's duration
_SWEEP_COLUMNS = ("ts_ns", "cpu", "event", "pid", "comm", "prio", "number", "name", "other_pid", "other_prio",
                  "other_comm", "value")
_FOREVER = int(np.iinfo(np.int64).max)
_WINDOW, _WINDOW_END = TRACE_EVENTS["window"], TRACE_EVENTS["window_end"]
WINDOW_CHUNK = 4096  # wake-ups matched against the timeline at a time (bounds the segments held)


def _cpu_rows(batch: Mapping[str, np.ndarray], cpu: int, floor_ns: int | None) -> dict[str, list[int]]:
    """One batch's events of ``cpu`` in time order, each NMI as a synthetic entry and exit.

    An NMI is recorded at its end with its duration; its entry is clamped to ``floor_ns``, the last
    time already swept (an NMI straddling two batches loses the part before the batch).
    """
    on = np.flatnonzero(batch["cpu"] == cpu)
    ev = batch["event"][on]
    nmi = on[ev == TRACE_EVENTS["nmi"]]
    nmi_start = batch["ts_ns"][nmi] - batch["value"][nmi]
    if floor_ns is not None:
        nmi_start = np.maximum(nmi_start, floor_ns)
    order_ts = np.concatenate([batch["ts_ns"][on], nmi_start, batch["ts_ns"][nmi]])
    rows = np.concatenate([on, nmi, nmi])
    codes = np.concatenate([ev, np.full(nmi.size, _NMI_ENTRY), np.full(nmi.size, _NMI_EXIT)])
    keep = codes != TRACE_EVENTS["nmi"]
    order = np.lexsort((np.arange(rows.size)[keep], order_ts[keep]))
    rows, codes, ts = rows[keep][order], codes[keep][order], order_ts[keep][order]
    return {"ts": ts.tolist(), "code": codes.tolist(), "number": batch["number"][rows].tolist(),
            "name": batch["name"][rows].tolist(), "other_pid": batch["other_pid"][rows].tolist(),
            "other_prio": batch["other_prio"][rows].tolist(), "other_comm": batch["other_comm"][rows].tolist(),
            "pid": batch["pid"][rows].tolist(), "comm": batch["comm"][rows].tolist(),
            "prio": batch["prio"][rows].tolist(), "value": batch["value"][rows].tolist()}


class _CpuSweep:
    """The context timeline of one CPU, swept from the events as the windows need it (bounded memory).

    The events are streamed batch by batch (every part, in order) keeping the context stack (a task from
    ``sched_switch``; IRQs, vectors and softirqs nest on it; NMIs as intervals), so every instant between
    the CPU's first and last event belongs to exactly one context.  Only the segments the coming windows
    can still meet are held: :meth:`drop_before` forgets what ends before the next window starts.
    """

    def __init__(self, events: Any, cpu: int, labels: _Labels, own: set[int]) -> None:
        self.events, self.cpu, self.labels, self.own = events, cpu, labels, own
        self._batches = events.iter_batches(_SWEEP_COLUMNS)
        self.exhausted = False
        self.first_ns: int | None = None
        self.prev: int | None = None
        self.task, self.stack = 2, []  # unknown until the first sched_switch
        self.switched_ns: int | None = None  # time of the last sched_switch swept
        self.inferred = 0  # switches out of a task whose switch in was not traced
        self.lost_at: int | None = None
        self.gaps: list[tuple[int, int]] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.ids: list[int] = []
        self.marks = WakeMarks()
        self.timer_vector: set[int] = set()  # label ids of the local timer vector
        # kept windows (--trace-keep spikes): the spans between them, the background ones, the open one
        self.untraced: list[tuple[int, int]] = []
        self.sample: list[tuple[int, int]] = []
        self.window_end: int | None = None
        self.window_open: tuple[int, int] | None = None  # (start, flags)
        self.prio_of: dict[int, int] = {}

    def advance(self, until_ns: int) -> None:
        """Sweep on until the last event seen is at or after ``until_ns`` (or there are no more)."""
        while not self.exhausted and (self.prev is None or self.prev < until_ns):
            batch = next(self._batches, None)
            if batch is None:
                self.exhausted = True
                if self.lost_at is not None:
                    self.gaps.append((self.lost_at, _FOREVER))
                    self.lost_at = None
            else:
                self._sweep(_cpu_rows(batch, self.cpu, self.prev))

    def _sweep(self, r: dict[str, list[int]]) -> None:
        if not r["ts"]:
            return
        events, labels, starts, ends, ids = self.events, self.labels, self.starts, self.ends, self.ids
        if self.first_ns is None:
            self.first_ns = self.prev = r["ts"][0]
        task, stack, prev, lost_at = self.task, self.stack, self.prev, self.lost_at
        for i, t in enumerate(r["ts"]):
            code = r["code"][i]
            if lost_at is not None and code != TRACE_EVENTS["lost"]:
                self.gaps.append((lost_at, t))
                lost_at = None
            if t > prev:
                current = stack[-1][1] if stack else task
                if ids and ids[-1] == current and ends[-1] == prev:
                    ends[-1] = t
                else:
                    starts.append(prev)
                    ends.append(t)
                    ids.append(current)
                prev = t
            if code in _ENTRY:
                kind = _ENTRY[code]
                name = events.string(r["name"][i])
                timer = kind == "vector" and name == TIMER_VECTOR
                stack.append((kind, labels.context(kind, r["number"][i], name), t if timer else -1))
                if timer:  # an entry re-stated at a window's start carries its own entry time
                    value = r["value"][i]
                    self.marks.timer_entry(value if 0 < value <= t else t)
            elif code == TRACE_EVENTS["wakeup"]:
                # the comm as its string index: read only when the measuring thread is known by name alone
                self.marks.wakeup(t, r["other_pid"][i], r["other_comm"][i], _timer_entry(stack))
            elif code == TRACE_EVENTS["hrtimer"] and events.string(r["name"][i]) == HRTIMER_WAKEUP:
                self.marks.hrtimer(t, _timer_entry(stack))
            elif code in _EXIT or code == _NMI_EXIT:
                kind = "nmi" if code == _NMI_EXIT else _EXIT[code]
                depth = next((k for k in range(len(stack) - 1, -1, -1) if stack[k][0] == kind), None)
                if depth is not None:
                    if stack[depth][2] >= 0:
                        self.marks.timer_exit(t)
                    del stack[depth:]
            elif code == _NMI_ENTRY:
                stack.append(("nmi", labels.context("nmi", -1, events.string(r["name"][i])), -1))
            elif code == TRACE_EVENTS["switch"]:
                stack = []  # no switch happens inside an interrupt: anything open was lost
                previous = labels.task(r["pid"][i], events.string(r["comm"][i]), r["prio"][i], self.own, self.cpu)
                if previous != task and self.switched_ns is not None:
                    self._switched_in_untraced(task, previous)
                task = labels.task(r["other_pid"][i], events.string(r["other_comm"][i]), r["other_prio"][i],
                                   self.own, self.cpu)
                self.switched_ns = t
                self.prio_of[r["other_pid"][i]] = r["other_prio"][i]
            elif code == TRACE_EVENTS["lost"]:
                lost_at = t if lost_at is None else lost_at
                stack, task = [], 2
            elif code == _WINDOW:
                stack, task = [], self._window_task(r["pid"][i], r["comm"][i], r["prio"][i])
                # the switch that put it there was not kept: the window's start stands for it, so a switch out
                # of another task before any switch in (one the kernel did not trace) names who ran since
                self.switched_ns = t
                self._window_start(t, r["value"][i])
            elif code == _WINDOW_END:
                self._window_close(t)
        self.task, self.stack, self.prev, self.lost_at = task, stack, prev, lost_at

    def _window_task(self, pid: int, comm: int, prio: int) -> int:
        """The task a window row names as holding the CPU at its start (2, unknown, when it cannot say)."""
        prio = prio if prio >= 0 else self.prio_of.get(pid, -1)
        if pid < 0 or (prio < 0 and pid != 0 and pid not in self.own):
            return 2
        return self.labels.task(pid, self.events.string(comm), prio, self.own, self.cpu)

    def _window_start(self, t: int, flags: int) -> None:
        if self.window_end is not None and t > self.window_end:
            self.untraced.append((self.window_end, t))
        self.window_open = (t, flags)

    def _window_close(self, t: int) -> None:
        if self.window_open is not None:
            start, flags = self.window_open
            if flags & WINDOW_INCOMPLETE:
                self.gaps.append((start, t))
            if flags & WINDOW_BACKGROUND:
                self.sample.append((start, t))
        self.window_end, self.window_open = t, None

    def _switched_in_untraced(self, stale: int, ran: int) -> None:
        """A switch out of ``ran`` although the last switch traced put ``stale`` on the CPU.

        Some kernels (this project's test VM, intermittently) trace the switch out of a task but drop the
        switch into it.  ``ran`` came in at an instant not traced since the last switch; the task segments
        since then go to ``ran``: inside a late wake-up's window (the part attribution reads) the CPU was
        busy with it, as an idle CPU would have run the woken thread at once.
        """
        self.inferred += 1
        k = len(self.ids) - 1
        while k >= 0 and self.starts[k] >= self.switched_ns:
            if self.ids[k] == stale:
                self.ids[k] = ran
            k -= 1

    def timeline(self) -> _CpuTimeline | None:
        """The segments held now (``None``: the CPU has no event at all)."""
        if self.first_ns is None:
            return None
        assert self.prev is not None
        gaps = self.gaps + ([(self.lost_at, _FOREVER)] if self.lost_at is not None else [])
        return _CpuTimeline(np.asarray(self.starts, np.int64), np.asarray(self.ends, np.int64),
                            np.asarray(self.ids, np.int64), self.first_ns, self.prev, gaps, self.untraced,
                            self.sample)

    def drop_before(self, ns: int, slack_ns: int) -> None:
        """Forget the segments that end at or before ``ns`` (no later window can meet them), and the wake-up
        marks before ``ns - slack_ns``."""
        keep = bisect.bisect_right(self.ends, ns)
        if keep:
            del self.starts[:keep], self.ends[:keep], self.ids[:keep]
        self.marks.drop_before(ns - slack_ns)


def _timer_entry(stack: list[tuple[str, int, int]]) -> int:
    """The entry time of the innermost local timer vector open on the stack (-1: none)."""
    return next((entry for _, _, entry in reversed(stack) if entry >= 0), -1)


# ---- windows ---------------------------------------------------------------------------------


def _overlaps(tl: _CpuTimeline, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(window index, label id, overlap ns) of every window with every segment it meets."""
    i0 = np.searchsorted(tl.ends, a, side="right")
    i1 = np.searchsorted(tl.starts, b, side="left")
    counts = np.maximum(i1 - i0, 0)
    win = np.repeat(np.arange(a.size), counts)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]) if a.size else np.zeros(0, np.int64)
    seg = i0[win] + (np.arange(win.size) - offsets[win])
    ov = np.minimum(b[win], tl.ends[seg]) - np.maximum(a[win], tl.starts[seg])
    keep = ov > 0
    return win[keep], tl.labels[seg][keep], ov[keep]


def _window_status(tl: _CpuTimeline | None, a: np.ndarray, b: np.ndarray, unplaced_loss: bool) -> np.ndarray:
    """Per window: 0 attributed, 1 incomplete trace, 2 no trace."""
    status = np.zeros(a.size, np.int8)
    if tl is None:
        status[:] = 2
        return status
    status[(a < tl.first_ns) | (b > tl.last_ns)] = 2
    for lo, hi in tl.untraced:  # between kept windows: nothing was kept
        status[(a < hi) & (b > lo)] = 2
    if unplaced_loss:
        status[status == 0] = 1
    for lo, hi in tl.gaps:
        status[(status == 0) & (b >= lo) & (a <= hi)] = 1
    return status


def _in_sample(tl: _CpuTimeline | None, a: np.ndarray, b: np.ndarray, windowed: bool) -> np.ndarray:
    """Per window: whether it counts in the risk ratios' baseline (every one of a full trace; with kept
    windows, those wholly inside a background window)."""
    if not windowed:
        return np.ones(a.size, bool)
    inside = np.zeros(a.size, bool)
    for lo, hi in tl.sample if tl is not None else []:
        inside |= (a >= lo) & (b <= hi)
    return inside


def _sum_pairs(win: np.ndarray, lab: np.ndarray, ns: np.ndarray, n_labels: int,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One (window, cause, ns) per window and cause: the segments of a cause inside a window summed."""
    if not win.size:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    keys, inverse = np.unique(win.astype(np.int64) * n_labels + lab, return_inverse=True)
    total = np.bincount(inverse, weights=ns).astype(np.int64)
    return keys // n_labels, keys % n_labels, total


def _own_tids(dataset: Dataset) -> dict[int, set[int]]:
    own: dict[int, set[int]] = {}
    for info in dataset.metadata.threads:
        if info.tid:
            own.setdefault(int(info.cpu), set()).add(int(info.tid))
    return own


def _lost_row_cpus(events: Any) -> set[int]:
    """CPUs with at least one LOST row (one streamed pass over two columns)."""
    cpus: set[int] = set()
    for batch in events.iter_batches(["cpu", "event"]):
        cpus.update(np.unique(batch["cpu"][batch["event"] == TRACE_EVENTS["lost"]]).tolist())
    return cpus


class _Tally:
    """What the attribution keeps of the windows as they stream by: counts per cause, and the spikes."""

    def __init__(self, threshold_ns: float, min_ns: int) -> None:
        self.threshold_ns, self.min_ns = threshold_ns, min_ns
        self.n_wakeups = self.n_complete = self.n_complete_spikes = 0
        self.windows_present = np.zeros(0, np.int64)
        self.spikes_present = np.zeros(0, np.int64)
        self.sample_spikes_present = np.zeros(0, np.int64)  # spikes present in the baseline (the risk ratios)
        self.total_ns = np.zeros(0, np.int64)
        self.spikes: list[SpikeAttribution] = []

    def _grow(self, n: int) -> None:
        if self.total_ns.size < n:
            pad = n - self.total_ns.size
            self.windows_present, self.spikes_present, self.sample_spikes_present, self.total_ns = (
                np.concatenate([x, np.zeros(pad, np.int64)])
                for x in (self.windows_present, self.spikes_present, self.sample_spikes_present, self.total_ns))

    def add(self, thread: np.ndarray, cpu: np.ndarray, seq: np.ndarray, a: np.ndarray, b: np.ndarray,
            status: np.ndarray, pairs: tuple[np.ndarray, np.ndarray, np.ndarray], labels: _Labels,
            in_sample: np.ndarray | None = None,
            splits: Mapping[int, tuple[tuple[str, int] | str, dict[int, int]]] | None = None) -> None:
        """Count one chunk of windows; ``in_sample``: which wake-ups lie in a background window of a kept-windows
        trace; ``splits``: per attributed spike (row index) where its timer interrupt is (:meth:`WakeMarks.find`)
        and the time per cause before it."""
        win, lab, ns = pairs
        delay = b - a
        spike = delay > self.threshold_ns
        complete = status == 0
        base = complete if in_sample is None else complete & in_sample
        self.n_wakeups += int(a.size)
        self.n_complete += int(base.sum())
        self.n_complete_spikes += int((spike & base).sum())
        self._grow(len(labels.causes))
        n = self.total_ns.size
        done = complete[win]
        present = (ns >= np.maximum(self.min_ns, PRESENT_SHARE * delay[win])) & done
        sampled = present & base[win]
        self.total_ns += np.bincount(lab[done], weights=ns[done], minlength=n).astype(np.int64)
        self.windows_present += np.bincount(lab[sampled], minlength=n)
        self.spikes_present += np.bincount(lab[present & spike[win]], minlength=n)
        self.sample_spikes_present += np.bincount(lab[sampled & spike[win]], minlength=n)
        in_spike = spike[win]
        per_window: dict[int, list[tuple[int, int]]] = {}
        for i, label, took in zip(win[in_spike].tolist(), lab[in_spike].tolist(), ns[in_spike].tolist(),
                                  strict=True):
            per_window.setdefault(i, []).append((label, took))
        names = {0: STATUS_ATTRIBUTED, 1: STATUS_INCOMPLETE, 2: STATUS_UNTRACED}
        for i in np.flatnonzero(spike).tolist():
            self.spikes.append(_spike(int(thread[i]), int(cpu[i]), int(seq[i]), int(a[i]), int(b[i]),
                                      per_window.get(i, []), labels, names[int(status[i])],
                                      (splits or {}).get(i)))


def _stream_windows(dataset: Dataset, events: Any, lost: Mapping[int, int], labels: _Labels, tally: _Tally,
                    windowed: bool = False) -> None:
    """Every wake-up, thread by thread in file order, against its CPU's timeline swept alongside."""
    own = _own_tids(dataset)
    tids = {int(info.thread): int(info.tid) for info in dataset.metadata.threads if info.tid}
    slack = int(events.resolution_ns)
    lost_rows = _lost_row_cpus(events) if any(lost.values()) else set()
    sweeps: dict[tuple[int, int], _CpuSweep] = {}
    # a poll dataset's window is its gap: [start_ns, start_ns + duration_ns] (the loop's last read before it
    # and its first read after), where a timer dataset's is [expected_ns, actual_ns]
    poll = dataset.metadata.kind == "poll"
    window = ["start_ns", "duration_ns"] if poll else ["expected_ns", "actual_ns"]
    for _info, batch in iter_thread_batches(dataset, ["thread", "cpu", "seq", *window], check=False):
        col = {n: batch.column(n).to_numpy() for n in batch.schema.names}
        if poll:
            col["expected_ns"], col["actual_ns"] = col["start_ns"], col["start_ns"] + col["duration_ns"]
        for cpu in np.unique(col["cpu"]).tolist():
            on_cpu = np.flatnonzero(col["cpu"] == cpu)
            key = (int(col["thread"][on_cpu[0]]), int(cpu))
            sweep = sweeps.get(key)
            if sweep is None:
                sweep = sweeps[key] = _CpuSweep(events, int(cpu), labels, own.get(int(cpu), set()))
            is_measuring = _measuring(tids.get(key[0]), own.get(int(cpu), set()), int(cpu), events)
            unplaced = lost.get(int(cpu), 0) > 0 and int(cpu) not in lost_rows
            # a few thousand windows at a time: the sweep holds only the segments of their span
            for start in range(0, on_cpu.size, WINDOW_CHUNK):
                rows = on_cpu[start:start + WINDOW_CHUNK]
                a, b = col["expected_ns"][rows], col["actual_ns"][rows]
                sweep.advance(int(b.max()))
                tl = sweep.timeline()
                status = _window_status(tl, a, b, unplaced)
                pairs = (np.zeros(0, np.int64),) * 3
                splits = None
                if tl is not None and tl.starts.size:
                    pairs = _sum_pairs(*_overlaps(tl, a, b), len(labels.causes))
                    spiky = np.flatnonzero((b - a > tally.threshold_ns) & (status == 0)).tolist()
                    found = {i: sweep.marks.find(int(a[i]), int(b[i]), slack, is_measuring) for i in spiky}
                    splits = _before_split(tl, a, b, found)
                tally.add(col["thread"][rows], col["cpu"][rows], col["seq"][rows], a, b, status, pairs, labels,
                          _in_sample(tl, a, b, windowed), splits)
                sweep.drop_before(int(a.max()), slack)


def _measuring(tid: int | None, own: set[int], cpu: int, events: Any) -> Any:
    """Whether a woken task (pid, comm string index) is the measuring thread: its tid when the metadata has it,
    else one of the CPU's measuring tids, else the capture's thread name ``js-cpuN`` (the rule of the task
    labels)."""
    if tid is not None:
        return lambda pid, comm: pid == tid
    if own:
        return lambda pid, comm: pid in own
    name = f"js-cpu{cpu}"
    return lambda pid, comm: comm is not None and comm >= 0 and events.string(comm) == name


def _before_split(tl: _CpuTimeline, a: np.ndarray, b: np.ndarray, found: Mapping[int, tuple[str, int] | str],
                  ) -> dict[int, tuple[tuple[str, int] | str, dict[int, int]]]:
    """Per spike: where its timer interrupt is, and the time each context held the CPU before it."""
    out: dict[int, tuple[tuple[str, int] | str, dict[int, int]]] = {i: (f, {}) for i, f in found.items()}
    known = [i for i, f in found.items() if not isinstance(f, str)]
    if not known:
        return out
    rows = np.asarray(known, np.int64)
    points = np.asarray([found[i][1] for i in known], np.int64)  # type: ignore[index]
    ends = np.minimum(np.maximum(points, a[rows]), b[rows])
    for win, lab, ns in zip(*(x.tolist() for x in _overlaps(tl, a[rows], ends)), strict=True):
        held = out[known[win]][1]
        held[lab] = held.get(lab, 0) + ns
    return out


# ---- the attribution -------------------------------------------------------------------------


def _unexplained_note(dataset: Dataset) -> str:
    if dataset.has("smi"):
        return ("unexplained: no kernel event covers that time; the smi column tells SMIs apart (an SMI count "
                "step in the window), the rest is the hypervisor or hardware, which no event can tell apart")
    return ("unexplained: no kernel event covers that time (the CPU idle, the wake-up path, or time taken from "
            "the kernel); hypervisor, SMI and hardware cannot be told apart here (no smi counter column)")


def _spike(thread: int, cpu: int, seq: int, a: int, b: int, pairs: list[tuple[int, int]], labels: _Labels,
           status: str, split: tuple[tuple[str, int] | str, dict[int, int]] | None = None) -> SpikeAttribution:
    delay = b - a
    contributions: tuple[Contribution, ...] = ()
    unexplained = longest = None
    latency_split = unknown(status)
    if status == STATUS_ATTRIBUTED:
        found, before = split if split is not None else ("no trace events on the CPU", {})
        known = not isinstance(found, str)
        causes = sorted(((ns, lab) for lab, ns in pairs if lab >= len(_NEUTRAL)), reverse=True)
        explained = sum(ns for ns, _ in causes)
        unexplained = max(delay - explained, 0)
        contributions = tuple(Contribution(labels.causes[lab].label, labels.causes[lab].kind, int(ns),
                                           ns / delay if delay > 0 else 0.0,
                                           before.get(lab, 0) if known else None) for ns, lab in causes)
        top = contributions[0] if contributions else None
        longest = top.cause if top and top.ns >= unexplained else KIND_UNEXPLAINED
        explained_before = sum(ns for lab, ns in before.items() if lab >= len(_NEUTRAL))
        latency_split = split_of(a, b, found, explained_before, unexplained)
    return SpikeAttribution(thread=thread, cpu=cpu, seq=seq, expected_ns=a, actual_ns=b, delay_ns=delay,
                            status=status, contributions=contributions, unexplained_ns=unexplained, longest=longest,
                            split=latency_split)


def _cause_stats(tally: _Tally, labels: _Labels, spikes: Sequence[SpikeAttribution]) -> tuple[CauseStat, ...]:
    n_complete, n_spikes = tally.n_complete, tally.n_complete_spikes
    longest: dict[str, int] = {}
    for s in spikes:
        if s.longest:
            longest[s.longest] = longest.get(s.longest, 0) + 1
    stats: list[tuple[Cause, int, int, int, RiskRatio | None]] = []
    for lab in np.flatnonzero(tally.spikes_present).tolist():
        if lab < len(_NEUTRAL):
            continue
        s_in, n_in, total = (int(x[lab]) for x in (tally.spikes_present, tally.windows_present, tally.total_ns))
        s_base = int(tally.sample_spikes_present[lab])
        risk = (risk_ratio(s_base, n_in, n_spikes - s_base, n_complete - n_in)
                if 0 < n_in < n_complete else None)
        stats.append((labels.causes[lab], s_in, n_in, total, risk))
    p = [s[4].p_value for s in stats if s[4] is not None]
    adjusted = iter(holm(p).tolist()) if p else iter(())
    out = [CauseStat(cause=c, spikes_present=s_in, spikes_longest=longest.get(c.label, 0),
                     share_of_spikes=s_in / n_spikes if n_spikes else 0.0, windows_present=n_in, total_ns=total,
                     risk=risk, p_holm=next(adjusted) if risk is not None else None)
           for c, s_in, n_in, total, risk in stats]
    return tuple(sorted(out, key=lambda s: (-s.spikes_present, -s.total_ns, s.cause.label)))


def attribute_spikes(dataset: Dataset, threshold_ns: float, *,
                     events: TraceEvents | TraceTable | None = None) -> TraceAttribution:
    """Explain every wake-up later than ``threshold_ns`` from the dataset's kernel trace.

    Parameters
    ----------
    dataset
        An opened sample dataset (a directory with an events table, or pass ``events``).
    threshold_ns
        A wake-up is a spike when ``actual_ns - expected_ns`` exceeds this (ns).
    events
        The events table to use instead of the dataset's own (tests, imports not yet attached).

    Returns
    -------
    TraceAttribution

    Raises
    ------
    AnalysisError
        No events table, a histogram dataset, or a threshold that is not positive.
    """
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: a histogram dataset has no wake-up windows to attribute")
    if not threshold_ns > 0:
        raise AnalysisError(f"spike threshold must be positive, got {threshold_ns} ns")
    events = events if events is not None else open_trace(dataset.path)
    if events is None:
        raise AnalysisError(f"{dataset.path}: no kernel trace in this dataset; capture with "
                            "'jitterscope-capture --trace -o DIR' or attach one with "
                            "'jitterscope import TRACE --onto DATASET -o OUT'")
    labels = _Labels()
    tally = _Tally(float(threshold_ns), 2 * events.resolution_ns)
    lost = events.lost_by_cpu()
    windows = events.info.get("windows") if events.info.get("keep") == "spikes" else None
    _stream_windows(dataset, events, lost, labels, tally, windowed=windows is not None)
    spikes = tuple(sorted(tally.spikes, key=lambda s: -s.delay_ns))  # stable: file order among equals
    labels.causes = labels.finished()
    causes = _cause_stats(tally, labels, spikes)
    notes = []
    if any(lost.values()):
        notes.append(f"{sum(lost.values())} trace event(s) lost by the kernel; the wake-ups they touch say "
                     "'incomplete trace' and are left out of the causes")
    if isinstance(windows, Mapping):
        notes.append(_windows_note(windows, tally))
    if events.resolution_ns >= 1000:
        notes.append(f"event times have {events.resolution_ns} ns resolution: each share is good to about "
                     f"±{events.resolution_ns} ns per context")
    else:
        notes.append("event times are the trace ring buffer's ns time stamps (trace_clock mono); each context's "
                     "time includes the cost of its own tracepoints")
    return TraceAttribution(
        threshold_ns=float(threshold_ns), resolution_ns=events.resolution_ns, n_wakeups=tally.n_wakeups,
        n_windows=tally.n_complete, n_spikes=len(spikes),
        n_attributed=sum(s.status == STATUS_ATTRIBUTED for s in spikes),
        n_incomplete=sum(s.status == STATUS_INCOMPLETE for s in spikes),
        n_untraced=sum(s.status == STATUS_UNTRACED for s in spikes), lost_events=lost, spikes=spikes,
        causes=causes, unexplained_spikes=sum(s.longest == KIND_UNEXPLAINED for s in spikes),
        unexplained_note=_unexplained_note(dataset), notes=tuple(notes),
        split=summarize_splits([s.split for s in spikes if s.status == STATUS_ATTRIBUTED]),
        **_measuring_policy(dataset))


def _windows_note(windows: Mapping[str, Any], tally: _Tally) -> str:
    """What a trace of kept windows holds, and where its risk ratios come from."""
    every, length = windows.get("background_every_ns") or 0, windows.get("background_length_ns") or 0
    sample = (f"a background sample of {length / 1e6:g} ms every {every / 1e9:g} s" if length
              else "no background sample")
    return (f"kept windows only (--trace-keep spikes, threshold {windows.get('threshold_ns', 0) / 1e3:g} us "
            f"{windows.get('threshold_mode', 'fixed')}): {windows.get('spike', 0)} spike and "
            f"{windows.get('background', 0)} background window(s), {windows.get('incomplete', 0)} incomplete; "
            f"wake-ups outside them say 'no trace'; the risk ratios come from {sample} "
            f"({tally.n_complete} wake-up(s), {tally.n_complete_spikes} of them spikes), their intervals are "
            "the sample's")


def _measuring_policy(dataset: Dataset) -> dict[str, Any]:
    granted = dataset.metadata.granted
    policy, priority = granted.get("policy"), granted.get("priority")
    return {"policy": policy if isinstance(policy, str) else None,
            "priority": priority if isinstance(priority, int) and not isinstance(priority, bool) else None}
