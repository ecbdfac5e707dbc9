"""What event detection finds: per-thread episodes, merged events with their causes, and counts with intervals.

An *episode* is one thread's run of consecutive late wake-ups (latency above the threshold) together with
the catch-up wake-ups after them (wake-ups whose target had already passed when the previous wake-up
happened: a sleep loop that does not skip missed targets fires them at once).  An *event* is the union
of episodes of different threads whose spans overlap in time: one stall seen by several CPUs at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from ..format import jsonable

SMI = "smi"
TRANSITION = "frequency transition"
IDLE_EXIT = "idle exit"
TURBOSTAT = "turbostat interval"
UNEXPLAINED = "unexplained"
TRACE_INCOMPLETE = "incomplete trace"
"""The kernel trace lost events during the event: no trace cause is claimed."""
TRACE_UNEXPLAINED = "kernel: unexplained"
"""Traced completely, but nothing in the trace held the CPU for the longest part of the delay."""
HYPERVISOR = "hypervisor (steal)"
"""The measured CPU's steal time (/proc/stat, sampled by the capture's writer) rose during the event."""
CAUSE_KINDS = (SMI, TRANSITION, IDLE_EXIT, TURBOSTAT, HYPERVISOR)
"""Cause kinds from the counters, the turbostat timeline and the steal series; kernel-trace sources add their own
kinds ("kernel: <what held the CPU>")."""

_CLASS_OF = {SMI: "SMI", TRANSITION: "power management", IDLE_EXIT: "power management",
             TURBOSTAT: "power management", HYPERVISOR: "hypervisor", UNEXPLAINED: "unexplained",
             TRACE_UNEXPLAINED: "unexplained", TRACE_INCOMPLETE: "incomplete trace"}


def cause_class(kind: str, values: Mapping[str, Any] | None = None) -> str:
    """The class of a cause, as readers group them: IRQ, softirq, thread, NMI (kernel trace), hypervisor, SMI,
    power management, incomplete trace or unexplained.  A source may say it in ``values["class"]``."""
    given = (values or {}).get("class")
    if isinstance(given, str):
        return given
    return _CLASS_OF.get(kind, "other")


@dataclass(frozen=True, slots=True)  # no per-instance dict: a long capture holds millions
class Cause:
    """One cause the data supports for an event, and the evidence, in words and in numbers.

    Attributes
    ----------
    kind
        What caused it (:data:`SMI`, :data:`TRANSITION`, :data:`IDLE_EXIT`, :data:`TURBOSTAT`, or a kind a
        later cause source defines, e.g. kernel-trace IRQs).
    evidence
        One sentence naming the measured values ("ΔSMI = 1 in the interval ending at the first late wake-up on
        CPU 0").
    source
        Where the evidence comes from ("counters", "turbostat", ...).
    values
        The numbers behind the sentence (JSON-ready).
    """

    kind: str
    evidence: str
    source: str
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)  # no per-instance dict: a long capture holds millions
class Episode:
    """One thread's late wake-ups and their catch-up wake-ups (times CLOCK_MONOTONIC ns).

    ``start_ns`` is the target of the first late wake-up (the stall was under way then), ``end_ns`` the
    time the last wake-up of the run happened.  The counter evidence describes the intervals that ended
    with the episode's wake-ups (counters are read right after each wake-up).
    """

    thread: int
    cpu: int
    start_ns: int
    end_ns: int
    first_seq: int
    wakeups: int
    late_wakeups: int
    catch_up_wakeups: int
    missed_periods: int
    peak_latency_ns: int
    peak_at_ns: int
    smi_count: float = 0.0
    transition: tuple[float, float] | None = None
    """(f_eff before, f_eff after) in Hz of a transition within ± the window, if one was seen."""
    c0_before: float | None = None
    c0_median: float | None = None


@dataclass(frozen=True, slots=True)  # no per-instance dict: a long capture holds millions
class Event:
    """A latency spike event: the overlapping episodes of one or more threads.

    Attributes
    ----------
    index
        Rank in time (0 = first event of the run).
    start_ns, end_ns
        CLOCK_MONOTONIC span (earliest episode start, latest episode end).
    start_s
        Seconds after the run's first programmed wake-up.
    start_utc
        Wall-clock start (ISO 8601, UTC, µs) from the dataset's realtime/monotonic pair, or None without one.
    cpus, threads
        CPUs (``-1`` when unknown) and threads affected.
    wakeups, missed_periods
        Wake-ups inside the event (late and catch-up) and periods missed (overruns and ``seq`` gaps).
    peak_latency_ns, peak_cpu, peak_thread
        The largest latency and where it was.
    causes
        What the data supports; empty means unexplained.
    thread_peaks
        ``(thread, peak latency ns, when ns)`` of each thread's largest latency in the event.
    """

    index: int
    start_ns: int
    end_ns: int
    start_s: float
    start_utc: str | None
    cpus: tuple[int, ...]
    threads: tuple[int, ...]
    wakeups: int
    late_wakeups: int
    catch_up_wakeups: int
    missed_periods: int
    peak_latency_ns: int
    peak_cpu: int
    peak_thread: int
    causes: tuple[Cause, ...]
    thread_peaks: tuple[tuple[int, int, int], ...] = ()

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def cause_class(self) -> str:
        """The class of the event's first cause (:func:`cause_class`), "unexplained" without one."""
        return cause_class(self.causes[0].kind, self.causes[0].values) if self.causes else "unexplained"

    @property
    def cause_kinds(self) -> tuple[str, ...]:
        """The distinct cause kinds, or ``("unexplained",)``."""
        kinds = tuple(dict.fromkeys(c.kind for c in self.causes))
        return kinds or (UNEXPLAINED,)

    @property
    def latency_split(self) -> Mapping[str, Any] | None:
        """The interrupt/thread split of the event's worst traced wake-up (the kernel-trace cause's
        ``values["split"]``: :class:`jitterscope.derive.split.LatencySplit` as JSON), ``None`` without one."""
        for cause in self.causes:
            split = cause.values.get("split") if cause.source == "kernel trace" else None
            if isinstance(split, Mapping):
                return split
        return None

    def to_json(self) -> dict[str, Any]:
        out = jsonable(asdict(self))
        out["latency_split"] = jsonable(dict(self.latency_split)) if self.latency_split is not None else None
        out["duration_ns"] = self.duration_ns
        out["cause_kinds"] = list(self.cause_kinds)
        out["cause_class"] = self.cause_class
        return out


@dataclass(frozen=True)
class RateInterval:
    """A count of events over an observed time, as a rate with a cluster-aware 95 % interval.

    The events are declustered (``clusters`` independent clusters, extremal index ``extremal_index``: 1
    when events are isolated); the interval is the Poisson interval of the cluster count times the mean
    cluster size (:func:`jitterscope.tails.clustered_interval`), which is Garwood's exact interval of
    ``count`` only when every event is its own cluster.  ``label`` names every level that is the same at
    this interval ("above 1 ms = one interval (1,000 µs)"): one row, not two with the same content.
    """

    label: str
    level_ns: float
    count: int
    observed_s: float
    rate_per_s: float
    ci_low_per_s: float
    ci_high_per_s: float
    clusters: int = 0
    extremal_index: float = 1.0

    @property
    def extrapolated(self) -> bool:
        """Whether the rate per hour reaches beyond the run (it lasted less than an hour)."""
        return self.observed_s < 3600.0


@dataclass(frozen=True)
class HalvesTest:
    """Events in the first and the second half of the run, and whether the rate changed (binomial test).

    Conditional on the total, the first half's count is Binomial(total, ½) when the rate is constant and the
    events independent.  When the events cluster (``clusters`` > 0: fewer independent clusters than events),
    the test counts the clusters' starts instead, so a storm of stalls weighs as one.
    """

    first: int
    second: int
    p_value: float
    clusters: int = 0

    @property
    def test(self) -> str:
        """The test in words: "exact test of a constant rate", or on how many clusters it was made."""
        return (f"binomial test of a constant rate on {self.clusters:,} clusters of events" if self.clusters
                else "exact test of a constant rate")

    @property
    def ratio(self) -> float:
        """Second half's count over the first's (inf when the first has none)."""
        return self.second / self.first if self.first else (math.inf if self.second else 1.0)


@dataclass(frozen=True)
class Events:
    """Every latency spike event of a dataset, and what they add up to.

    Attributes
    ----------
    threshold_ns, threshold_rule
        The latency above which a wake-up is late, and how it was chosen.
    wakeups
        Wake-ups examined (all threads).
    observed_s
        Time covered: the longest thread's first target to last wake-up.
    first_expected_ns
        CLOCK_MONOTONIC of the first programmed wake-up (the origin of ``Event.start_s``).
    interval_ns
        The threads' interval when they share one, else None.
    events
        In time order.
    rates
        Events with a peak above 100 µs, 1 ms and one interval, each with its Poisson interval.
    halves
        Event counts in the two halves of the run (None when the run is too short to split).
    cause_sources
        Names of the cause sources consulted ("counters", "turbostat", ...).
    notes
        What a reader must know (counters missing, no clock pair, approximations).
    """

    threshold_ns: float
    threshold_rule: str
    wakeups: int
    observed_s: float
    first_expected_ns: int
    interval_ns: int | None
    events: tuple[Event, ...]
    rates: tuple[RateInterval, ...]
    halves: HalvesTest | None
    cause_sources: tuple[str, ...]
    notes: tuple[str, ...] = ()
    policy: str | None = None
    """The measuring threads' granted policy ("fifo", "rr", "other"; None when not recorded): what a trace
    cause "held by X" implies depends on it (:func:`jitterscope.derive.held_by_meaning`)."""
    priority: int | None = None

    def worst(self, k: int) -> tuple[Event, ...]:
        """The ``k`` events with the largest peak latency, largest first."""
        return self._by_peak[:k]

    @cached_property
    def _by_peak(self) -> tuple[Event, ...]:
        # sorted once: the report asks for the worst events several times, of up to millions
        return tuple(sorted(self.events, key=lambda e: (-e.peak_latency_ns, e.start_ns)))

    def drawn(self, limit: int) -> tuple[tuple[Event, ...], int]:
        """The events a figure draws, and k: every event when there are at most ``limit`` (k = 1), else the
        largest peak of each run of k = ceil(n / limit) consecutive events (in time order), so the spikes stay
        visible, and the :meth:`worst` five (a figure labels them)."""
        n = len(self.events)
        k = max(1, -(-n // max(limit, 1)))
        if k == 1:
            return self.events, 1
        keep = {max(range(start, min(start + k, n)), key=lambda i: (self.events[i].peak_latency_ns, -i))
                for start in range(0, n, k)}
        worst = {id(e) for e in self.worst(5)}
        keep |= {i for i, e in enumerate(self.events) if id(e) in worst}
        return tuple(self.events[i] for i in sorted(keep)), k

    def count_above(self, level_ns: float) -> int:
        """Events whose peak latency exceeds ``level_ns``."""
        return sum(1 for e in self.events if e.peak_latency_ns > level_ns)

    def to_json(self) -> dict[str, Any]:
        out = jsonable(asdict(self))
        out["events"] = [e.to_json() for e in self.events]
        return out
