"""Tables of the summary: per-thread statistics and the spike catalogue (select and format; no statistics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format import us_value
from ..render import Table

SUMMARY_LEVELS = ("50", "90", "99", "99.9", "99.99", "99.999")


def summary_table(summary: Any, *, name: str = "summary") -> Table:
    """Per-thread and all-threads latency statistics in µs (the ``jitterscope summary`` table).

    A percentile the sample size does not resolve (n (1 − q) < 1) is shown as n/a.
    """
    rows = []
    for item in (*summary.threads, summary.overall):
        label = "all" if item is summary.overall else str(item.thread)
        cpu = "all" if item is summary.overall else (None if item.cpu is None or item.cpu < 0 else int(item.cpu))
        pct = {level: percentile_cell(item, level) for level in SUMMARY_LEVELS}
        rows.append((
            label, cpu, int(item.n), us_value(item.min_ns), pct["50"], us_value(item.mean_ns),
            us_value(item.std_ns), us_value(item.mad_ns), pct["90"], pct["99"],
            pct["99.9"], pct["99.99"], pct["99.999"], us_value(item.max_ns),
            _int_or_none(item.overruns), _int_or_none(item.drops),
        ))
    columns = ("thread", "CPU", "n", "min [µs]", "p50 [µs]", "mean [µs]", "std [µs]", "MAD [µs]", "p90 [µs]",
               "p99 [µs]", "p99.9 [µs]", "p99.99 [µs]", "p99.999 [µs]", "max [µs]", "overruns", "drops")
    formats = ("", "", "{:,}") + ("{:.2f}",) * 11 + ("{:,}", "{:,}")
    notes = ("Latency = actual − expected wake-up time. Percentiles from an HDR histogram (≤ 0.1 % relative error); "
             "n/a where n·(1 − q) < 1, i.e. the sample cannot resolve that percentile.",)
    overflowing = [item for item in (*summary.threads, summary.overall) if getattr(item, "overflows", 0)]
    if overflowing:
        notes += (OVERFLOW_NOTE,)
    if getattr(summary, "summary_only", False):
        notes = ("n/a (summary-only source): the source printed only each thread's count, min, avg (the mean "
                 "here) and max, so every other statistic is unknown. Import per-wake-up samples (cyclictest -v, "
                 "jitterdebugger samples) or a histogram (cyclictest -h) to get percentiles, plots and tails.",)
    return Table(name=name, title="Latency summary", columns=columns, rows=tuple(rows), formats=formats,
                 notes=notes, align=("l", "l") + ("r",) * 14)


def spike_table(spikes: Sequence[Any], *, origin_ns: int, cpus: Mapping[int, int], name: str = "spikes") -> Table:
    """The spike catalogue: largest latencies first, with time, thread, CPU and neighbouring latencies."""
    ordered = sorted(spikes, key=lambda s: (-int(s.latency_ns), int(s.thread), int(s.seq)))
    rows = []
    for rank, spike in enumerate(ordered, start=1):
        rows.append((
            rank, (int(spike.actual_ns) - origin_ns) / 1e9, int(spike.thread),
            int(spike.cpu if spike.cpu is not None else cpus.get(int(spike.thread), -1)), int(spike.seq),
            int(spike.latency_ns) / 1000.0, _neighbours(spike.before_ns), _neighbours(spike.after_ns),
        ))
    return Table(
        name=name, title=f"Spike catalogue (top {len(rows)} latencies)",
        columns=("rank", "time [s]", "thread", "CPU", "seq", "latency [µs]", "before [µs]", "after [µs]"),
        rows=tuple(rows), formats=("", "{:.6f}", "", "", "{:,}", "{:.2f}", "", ""),
        notes=("time: seconds since the first wake-up of any thread; before/after: latencies of the "
               "neighbouring wake-ups of the same thread, oldest first.",),
        align=("r", "r", "r", "r", "r", "r", "l", "l"),
    )


def _neighbours(values: Sequence[int]) -> str:
    return " ".join(f"{int(v) / 1000.0:.1f}" for v in values) if len(values) else "-"


OVERFLOW_NOTE = ("n counts the histogram's overflows (wake-ups above its range, values not recorded); a percentile "
                 "among them is shown as \"> bound\" (at least the range), never interpolated below it; std is "
                 "then unknown and the mean is the source's average.")


def percentile_cell(item: Any, level: str) -> float | str | None:
    """A percentile in µs for a table cell: the value, "> 400.00" when only a lower bound is known (it falls
    among a histogram's overflows), None (n/a) when the count does not resolve it (the summary's rule)."""
    bound = getattr(item, "percentiles_above", {}).get(level)
    if bound is not None:
        return f"> {bound / 1000.0:.2f}"
    return us_value(item.percentiles.get(level))


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
