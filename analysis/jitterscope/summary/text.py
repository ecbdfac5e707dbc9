"""Plain-text renderings of summary results: cyclictest's line, periodic_timer's blocks, the summary table.

Formatting only; every number comes from a result of :mod:`jitterscope.stats`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dataset import Dataset
from ..format import shorten
from .accumulators import IntervalBlock, IntervalResult
from .stats import PERCENTILES, Summary, ThreadSummary
from .tables import OVERFLOW_NOTE

TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("n", "n"), ("min", "min_ns"), ("p50", "50"), ("mean", "mean_ns"), ("std", "std_ns"), ("MAD", "mad_ns"),
    ("p90", "90"), ("p99", "99"), ("p99.9", "99.9"), ("p99.99", "99.99"), ("p99.999", "99.999"),
    ("max", "max_ns"), ("overruns", "overruns"), ("drops", "drops"),
)
"""(header, source) of the summary table: a ThreadSummary field or a percentile key."""


def format_cyclictest_line(summary: ThreadSummary) -> str:
    """``T: 0 ( 1234) P:99 I:1000 C:  10000 Min:      9 Act:   27 Avg:   22 Max:     595``.

    cyclictest's own format (``print_stat`` without ``-N``): µs, integers.  A tid or priority the
    dataset does not record is printed as ``?`` in its field (cyclictest always knows them; 0 would be a claim).
    """
    ct = summary.cyclictest
    if ct is None:
        raise ValueError("cyclictest's line needs per-wake-up rows (not an overall or histogram summary)")
    tid = "?" if summary.tid is None else str(summary.tid)
    priority = "?" if summary.priority is None else str(summary.priority)
    act = "-" if ct.act_us is None else str(ct.act_us)  # a summary-only source did not keep the last wake-up
    return "T:%2d (%5s) P:%2s I:%ld C:%7lu Min:%7ld Act:%5s Avg:%5ld Max:%8ld" % (  # noqa: UP031 (C's printf)
        summary.thread, tid, priority, (summary.interval_ns or 0) // 1000,
        ct.cycles, ct.min_us, act, ct.avg_us, ct.max_us,
    )


def format_interval_block(block: IntervalBlock) -> str:
    """periodic_timer's two lines for one block (µs, two decimals)."""
    first = (f"period: {block.nominal_us:.2f} usecs min: {block.min_us:.2f} max: {block.max_us:.2f} "
             f"mean: {block.mean_us:.2f} stddev: {block.stddev_us:.2f}")
    second = f"{block.errors} > {block.tolerance_us:g} usec errors"
    if block.errors:
        second += (f" min: {block.error_min_us:.2f} max: {block.error_max_us:.2f} "
                   f"mean: {block.error_mean_us:.2f} stddev: {block.error_stddev_us:.2f}")
    return f"{first}\n{second}"


def format_intervals(result: IntervalResult, cpus: Mapping[int, int]) -> str:
    """All blocks, each thread's under a ``thread N (cpu C):`` heading."""
    lines: list[str] = []
    current = None
    for block in result.blocks:
        if block.thread != current:
            current = block.thread
            lines.append(f"thread {block.thread} (cpu {cpus.get(block.thread, -1)}):")
        lines.append(format_interval_block(block))
    if not result.blocks:
        lines.append(f"no complete block of {result.block} periods in any thread")
    return "\n".join(lines)


SUMMARY_ONLY_NOTE = ("n/a (summary-only source): the source printed only count/min/avg/max per thread, so the other "
                     "statistics are unknown; import per-wake-up samples (cyclictest -v) or a histogram (-h) for them")


def _cell(summary: ThreadSummary, source: str) -> str:
    if source in summary.percentiles_above:  # among a histogram's overflows: only a lower bound is known
        return f"> {summary.percentiles_above[source] / 1000:.2f}"
    value = summary.percentiles[source] if source in PERCENTILES else getattr(summary, source)
    if value is None:
        return "n/a"
    if source in PERCENTILES:
        return f"{value / 1000:.2f}"
    if source.endswith("_ns"):
        return f"{value / 1000:.2f}"
    return str(value)


def format_summary_table(summary: Summary) -> str:
    """One row per thread and one for all threads; latencies in µs."""
    header = ["thread", "cpu", *(name for name, _ in TABLE_COLUMNS)]
    rows = [
        [str(t.thread), str(t.cpu), *(_cell(t, source) for _, source in TABLE_COLUMNS)] for t in summary.threads
    ]
    overall = summary.overall
    rows.append(["all", "-", *(_cell(overall, source) for _, source in TABLE_COLUMNS)])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["latency in µs (n, overruns, drops: counts)"]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if any(t.overflows for t in summary.threads):
        lines.append(OVERFLOW_NOTE)
    if summary.summary_only:
        lines.append(SUMMARY_ONLY_NOTE)
    return "\n".join(lines)


