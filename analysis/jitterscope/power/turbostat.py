"""Join a dataset's turbostat timeline (``jitterscope.timeline``) with its wake-ups by wall-clock time.

A wake-up's wall-clock time is ``clock.realtime_ns + (actual_ns -
clock.monotonic_ns)`` (docs/dataset-format.md, ``clock``); turbostat interval
``k`` covers ``(start_s[k], end_s[k]]``.  Each wake-up gets the interval that
contains it and that interval's ``Bzy_MHz`` and ``Busy%`` for the wake-up's
CPU and its SMI count (from that CPU's row); wake-ups outside the
timeline get interval -1 and NaN.  The resolution is turbostat's interval, not
the wake-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset, Metadata, column_values, iter_thread_batches
from ..derive import CounterQuality, CounterSeries, CounterSet, thread_rows
from ..errors import AnalysisError, SchemaError


@dataclass(frozen=True)
class TurbostatTimeline:
    """A decoded ``jitterscope.timeline``: interval edges in wall-clock ns and per-CPU series."""

    source: str
    file: str
    interval_s: float
    start_ns: np.ndarray
    end_ns: np.ndarray
    cpus: tuple[int, ...]
    values: Mapping[int, Mapping[str, np.ndarray]]
    package: Mapping[str, np.ndarray]

    @property
    def intervals(self) -> int:
        return int(self.end_ns.size)

    def to_json(self) -> dict[str, Any]:
        """Summary (not the series): source, file, interval, span and CPUs."""
        return {"source": self.source, "file": self.file, "interval_s": self.interval_s,
                "intervals": self.intervals, "start_ns": int(self.start_ns[0]) if self.intervals else None,
                "end_ns": int(self.end_ns[-1]) if self.intervals else None, "cpus": list(self.cpus)}

    def series(self, column: str, cpu: int) -> np.ndarray:
        """``column`` per interval for ``cpu`` (NaN where turbostat printed none)."""
        found = self.values.get(cpu, {}).get(column)
        return found if found is not None else np.full(self.intervals, np.nan)

    def smi(self, cpu: int) -> np.ndarray:
        """SMIs per interval as ``cpu``'s row reports them (MSR_SMI_COUNT is package-wide, so every CPU of a
        package shows the same count; turbostat's summary row sums them over CPUs, so it is not used)."""
        return self.series("SMI", cpu)


@dataclass(frozen=True)
class TimelineJoin:
    """Per wake-up (dataset row order): its turbostat interval and that interval's values."""

    wall_ns: np.ndarray
    interval: np.ndarray
    bzy_mhz: np.ndarray
    busy_pct: np.ndarray
    smi: np.ndarray
    interval_s: float

    @property
    def inside(self) -> np.ndarray:
        """True for wake-ups that fall inside a turbostat interval."""
        return self.interval >= 0

    def to_json(self) -> dict[str, Any]:
        inside = self.inside
        return {"rows": int(self.interval.size), "inside": int(inside.sum()), "interval_s": self.interval_s,
                "intervals_hit": int(np.unique(self.interval[inside]).size)}


def _ns(seconds: Any, where: str) -> np.ndarray:
    values = np.asarray(seconds, dtype=np.float64)
    if values.ndim != 1 or not np.isfinite(values).all() or (np.abs(values) >= 1e11).any():
        raise SchemaError(f"{where}: is not a list of finite seconds; re-attach the timeline with jitterscope import")
    return (np.round(values * 1e6).astype(np.int64)) * 1000  # turbostat prints microseconds


def _floats(series: Any, count: int, where: str) -> np.ndarray:
    if not isinstance(series, list) or len(series) != count:
        raise SchemaError(f"{where}: needs one value per interval ({count}); re-attach the timeline")
    try:
        return np.array([np.nan if v is None else float(v) for v in series], dtype=np.float64)
    except (TypeError, ValueError):
        raise SchemaError(f"{where}: holds a value that is not a number; re-attach the timeline") from None


