"""Synthetic datasets with planted, known effects (kind ``simulation``).

``simulate(spec, seed)`` returns an Arrow table in the dataset schema and its
:class:`~jitterscope.metadata.Metadata`; ``write_simulation(spec, path, seed)``
streams the same rows to a Parquet file in bounded memory.  The same spec and
seed give the same bytes of data on every machine.

How a simulation is built, per thread (one pinned thread per CPU):

1. wake-up *slots* ``k = 0 .. samples-1`` programmed at
   ``start_ns + thread * thread_offset_ns + k * interval_ns``;
2. latency = the base distribution (:class:`BaseLatency`) plus what each
   effect adds (:mod:`jitterscope.simeffects`: periodic disturbances,
   P-states with coupled spikes, SMIs, stalls);
3. overruns as a real absolute-time sleep loop produces them: a wake-up
   ``floor(latency / interval)`` periods late skips those periods, and the next
   row carries the count in ``overruns`` (``seq`` counts rows, not slots);
4. counters from the timelines: ``tsc`` at ``tsc_hz`` from ``actual_ns``,
   ``aperf``/``mperf`` integrated over each CPU's frequency timeline,
   ``smi`` counting SMIs so far;
5. drops: rows removed, leaving ``seq`` gaps counted in ``threads[].drops``.

Everything planted goes to the metadata key ``ground_truth``: the full spec,
the seed, and per effect the event times (ns, CLOCK_MONOTONIC like
``expected_ns``) or the affected wake-ups' ``expected_ns``.  New effects are
added in :mod:`jitterscope.simeffects` without touching this module.

Rows are generated in chunks of :data:`CHUNK_SLOTS` slots per thread, each
with its own random stream derived from the seed, so memory stays bounded and
``simulate`` and ``write_simulation`` produce identical rows.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import special

from ... import __version__
from ...dataset import (
    Metadata,
    ThreadInfo,
    check_output,
    load_json,
    sample_schema,
    write_atomically,
    write_dataset,
)
from ...errors import DatasetError, JitterscopeError
from .effects import EFFECT_TYPES, Effect, FrequencyTimeline, SimulationRun, ThreadChunk, ThreadRows

CHUNK_SLOTS = 1 << 20
"""Wake-up slots per thread generated at once."""

COUNTER_NAMES = ("aperf", "mperf", "smi")
DEFAULT_SAMPLES = 10_000
# Raw counters do not start at zero on a real machine; neither do ours.
_COUNTER_ORIGIN = 1_000_000_000_000
_REALTIME_AT_START_NS = 1_764_460_800_000_000_000  # 2025-11-30T00:00:00Z, fixed for reproducibility


class SpecError(JitterscopeError):
    """A simulation spec is malformed; the message names the field."""


@dataclass(frozen=True)
class BaseLatency:
    """The latency every wake-up has before effects: ``offset_ns + X``.

    ``X`` is lognormal (``spread`` = sigma of log X), gamma (``spread`` =
    coefficient of variation), exponential, or constant, with median ``median_ns``.
    """

    distribution: str = "lognormal"
    median_ns: float = 3_000.0
    spread: float = 0.3
    offset_ns: float = 0.0

    def __post_init__(self) -> None:
        if self.distribution not in ("lognormal", "gamma", "exponential", "constant"):
            raise ValueError(
                f"base: distribution must be lognormal, gamma, exponential or constant, not {self.distribution!r}"
            )
        if self.median_ns <= 0 or (self.spread <= 0 and self.distribution in ("lognormal", "gamma")):
            raise ValueError("base: median_ns and spread must be > 0")
        if self.offset_ns < 0:
            raise ValueError("base: offset_ns must be >= 0 (a timer never fires early)")

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` latencies in ns (float)."""
        if self.distribution == "lognormal":
            values = self.median_ns * np.exp(self.spread * rng.standard_normal(n))
        elif self.distribution == "gamma":
            shape = 1.0 / self.spread**2
            scale = self.median_ns / special.gammaincinv(shape, 0.5)
            values = rng.gamma(shape, scale, size=n)
        elif self.distribution == "exponential":
            values = rng.exponential(self.median_ns / np.log(2.0), size=n)
        else:
            values = np.full(n, float(self.median_ns))
        return values + self.offset_ns


