"""What the latency figures draw, read off the summary's histograms.

The plots compute nothing; this module turns :mod:`stats` results into the
series they draw: OSADL-style fixed-width bins (1 µs by default), percentile
curves on the 1/(1-q) axis, and CCDFs.  Every series keeps its thread, CPU and n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AnalysisError

STANDARD_LEVELS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
"""The percentiles marked on the percentile plot and listed in the summary table."""

MAX_BINS = 20_000  # wider ranges coarsen the OSADL bins (doubling) so a figure stays light


@dataclass(frozen=True)
class BinnedSeries:
    """Counts of one thread in fixed-width bins: bin ``i`` is [edges_ns[i], edges_ns[i+1])."""

    label: str
    thread: int
    cpu: int
    edges_ns: np.ndarray
    counts: np.ndarray
    n: int
    min_ns: float
    max_ns: float

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "thread": self.thread, "cpu": self.cpu, "edges_ns": self.edges_ns.tolist(),
                "counts": self.counts.tolist(), "n": self.n, "min_ns": self.min_ns, "max_ns": self.max_ns}


@dataclass(frozen=True)
class BinnedHistograms:
    """Fixed-width histograms of one quantity, one series per thread, all with the same bins."""

    quantity: str
    bin_width_ns: int
    series: tuple[BinnedSeries, ...]

    def to_json(self) -> dict[str, Any]:
        return {"quantity": self.quantity, "bin_width_ns": self.bin_width_ns,
                "series": [s.to_json() for s in self.series]}


@dataclass(frozen=True)
class PercentileCurve:
    """Latency at percentile levels of one thread (or all threads: ``thread == -1``)."""

    label: str
    thread: int
    cpu: int
    n: int
    levels: np.ndarray  # percent, 0 < level < 100, only levels the sample size resolves
    values_ns: np.ndarray
    marks: tuple[tuple[float, float], ...]  # (level, value) at the STANDARD_LEVELS resolved
    max_ns: float

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "thread": self.thread, "cpu": self.cpu, "n": self.n,
                "levels": self.levels.tolist(), "values_ns": self.values_ns.tolist(),
                "marks": [list(m) for m in self.marks], "max_ns": self.max_ns}


@dataclass(frozen=True)
class CcdfCurve:
    """P(latency > x) of one thread; ``excluded`` counts latencies <= 0 a log axis cannot show."""

    label: str
    thread: int
    cpu: int
    n: int
    x_ns: np.ndarray
    p_exceed: np.ndarray
    excluded: int

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "thread": self.thread, "cpu": self.cpu, "n": self.n,
                "x_ns": self.x_ns.tolist(), "p_exceed": self.p_exceed.tolist(), "excluded": self.excluded}


def series_label(thread: int, cpu: int, threads: int) -> str:
    """``CPU 3`` (with ``T1`` when one CPU has several threads, ``thread 2`` when the CPU is unknown)."""
    if thread < 0:
        return "all threads"
    if cpu < 0:
        return f"thread {thread}"
    return f"CPU {cpu}" if threads <= 1 or thread == cpu else f"CPU {cpu} (T{thread})"


def bin_histograms(summaries: Sequence[Any], quantity: str = "latency", *, bin_width_ns: int = 1000,
                   attribute: str = "histogram") -> BinnedHistograms:
    """Re-bin each thread's HDR histogram into fixed bins of ``bin_width_ns`` (doubled to stay <= MAX_BINS).

    Each HDR bucket's count goes to the fixed bin holding the bucket's lower edge;
    below about 1 ms the buckets are narrower than 1 µs, so 1 µs bins are exact
    there up to bucket edges straddling a bin edge.

    Raises
    ------
    AnalysisError
        No thread has a histogram of ``attribute`` with any count.
    """
    usable = [(s, getattr(s, attribute)) for s in summaries if getattr(s, attribute, None) is not None]
    usable = [(s, h) for s, h in usable if h.count > 0]
    if not usable:
        raise AnalysisError(f"no {quantity} values to histogram")
    lo = min(float(h.min_ns) for _, h in usable)
    hi = max(float(h.max_ns) for _, h in usable)
    width = int(bin_width_ns)
    while (hi - lo) / width > MAX_BINS:
        width *= 2
    first = int(np.floor(lo / width))
    last = int(np.floor(hi / width))
    edges = (np.arange(first, last + 2, dtype=np.float64)) * width
    series = []
    for summary, hist in usable:
        lower = np.asarray(hist.bucket_lower_ns, dtype=np.float64)
        counts = np.asarray(hist.bucket_counts, dtype=np.int64)
        index = np.clip(np.floor(np.maximum(lower, lo) / width).astype(np.int64) - first, 0, last - first)
        binned = np.bincount(index, weights=counts, minlength=last - first + 1).astype(np.int64)
        series.append(BinnedSeries(
            label=series_label(summary.thread, summary.cpu, len(usable)), thread=summary.thread, cpu=summary.cpu,
            edges_ns=edges, counts=binned, n=int(hist.count), min_ns=float(hist.min_ns), max_ns=float(hist.max_ns),
        ))
    return BinnedHistograms(quantity=quantity, bin_width_ns=width, series=tuple(series))


LOG_BINS_PER_DECADE = 10


@dataclass(frozen=True)
class LogDensity:
    """Histograms of one quantity in log-spaced bins, as a density: the view for a log latency axis.

    On a log axis, fixed 1 µs bins are far narrower than a pixel in the tail and draw a barcode of single
    counts; bins of constant width in log(latency) collect the tail into readable densities.  ``density``
    holds, per series, the fraction of that thread's wake-ups per µs in each bin.
    """

    quantity: str
    bins_per_decade: int
    series: tuple[BinnedSeries, ...]
    density_per_us: tuple[np.ndarray, ...]

    def to_json(self) -> dict[str, Any]:
        return {"quantity": self.quantity, "bins_per_decade": self.bins_per_decade,
                "series": [s.to_json() for s in self.series],
                "density_per_us": [d.tolist() for d in self.density_per_us]}


def log_density(summaries: Sequence[Any], quantity: str = "latency", *,
                bins_per_decade: int = LOG_BINS_PER_DECADE) -> LogDensity:
    """Each thread's HDR histogram summed into ``bins_per_decade`` log-spaced bins per decade, as a density.

    A bucket's count goes to the log bin holding its lower edge (HDR buckets are at most 0.1 % wide, far
    narrower than a 10-per-decade bin).  Values at or below 0 (a clock step) go to the lowest bin.

    Raises
    ------
    AnalysisError
        No thread has a latency histogram with any count.
    """
    usable = [(s, s.histogram) for s in summaries if getattr(s, "histogram", None) is not None]
    usable = [(s, h) for s, h in usable if h.count > 0]
    if not usable:
        raise AnalysisError(f"no {quantity} values to histogram")
    lo = max(min(float(h.min_ns) for _, h in usable), 1.0)
    hi = max(float(h.max_ns) for _, h in usable)
    first = np.floor(np.log10(lo) * bins_per_decade)
    last = np.ceil(np.log10(max(hi, lo * 1.0001)) * bins_per_decade + 1e-9)
    edges = 10 ** (np.arange(first, last + 1) / bins_per_decade)
    series, densities = [], []
    for summary, hist in usable:
        lower = np.maximum(np.asarray(hist.bucket_lower_ns, dtype=np.float64), edges[0])
        counts = np.asarray(hist.bucket_counts, dtype=np.int64)
        index = np.clip(np.searchsorted(edges, lower, side="right") - 1, 0, edges.size - 2)
        binned = np.bincount(index, weights=counts, minlength=edges.size - 1).astype(np.int64)
        series.append(BinnedSeries(
            label=series_label(summary.thread, summary.cpu, len(usable)), thread=summary.thread, cpu=summary.cpu,
            edges_ns=edges, counts=binned, n=int(hist.count), min_ns=float(hist.min_ns), max_ns=float(hist.max_ns)))
        densities.append(binned / hist.count / (np.diff(edges) / 1000.0))
    return LogDensity(quantity=quantity, bins_per_decade=bins_per_decade, series=tuple(series),
                      density_per_us=tuple(densities))


def percentile_curves(summaries: Sequence[Any], *, points: int = 200) -> tuple[PercentileCurve, ...]:
    """Percentile curves from 50 % up to the highest level each thread's n resolves (n (1 - q) >= 1)."""
    curves = []
    for summary in summaries:
        hist = summary.histogram
        if hist is None or hist.count == 0:
            continue
        n = int(hist.count)
        top = np.log10(n)  # x = 1/(1-q) up to n
        if top <= np.log10(2.0):
            continue
        x = np.logspace(np.log10(2.0), top, points)
        levels = 100.0 * (1.0 - 1.0 / x)
        values = hist.percentiles([float(q) for q in levels])
        marks = tuple((q, float(hist.percentile(q))) for q in STANDARD_LEVELS if n * (1 - q / 100) >= 1)
        curves.append(PercentileCurve(
            label=series_label(summary.thread, summary.cpu, len(summaries)), thread=summary.thread,
            cpu=summary.cpu, n=n, levels=levels, values_ns=np.array([values[float(q)] for q in levels]),
            marks=marks, max_ns=float(hist.max_ns),
        ))
    return tuple(curves)


def ccdf_curves(summaries: Sequence[Any]) -> tuple[CcdfCurve, ...]:
    """CCDF of each thread's latency, positive values and probabilities only (for log-log axes).

    Threads with nothing left to draw (one distinct value) are left out.
    """
    curves = []
    for summary in summaries:
        hist = summary.histogram
        if hist is None or hist.count == 0:
            continue
        x, p = (np.asarray(a, dtype=np.float64) for a in hist.ccdf())
        keep = (x > 0) & (p > 0)  # a log-log axis shows neither; P = 0 at the maximum says nothing
        lower = np.asarray(hist.bucket_lower_ns, dtype=np.float64)
        excluded = int(np.asarray(hist.bucket_counts)[lower <= 0].sum())
        if not keep.any():
            continue
        curves.append(CcdfCurve(
            label=series_label(summary.thread, summary.cpu, len(summaries)), thread=summary.thread,
            cpu=summary.cpu, n=int(hist.count), x_ns=x[keep], p_exceed=p[keep], excluded=excluded,
        ))
    return tuple(curves)