def decode_timeline(metadata: Metadata) -> TurbostatTimeline | None:
    """Decode ``jitterscope.timeline`` (None when the dataset has none).

    Raises
    ------
    SchemaError
        The document does not have the documented shape.
    """
    doc = metadata.timeline
    if doc is None:
        return None
    where = "metadata jitterscope.timeline"
    try:
        start, end = _ns(doc["start_s"], where + " start_s"), _ns(doc["end_s"], where + " end_s")
        interval_s = float(doc["interval_s"])
        raw_values, raw_package = doc.get("values") or {}, doc.get("package") or {}
        cpus = tuple(int(c) for c in doc.get("cpus") or [])
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"{where}: malformed ({exc}); re-attach the timeline with jitterscope import") from None
    if start.size != end.size or (end <= start).any() or (start[1:] < end[:-1]).any():
        raise SchemaError(f"{where}: intervals overlap or are empty; re-attach the timeline with jitterscope import")
    values = {int(cpu): {name: _floats(s, end.size, f"{where} values[{cpu}][{name}]") for name, s in cols.items()}
              for cpu, cols in raw_values.items()}
    package = {name: _floats(s, end.size, f"{where} package[{name}]") for name, s in raw_package.items()}
    return TurbostatTimeline(str(doc.get("source", "?")), str(doc.get("file", "?")), interval_s, start, end, cpus,
                    values, package)


def wall_clock_ns(actual_ns: np.ndarray, metadata: Metadata) -> np.ndarray:
    """CLOCK_REALTIME ns of each wake-up from its ``actual_ns`` and the ``clock`` pair.

    Raises
    ------
    AnalysisError
        The dataset records no realtime/monotonic pair.
    """
    clock = metadata.clock or {}
    realtime, monotonic = clock.get("realtime_ns"), clock.get("monotonic_ns")
    if not isinstance(realtime, int) or not isinstance(monotonic, int) or isinstance(realtime, bool):
        raise AnalysisError("the dataset records no clock realtime_ns/monotonic_ns pair, so its wake-ups have no "
                            "wall-clock time to join a turbostat timeline by; use a capture or simulation with one")
    return np.asarray(actual_ns, dtype=np.int64) + np.int64(realtime - monotonic)


def join_timeline(actual_ns: np.ndarray, cpu: np.ndarray, metadata: Metadata,
                  timeline: TurbostatTimeline | None = None) -> TimelineJoin:
    """Map every wake-up to the turbostat interval containing it.

    Parameters
    ----------
    actual_ns, cpu
        The wake-ups' ``actual_ns`` and ``cpu`` columns.
    metadata
        The dataset's metadata (``clock``, and ``timeline`` unless ``timeline`` is given).
    timeline
        A decoded timeline to use instead of the one in ``metadata``.

    Returns
    -------
    TimelineJoin
        Per wake-up: wall-clock ns, interval index (-1 outside), ``Bzy_MHz``,
        ``Busy%`` of its CPU and the interval's SMI count (NaN outside).

    Raises
    ------
    AnalysisError
        No timeline, or no clock pair.
    """
    timeline = timeline if timeline is not None else decode_timeline(metadata)
    if timeline is None:
        raise AnalysisError("the dataset has no turbostat timeline; attach one with "
                            "'jitterscope import TURBOSTAT.txt --onto DATASET -o OUT'")
    wall = wall_clock_ns(actual_ns, metadata)
    cpu = np.asarray(cpu, dtype=np.int64)
    index = np.searchsorted(timeline.end_ns, wall, side="left")
    inside = index < timeline.intervals
    inside[inside] = wall[inside] > timeline.start_ns[index[inside]]
    interval = np.where(inside, index, -1)
    out = {name: np.full(wall.size, np.nan) for name in ("Bzy_MHz", "Busy%", "SMI")}
    for one in np.unique(cpu[inside]):
        rows = inside & (cpu == one)
        for name in ("Bzy_MHz", "Busy%"):
            out[name][rows] = timeline.series(name, int(one))[interval[rows]]
        out["SMI"][rows] = timeline.smi(int(one))[interval[rows]]
    return TimelineJoin(wall, interval, out["Bzy_MHz"], out["Busy%"], out["SMI"], timeline.interval_s)


