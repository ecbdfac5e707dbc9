"""Events grouped by their first cause, for tables and legends a reader can take in: the top causes and "other".

Each event counts once, under its first cause (a source puts the cause that can account for the whole delay
first), so the counts add up to the events.  A kernel-trace cause is already one per command (the twelve pids
of one program are one cause, :func:`jitterscope.derive.command_of`); beyond ``limit`` causes the least
frequent are one "other" row that says how many causes of which classes it holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .results import TRACE_UNEXPLAINED, UNEXPLAINED, Event, Events, cause_class

MAX_GROUPS = 8
"""Rows of a cause table and entries of a legend, "other" included: more cannot be told apart at a glance."""

OTHER = "other"
_TRACE_CLASSES = ("IRQ", "softirq", "thread", "NMI")


@dataclass(frozen=True)
class CauseGroup:
    """The events whose first cause is one kind (or, for "other", one of several kinds).

    Attributes
    ----------
    name
        The cause as shown ("cscope (nice 0)", "hypervisor (steal)", "other (5 causes)").
    cause_class
        IRQ, softirq, thread, NMI, hypervisor, SMI, power management, incomplete trace, unexplained; "other"
        rows name the classes they hold ("thread, IRQ").
    kinds
        The cause kinds it holds (one, but for "other").
    events
        The events, in time order.
    """

    name: str
    cause_class: str
    kinds: tuple[str, ...]
    events: tuple[Event, ...]

    @property
    def label(self) -> str:
        """The name with its class in front where the name does not say it ("thread: cscope (nice 0)")."""
        if self.is_other or self.name.lower().startswith(self.cause_class.lower()) or \
                self.cause_class not in _TRACE_CLASSES:
            return self.name
        return f"{self.cause_class}: {self.name}"

    @property
    def largest(self) -> Event:
        return max(self.events, key=lambda e: (e.peak_latency_ns, -e.start_ns))

    @property
    def is_other(self) -> bool:
        return len(self.kinds) > 1

    @property
    def evidence(self) -> str:
        """The evidence of the largest event's cause of this kind (for "other": which causes it holds)."""
        if self.is_other:
            return "; ".join(f"{display_name(kind)}: {n:,}" for kind, n in Counter(
                e.cause_kinds[0] for e in self.events).most_common())
        kind = self.kinds[0]
        return next((c.evidence for c in self.largest.causes if c.kind == kind),
                    "no counter, SMI, steal, trace or timeline signature during these events")


def display_name(kind: str) -> str:
    """A cause kind as a reader names it: kernel-trace kinds without their "kernel: " prefix; "kernel:
    unexplained" says the trace saw nothing hold the CPU (plain "unexplained": no source saw anything)."""
    if kind == TRACE_UNEXPLAINED:
        return "unexplained (traced: nothing held the CPU)"
    return kind.removeprefix("kernel: ")


def group_causes(events: Events, limit: int = MAX_GROUPS) -> tuple[CauseGroup, ...]:
    """The events grouped by first cause, most events first, at most ``limit`` groups ("other" the last).

    Parameters
    ----------
    events
        From :func:`jitterscope.events.find_events`.
    limit
        Groups at most, the "other" group included (at least 2).
    """
    limit = max(limit, 2)
    by_kind: dict[str, list[Event]] = {}
    for event in events.events:
        by_kind.setdefault(event.cause_kinds[0], []).append(event)
    ranked = sorted(by_kind.items(), key=lambda kv: (-len(kv[1]), kv[0] == UNEXPLAINED, kv[0]))
    keep = ranked if len(ranked) <= limit else ranked[:limit - 1]
    groups = [CauseGroup(display_name(kind), members[0].cause_class, (kind,), tuple(members))
              for kind, members in keep]
    rest = ranked[len(keep):]
    if rest:
        members = tuple(sorted((e for _, m in rest for e in m), key=lambda e: e.index))
        classes = Counter(cause_class(m[0].causes[0].kind, m[0].causes[0].values) if m[0].causes else UNEXPLAINED
                          for _, m in rest)
        groups.append(CauseGroup(f"{OTHER} ({len(rest)} causes)", ", ".join(c for c, _ in classes.most_common()),
                                 tuple(kind for kind, _ in rest), members))
    return tuple(groups)
