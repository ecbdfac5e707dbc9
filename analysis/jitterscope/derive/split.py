"""Interrupt versus thread latency of a late wake-up (rtla timerlat's split), from the kernel trace.

A measuring thread sleeps until its programmed time ``expected_ns`` (a hrtimer on its own CPU); the timer
interrupt on that CPU expires the hrtimer, whose callback (``hrtimer_wakeup``) wakes the thread; the thread
then runs and reads the clock (``actual_ns``).  The split point is the timer interrupt that delivered the
wake-up:

* *interrupt latency* = split − ``expected_ns``: the programmed time to the timer interrupt (idle exit, interrupts
  disabled, SMIs, the hypervisor delivering the virtual timer late);
* *thread latency* = ``actual_ns`` − split: the interrupt to the measuring thread running (interrupt handlers,
  softirqs, other threads, the wake-up and scheduling path).

Which event is the split (per wake-up, the first that applies; its name is kept as ``source``):

1. ``local_timer_entry`` — the wake-up event of the measuring thread (``sched:sched_wakeup`` whose woken task is
   the measuring thread, recorded on its CPU in ``[expected_ns - resolution, actual_ns]``, the first one) lies
   inside an ``irq_vectors:local_timer_entry``/``_exit`` pair on that CPU: the split is that entry;
2. ``hrtimer_expire_entry`` — no such vector around it, but a ``timer:hrtimer_expire_entry`` of ``hrtimer_wakeup``
   on the CPU in ``[expected_ns - resolution, wake-up]``: the split is the first of them (or the timer vector's
   entry around it); without the wake-up event, the first ``hrtimer_wakeup`` expiry in the window;
3. ``sched_wakeup`` — only the wake-up event: the split is the wake-up itself (interrupt latency then includes
   the interrupt's entry and the hrtimer code up to the wake-up: an upper bound of the interrupt latency);
4. ``local_timer_entry`` again, when the trace holds neither the measuring thread's wake-ups nor
   ``hrtimer_wakeup`` expiries at all (the capture's default events since they cost the latency they measure:
   three of the six events on the wake-up path): the timer interrupt open at ``expected_ns``, else the first one
   to enter after it and before ``actual_ns``.  That is the interrupt that expired the thread's timer: every
   hrtimer interrupt expires every timer due, and it re-checks before it returns.  An interrupt open at the
   programmed time whose last check came just before it expires the timer in the next one instead, which only
   the wake-up or hrtimer events can show (a real capture of this machine with them, split both ways: 733 of
   734 late wake-ups split at the same instant, the other one so).

A timer interrupt that entered before ``expected_ns`` (the CPU was already in the interrupt when the time came:
its hrtimer loop expired the timer on a later pass) gives interrupt latency 0.  No split is claimed when none
of these events is in the window ("not recorded" when the CPU's trace holds no such event at all), when the
trace lost events in the window, or outside the trace.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SPLIT_LOCAL_TIMER = "local_timer_entry"
SPLIT_HRTIMER = "hrtimer_expire_entry"
SPLIT_WAKEUP = "sched_wakeup"
SPLIT_SOURCES = (SPLIT_LOCAL_TIMER, SPLIT_HRTIMER, SPLIT_WAKEUP)

TIMER_VECTOR = "local_timer"
"""The name the events table gives ``irq_vectors:local_timer_entry``/``_exit`` (the suffix dropped)."""
HRTIMER_WAKEUP = "hrtimer_wakeup"
"""The hrtimer callback that wakes a sleeping thread (``clock_nanosleep``)."""

NOT_RECORDED = ("not recorded: the CPU's trace has no local_timer interrupt, no sched_wakeup of the measuring "
                "thread and no hrtimer_expire_entry of hrtimer_wakeup (add irq_vectors, or "
                "timer:hrtimer_expire_entry, to --trace)")
NOT_FOUND = "no sched_wakeup of the measuring thread and no hrtimer_wakeup expiry in the window"
NO_TIMER_INTERRUPT = "no timer interrupt open at the programmed time or entered between it and the wake-up"


@dataclass(frozen=True)
class LatencySplit:
    """One late wake-up's latency split at its timer interrupt (or why it is unknown: ``reason``)."""

    source: str | None
    """The event the split is taken at (:data:`SPLIT_SOURCES`), ``None`` when unknown."""
    split_ns: int | None = None
    """That event's time (CLOCK_MONOTONIC ns; may be before ``expected_ns``: interrupt latency 0)."""
    interrupt_ns: int | None = None
    thread_ns: int | None = None
    unexplained_interrupt_ns: int | None = None
    """The unexplained rest (no traced context) before the split, and after it."""
    unexplained_thread_ns: int | None = None
    reason: str | None = None

    @property
    def known(self) -> bool:
        return self.source is not None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "split_ns": self.split_ns, "interrupt_ns": self.interrupt_ns,
                "thread_ns": self.thread_ns, "unexplained_interrupt_ns": self.unexplained_interrupt_ns,
                "unexplained_thread_ns": self.unexplained_thread_ns, "reason": self.reason}