def overlap_note(join: TimelineJoin, timeline: TurbostatTimeline) -> str | None:
    """None when the timeline covers every wake-up, else one line on the partial overlap.

    Raises
    ------
    AnalysisError
        No wake-up falls inside the timeline.
    """
    inside = int(join.inside.sum())
    if join.wall_ns.size and inside == 0:
        raise AnalysisError(
            f"the turbostat timeline ({timeline.start_ns[0] / 1e9:.6f} to {timeline.end_ns[-1] / 1e9:.6f} s) and "
            f"the capture ({join.wall_ns.min() / 1e9:.6f} to {join.wall_ns.max() / 1e9:.6f} s, wall clock) do not "
            "overlap; give the turbostat output of the same run (or the right --turbostat-start)")
    if inside == join.wall_ns.size:
        return None
    return (f"the turbostat timeline covers {inside} of {join.wall_ns.size} wake-ups "
            f"({100.0 * inside / join.wall_ns.size:.1f}%); the others have no frequency/SMI values")


@dataclass(frozen=True, eq=False)
class TimelineCounters:
    """Counter series built from a turbostat timeline, for :func:`jitterscope.correlate.correlate`.

    ``counters`` has, per thread, ``f_eff_hz`` = the interval's ``Bzy_MHz`` of the
    thread's CPU and ``smi_delta`` = the interval's SMI count (NaN outside the
    timeline; no C0).  ``near_transition`` marks, per series, the wake-ups in either
    turbostat interval of a frequency change (consecutive intervals whose
    ``Bzy_MHz`` differ by more than the relative threshold): the transition is
    somewhere in between, so that is as close as turbostat can place it.
    ``smi_total`` counts SMIs over the intervals the wake-ups fall in (the count is
    package-wide: the largest of the captured CPUs' rows per interval).
    """

    counters: CounterSet
    near_transition: tuple[np.ndarray, ...]
    transitions: int
    smi_total: int
    interval_s: float
    file: str

    def to_json(self) -> dict[str, Any]:
        """Summary (not the arrays): the counter set, transitions, SMIs and the resolution."""
        return {"counters": self.counters.to_json(), "transitions": self.transitions, "smi_total": self.smi_total,
                "interval_s": self.interval_s, "file": self.file}

    @property
    def resolution_note(self) -> str:
        return _resolution_note(self.file, self.interval_s)


def _frequency_changes(mhz: np.ndarray, relative_threshold: float) -> np.ndarray:
    """Intervals whose Bzy_MHz differs from the one before by more than the relative threshold."""
    return np.flatnonzero(np.abs(np.diff(mhz)) > relative_threshold * np.abs(mhz[:-1])) + 1


def _resolution_note(file: str, interval_s: float) -> str:
    return (f"Frequency and SMIs come from the turbostat timeline {file}: their resolution is the turbostat "
            f"interval ({interval_s:g} s), not the wake-up; a wake-up is near a transition when it lies in "
            "either interval of a frequency change.")


