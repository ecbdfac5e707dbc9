"""Effects that :mod:`jitterscope.io.simulate` plants in a synthetic dataset.

An effect is a frozen dataclass registered under a ``type`` name.  The
simulation calls its three hooks in this order, each with the running
:class:`SimulationRun`:

``prepare(run)``
    Once, before any wake-up exists: draw global timelines (SMI times,
    frequency transitions) from ``run.rng`` and store them on ``run``; write
    what was planted to ``run.ground_truth[<key>]``.
``apply(run, chunk)``
    For each chunk of wake-up slots of one thread: add extra latency to
    ``chunk.latency_ns`` (float ns), using ``chunk.rng`` for random draws.
``rows(run, rows)``
    After overruns are resolved: change rows of one thread, e.g. clear
    ``rows.keep`` to drop samples, or add ``rows.columns[name]``.

To add an effect (the spectral and correlation issues do): subclass
:class:`Effect` as a frozen dataclass, give it ``type: ClassVar[str]``,
override the hooks it needs, decorate it with :func:`register_effect`, and
put ``{"type": "<name>", ...fields}`` in a spec's ``effects`` list.  Effects
run in list order; latency effects add, so their order does not matter.

Counters follow two shared timelines that effects may replace in
``prepare``: ``run.frequency[cpu]`` (a :class:`FrequencyTimeline`, from which
``aperf``/``mperf`` are integrated) and ``run.smi_times_ns`` (sorted SMI
times, from which the ``smi`` counter is counted).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from .simulation import SimulationSpec

GROUND_TRUTH_LIST_LIMIT = 100_000
"""Longest event list stored in metadata; longer ones keep their count and first entries."""


@dataclass
class FrequencyTimeline:
    """Piecewise-constant core frequency and C0 residency of one CPU.

    Segment ``j`` starts at ``start_ns[j]`` (``start_ns[0]`` is the start of the
    run) and lasts until ``start_ns[j+1]``; during it the core runs at
    ``hz[j]`` while in C0, and is in C0 a fraction ``c0[j]`` of the time.
    APERF advances at ``hz * c0``, MPERF at ``tsc_hz * c0``, so that
    ``tsc_hz * dAPERF / dMPERF`` is the frequency and ``dMPERF / dTSC`` is C0.
    """

    start_ns: np.ndarray
    hz: np.ndarray
    c0: np.ndarray


@dataclass
class SimulationRun:
    """State shared by the effects of one simulation."""

    spec: SimulationSpec
    rng: np.random.Generator
    start_ns: int
    end_ns: int
    slots_per_thread: int
    cpus: tuple[int, ...]
    frequency: dict[int, FrequencyTimeline] = field(default_factory=dict)
    smi_times_ns: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ground_truth: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """Scratch space for effects (key by effect type); not stored."""

    @property
    def interval_ns(self) -> int:
        return self.spec.interval_ns

    def slot_expected_ns(self, thread: int, slots: np.ndarray) -> np.ndarray:
        """Programmed wake-up time of slots (wake-up indices before overruns) of a thread."""
        return self.start_ns + thread * self.spec.thread_offset_ns + slots * self.spec.interval_ns


@dataclass
class ThreadChunk:
    """Consecutive wake-up slots ``[first_slot, first_slot + n)`` of one thread."""

    thread: int
    cpu: int
    slots: np.ndarray
    expected_ns: np.ndarray
    latency_ns: np.ndarray
    rng: np.random.Generator


@dataclass
class ThreadRows:
    """Rows of one thread in one chunk after overruns are resolved (before drops)."""

    thread: int
    cpu: int
    seq: np.ndarray
    expected_ns: np.ndarray
    actual_ns: np.ndarray
    overruns: np.ndarray
    keep: np.ndarray
    columns: dict[str, np.ndarray]
    rng: np.random.Generator


@dataclass(frozen=True)
class Effect:
    """Base of all effects; the hooks do nothing by default."""

    type: ClassVar[str] = ""

    def prepare(self, run: SimulationRun) -> None:
        """Draw global timelines once; record planted truth in ``run.ground_truth``."""

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        """Add latency (ns) to ``chunk.latency_ns``."""

    def rows(self, run: SimulationRun, rows: ThreadRows) -> None:
        """Edit resolved rows: clear ``rows.keep`` or set ``rows.columns``."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for fld in dataclasses.fields(self):
            value = getattr(self, fld.name)
            out[fld.name] = list(value) if isinstance(value, tuple) else value
        return out


