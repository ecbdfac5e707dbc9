"""How much of each polled CPU the interruptions took: counts by size class, the worst one, the noise.

Per polling thread (one per CPU), from the rows (one per gap >= the threshold) or, for imports that have
only histograms (oslat), from the per-second table's buckets:

* interruptions per second by size class (decades: 1-10 µs, 10-100 µs, 0.1-1 ms, >= 1 ms; below 1 µs too
  when the threshold is lower), the largest gap and when it happened;
* the noise: the summed length of the gaps >= the threshold, and the CPU available to the loop as osnoise
  reports it, ``100 × (1 − noise / runtime)`` % (runtime = the time polled);
* intervals: 95 % Student-t over the whole one-second windows (a window is the unit: the interruptions of
  one second are not independent draws, whole seconds nearly are).  Fewer than 3 whole windows: none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..dataset import Dataset
from .read import PollData, PollThread, read_poll

CLASS_EDGES_NS = (1_000, 10_000, 100_000, 1_000_000)
CONFIDENCE = 0.95
MIN_WINDOWS = 3


@dataclass(frozen=True)
class SizeClass:
    label: str
    low_ns: int
    high_ns: int | None
    count: int
    per_second: float
    per_second_ci: tuple[float, float] | None


@dataclass(frozen=True)
class ThreadNoise:
    """One polled CPU."""

    thread: int
    cpu: int
    runtime_ns: int
    windows: int
    interruptions: int
    per_second: float
    per_second_ci: tuple[float, float] | None
    classes: tuple[SizeClass, ...]
    max_ns: int
    max_at_ns: int | None
    """CLOCK_MONOTONIC start of the largest gap (None when only histograms were kept)."""
    max_at_s: float | None
    """The same, seconds from the start of polling."""
    noise_ns: int
    available_percent: float
    available_ci: tuple[float, float] | None
    iterations: int
    rows_agree: bool | None
    """The rows and the per-second table count the same interruptions (None: no rows to compare)."""

    @property
    def lost_percent(self) -> float:
        return 100.0 - self.available_percent

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["lost_percent"] = self.lost_percent
        return out


@dataclass(frozen=True)
class PollSummary:
    path: str
    threshold_ns: int
    from_rows: bool
    threads: tuple[ThreadNoise, ...]
    notes: tuple[str, ...]

    @property
    def worst(self) -> ThreadNoise:
        return max(self.threads, key=lambda t: (t.max_ns, -t.thread))

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "threshold_ns": self.threshold_ns, "from_rows": self.from_rows,
                "threads": [t.to_json() for t in self.threads], "notes": list(self.notes),
                "interval": f"{CONFIDENCE:.0%} Student-t over whole one-second windows"}


def size_classes(threshold_ns: int) -> list[tuple[str, int, int | None]]:
    """The size classes at and above ``threshold_ns``: (label, low, high or None) by decades of ns."""
    bounds = [threshold_ns, *(e for e in CLASS_EDGES_NS if e > threshold_ns)]
    highs: list[int | None] = [*bounds[1:], None]
    return [(_label(low, high), low, high) for low, high in zip(bounds, highs, strict=True)]


def _label(low: int, high: int | None) -> str:
    def show(ns: int) -> str:
        return f"{ns / 1e6:g} ms" if ns >= 1_000_000 else f"{ns / 1e3:g} µs"
    return f">= {show(low)}" if high is None else f"{show(low)} – {show(high)}"


def _t_interval(values: np.ndarray) -> tuple[float, float] | None:
    if values.size < MIN_WINDOWS:
        return None
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, values.size - 1)) * sd / math.sqrt(values.size)
    return (mean - half, mean + half)


def _class_counts_rows(thread: PollThread, classes: list[tuple[str, int, int | None]],
                       whole: np.ndarray) -> list[tuple[int, np.ndarray]]:
    starts = thread.windows["window_start_ns"]
    which = np.searchsorted(starts, thread.start_ns, side="right") - 1
    out = []
    for _, low, high in classes:
        mask = (thread.duration_ns >= low) & (thread.duration_ns < (high if high is not None else np.inf))
        per_window = np.bincount(which[mask & (which >= 0)], minlength=starts.size)
        out.append((int(mask.sum()), per_window[whole]))
    return out


def _class_counts_histogram(thread: PollThread, edges: np.ndarray, classes: list[tuple[str, int, int | None]],
                            whole: np.ndarray) -> list[tuple[int, np.ndarray]]:
    hist = thread.windows["histogram"]
    lows = edges[:-1]
    out = []
    for _, low, high in classes:
        # a bucket counts in the class holding its lower edge (the importer's buckets are 1 µs: exact at decades)
        mask = (lows >= low) & (lows < (high if high is not None else np.inf))
        per_window = hist[:, mask].sum(axis=1)
        out.append((int(per_window.sum()), per_window[whole]))
    return out


def summarize_thread(data: PollData, thread: PollThread) -> ThreadNoise:
    w = thread.windows
    window_ns = int(data.info.get("window_ns") or 1_000_000_000)
    whole = w["window_ns"] >= window_ns  # the last, partial window is left out of the intervals
    seconds = w["window_ns"][whole] / 1e9
    # no count or size of the gaps in the source (rtla osnoise top): no class and no rate, not zeros
    classes_def = size_classes(data.threshold_ns) if data.has_counts else []
    counted = (_class_counts_rows(thread, classes_def, whole) if data.has_rows
               else _class_counts_histogram(thread, data.edges_ns, classes_def, whole))
    runtime = thread.runtime_ns
    runtime_s = runtime / 1e9 if runtime else math.nan
    classes = tuple(SizeClass(label=label, low_ns=low, high_ns=high, count=count,
                              per_second=count / runtime_s if runtime else math.nan,
                              per_second_ci=_t_interval(per_window / seconds))
                    for (label, low, high), (count, per_window) in zip(classes_def, counted, strict=True))
    total = sum(c.count for c in classes)
    per_window_total = sum(pw for _, pw in counted) if counted else np.zeros(0)
    if data.has_rows and thread.duration_ns.size:
        biggest = int(np.argmax(thread.duration_ns))
        max_ns, max_at = int(thread.duration_ns[biggest]), int(thread.start_ns[biggest])
    else:
        max_ns, max_at = int(w["max_gap_ns"].max()) if w["max_gap_ns"].size else 0, None
    noise = int(thread.duration_ns.sum()) if data.has_rows else int(w["noise_ns"].sum())
    lost_share = w["noise_ns"][whole] / w["window_ns"][whole]
    ci = _t_interval(100.0 * (1.0 - lost_share))
    agree = None
    if data.has_rows:
        agree = int(w["interruptions"].sum()) == thread.start_ns.size + int(data.info.get("rows_dropped") or 0) \
            and int(w["noise_ns"].sum()) == noise
    return ThreadNoise(
        thread=thread.thread, cpu=thread.cpu, runtime_ns=runtime, windows=int(w["window_ns"].size),
        interruptions=total, per_second=total / runtime_s if runtime and data.has_counts else math.nan,
        per_second_ci=_t_interval(np.asarray(per_window_total) / seconds) if np.size(per_window_total) else None,
        classes=classes, max_ns=max_ns, max_at_ns=max_at,
        max_at_s=None if max_at is None else (max_at - int(w["window_start_ns"][0])) / 1e9,
        noise_ns=noise, available_percent=100.0 * (1.0 - noise / runtime) if runtime else math.nan,
        available_ci=(ci[0], min(ci[1], 100.0)) if ci else None,
        iterations=int(w["iterations"].sum()), rows_agree=agree,
    )


def summarize_poll(dataset: Dataset | PollData | str) -> PollSummary:
    """Interruptions by size class, the worst one and the CPU available, per polled CPU.

    Parameters
    ----------
    dataset
        A poll dataset (path, opened, or already read with :func:`read_poll`).

    Returns
    -------
    PollSummary

    Raises
    ------
    AnalysisError
        Not a poll dataset.
    """
    data = dataset if isinstance(dataset, PollData) else read_poll(dataset)
    threads = tuple(summarize_thread(data, t) for t in data.threads)
    notes = []
    if not data.has_counts:
        notes.append("the source gives the noise, the CPU available and the longest gap, but neither the number "
                     "nor the sizes of the gaps: no interruption rate (the source's own counts are in the metadata)")
    elif not data.has_rows:
        notes.append("from the per-second histogram only (the source keeps no per-interruption rows): class "
                     "counts are bucket counts, the worst gap has no time")
        for thread in data.threads:
            overflow = int(thread.windows["histogram"][:, -1].sum())
            if overflow:
                notes.append(f"CPU {thread.cpu}: {overflow} gap(s) fell in the last, open bucket (>= "
                             f"{data.edges_ns[-2] / 1e3:g} µs) and count in its class: their sizes are unknown up to "
                             f"the maximum, {int(thread.windows['max_gap_ns'].max()) / 1e3:,.0f} µs")
    for t in threads:
        if t.rows_agree is False:
            notes.append(f"CPU {t.cpu}: the rows and the per-second table count different interruptions or "
                         "noise (rows dropped, or a damaged part): the rows' numbers are shown")
    return PollSummary(path=str(data.dataset.path), threshold_ns=data.threshold_ns, from_rows=data.has_rows,
                       threads=threads, notes=tuple(notes))


def wall_clock_ns(clock: Mapping[str, Any] | None, monotonic_ns: int) -> int | None:
    """The wall-clock time (ns since the epoch) of a CLOCK_MONOTONIC instant, from the recorded pair."""
    if not clock or not isinstance(clock.get("realtime_ns"), int) or not isinstance(clock.get("monotonic_ns"), int):
        return None
    return int(clock["realtime_ns"]) + monotonic_ns - int(clock["monotonic_ns"])
