"""What interrupted the polling loop: each gap explained from the kernel trace, RT throttling and counters.

Per interruption (a row), the window is the gap itself, ``[start_ns, start_ns + duration_ns]``, split by the
dataset's kernel events into the contexts that held the CPU (:func:`jitterscope.derive.attribute_spikes`,
which reads poll rows this way).  The interruption's cause is the context that held most of it: an IRQ by
handler name, an interrupt vector (the local timer: the scheduler tick), a softirq, a thread by command, an
NMI.  Two rules come first:

* **RT throttling**: the dataset records sched_rt_runtime_us < sched_rt_period_us and the loop runs at a
  real-time policy; a gap of ``period - runtime`` (within 20 %) is the throttler's stop when it is the only one
  or recurs at whole multiples of the period (within 2 %).  What ran meanwhile (idle, other tasks) is the
  consequence, not the cause;
* **SMI**: the ``smi`` counter stepped across the gap (where the capture could read it).

Time no event covers is "hardware/hypervisor" when it holds most of the gap (an SMI without the counter,
the hypervisor taking the vCPU, or a stall no kernel event records).  Without a trace, only the two rules
name anything; the rest is "not traced".

A trace of kept windows (``--trace-keep spikes``, the default of ``--mode poll --trace``) holds the events of
each gap at least ``--trace-threshold`` long (and a background sample) and nothing else; it is read through
the same attribution as a full trace.  An interruption outside every kept window (shorter than the threshold,
or its notice dropped) is "not traced", never "hardware/hypervisor": that name needs a window in which no
kernel event covers the gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dataset import Dataset, open_trace
from ..derive import STATUS_ATTRIBUTED, attribute_spikes
from .read import PollData, PollThread, read_poll

RT_THROTTLING = "RT throttling"
HARDWARE = "hardware/hypervisor"
SMI = "SMI"
NOT_TRACED = "not traced"
INCOMPLETE = "incomplete trace"
SIZE_TOLERANCE = 0.2
PERIOD_TOLERANCE = 0.02
_REALTIME = ("fifo", "rr", "SCHED_FIFO", "SCHED_RR")


@dataclass(frozen=True)
class CauseTotal:
    """One cause on one CPU: how often it interrupted the loop and how long it held it."""

    cpu: int
    cause: str
    cause_class: str
    count: int
    noise_ns: int
    max_ns: int
    share_of_noise: float

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PollCauses:
    path: str
    traced: bool
    per_row: Mapping[int, tuple[str, ...]]
    """Thread -> the cause of each of its rows, in row order."""
    classes: Mapping[int, tuple[str, ...]]
    totals: tuple[CauseTotal, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def top(self, cpu: int) -> CauseTotal | None:
        mine = [t for t in self.totals if t.cpu == cpu]
        return max(mine, key=lambda t: t.noise_ns) if mine else None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "traced": self.traced, "totals": [t.to_json() for t in self.totals],
                "notes": list(self.notes)}


def throttling_rows(data: PollData, thread: PollThread) -> np.ndarray:
    """Which rows of ``thread`` are RT throttling's stops (a boolean per row)."""
    throttling = data.rt_throttling
    policy = (data.dataset.metadata.granted or {}).get("policy")
    if throttling is None or policy not in _REALTIME:
        return np.zeros(thread.start_ns.size, bool)
    runtime, period = throttling
    off_ns, period_ns = (period - runtime) * 1000, period * 1000
    sized = np.abs(thread.duration_ns - off_ns) <= SIZE_TOLERANCE * off_ns
    candidates = np.flatnonzero(sized)
    if candidates.size <= 1:
        return sized
    starts = thread.start_ns[candidates].astype(np.float64)
    ok = np.zeros(candidates.size, bool)
    for i in range(candidates.size):
        spacing = np.abs(np.delete(starts, i) - starts[i]) / period_ns
        ok[i] = bool(np.any(np.abs(spacing - np.round(spacing)) <= PERIOD_TOLERANCE))
    out = np.zeros(thread.start_ns.size, bool)
    out[candidates[ok]] = True
    return out


def _smi_rows(thread: PollThread) -> np.ndarray:
    # the counter is read right after each gap: a step from the previous row's value means an SMI since then,
    # which for a gap >= the threshold is inside it (the loop saw no other gap in between)
    if thread.smi is None or thread.smi.size < 2:
        return np.zeros(thread.start_ns.size, bool)
    return np.r_[False, np.diff(thread.smi) > 0]