EFFECT_TYPES: dict[str, type[Effect]] = {}


def register_effect(cls: type[Effect]) -> type[Effect]:
    """Class decorator: make ``cls`` available to specs as ``{"type": cls.type}``."""
    if not cls.type:
        raise ValueError(f"{cls.__name__} needs a non-empty 'type' class attribute")
    EFFECT_TYPES[cls.type] = cls
    return cls


def ground_truth_list(values: np.ndarray) -> dict[str, Any]:
    """An event list for metadata: its count and (up to a limit) its values."""
    values = np.asarray(values)
    out: dict[str, Any] = {"count": int(values.size), "values": values[:GROUND_TRUTH_LIST_LIMIT].tolist()}
    if values.size > GROUND_TRUTH_LIST_LIMIT:
        out["truncated"] = True
    return out


def append_ground_truth(entry: dict[str, Any], values: np.ndarray) -> None:
    """Add ``values`` to a growing event list ``{"count", "values"}`` (kept up to the list limit)."""
    entry["count"] += int(values.size)
    room = GROUND_TRUTH_LIST_LIMIT - len(entry["values"])
    entry["values"] += values[:max(room, 0)].tolist()
    if entry["count"] > len(entry["values"]):
        entry["truncated"] = True


def _applies_to(threads: tuple[int, ...] | None, thread: int) -> bool:
    return threads is None or thread in threads


@register_effect
@dataclass(frozen=True)
class PeriodicDisturbance(Effect):
    """A periodic source of extra latency (a timer tick, a daemon, a device).

    ``shape="spikes"``: a wake-up whose programmed time falls in a window of
    ``width_ns`` starting at each event ``start + (k + phase) / frequency_hz``
    gets ``amplitude_ns`` more latency.  ``shape="sine"``: every wake-up gets
    ``amplitude_ns * (1 + sin(2π f t + 2π phase)) / 2``.  ``start_ns``/``stop_ns``
    (relative to the run start) make the source intermittent; ``threads``
    limits it to some threads (None = all).
    """

    type: ClassVar[str] = "periodic"
    frequency_hz: float = 10.0
    amplitude_ns: float = 20_000.0
    width_ns: float = 1_000_000.0
    phase: float = 0.0
    shape: str = "spikes"
    start_ns: int | None = None
    stop_ns: int | None = None
    threads: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.frequency_hz <= 0 or self.amplitude_ns < 0 or self.width_ns <= 0:
            raise ValueError("periodic: frequency_hz and width_ns must be > 0 and amplitude_ns >= 0")
        if self.shape not in ("spikes", "sine"):
            raise ValueError(f"periodic: shape must be 'spikes' or 'sine', not {self.shape!r}")
        if self.threads is not None:
            object.__setattr__(self, "threads", tuple(int(t) for t in self.threads))

    def prepare(self, run: SimulationRun) -> None:
        index = sum(1 for key in run.ground_truth if key.startswith("periodic"))
        run.ground_truth[f"periodic[{index}]"] = {
            **self.to_json(),
            "first_event_ns": run.start_ns + (self.start_ns or 0) + self.phase * 1e9 / self.frequency_hz,
        }

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        if not _applies_to(self.threads, chunk.thread):
            return
        rel = (chunk.expected_ns - run.start_ns).astype(np.float64)
        active = np.ones(rel.size, dtype=bool)
        if self.start_ns is not None:
            active &= rel >= self.start_ns
        if self.stop_ns is not None:
            active &= rel < self.stop_ns
        cycles = rel * (self.frequency_hz / 1e9) - self.phase
        if self.shape == "spikes":
            into_period_ns = (cycles - np.floor(cycles)) * (1e9 / self.frequency_hz)
            chunk.latency_ns += np.where(active & (into_period_ns < self.width_ns), self.amplitude_ns, 0.0)
        else:
            wave = 0.5 * self.amplitude_ns * (1.0 + np.sin(2.0 * np.pi * (cycles + 2 * self.phase)))
            chunk.latency_ns += np.where(active, wave, 0.0)