def format_info(dataset: Dataset) -> str:
    """What ``jitterscope info`` prints: provenance, settings, environment, counters, per-thread counts.

    In words, not Python reprs: a value that was not recorded says so, yes/no for flags, lists joined, and a
    string longer than a table cell is cut with its length stated (``info --json`` keeps every value whole).
    """
    meta = dataset.metadata
    status = meta.status or {}
    lines = [
        f"dataset: {dataset.path} ({len(dataset.files)} file(s), {dataset.num_rows:,} rows)",
        f"kind: {meta.kind}, schema version {meta.schema_version}, written by "
        f"{_human(meta.tool.get('name'))} {_human(meta.tool.get('version'))}",
        f"columns: {', '.join(dataset.columns)}",
    ]
    if meta.status:
        lines.append(f"status: {_human(status.get('state'))} ({_human(status.get('reason'))})")
    if meta.clock:
        lines.append("clock: " + _inline(meta.clock))
    if meta.counters:
        lines.append("counters: " + _inline(meta.counters))
    for part in ("asked", "granted"):
        values = (meta.settings or {}).get(part)
        if values:
            lines.append(f"settings {part}: " + _inline(values))
    if meta.environment:
        lines.append("environment:")
        for key, value in meta.environment.items():
            lines.append(f"  {key}: {_human(value)}")
    if meta.source:
        lines.append("source: " + _inline(meta.source))
    if meta.timeline:
        lines.append(shorten(_timeline_line(meta.timeline)))
    if meta.ground_truth:
        lines.append("ground truth (simulation): " + ", ".join(k for k in meta.ground_truth if k != "spec"))
    if meta.poll:
        lines.append(_poll_line(meta.poll))
    lines.append(f"threads: {len(meta.threads)}")
    for info in meta.threads[:THREADS_SHOWN]:
        tid = "not recorded" if info.tid is None else info.tid
        if meta.kind == "poll":  # a busy loop: no interval; its interruptions and loop iterations instead
            lines.append(f"  thread {info.thread}: cpu {info.cpu}, tid {tid}, interruptions {info.samples:,} "
                         f"(dropped {info.drops:,}), iterations {_human(info.extra.get('iterations'))}, noise "
                         f"{_human(info.extra.get('noise_ns'))} ns")
            continue
        lines.append(f"  thread {info.thread}: cpu {info.cpu}, tid {tid}, interval {info.interval_ns:,} ns, "
                     f"samples {info.samples:,}, drops {info.drops:,}, overruns {info.overruns:,}")
    if len(meta.threads) > THREADS_SHOWN:
        lines.append(f"  ... {len(meta.threads) - THREADS_SHOWN:,} more threads (info --json lists every one)")
    return "\n".join(lines)


def _poll_line(poll: Mapping[str, Any]) -> str:
    """Kind poll's settings in one line: the threshold, the clock and the loop's own speed."""
    iteration = poll.get("iteration_ns") or {}
    throttle = poll.get("rt_throttling")
    throttling = (f"{throttle.get('runtime_us')} of {throttle.get('period_us')} us" if isinstance(throttle, Mapping)
                  else "off or not recorded")
    edges = poll.get("histogram_edges_ns") or []
    return (f"poll: threshold {_human(poll.get('threshold_ns'))} ns, clock {_human(poll.get('clock'))} "
            f"({_number(poll.get('clock_read_ns'))} ns a read), loop iteration {_number(iteration.get('min'))} ns min, "
            f"{_number(iteration.get('median'))} ns median, {max(len(edges) - 1, 0)} histogram buckets, "
            f"RT throttling {throttling}, rows dropped {_human(poll.get('rows_dropped'))}")


def _number(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) and not isinstance(value, bool) else "not recorded"


THREADS_SHOWN = 256
"""Threads listed one per line by ``info``; beyond that a count (the JSON lists all)."""


def _human(value: Any) -> str:
    """A metadata value in words, never as a Python repr."""
    if value is None:
        return "not recorded"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return shorten(_inline(value)) if value else "none"
    if isinstance(value, list | tuple):
        return shorten(", ".join(f"({_inline(v)})" if isinstance(v, Mapping) else _human(v) for v in value)) \
            if value else "none"
    return shorten(str(value))


def _timeline_line(doc: Mapping[str, Any]) -> str:
    starts, ends = doc.get("start_s") or [None], doc.get("end_s") or [None]
    return (f"timeline: {doc.get('source')} {doc.get('file')}, {len(ends)} interval(s) of {doc.get('interval_s')} s "
            f"from {starts[0]} to {ends[-1]} (wall clock, times from {doc.get('time_from')}), "
            f"CPUs {doc.get('cpus')}, columns {', '.join(doc.get('columns') or [])}")


def _inline(values: Mapping[str, Any]) -> str:
    """``key=value, ...``; a nested mapping as ``key (inner=value, ...)``."""
    return shorten(", ".join(f"{k} ({_inline(v)})" if isinstance(v, Mapping) and v else f"{k}={_human(v)}"
                             for k, v in values.items()))