@dataclass(frozen=True)
class SimulationSpec:
    """What to simulate.  Build from code, or from JSON with :meth:`from_json`.

    ``samples`` (wake-up slots per thread) or ``duration_ns`` (then
    ``samples = duration_ns // interval_ns``) sets the length; neither means
    :data:`DEFAULT_SAMPLES`.  ``counters``
    lists which counter columns to write; ``governor`` goes to the simulated
    environment so comparisons can tell runs apart.

    ``environment`` and ``settings`` are overrides merged over what the
    simulation records (:func:`merge_overrides`): e.g. ``{"no_hz": "idle",
    "cmdline": "...", "cpufreq": {"*": {"governor": "performance", "cur_khz":
    2400000}}}`` claims a kernel and a cpufreq state the rows need not agree
    with.  Under ``cpufreq``, the key ``"*"`` applies to every simulated CPU.
    """

    threads: int = 2
    cpus: tuple[int, ...] | None = None
    interval_ns: int = 1_000_000
    samples: int | None = None
    duration_ns: int | None = None
    start_ns: int = 1_000_000_000_000
    thread_offset_ns: int = 0
    # the wall-clock start a run claims (metadata clock.realtime_ns): a fleet of simulated nights needs
    # different capture start times; None keeps the fixed, reproducible default
    realtime_ns: int | None = None
    tsc_hz: float = 2_400_000_000.0
    counters: tuple[str, ...] = COUNTER_NAMES
    governor: str = "performance"
    policy: str = "fifo"
    priority: int = 99
    base: BaseLatency = field(default_factory=BaseLatency)
    effects: tuple[Effect, ...] = ()
    environment: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = _non_finite(self, "")
        if where is not None:  # NaN passes every range check (all comparisons are false), inf most of them
            raise ValueError(f"{where.lstrip('.')} is {_value_at(self, where)!r}: every number of a spec must be "
                             "finite")
        for name in ("environment", "settings"):
            value = getattr(self, name)
            if value is None:
                value = {}
            if not isinstance(value, Mapping):
                raise ValueError(f"{name} must be a JSON object of overrides")
            object.__setattr__(self, name, json.loads(json.dumps(value)))  # a private, JSON-clean copy
            known = _environment(self) if name == "environment" else _settings(self)
            unknown = set(getattr(self, name)) - set(known)
            if unknown:
                raise ValueError(f"{name}: unknown key(s) {', '.join(sorted(unknown))} "
                                 f"(known: {', '.join(sorted(known))})")
        cpus = tuple(range(self.threads)) if self.cpus is None else tuple(int(c) for c in self.cpus)
        object.__setattr__(self, "cpus", cpus)
        object.__setattr__(self, "counters", tuple(self.counters))
        object.__setattr__(self, "effects", tuple(self.effects))
        if self.threads < 1 or len(cpus) != self.threads or len(set(cpus)) != len(cpus) or min(cpus) < 0:
            raise ValueError("threads must be >= 1 and cpus a list of that many distinct CPUs >= 0")
        if self.interval_ns <= 0 or self.tsc_hz <= 0:
            raise ValueError("interval_ns and tsc_hz must be > 0")
        if self.samples is not None and self.duration_ns is not None:
            raise ValueError("give samples or duration_ns, not both")
        if self.samples is None and self.duration_ns is None:
            object.__setattr__(self, "samples", DEFAULT_SAMPLES)
        if self.slots_per_thread < 1:
            raise ValueError("samples (or duration_ns / interval_ns) must be >= 1")
        unknown = set(self.counters) - set(COUNTER_NAMES)
        if unknown:
            raise ValueError(f"counters: unknown {sorted(unknown)} (known: {', '.join(COUNTER_NAMES)})")
        if self.start_ns < 0 or self.thread_offset_ns < 0:
            raise ValueError("start_ns and thread_offset_ns must be >= 0")
        if self.realtime_ns is not None and (isinstance(self.realtime_ns, bool) or not isinstance(self.realtime_ns, int)
                                             or self.realtime_ns < 0):
            raise ValueError("realtime_ns must be an integer >= 0 (ns since the Unix epoch) or null")

    @property
    def slots_per_thread(self) -> int:
        return int(self.samples if self.samples is not None else (self.duration_ns or 0) // self.interval_ns)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["cpus"] = list(self.cpus or ())
        out["counters"] = list(self.counters)
        out["base"] = dataclasses.asdict(self.base)
        out["effects"] = [effect.to_json() for effect in self.effects]
        out["environment"] = json.loads(json.dumps(self.environment))
        out["settings"] = json.loads(json.dumps(self.settings))
        if self.realtime_ns is None:
            # left out when not claimed, so the specs of datasets made before the field existed stay equal
            del out["realtime_ns"]
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SimulationSpec:
        """Build a spec from its JSON form; raises :class:`SpecError` naming the bad field."""
        if not isinstance(obj, Mapping):
            raise SpecError("a simulation spec must be a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(obj) - known
        if unknown:
            raise SpecError(f"spec: unknown field(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
        values = dict(obj)
        try:
            if "base" in values:
                values["base"] = BaseLatency(**_mapping(values["base"], "base"))
            values["effects"] = tuple(_effect_from_json(e) for e in values.get("effects", ()))
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"simulation spec: {exc}") from None


def _non_finite(value: Any, where: str) -> str | None:
    """The path of the first NaN or infinite number in a spec (its fields, base, effects and overrides), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = getattr(value, "type", "")
        for fld in dataclasses.fields(value):
            found = _non_finite(getattr(value, fld.name), f"{where}.{fld.name}")
            if found is not None:
                return found.replace(f"{where}.{fld.name}", f"{where} ({kind}).{fld.name}", 1) if kind else found
        return None
    if isinstance(value, Mapping):
        return next((f for k, v in value.items() if (f := _non_finite(v, f"{where}.{k}")) is not None), None)
    if isinstance(value, list | tuple):
        return next((f for i, v in enumerate(value) if (f := _non_finite(v, f"{where}[{i}]")) is not None), None)
    return None


def _value_at(spec: Any, where: str) -> Any:
    """The value :func:`_non_finite` found (for the message)."""
    import re
    value = spec
    for name, index in re.findall(r"\.(\w+)(?: \(\w+\))?|\[(\d+)\]", where):
        value = getattr(value, name) if name and not isinstance(value, Mapping) else value[name] if name \
            else value[int(index)]
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"spec: '{where}' must be a JSON object")
    return value


def _effect_from_json(obj: Any) -> Effect:
    obj = dict(_mapping(obj, "effects[]"))
    kind = obj.pop("type", None)
    if kind not in EFFECT_TYPES:
        raise SpecError(f"spec: effect type {kind!r} unknown (known: {', '.join(sorted(EFFECT_TYPES))})")
    try:
        return EFFECT_TYPES[kind](**obj)
    except TypeError as exc:
        raise SpecError(f"spec: effect {kind!r}: {exc}") from None


MAX_SPEC_BYTES = 16 << 20
"""Largest spec file read (a spec is a few KiB; overrides of a large machine's environment some hundreds)."""


def load_spec(path: str | os.PathLike[str]) -> SimulationSpec:
    """Read a spec from a JSON file (a regular file of at most :data:`MAX_SPEC_BYTES`; NaN and Infinity,
    which JSON does not have, refused)."""
    import stat
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise SpecError(f"{path}: not a regular file; --spec takes a JSON file")
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec ({exc.strerror})") from None
    obj = load_json(raw, f"{path}: spec", max_bytes=MAX_SPEC_BYTES, error=SpecError,
                    hint="give a JSON spec (see 'jitterscope simulate --print-spec')")
    return SimulationSpec.from_json(obj)


class Simulation(NamedTuple):
    """A simulated dataset in memory: rows and metadata (unpacks as ``table, metadata``)."""

    table: pa.Table
    metadata: Metadata


def simulate(spec: SimulationSpec, seed: int) -> Simulation:
    """Simulate a dataset in memory.

    Parameters
    ----------
    spec
        What to simulate.
    seed
        Random seed; the same spec and seed give the same rows.

    Returns
    -------
    Simulation
        ``(table, metadata)``: columns in contract order and types, kind ``simulation``.
    """
    generator = _Generator(spec, seed)
    batches = list(generator.batches())
    schema = sample_schema(generator.column_names)
    table = pa.Table.from_batches(batches, schema=schema)
    return Simulation(table, generator.metadata())


MAX_SIMULATED_WAKEUPS = 2 * 10**9
"""Most wake-ups one simulated dataset may hold (about 70 GB): a larger request is a typo, not a study."""
BYTES_PER_WAKEUP = 35
"""Approximate size of one simulated wake-up on disk (zstd), for the refusal's estimate."""


def write_simulation(
    spec: SimulationSpec, path: str | os.PathLike[str], seed: int, *, overwrite: bool = False,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """Simulate straight into a Parquet file at ``path`` in bounded memory (one chunk at a time).

    ``inputs`` (a spec file) are never overwritten; an existing ``path`` only with ``overwrite``.
    """
    out = check_output(path, inputs=inputs, overwrite=overwrite)
    wakeups = spec.slots_per_thread * spec.threads
    if wakeups > MAX_SIMULATED_WAKEUPS:  # before a byte is written: 10^12 wake-ups would be ~35 TB
        raise DatasetError(f"{out}: {spec.threads} thread(s) x {spec.slots_per_thread:,} wake-ups is {wakeups:,} "
                           f"wake-ups (about {wakeups * BYTES_PER_WAKEUP / 1e9:,.0f} GB), more than the "
                           f"{MAX_SIMULATED_WAKEUPS:,} simulate writes; ask for fewer --samples or a shorter "
                           "--duration")
    generator = _Generator(spec, seed)
    schema = sample_schema(generator.column_names)
    if spec.slots_per_thread * spec.threads <= CHUNK_SLOTS:
        sim = Simulation(pa.Table.from_batches(list(generator.batches()), schema=schema), generator.metadata())
        return write_dataset(sim.table, sim.metadata, out, overwrite=overwrite)
    with write_atomically(out) as tmp:
        # without the stored Arrow schema, readers take the key-value metadata added at the end
        with pq.ParquetWriter(tmp, schema, compression="zstd", use_dictionary=False, store_schema=False) as writer:
            for batch in generator.batches():
                writer.write_batch(batch, row_group_size=CHUNK_SLOTS)
            writer.add_key_value_metadata(generator.metadata().to_kv())
    return out


class _Generator:
    """One simulation run: global timelines first, then rows chunk by chunk."""

    def __init__(self, spec: SimulationSpec, seed: int) -> None:
        self.spec = spec
        self.seed = int(seed)
        cpus = tuple(spec.cpus or ())
        slots = spec.slots_per_thread
        end_ns = spec.start_ns + (spec.threads - 1) * spec.thread_offset_ns + (slots + 1) * spec.interval_ns
        self.run = SimulationRun(
            spec=spec, rng=np.random.default_rng([self.seed, 0]), start_ns=spec.start_ns, end_ns=end_ns,
            slots_per_thread=slots, cpus=cpus,
        )
        for cpu in cpus:
            self.run.frequency[cpu] = FrequencyTimeline(
                start_ns=np.array([spec.start_ns], np.int64), hz=np.array([spec.tsc_hz]), c0=np.array([0.05]),
            )
        for effect in spec.effects:
            effect.prepare(self.run)
        self.column_names = ["cpu", "thread", "seq", "expected_ns", "actual_ns", "overruns",
                             "tsc", "run_cpu", "read_cycles", *spec.counters]
        self.samples = [0] * spec.threads
        self.drops = [0] * spec.threads
        self.overruns = [0] * spec.threads
        self._carry_skip = [0] * spec.threads  # slots still to skip at the start of the next chunk
        self._carry_periods = [0] * spec.threads  # overruns to report on the next chunk's first row
        self._next_seq = [0] * spec.threads

    def batches(self) -> Iterator[pa.RecordBatch]:
        total = self.spec.slots_per_thread
        for index, first in enumerate(range(0, total, CHUNK_SLOTS)):
            last = min(total, first + CHUNK_SLOTS)
            for thread, cpu in enumerate(self.run.cpus):
                rng = np.random.default_rng([self.seed, 1 + index, thread])
                batch = self._chunk(thread, cpu, first, last, rng, is_last=last == total)
                if batch.num_rows:
                    yield batch

    def _chunk(
        self, thread: int, cpu: int, first: int, last: int, rng: np.random.Generator, *, is_last: bool,
    ) -> pa.RecordBatch:
        slots = np.arange(first, last, dtype=np.int64)
        chunk = ThreadChunk(
            thread=thread, cpu=cpu, slots=slots, expected_ns=self.run.slot_expected_ns(thread, slots),
            latency_ns=self.spec.base.draw(rng, slots.size), rng=rng,
        )
        for effect in self.spec.effects:
            effect.apply(self.run, chunk)
        latency = np.rint(chunk.latency_ns).astype(np.int64)
        keep, overruns = self._resolve_overruns(thread, latency)
        n = int(keep.sum())
        seq = self._next_seq[thread] + np.arange(n, dtype=np.int64)
        self._next_seq[thread] += n
        expected = chunk.expected_ns[keep]
        actual = expected + latency[keep]
        rows = ThreadRows(
            thread=thread, cpu=cpu, seq=seq, expected_ns=expected, actual_ns=actual,
            overruns=overruns, keep=np.ones(n, dtype=bool), columns=self._counters(cpu, actual, rng), rng=rng,
        )
        for effect in self.spec.effects:
            effect.rows(self.run, rows)
        if is_last and n:
            rows.keep[-1] = True  # a drop at the very end would leave no seq gap to count it by
        self.samples[thread] += int(rows.keep.sum())
        self.drops[thread] += n - int(rows.keep.sum())
        self.overruns[thread] += int(overruns.sum())
        mask = rows.keep
        arrays = {
            "cpu": np.full(int(mask.sum()), cpu, np.int32), "thread": np.full(int(mask.sum()), thread, np.int32),
            "seq": seq[mask], "expected_ns": expected[mask], "actual_ns": actual[mask],
            "overruns": overruns[mask].astype(np.int32),
            **{name: values[mask] for name, values in rows.columns.items()},
        }
        schema = sample_schema(self.column_names)
        return pa.record_batch([pa.array(arrays[name], type=schema.field(name).type) for name in schema.names],
                               schema=schema)

    def _resolve_overruns(self, thread: int, latency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which slots become rows, and each row's count of periods skipped before it.

        A wake-up ``p = floor(latency / interval)`` periods late finds its next
        ``p`` targets already past: those slots never happen, and the wake-up
        after them reports ``overruns = p``.  Skips may cross into the next chunk.
        """
        interval = self.spec.interval_ns
        n = latency.size
        keep = np.ones(n, dtype=bool)
        skipped = np.zeros(n, dtype=np.int64)
        skip_until, pending = self._carry_skip[thread], self._carry_periods[thread]
        keep[:skip_until] = False
        if skip_until < n:
            skipped[skip_until], pending = pending, 0
        for slot in np.flatnonzero(latency >= interval):  # rare; each depends on the skips before it
            if slot < skip_until:
                continue
            periods = int(latency[slot] // interval)
            skip_until = int(slot) + 1 + periods
            keep[slot + 1:skip_until] = False
            if skip_until < n:
                skipped[skip_until] = periods
            else:
                pending = periods
        self._carry_skip[thread] = max(0, skip_until - n)
        self._carry_periods[thread] = pending
        return keep, skipped[keep]

    def _counters(self, cpu: int, actual_ns: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        spec = self.spec
        # rdtscp a few hundred ns after the clock read; the TSC ran since boot (monotonic 0)
        tsc = np.floor((actual_ns + 150).astype(np.float64) * (spec.tsc_hz / 1e9)).astype(np.int64)
        columns = {
            "tsc": tsc,
            "run_cpu": np.full(actual_ns.size, cpu, np.int32),
            "read_cycles": rng.integers(180, 420, size=actual_ns.size).astype(np.int32),
        }
        timeline = self.run.frequency[cpu]
        if "aperf" in spec.counters or "mperf" in spec.counters:
            aperf, mperf = _integrate(timeline, actual_ns, spec.tsc_hz)
            if "aperf" in spec.counters:
                columns["aperf"] = aperf
            if "mperf" in spec.counters:
                columns["mperf"] = mperf
        if "smi" in spec.counters:
            columns["smi"] = _COUNTER_ORIGIN // 10**9 + np.searchsorted(self.run.smi_times_ns, actual_ns, side="right")
        return columns

    def metadata(self) -> Metadata:
        """Metadata for the rows generated so far (call after :meth:`batches` is exhausted)."""
        spec = self.spec
        threads = tuple(
            ThreadInfo(thread=t, cpu=cpu, tid=20_000 + t, interval_ns=spec.interval_ns,
                       samples=self.samples[t], drops=self.drops[t], overruns=self.overruns[t])
            for t, cpu in enumerate(self.run.cpus)
        )
        return Metadata(
            kind="simulation",
            threads=threads,
            tool={"name": "jitterscope simulate", "version": __version__},
            settings=merge_overrides(_settings(spec), spec.settings, cpus=self.run.cpus),
            environment=merge_overrides(_environment(spec), spec.environment, cpus=self.run.cpus),
            counters={"source": "file", "simulated": True, "columns": list(spec.counters),
                      "missing": {c: "not asked for in the simulation spec"
                                  for c in (*COUNTER_NAMES, "perf_status") if c not in spec.counters}},
            clock={"realtime_ns": _REALTIME_AT_START_NS if spec.realtime_ns is None else spec.realtime_ns,
                   "monotonic_ns": spec.start_ns, "tsc_hz": spec.tsc_hz, "tsc_hz_source": "simulation spec"},
            status={"state": "complete", "reason": "simulation finished", "flushes": 1},
            ground_truth={"seed": self.seed, "spec": spec.to_json(), **self.run.ground_truth},
        )


def _integrate(timeline: FrequencyTimeline, times_ns: np.ndarray, tsc_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """APERF and MPERF at ``times_ns``: integrals of ``hz * c0`` and ``tsc_hz * c0`` over the timeline."""
    starts = timeline.start_ns.astype(np.float64)
    a_rate = timeline.hz * timeline.c0 / 1e9
    m_rate = tsc_hz * timeline.c0 / 1e9
    lengths = np.diff(starts)
    a_at = np.concatenate([[0.0], np.cumsum(a_rate[:-1] * lengths)])
    m_at = np.concatenate([[0.0], np.cumsum(m_rate[:-1] * lengths)])
    seg = np.maximum(np.searchsorted(starts, times_ns, side="right") - 1, 0)
    since = times_ns.astype(np.float64) - starts[seg]
    aperf = np.floor(a_at[seg] + a_rate[seg] * since).astype(np.int64) + _COUNTER_ORIGIN
    mperf = np.floor(m_at[seg] + m_rate[seg] * since).astype(np.int64) + _COUNTER_ORIGIN
    return aperf, mperf


def _settings(spec: SimulationSpec) -> dict[str, Any]:
    asked = {
        "interval_ns": spec.interval_ns, "cpus": list(spec.cpus or ()), "policy": spec.policy,
        "priority": spec.priority, "duration_ns": spec.duration_ns or 0, "loops": spec.samples or 0,
        "latency_us": 0, "timer": "abs", "counters": "auto", "msr_dir": None,
        "flush_interval_ns": 0, "output": None,
    }
    granted = {
        "policy": spec.policy, "priority": spec.priority, "latency_us": 0, "mlockall": True, "timer": "abs",
        "counters": "file", "writer_cpu": -1, "degraded": [], "simulated": True,
    }
    return {"asked": asked, "granted": granted}


def _environment(spec: SimulationSpec) -> dict[str, Any]:
    khz = int(spec.tsc_hz / 1000)
    return {
        "simulated": True,
        "hostname": "simulated", "kernel_release": "simulated", "kernel_version": "simulated",
        "cmdline": "", "preempt": None, "preempt_rt": False, "hz": None, "no_hz": None,
        "kernel_config_source": None, "clocksource": "simulated", "available_clocksources": "simulated",
        "cpu_model": "simulated CPU", "cpu_vendor": "simulated", "microcode": None,
        "cpus_online": ",".join(str(c) for c in spec.cpus or ()), "isolated_cpus": "", "nohz_full_cpus": "",
        "rt_runtime_us": None, "rt_period_us": None, "intel_pstate_status": None,
        "cpufreq": {str(cpu): {"driver": "simulated", "governor": spec.governor, "cur_khz": khz,
                               "min_khz": khz, "max_khz": khz} for cpu in spec.cpus or ()},
        "cpuidle": {"driver": None, "governor": None, "states": []},
    }


def merge_overrides(defaults: Mapping[str, Any], overrides: Mapping[str, Any], *,
                    cpus: Sequence[int] = ()) -> dict[str, Any]:
    """``defaults`` with ``overrides`` merged over them.

    Parameters
    ----------
    defaults : Mapping
        What the simulation records by itself (environment or settings).
    overrides : Mapping
        The spec's section: a key whose value and default are both objects is
        merged key by key (recursively); any other value replaces the default.
        Under ``cpufreq``, the key ``"*"`` is merged into every CPU in ``cpus``
        first, so ``{"cpufreq": {"*": {"cur_khz": 2400000}}}`` claims 2.4 GHz on all.
    cpus : sequence of int
        The simulated CPUs (for ``cpufreq["*"]``).

    Returns
    -------
    dict
        A new dict; neither argument is changed.
    """
    merged = json.loads(json.dumps(dict(defaults)))
    overrides = json.loads(json.dumps(dict(overrides)))
    cpufreq = overrides.get("cpufreq")
    if isinstance(cpufreq, dict) and isinstance(cpufreq.get("*"), dict):
        every = cpufreq.pop("*")
        for cpu in (str(c) for c in cpus):
            entry = json.loads(json.dumps(every))
            _merge_into(entry, cpufreq.get(cpu) or {})
            cpufreq[cpu] = entry
    _merge_into(merged, overrides)
    return merged


def _merge_into(target: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = value


def spec_from_options(
    *,
    threads: int = 2,
    interval_ns: int = 1_000_000,
    samples: int | None = None,
    duration_ns: int | None = None,
    base: BaseLatency | None = None,
    effects: Sequence[Effect] = (),
    **fields: Any,
) -> SimulationSpec:
    """Build a spec from keyword options (what the CLI uses); raises :class:`SpecError`."""
    try:
        return SimulationSpec(threads=threads, interval_ns=interval_ns, samples=samples, duration_ns=duration_ns,
                              base=base or BaseLatency(), effects=tuple(effects), **fields)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"simulation spec: {exc}") from None