@register_effect
@dataclass(frozen=True)
class PStates(Effect):
    """Core-frequency changes (P-states) and the latency coupled to them.

    ``process="steps"`` cycles through ``levels_mhz`` with ``dwell_ns[i]`` in
    level ``i``; ``process="random"`` is governor-like: exponential dwell times
    of mean ``mean_dwell_ns``, each new level drawn from the others uniformly.
    Each CPU has its own timeline (a phase-shifted copy for ``steps``).  With
    probability ``coupling_probability`` a transition adds ``coupling_amplitude_ns``
    to the wake-ups within ``±coupling_window`` of the first wake-up after it.
    ``c0_fraction`` is the share of time in C0 (MPERF advances only there).
    """

    type: ClassVar[str] = "pstates"
    levels_mhz: tuple[float, ...] = (1200.0, 2400.0)
    process: str = "steps"
    dwell_ns: tuple[int, ...] = (500_000_000, 500_000_000)
    mean_dwell_ns: int = 200_000_000
    c0_fraction: float = 0.05
    coupling_probability: float = 0.0
    coupling_amplitude_ns: float = 0.0
    coupling_window: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels_mhz", tuple(float(v) for v in self.levels_mhz))
        object.__setattr__(self, "dwell_ns", tuple(int(v) for v in self.dwell_ns))
        if not self.levels_mhz or min(self.levels_mhz) <= 0:
            raise ValueError("pstates: levels_mhz must be a non-empty list of positive MHz")
        if self.process not in ("steps", "random"):
            raise ValueError(f"pstates: process must be 'steps' or 'random', not {self.process!r}")
        if self.process == "steps" and (len(self.dwell_ns) != len(self.levels_mhz) or min(self.dwell_ns) <= 0):
            raise ValueError("pstates: dwell_ns needs one positive dwell per level")
        if self.process == "random" and (len(self.levels_mhz) < 2 or self.mean_dwell_ns <= 0):
            raise ValueError("pstates: a random process needs >= 2 levels and mean_dwell_ns > 0")
        if not 0 < self.c0_fraction <= 1 or not 0 <= self.coupling_probability <= 1 or self.coupling_window < 0:
            raise ValueError("pstates: c0_fraction in (0, 1], coupling_probability in [0, 1], coupling_window >= 0")

    def prepare(self, run: SimulationRun) -> None:
        truth: dict[str, Any] = {**self.to_json(), "cpus": {}}
        coupled_slots: dict[int, np.ndarray] = {}
        for thread, cpu in enumerate(run.cpus):
            starts, levels = self._timeline(run, thread)
            run.frequency[cpu] = FrequencyTimeline(
                start_ns=starts, hz=levels * 1e6, c0=np.full(levels.size, self.c0_fraction),
            )
            transitions = starts[1:]
            coupled = run.rng.random(transitions.size) < self.coupling_probability
            first_slot = np.ceil(
                (transitions - run.start_ns - thread * run.spec.thread_offset_ns) / run.interval_ns
            ).astype(np.int64)
            offsets = np.arange(-self.coupling_window, self.coupling_window + 1)
            slots = np.unique((first_slot[coupled][:, None] + offsets[None, :]).ravel())
            coupled_slots[thread] = slots[(slots >= 0) & (slots < run.slots_per_thread)]
            truth["cpus"][str(cpu)] = {
                "transition_ns": ground_truth_list(transitions),
                "level_mhz": ground_truth_list(levels),
                "coupled": ground_truth_list(coupled),
                "coupled_expected_ns": ground_truth_list(run.slot_expected_ns(thread, coupled_slots[thread])),
            }
        run.state["pstates_coupled_slots"] = coupled_slots
        run.ground_truth["pstates"] = truth

    def _timeline(self, run: SimulationRun, thread: int) -> tuple[np.ndarray, np.ndarray]:
        levels = np.asarray(self.levels_mhz)
        span = run.end_ns - run.start_ns
        if self.process == "steps":
            dwell = np.asarray(self.dwell_ns, dtype=np.int64)
            cycle = int(dwell.sum())
            # each CPU starts at a different point of the cycle so CPUs do not switch in lockstep
            shift = (thread * cycle) // max(1, len(run.cpus))
            n_cycles = (span + shift) // cycle + 2
            bounds = np.concatenate([[0], np.cumsum(np.tile(dwell, n_cycles))])[:-1] - shift
            which = np.tile(np.arange(levels.size), n_cycles)
            inside = bounds < span
            bounds, which = bounds[inside], which[inside]
            first = np.searchsorted(bounds, 0, side="right") - 1
            bounds, which = bounds[first:].copy(), which[first:]
            bounds[0] = 0
            return run.start_ns + bounds, levels[which]
        expected_n = int(span / self.mean_dwell_ns * 1.2) + 16
        gaps = run.rng.exponential(self.mean_dwell_ns, size=expected_n)
        while gaps.sum() < span:
            gaps = np.concatenate([gaps, run.rng.exponential(self.mean_dwell_ns, size=expected_n)])
        bounds = np.concatenate([[0.0], np.cumsum(gaps)])
        bounds = bounds[bounds < span].astype(np.int64)
        steps = run.rng.integers(1, levels.size, size=bounds.size)
        # steps in 1..L-1 so a level never follows itself
        which = (run.rng.integers(0, levels.size) + np.cumsum(steps) - steps[0]) % levels.size
        return run.start_ns + bounds, levels[which]

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        slots = run.state["pstates_coupled_slots"][chunk.thread]
        lo, hi = np.searchsorted(slots, [chunk.slots[0], chunk.slots[-1] + 1])
        if hi > lo:
            chunk.latency_ns[slots[lo:hi] - chunk.slots[0]] += self.coupling_amplitude_ns