def unknown(reason: str) -> LatencySplit:
    return LatencySplit(source=None, reason=reason)


@dataclass(frozen=True)
class SplitSummary:
    """The split across the attributed spikes: how many have one (by source) and the medians and totals."""

    n_spikes: int
    n_split: int
    by_source: dict[str, int]
    median_interrupt_ns: float | None
    median_thread_ns: float | None
    total_interrupt_ns: int
    total_thread_ns: int
    unexplained_interrupt_ns: int
    unexplained_thread_ns: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarize_splits(splits: Sequence[LatencySplit | None]) -> SplitSummary:
    """Medians and totals of the known splits (``None``/unknown ones counted, not used)."""
    known = [s for s in splits if s is not None and s.known]
    irq = np.asarray([s.interrupt_ns for s in known], np.int64)
    thread = np.asarray([s.thread_ns for s in known], np.int64)
    by_source = {src: n for src in SPLIT_SOURCES if (n := sum(s.source == src for s in known))}
    return SplitSummary(
        n_spikes=len(splits), n_split=len(known), by_source=by_source,
        median_interrupt_ns=float(np.median(irq)) if known else None,
        median_thread_ns=float(np.median(thread)) if known else None,
        total_interrupt_ns=int(irq.sum()), total_thread_ns=int(thread.sum()),
        unexplained_interrupt_ns=sum(s.unexplained_interrupt_ns or 0 for s in known),
        unexplained_thread_ns=sum(s.unexplained_thread_ns or 0 for s in known))