def timeline_counters(dataset: Dataset, *, relative_threshold: float,
                      threads: Sequence[int] | None = None) -> TimelineCounters | None:
    """Counter series of every thread from the dataset's turbostat timeline (None when it has none).

    Raises
    ------
    AnalysisError
        No clock pair, or the timeline does not overlap the wake-ups.
    """
    timeline = decode_timeline(dataset.metadata)
    if timeline is None:
        return None
    table = dataset.read(["thread", "cpu", "seq", "expected_ns", "actual_ns"])
    columns = {name: table.column(name).to_numpy() for name in table.column_names}
    join = join_timeline(columns["actual_ns"], columns["cpu"], dataset.metadata, timeline)
    overlap_note(join, timeline)
    series, near = [], []
    count = 0
    hit = np.unique(join.interval[join.inside])
    smi = np.vstack([timeline.series("SMI", cpu)[hit] for cpu in np.unique(columns["cpu"])])
    smi_total = int(np.nansum(np.nanmax(np.where(np.isnan(smi), -1, smi), axis=0).clip(0))) if hit.size else 0
    for thread, rows in thread_rows(columns["thread"], columns["seq"], threads):
        cpu = int(columns["cpu"][rows[0]])
        mhz = timeline.series("Bzy_MHz", cpu)
        change = _frequency_changes(mhz, relative_threshold)
        count += change.size
        interval = join.interval[rows]
        near.append((interval >= 0) & np.isin(interval, np.concatenate([change - 1, change])))
        outside = int((interval < 0).sum())
        quality = CounterQuality(rows=rows.size, valid=rows.size - outside,
                                 discarded={"outside the turbostat timeline": outside} if outside else {},
                                 missing={"c0": "turbostat timeline: Busy% is per interval, not per wake-up"})
        series.append(CounterSeries(
            thread=thread, cpu=cpu, tsc_hz=None, tsc_hz_source="none (frequency from the turbostat timeline)",
            seq=columns["seq"][rows],
            expected_ns=columns["expected_ns"][rows],
            latency_ns=columns["actual_ns"][rows] - columns["expected_ns"][rows],
            f_eff_hz=join.bzy_mhz[rows] * 1e6, c0=np.full(rows.size, np.nan), smi_delta=join.smi[rows],
            quality=quality))
    available = any(s.has_frequency or s.has_smi for s in series)
    reason = "" if available else "the turbostat timeline has no Bzy_MHz or SMI values for the captured CPUs"
    return TimelineCounters(CounterSet(tuple(series), available, reason), tuple(near), count, smi_total,
                            timeline.interval_s, timeline.file)