@register_effect
@dataclass(frozen=True)
class SMIs(Effect):
    """System-management interrupts: all CPUs stop for ``duration_ns``, Poisson at ``rate_hz``.

    A wake-up programmed inside an SMI happens when it ends, and every CPU's
    ``smi`` counter counts the SMI.
    """

    type: ClassVar[str] = "smi"
    rate_hz: float = 0.5
    duration_ns: int = 100_000

    def __post_init__(self) -> None:
        if self.rate_hz < 0 or self.duration_ns <= 0:
            raise ValueError("smi: rate_hz must be >= 0 and duration_ns > 0")

    def prepare(self, run: SimulationRun) -> None:
        span = run.end_ns - run.start_ns
        count = run.rng.poisson(self.rate_hz * span / 1e9)
        times = np.sort(run.rng.integers(run.start_ns, run.end_ns, size=count))
        run.smi_times_ns = times
        run.ground_truth["smi"] = {**self.to_json(), "times_ns": ground_truth_list(times)}

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        times = run.smi_times_ns
        if times.size == 0:
            return
        # the last SMI that started at or before each programmed time
        last = np.searchsorted(times, chunk.expected_ns, side="right") - 1
        started = times[np.maximum(last, 0)]
        remaining = started + self.duration_ns - chunk.expected_ns
        hit = (last >= 0) & (remaining > 0)
        chunk.latency_ns += np.where(hit, remaining, 0)


@register_effect
@dataclass(frozen=True)
class TransitionSMIs(Effect):
    """SMIs at a fraction ``probability`` of frequency transitions, ``delay_ns`` after each.

    Firmware that handles some P-state changes in SMM, so SMIs cluster at
    transitions: tests check that spikes caused by SMIs are attributed to the
    SMIs even when they sit next to transitions.

    List it *after* ``pstates`` (it reads the frequency timelines) and before or
    after ``smi`` (an ``smi`` effect's ``prepare`` replaces the SMI timeline, so put
    this one after it; the ``smi`` effect's duration then applies to these SMIs too).
    """

    type: ClassVar[str] = "transition_smis"
    probability: float = 0.5
    delay_ns: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.probability <= 1 or self.delay_ns < 0:
            raise ValueError("transition_smis: probability in [0, 1] and delay_ns >= 0")

    def prepare(self, run: SimulationRun) -> None:
        starts = [timeline.start_ns[1:] for timeline in run.frequency.values()]
        transitions = np.concatenate(starts) if starts else np.empty(0, np.int64)
        chosen = transitions[run.rng.random(transitions.size) < self.probability] + self.delay_ns
        run.smi_times_ns = np.sort(np.concatenate([run.smi_times_ns, chosen.astype(np.int64)]))
        run.ground_truth["transition_smis"] = {**self.to_json(), "times_ns": ground_truth_list(chosen)}