class WakeMarks:
    """The events of one CPU that place its wake-ups' timer interrupts, collected as the trace is swept.

    ``wakeup`` marks: the time of a ``sched_wakeup`` recorded on the CPU, the woken pid and comm (its name or
    its string index in the events table: whatever the caller's ``is_measuring`` reads), and the entry
    time of the ``local_timer`` vector open around it (-1: none).  ``hrtimer`` marks: the time of an
    ``hrtimer_expire_entry`` of ``hrtimer_wakeup`` and the timer vector's entry around it (-1: none).
    """

    def __init__(self) -> None:
        self.wake_ts: list[int] = []
        self.wake_pid: list[int] = []
        self.wake_comm: list[Any] = []
        self.wake_irq: list[int] = []
        self.hr_ts: list[int] = []
        self.hr_irq: list[int] = []
        self.seen_wakeups: set[int] = set()  # woken pids seen on the CPU (for "not recorded")
        self.seen_comms: set[Any] = set()
        self.seen_hrtimer = False
        self.timer_in: list[int] = []  # the local timer vector's entries on the CPU, in time order
        self.timer_out: list[int] = []  # and their exits (-1: not seen, e.g. lost)

    def wakeup(self, ts: int, pid: int, comm: Any, irq_entry: int) -> None:
        self.wake_ts.append(ts)
        self.wake_pid.append(pid)
        self.wake_comm.append(comm)
        self.wake_irq.append(irq_entry)
        self.seen_wakeups.add(pid)
        self.seen_comms.add(comm)

    def hrtimer(self, ts: int, irq_entry: int) -> None:
        self.hr_ts.append(ts)
        self.hr_irq.append(irq_entry)
        self.seen_hrtimer = True

    def timer_entry(self, ts: int) -> None:
        self.timer_in.append(ts)
        self.timer_out.append(-1)

    def timer_exit(self, ts: int) -> None:
        if self.timer_out and self.timer_out[-1] < 0:
            self.timer_out[-1] = ts

    def drop_before(self, ns: int) -> None:
        """Forget the marks before ``ns`` (no later window starts before it); the timer interrupt open at
        ``ns`` stays (a window may start inside it)."""
        keep = bisect.bisect_left(self.timer_in, ns) - 1
        if keep > 0:
            del self.timer_in[:keep], self.timer_out[:keep]
        for times, *others in ((self.wake_ts, self.wake_pid, self.wake_comm, self.wake_irq),
                               (self.hr_ts, self.hr_irq)):
            keep = bisect.bisect_left(times, ns)
            if keep:
                del times[:keep]
                for other in others:
                    del other[:keep]

    def find(self, expected_ns: int, actual_ns: int, slack_ns: int,
             is_measuring: Callable[[int, Any], bool]) -> tuple[str, int] | str:
        """(source, split time) of the wake-up in ``[expected_ns, actual_ns]``, or the reason there is none.

        ``slack_ns`` (the trace's resolution) widens the window's start: a µs text truncates times.
        """
        lo = expected_ns - slack_ns
        wake = None
        for k in range(bisect.bisect_left(self.wake_ts, lo), bisect.bisect_right(self.wake_ts, actual_ns)):
            if is_measuring(self.wake_pid[k], self.wake_comm[k]):
                wake = k
                break
        if wake is not None and self.wake_irq[wake] >= 0:
            return SPLIT_LOCAL_TIMER, self.wake_irq[wake]
        until = self.wake_ts[wake] if wake is not None else actual_ns
        first = bisect.bisect_left(self.hr_ts, lo)
        if first < len(self.hr_ts) and self.hr_ts[first] <= until:
            entry = self.hr_irq[first]
            return (SPLIT_LOCAL_TIMER, entry) if entry >= 0 else (SPLIT_HRTIMER, self.hr_ts[first])
        if wake is not None:
            return SPLIT_WAKEUP, self.wake_ts[wake]
        measured = any(is_measuring(pid, None) for pid in self.seen_wakeups) or \
            any(is_measuring(-1, comm) for comm in self.seen_comms)
        if measured or self.seen_hrtimer:
            return NOT_FOUND
        if not self.timer_in:
            return NOT_RECORDED
        return self._first_timer_interrupt(lo, actual_ns)

    def _first_timer_interrupt(self, lo: int, actual_ns: int) -> tuple[str, int] | str:
        """Rule 4: the timer interrupt open at ``lo`` (an exit not seen counts as open until the next entry),
        else the first to enter in ``(lo, actual_ns]``."""
        k = bisect.bisect_right(self.timer_in, lo) - 1
        if k >= 0:
            end = self.timer_out[k]
            if end > lo or (end < 0 and (k + 1 == len(self.timer_in) or self.timer_in[k + 1] > lo)):
                return SPLIT_LOCAL_TIMER, self.timer_in[k]
        if k + 1 < len(self.timer_in) and self.timer_in[k + 1] <= actual_ns:
            return SPLIT_LOCAL_TIMER, self.timer_in[k + 1]
        return NO_TIMER_INTERRUPT


def split_of(expected_ns: int, actual_ns: int, found: tuple[str, int] | str, explained_before_ns: int,
             unexplained_ns: int) -> LatencySplit:
    """The split of one wake-up from :meth:`WakeMarks.find`'s answer.

    ``explained_before_ns``: the time traced causes held the CPU between ``expected_ns`` and the split;
    ``unexplained_ns``: the wake-up's whole unexplained rest (the part before the split is the interrupt
    latency less what causes explain there).
    """
    if isinstance(found, str):
        return unknown(found)
    source, at = found
    point = min(max(at, expected_ns), actual_ns)
    interrupt = point - expected_ns
    rest_before = min(max(interrupt - explained_before_ns, 0), unexplained_ns)
    return LatencySplit(source=source, split_ns=at, interrupt_ns=interrupt, thread_ns=actual_ns - point,
                        unexplained_interrupt_ns=rest_before, unexplained_thread_ns=unexplained_ns - rest_before)