def explain_interruptions(dataset: Dataset | PollData | str) -> PollCauses:
    """The cause of every interruption and the totals per CPU and cause.

    Raises
    ------
    AnalysisError
        Not a poll dataset.
    """
    data = dataset if isinstance(dataset, PollData) else read_poll(dataset)
    trace = open_trace(data.dataset.path) if data.has_rows else None
    traced = trace is not None
    by_window: dict[tuple[int, int], tuple[str, str]] = {}
    notes: list[str] = []
    if traced:
        # every row is an interruption: the "spike" threshold sits just below the smallest possible gap
        attribution = attribute_spikes(data.dataset, max(data.threshold_ns - 0.5, 0.5))
        for spike in attribution.spikes:
            if spike.status != STATUS_ATTRIBUTED:
                name = INCOMPLETE if spike.status.startswith("incomplete") else NOT_TRACED
                by_window[(spike.thread, spike.expected_ns)] = (name, name)
            elif spike.longest is None or spike.longest == "unexplained" or not spike.contributions:
                by_window[(spike.thread, spike.expected_ns)] = (HARDWARE, "hardware")
            else:
                top = spike.contributions[0]
                by_window[(spike.thread, spike.expected_ns)] = (top.cause, _class(top.kind))
        windows = trace.info.get("windows") if trace is not None and trace.info.get("keep") == "spikes" else None
        if isinstance(windows, Mapping):
            notes.append(_windows_note(windows, trace.info))
        # the attribution's own note on kept windows speaks of wake-ups and risk ratios, which poll has not
        notes += [n for n in attribution.notes if not n.startswith("kept windows only")]
    else:
        notes.append("no kernel trace in this dataset: only RT throttling and SMIs are named; capture with "
                     "--trace to name IRQs, softirqs and threads")
    per_row: dict[int, tuple[str, ...]] = {}
    classes: dict[int, tuple[str, ...]] = {}
    totals: list[CauseTotal] = []
    for thread in data.threads:
        throttled = throttling_rows(data, thread)
        smi = _smi_rows(thread)
        names, kinds = [], []
        for i, start in enumerate(thread.start_ns.tolist()):
            if throttled[i]:
                name, kind = RT_THROTTLING, "scheduler"
            elif smi[i]:
                name, kind = SMI, "hardware"
            else:
                name, kind = by_window.get((thread.thread, start), (NOT_TRACED, NOT_TRACED))
            names.append(name)
            kinds.append(kind)
        per_row[thread.thread] = tuple(names)
        classes[thread.thread] = tuple(kinds)
        noise = int(thread.duration_ns.sum())
        names_array = np.asarray(names, dtype=object)
        for name in dict.fromkeys(names):
            mask = names_array == name
            took = thread.duration_ns[mask]
            totals.append(CauseTotal(cpu=thread.cpu, cause=name, cause_class=kinds[names.index(name)],
                                     count=int(mask.sum()), noise_ns=int(took.sum()), max_ns=int(took.max()),
                                     share_of_noise=float(took.sum() / noise) if noise else 0.0))
    totals.sort(key=lambda t: (t.cpu, -t.noise_ns))
    return PollCauses(path=str(data.dataset.path), traced=traced, per_row=per_row, classes=classes,
                      totals=tuple(totals), notes=tuple(notes))


def _windows_note(windows: Mapping[str, Any], info: Mapping[str, Any]) -> str:
    """What a trace of kept windows holds, for a reader of interruptions."""
    threshold = float(windows.get("threshold_ns") or 0)
    seen, kept = info.get("events_seen"), info.get("events_kept")
    events = f"; {kept:,} of {seen:,} kernel events kept" if isinstance(seen, int) and isinstance(kept, int) else ""
    return (f"kept windows only (--trace-keep spikes): every gap >= {threshold / 1e3:g} us has its window, "
            f"{windows.get('spike', 0)} spike and {windows.get('background', 0)} background window(s), "
            f"{windows.get('incomplete', 0)} incomplete{events}; an interruption outside every window is "
            f"'{NOT_TRACED}', one traced with no kernel event covering it '{HARDWARE}'")


def _class(kind: str) -> str:
    return {"irq": "IRQ", "vector": "IRQ", "softirq": "softirq", "thread": "thread", "nmi": "NMI"}.get(kind, kind)