@register_effect
@dataclass(frozen=True)
class Stalls(Effect):
    """Rare long stalls that make the thread miss periods (overruns).

    With probability ``probability`` per wake-up, latency grows by
    ``periods`` intervals, so ``floor(latency / interval)`` periods are skipped.
    Ground truth: the stalled wake-ups' ``expected_ns``, per thread.
    """

    type: ClassVar[str] = "stalls"
    probability: float = 1e-4
    periods: float = 2.5

    def __post_init__(self) -> None:
        if not 0 <= self.probability <= 1 or self.periods <= 0:
            raise ValueError("stalls: probability in [0, 1] and periods > 0")

    def prepare(self, run: SimulationRun) -> None:
        run.ground_truth["stalls"] = {**self.to_json(), "stalled_expected_ns": {}}

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        hit = chunk.rng.random(chunk.slots.size) < self.probability
        chunk.latency_ns += np.where(hit, self.periods * run.interval_ns, 0.0)
        truth = run.ground_truth["stalls"]["stalled_expected_ns"]
        append_ground_truth(truth.setdefault(str(chunk.thread), {"count": 0, "values": []}), chunk.expected_ns[hit])


@register_effect
@dataclass(frozen=True)
class SharedStalls(Effect):
    """Stalls that stop several CPUs at once (a lock held with interrupts off, a hypervisor pause).

    Poisson at ``rate_hz`` (or at the given ``times_ns``, relative to the run start), each stops the
    ``threads`` (None = all) for ``duration_ns``: a wake-up programmed inside one happens when it ends, and
    a stall longer than the interval makes each of those threads miss periods.  Unlike an SMI, no counter
    counts it.  Ground truth: the stall times (CLOCK_MONOTONIC ns) and the threads.
    """

    type: ClassVar[str] = "shared_stall"
    rate_hz: float = 0.1
    duration_ns: int = 3_000_000
    times_ns: tuple[int, ...] | None = None
    threads: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.rate_hz < 0 or self.duration_ns <= 0:
            raise ValueError("shared_stall: rate_hz must be >= 0 and duration_ns > 0")
        for name in ("times_ns", "threads"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(int(v) for v in value))

    def prepare(self, run: SimulationRun) -> None:
        if self.times_ns is not None:
            times = np.sort(run.start_ns + np.asarray(self.times_ns, dtype=np.int64))
        else:
            count = run.rng.poisson(self.rate_hz * (run.end_ns - run.start_ns) / 1e9)
            times = np.sort(run.rng.integers(run.start_ns, run.end_ns, size=count))
        run.state["shared_stall_times"] = times
        run.ground_truth["shared_stall"] = {**self.to_json(), "stall_ns": ground_truth_list(times)}

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        times = run.state["shared_stall_times"]
        if times.size == 0 or not _applies_to(self.threads, chunk.thread):
            return
        last = np.searchsorted(times, chunk.expected_ns, side="right") - 1
        remaining = times[np.maximum(last, 0)] + self.duration_ns - chunk.expected_ns
        chunk.latency_ns += np.where((last >= 0) & (remaining > 0), remaining, 0)


@register_effect
@dataclass(frozen=True)
class Drops(Effect):
    """Samples lost to a full ring: bursts starting with ``probability`` per row, mean length ``mean_burst``."""

    type: ClassVar[str] = "drops"
    probability: float = 1e-4
    mean_burst: float = 4.0

    def __post_init__(self) -> None:
        if not 0 <= self.probability <= 1 or self.mean_burst < 1:
            raise ValueError("drops: probability in [0, 1] and mean_burst >= 1")

    def prepare(self, run: SimulationRun) -> None:
        run.ground_truth["drops"] = self.to_json()

    def rows(self, run: SimulationRun, rows: ThreadRows) -> None:
        n = rows.seq.size
        starts = np.flatnonzero(rows.rng.random(n) < self.probability)
        if starts.size == 0:
            return
        lengths = rows.rng.geometric(1.0 / self.mean_burst, size=starts.size)
        delta = np.zeros(n + 1, dtype=np.int64)
        np.add.at(delta, starts, 1)
        np.add.at(delta, np.minimum(starts + lengths, n), -1)
        rows.keep &= np.cumsum(delta[:-1]) == 0


