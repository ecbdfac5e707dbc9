"""Interruptions as events: the gaps of several CPUs that overlap in time are one event.

A stall of the whole machine (an SMI, the hypervisor descheduling the VM, a long IPI broadcast) stops
every polling loop at once: its rows on each CPU overlap.  Rows of all threads are merged in time order; a
row overlapping the open event (widened by ``slack_ns``, the clocks' and loops' granularity) for at least
half of the longer of the two joins it.  An event's span runs from its first start to its last end; its
cause, where the causes are known, is that of its longest row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..errors import AnalysisError
from .causes import PollCauses
from .read import PollData, read_poll

SLACK_NS = 1_000
MIN_EVENT_NS = 10_000


@dataclass(frozen=True)
class PollEvent:
    start_ns: int
    end_ns: int
    cpus: tuple[int, ...]
    rows: int
    longest_ns: int
    longest_cpu: int
    cause: str | None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "cpus": list(self.cpus), "duration_ns": self.duration_ns}


@dataclass(frozen=True)
class PollEvents:
    path: str
    min_ns: int
    slack_ns: int
    events: tuple[PollEvent, ...]
    """Longest first."""
    cpus: int

    @property
    def shared(self) -> tuple[PollEvent, ...]:
        """Events that stopped more than one CPU."""
        return tuple(e for e in self.events if len(e.cpus) > 1)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "min_ns": self.min_ns, "slack_ns": self.slack_ns, "cpus": self.cpus,
                "events": [e.to_json() for e in self.events]}


def find_poll_events(dataset: Dataset | PollData | str, *, min_ns: int = MIN_EVENT_NS, slack_ns: int = SLACK_NS,
                     causes: PollCauses | None = None) -> PollEvents:
    """Cluster the interruptions of all CPUs into events; keep those lasting at least ``min_ns``.

    Raises
    ------
    AnalysisError
        Not a poll dataset, or one without rows.
    """
    data = dataset if isinstance(dataset, PollData) else read_poll(dataset)
    if not data.has_rows:
        raise AnalysisError(f"{data.dataset.path}: no per-interruption rows (a histogram-only import): events "
                            "need the interruption times")
    starts = np.concatenate([t.start_ns for t in data.threads] or [np.zeros(0, np.int64)])
    ends = np.concatenate([t.start_ns + t.duration_ns for t in data.threads] or [np.zeros(0, np.int64)])
    cpu = np.concatenate([np.full(t.start_ns.size, t.cpu) for t in data.threads] or [np.zeros(0, np.int64)])
    names: list[str | None] = []
    for t in data.threads:
        names += list(causes.per_row.get(t.thread, ())) if causes else [None] * t.start_ns.size
    order = np.argsort(starts, kind="stable")
    starts, ends, cpu = starts[order].tolist(), ends[order].tolist(), cpu[order].tolist()
    # rows join the open event when they overlap it for at least half of the longer of the two: one stall seen
    # by several loops; a 2 µs tick of another CPU inside a 50 ms throttling stop of this one is not that stall
    groups: list[list[int]] = []
    open_start = open_end = None
    for i in range(len(starts)):
        if open_end is not None:
            overlap = min(ends[i], open_end + slack_ns) - max(starts[i], open_start - slack_ns)
            if overlap >= 0.5 * max(ends[i] - starts[i], open_end - open_start):
                groups[-1].append(i)
                open_start, open_end = min(open_start, starts[i]), max(open_end, ends[i])
                continue
        groups.append([i])
        open_start, open_end = starts[i], ends[i]
    events = []
    for members in groups:
        span = max(ends[i] for i in members) - starts[members[0]]
        if span < min_ns:
            continue
        top = max(members, key=lambda i: ends[i] - starts[i])
        events.append(PollEvent(start_ns=starts[members[0]], end_ns=max(ends[i] for i in members),
                                cpus=tuple(sorted({cpu[i] for i in members})), rows=len(members),
                                longest_ns=ends[top] - starts[top], longest_cpu=cpu[top],
                                cause=names[int(order[top])] if causes else None))
    events.sort(key=lambda e: (-e.duration_ns, e.start_ns))
    return PollEvents(path=str(data.dataset.path), min_ns=min_ns, slack_ns=slack_ns, events=tuple(events),
                      cpus=len(data.threads))