class TimelineStream:
    """:func:`timeline_counters` streamed: counter chunks from the timeline, thread by thread, in bounded memory.

    :meth:`batches` yields ``(thread, derive)`` as :func:`jitterscope.derive.iter_counter_batches` does, each
    chunk's ``f_eff_hz`` the interval's ``Bzy_MHz`` of its CPU and ``smi_delta`` the interval's SMI count;
    :meth:`near` marks a chunk's wake-ups in either interval of a frequency change.  What needs every
    wake-up (the SMIs over the intervals hit, the overlap check) is counted on the way and read after
    the pass (:attr:`smi_total`, :meth:`check_overlap`).  Memory: a row group, and one flag per interval.
    """

    def __init__(self, dataset: Dataset, timeline: TurbostatTimeline, *, relative_threshold: float,
                 threads: Sequence[int] | None = None) -> None:
        self.dataset, self.timeline, self.threads = dataset, timeline, threads
        self.relative_threshold = relative_threshold
        self.file, self.interval_s = timeline.file, timeline.interval_s
        self._changes: dict[int, np.ndarray] = {}
        self._hit = np.zeros(timeline.intervals, dtype=bool)
        self._cpus: set[int] = set()
        self._thread_cpu: dict[int, int] = {}
        self.wakeups = 0
        self.inside = 0
        self._wall = [np.inf, -np.inf]

    def _near_intervals(self, cpu: int) -> np.ndarray:
        found = self._changes.get(cpu)
        if found is None:
            mhz = self.timeline.series("Bzy_MHz", cpu)
            change = _frequency_changes(mhz, self.relative_threshold)
            found = self._changes[cpu] = np.unique(np.concatenate([change - 1, change]))
        return found

    def batches(self) -> Iterator[tuple[int, Callable[[], Iterator[CounterSeries]]]]:
        last: dict[int, int] = {}
        for info, batch in iter_thread_batches(self.dataset, ["cpu", "seq", "expected_ns", "actual_ns"],
                                               check=False):
            if not batch.num_rows or (self.threads is not None and info.thread not in self.threads):
                continue
            columns = {name: column_values(batch, name) for name in ("cpu", "seq", "expected_ns", "actual_ns")}
            seq = columns["seq"]
            if np.any(np.diff(seq) <= 0) or (info.thread in last and seq[0] <= last[info.thread]):
                raise AnalysisError(f"{self.dataset.path}: rows of thread {info.thread} are not in seq order; the "
                                    "streamed analysis needs them in order (run 'jitterscope validate' on it)")
            last[info.thread] = int(seq[-1])
            yield info.thread, lambda thread=info.thread, columns=columns: iter([self._chunk(thread, columns)])

    def _chunk(self, thread: int, columns: Mapping[str, np.ndarray]) -> CounterSeries:
        join = join_timeline(columns["actual_ns"], columns["cpu"], self.dataset.metadata, self.timeline)
        cpu = self._thread_cpu.setdefault(thread, int(columns["cpu"][0]))
        inside = join.inside
        self._hit[join.interval[inside]] = True
        self._cpus.update(np.unique(columns["cpu"]).tolist())
        self.wakeups += inside.size
        self.inside += int(inside.sum())
        if join.wall_ns.size:
            self._wall = [min(self._wall[0], float(join.wall_ns.min())), max(self._wall[1], float(join.wall_ns.max()))]
        outside = int(inside.size - inside.sum())
        quality = CounterQuality(rows=inside.size, valid=inside.size - outside,
                                 discarded={"outside the turbostat timeline": outside} if outside else {},
                                 missing={"c0": "turbostat timeline: Busy% is per interval, not per wake-up"})
        return CounterSeries(
            thread=thread, cpu=cpu, tsc_hz=None, tsc_hz_source="none (frequency from the turbostat timeline)",
            seq=columns["seq"], expected_ns=columns["expected_ns"],
            latency_ns=columns["actual_ns"] - columns["expected_ns"], f_eff_hz=join.bzy_mhz * 1e6,
            c0=np.full(inside.size, np.nan), smi_delta=join.smi, quality=quality)

    def near(self, chunk: CounterSeries) -> np.ndarray:
        """The chunk's wake-ups in either turbostat interval of a frequency change of its CPU."""
        actual = chunk.expected_ns + chunk.latency_ns
        join = join_timeline(actual, np.full(actual.size, chunk.cpu), self.dataset.metadata, self.timeline)
        return (join.interval >= 0) & np.isin(join.interval, self._near_intervals(chunk.cpu))

    def check_overlap(self) -> None:
        """After the pass: raise as :func:`overlap_note` does when no wake-up fell inside the timeline."""
        if self.wakeups and self.inside == 0:
            t = self.timeline
            raise AnalysisError(
                f"the turbostat timeline ({t.start_ns[0] / 1e9:.6f} to {t.end_ns[-1] / 1e9:.6f} s) and the capture "
                f"({self._wall[0] / 1e9:.6f} to {self._wall[1] / 1e9:.6f} s, wall clock) do not overlap; give the "
                "turbostat output of the same run (or the right --turbostat-start)")

    @property
    def transitions(self) -> int:
        """Frequency changes of the captured threads' CPUs (one count per thread, as timeline_counters)."""
        out = 0
        for cpu in self._thread_cpu.values():
            mhz = self.timeline.series("Bzy_MHz", cpu)
            out += int(_frequency_changes(mhz, self.relative_threshold).size)
        return out

    @property
    def smi_total(self) -> int:
        """SMIs over the intervals the wake-ups fell in (package-wide: the largest of the captured CPUs' rows)."""
        hit = np.flatnonzero(self._hit)
        if not hit.size:
            return 0
        smi = np.vstack([self.timeline.series("SMI", cpu)[hit] for cpu in sorted(self._cpus)])
        return int(np.nansum(np.nanmax(np.where(np.isnan(smi), -1, smi), axis=0).clip(0)))

    @property
    def resolution_note(self) -> str:
        return _resolution_note(self.file, self.interval_s)