@register_effect
@dataclass(frozen=True)
class IdleStates(Effect):
    """Deep idle: some intervals end in a deep C-state, with less C0 time and a slower wake-up.

    With probability ``deep_probability`` a wake-up comes out of a deep state:
    it pays ``exit_latency_ns`` more latency, and over the interval it ends the
    CPU was in C0 only ``deep_c0_fraction`` of the time (MPERF and APERF advance
    only in C0, so both shrink by the same factor; the effective frequency is
    unchanged).  The other intervals keep the C0 share of the frequency
    timeline.  Ground truth: the deep wake-ups' ``expected_ns``.
    """

    type: ClassVar[str] = "idle"
    deep_probability: float = 0.1
    exit_latency_ns: float = 50_000.0
    deep_c0_fraction: float = 0.001

    def __post_init__(self) -> None:
        if not 0 <= self.deep_probability <= 1 or self.exit_latency_ns < 0 or not 0 < self.deep_c0_fraction <= 1:
            raise ValueError("idle: deep_probability in [0, 1], exit_latency_ns >= 0, deep_c0_fraction in (0, 1]")

    def prepare(self, run: SimulationRun) -> None:
        run.state["idle"] = {}  # thread -> expected_ns of the deep wake-ups of its current chunk
        run.state["idle_carry"] = {}
        run.ground_truth["idle"] = {**self.to_json(), "deep_expected_ns": {}}

    def apply(self, run: SimulationRun, chunk: ThreadChunk) -> None:
        deep = chunk.rng.random(chunk.slots.size) < self.deep_probability
        if chunk.slots[0] == 0:
            deep[0] = False  # the first wake-up has no interval before it
        chunk.latency_ns += np.where(deep, self.exit_latency_ns, 0.0)
        run.state["idle"][chunk.thread] = chunk.expected_ns[deep]

    def rows(self, run: SimulationRun, rows: ThreadRows) -> None:
        # rows come from the slots of the chunk just applied (an overrun-skipped slot is simply absent)
        deep = np.isin(rows.expected_ns, run.state["idle"].get(rows.thread, np.empty(0, np.int64)))
        truth = run.ground_truth["idle"]["deep_expected_ns"].setdefault(str(rows.thread), {"count": 0, "values": []})
        append_ground_truth(truth, rows.expected_ns[deep])
        if not {"mperf", "aperf"} <= set(rows.columns) or rows.seq.size == 0:
            return
        tsc, mperf, aperf = rows.columns["tsc"], rows.columns["mperf"], rows.columns["aperf"]
        # carry: the previous row's original (tsc, mperf, aperf) and adjusted (mperf, aperf)
        carry = run.state["idle_carry"].get(rows.thread)
        if carry is None:
            carry = (tsc[0], mperf[0], aperf[0], mperf[0], aperf[0])
            deep[0] = False
        d_tsc = np.diff(np.concatenate([[carry[0]], tsc]))
        d_m = np.diff(np.concatenate([[carry[1]], mperf]))
        d_a = np.diff(np.concatenate([[carry[2]], aperf]))
        scale = np.where(deep, self.deep_c0_fraction * d_tsc / np.maximum(d_m, 1), 1.0)
        new_m = carry[3] + np.cumsum(np.where(deep, np.floor(d_m * scale), d_m)).astype(np.int64)
        new_a = carry[4] + np.cumsum(np.where(deep, np.floor(d_a * scale), d_a)).astype(np.int64)
        run.state["idle_carry"][rows.thread] = (tsc[-1], mperf[-1], aperf[-1], new_m[-1], new_a[-1])
        rows.columns["mperf"], rows.columns["aperf"] = new_m, new_a
