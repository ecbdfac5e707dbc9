"""``rtla osnoise top`` (and ``rtla hwnoise``) and ``rtla osnoise hist`` text, imported as busy-poll datasets.

The kernel's osnoise tracer runs a busy loop per CPU, as ``--mode poll`` does, but keeps no interruption: rtla
prints what it summed.  The layouts are the printf of tools/tracing/rtla/src/osnoise_top.c and osnoise_hist.c
(examples in Documentation/tools/rtla/rtla-osnoise-top.rst, -hist.rst and rtla-hwnoise.rst)::

                                              Operating System Noise
    duration:   0 00:01:00 | time is in us
    CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ ...
      0 #59         53100000       304896    99.42580        6978           56         549            0        53111 ...

``Runtime`` is the time the osnoise thread ran, ``Noise`` the time taken from it, ``% CPU Aval``
``100 × (Runtime − Noise) / Runtime`` truncated to 5 decimals (checked: a row that does not add up is refused),
``Max Noise`` the most noise of one period, ``Max Single`` the longest single noise, then how often each source
interfered (``HW`` noise no other source explains, ``NMI``, ``IRQ``, ``Softirq``, ``Thread``; hwnoise has the
first two only).  A terminal session repeats the block (clearing the screen between): the last one is kept.
The hist::

    # RTLA osnoise histogram
    # Time unit is microseconds (us)
    # Duration:   0 00:01:00
    Index   CPU-000   CPU-001
    0         42982     46287
    10        12224      8356
    over:         0         0
    count:    55215     54649
    min:          0         0
    avg:          0         0
    max:         30        30

counts each noise sample (``osnoise:sample_threshold``, a gap of the loop at or above the tracer's threshold)
in buckets of ``Index`` to the next index, ``over`` above the last one.

What each becomes (kind ``poll``, no per-interruption rows, one window per CPU spanning the run; the source
notes say all of it): top: the window is ``Runtime`` long with ``Noise`` as its noise and ``Max Single`` as its
largest gap; the numbers of gaps and their sizes are **not** in the output, so the histogram is empty and the
dataset says so (``source.gap_counts`` false: the analyses print no interruption rate); every column of the
row is kept in ``threads[].osnoise``.  hist: the window is the session's ``Duration`` (osnoise's runtime per
period is not in the output), the histogram rtla's buckets, every sample an interruption (the tracer's threshold
is whole µs, at least 1: the first bucket starts at 1 µs), the noise estimated from the bucket midpoints (the
``over`` bucket at its lower edge, its largest sample at ``max``), rtla's count/min/avg/max kept as printed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ... import __version__
from ...dataset import Metadata, ThreadInfo, poll_bucket_column, write_poll_dataset
from ...errors import ImportFormatError
from ._common import fail, iter_lines, open_input, show

TOP_FORMAT = "rtla-osnoise-top"
HIST_FORMAT = "rtla-osnoise-hist"
THRESHOLD_NS = 1000
"""osnoise's threshold (-T) is whole µs, at least 1: every sample it counts is an interruption of >= 1 µs."""

_ANSI = re.compile(r"\x1b(?:\[[0-9;]*[A-Za-z]|c)")
_TOP_HEADER = re.compile(r"CPU\s+Period\s+Runtime\s+Noise\s+%\s*CPU\s+Aval\s+Max\s+Noise\s+Max\s+Single\s+HW\s+NMI"
                         r"(\s+IRQ\s+Softirq\s+Thread)?")
_TOP_ROW = re.compile(r"(\d{1,6}) #(\d{1,15})\s+(\d{1,19})\s+(\d{1,19})\s+(\d{1,3})\.(\d{5})\s*(\d{1,19})\s+(\d{1,19})"
                      r"((?:\s+\d{1,19}){2}|(?:\s+\d{1,19}){5})")
_DURATION = re.compile(r"(\d{1,6}) (\d{2}):(\d{2}):(\d{2})")
_SOURCES = ("hw", "nmi", "irq", "softirq", "thread")
_HIST_COLUMN = re.compile(r"CPU-(\d{1,6})")
_HIST_STATS = ("over", "count", "min", "avg", "max")


def sniff_top(head: bytes) -> bool:
    text = _ANSI.sub("", head.decode("utf-8", "replace"))
    return bool(_TOP_HEADER.search(text)) and ("Operating System Noise" in text or "Hardware-related Noise" in text
                                               or "time is in us" in text)


def sniff_hist(head: bytes) -> bool:
    return b"# RTLA osnoise histogram" in head or bool(re.search(rb"^Index(\s+CPU-\d+)+\s*$", head, re.M))


@dataclass
class OsnoiseTop:
    duration_s: float | None = None
    hwnoise: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _duration(text: str) -> float | None:
    match = _DURATION.search(text)
    if not match:
        return None
    days, hours, minutes, seconds = (int(g) for g in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def parse_top(path: Path) -> OsnoiseTop:
    """The last block of ``rtla osnoise top`` (or ``rtla hwnoise``) output.

    Raises
    ------
    ImportFormatError
        Not this format, a row that does not parse or does not add up, no row.
    """
    top = OsnoiseTop()
    columns = 0
    for number, raw in iter_lines(path, TOP_FORMAT):
        line = _ANSI.sub("", raw).strip()
        if not line:
            continue
        if line in ("Operating System Noise", "Hardware-related Noise"):
            top.hwnoise = line.startswith("Hardware")
            continue
        if line.startswith("duration:"):
            top.duration_s = _duration(line)
            continue
        header = _TOP_HEADER.fullmatch(line)
        if header:
            columns = 5 if header.group(1) else 2
            top.rows = []  # a refreshed screen repeats the table: the last block is the session's total
            continue
        if columns and line[0].isdigit():
            top.rows.append(_top_row(line, columns, number, path))
            continue
        if not columns:
            raise fail(TOP_FORMAT, path, f"line {number}", f"{show(line)} before the 'CPU Period Runtime' header",
                       "is it 'rtla osnoise top' output?")
        if len(top.notes) < 5:
            top.notes.append(show(line, 120))  # rtla's own messages after the table (missed events, ...)
    if not columns:
        raise fail(TOP_FORMAT, path, "whole file", "no 'CPU Period Runtime Noise' header line")
    if not top.rows:
        raise fail(TOP_FORMAT, path, "whole file", "a header without any CPU row", "the output is truncated")
    cpus = [r["cpu"] for r in top.rows]
    if len(set(cpus)) != len(cpus):
        raise fail(TOP_FORMAT, path, "the table", "a CPU listed twice in one block")
    return top


def _top_row(line: str, columns: int, number: int, path: Path) -> dict[str, Any]:
    match = _TOP_ROW.fullmatch(line)
    counts = match.group(9).split() if match else []
    if not match or len(counts) != columns:
        raise fail(TOP_FORMAT, path, f"line {number}", f"{show(line)} is not a row of {7 + columns} columns "
                   "(CPU #periods runtime noise %available max-noise max-single and the interference counts)")
    cpu, periods, runtime, noise = (int(match.group(k)) for k in range(1, 5))
    shown = int(match.group(5)) * 100_000 + int(match.group(6))
    if runtime == 0 or noise > runtime:
        raise fail(TOP_FORMAT, path, f"line {number}", f"noise {noise} us over a runtime of {runtime} us")
    if shown != (runtime - noise) * 10_000_000 // runtime:  # rtla's own integer arithmetic
        raise fail(TOP_FORMAT, path, f"line {number}", f"'% CPU Aval' {match.group(5)}.{match.group(6)} is not "
                   f"100 × (runtime − noise) / runtime of this row", "the row is damaged")
    row: dict[str, Any] = {"cpu": cpu, "periods": periods, "runtime_us": runtime, "noise_us": noise,
                           "cpu_available_percent": shown / 100_000, "max_noise_us": int(match.group(7)),
                           "max_single_us": int(match.group(8))}
    row.update({f"{name}_count": int(value) for name, value in zip(_SOURCES, counts, strict=False)})
    if row["max_single_us"] > row["max_noise_us"] or row["max_noise_us"] > noise:
        raise fail(TOP_FORMAT, path, f"line {number}", "Max Single above Max Noise, or Max Noise above the noise",
                   "the row is damaged")
    return row


@dataclass
class OsnoiseHist:
    unit_ns: int = 1000
    duration_s: float | None = None
    cpus: list[int] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)
    stats: dict[str, list[str]] = field(default_factory=dict)


def parse_hist(path: Path) -> OsnoiseHist:
    """``rtla osnoise hist`` output (with its header and summary).

    Raises
    ------
    ImportFormatError
        Not this format, a row that does not parse, bins that do not add up to ``count``.
    """
    hist = OsnoiseHist()
    header = False
    for number, line in iter_lines(path, HIST_FORMAT):
        words = line.split()
        if not words:
            continue
        if line.startswith("#"):
            if "Time unit is nanoseconds" in line:
                hist.unit_ns = 1
            if line.startswith("# Duration:"):
                hist.duration_s = _duration(line)
            continue
        if words[0] == "Index":
            if header:
                raise fail(HIST_FORMAT, path, f"line {number}", "a second 'Index' header", "import one run at a time")
            header = True
            for word in words[1:]:
                match = _HIST_COLUMN.fullmatch(word)
                if not match:
                    raise fail(HIST_FORMAT, path, f"line {number}", f"column {show(word)} is not CPU-NNN")
                hist.cpus.append(int(match[1]))
            continue
        if not header:
            raise fail(HIST_FORMAT, path, f"line {number}", f"{show(line)} before the 'Index' header",
                       "--no-header and --no-index output cannot be imported (the CPUs and buckets are not in it)")
        if len(words) != len(hist.cpus) + 1:
            raise fail(HIST_FORMAT, path, f"line {number}", f"{len(words) - 1} values for {len(hist.cpus)} CPUs")
        key = words[0].rstrip(":")
        if words[0].endswith(":") and key in _HIST_STATS:
            hist.stats[key] = words[1:]
            continue
        if hist.stats or not all(re.fullmatch(r"\d{1,15}", w) for w in words):
            raise fail(HIST_FORMAT, path, f"line {number}", f"{show(line)} is not a histogram row")
        if hist.index and int(words[0]) <= hist.index[-1]:
            raise fail(HIST_FORMAT, path, f"line {number}", f"index {words[0]} after {hist.index[-1]}")
        hist.index.append(int(words[0]))
        hist.rows.append([int(w) for w in words[1:]])
    if not header:
        raise fail(HIST_FORMAT, path, "whole file", "no 'Index CPU-NNN ...' header line")
    for key in ("over", "count", "max"):
        if key not in hist.stats:
            raise fail(HIST_FORMAT, path, f"'{key}:' line", "missing",
                       "the output is truncated (or was --no-summary used?)")
        if not all(re.fullmatch(r"\d{1,15}", w) for w in hist.stats[key]):
            raise fail(HIST_FORMAT, path, f"'{key}:' line", f"{show(' '.join(hist.stats[key]))} are not counts")
    if hist.duration_s is None or hist.duration_s <= 0:
        raise fail(HIST_FORMAT, path, "'# Duration:' line", "missing or zero",
                   "a poll dataset needs the time polled (was --no-header used?)")
    return hist


def import_rtla_osnoise_poll(path: str | os.PathLike[str], output: str | os.PathLike[str], *,
                             overwrite: bool = False) -> Path:
    """Import ``rtla osnoise top``/``rtla hwnoise`` or ``rtla osnoise hist`` text at ``path`` as the poll dataset
    directory ``output`` (what each keeps: the module's docstring).

    Raises
    ------
    ImportFormatError
        ``path`` is not such output, or is damaged (one line naming the place).
    DatasetError
        ``output`` exists (without ``overwrite``) or cannot be written.
    """
    source = Path(path)
    with open_input(source) as handle:  # a regular file (a device or FIFO is refused in one line), 64 KiB of it
        head = handle.read(65536)
    if sniff_hist(head):
        return _write_hist(source, parse_hist(source), output, overwrite)
    if sniff_top(head):
        return _write_top(source, parse_top(source), output, overwrite)
    raise fail(TOP_FORMAT, source, "first 64 KiB", "neither the 'rtla osnoise top' table nor the "
               "'rtla osnoise hist' histogram", "import other tools' output without --as poll")


def import_as_poll(path: str | os.PathLike[str], output: str | os.PathLike[str], *,
                   overwrite: bool = False) -> tuple[Path, str]:
    """``import --as poll``: oslat's or rtla osnoise's output at ``path`` as a poll dataset; the path and the tool.

    Raises
    ------
    ImportFormatError
        Not a regular file (one line, before it is opened), or none of these formats.
    """
    from . import oslat
    from .oslat_poll import import_oslat_poll

    source = Path(path)
    with open_input(source) as handle:  # a device or a FIFO is refused in one line
        head = handle.read(65536)
    if oslat.sniff_json(head) or oslat.sniff(head):
        return import_oslat_poll(source, output, overwrite=overwrite), "oslat"
    if sniff_top(head) or sniff_hist(head):
        return import_rtla_osnoise_poll(source, output, overwrite=overwrite), "rtla"
    raise ImportFormatError(f"{source}: not oslat output (text or --json) nor rtla osnoise top/hist text; import "
                            "other tools' output with 'jitterscope import' without --as poll")


_EMPTY_ROWS = {n: pa.array([], pa.int64()) for n in ("cpu", "thread", "seq", "start_ns", "duration_ns")}


def _write_top(source: Path, top: OsnoiseTop, output: str | os.PathLike[str], overwrite: bool) -> Path:
    edges = [0, THRESHOLD_NS, 2**63 - 1]  # no size is known: two empty buckets, below and above the threshold
    windows: dict[str, list[int]] = {n: [] for n in ("cpu", "thread", "window_start_ns", "window_ns", "iterations",
                                                     "noise_ns", "interruptions", "max_gap_ns")}
    threads = []
    for thread, row in enumerate(top.rows):
        for name, value in (("cpu", row["cpu"]), ("thread", thread), ("window_start_ns", 0),
                            ("window_ns", row["runtime_us"] * 1000), ("iterations", 0),
                            ("noise_ns", row["noise_us"] * 1000), ("interruptions", 0),
                            ("max_gap_ns", row["max_single_us"] * 1000)):
            windows[name].append(value)
        threads.append(ThreadInfo(thread=thread, cpu=row["cpu"], interval_ns=0, samples=0, drops=0,
                                  extra={"noise_ns": row["noise_us"] * 1000, "osnoise": dict(row)}))
    table: dict[str, Any] = {k: np.asarray(v, np.int64) for k, v in windows.items()}
    table.update({poll_bucket_column(k): np.zeros(len(top.rows), np.int64) for k in range(len(edges) - 1)})
    tool = "rtla hwnoise" if top.hwnoise else "rtla osnoise top"
    notes = [f"{tool}: per CPU the osnoise thread's runtime, its noise, the CPU available, the most noise of one "
             "period, the longest single noise and the interference counts "
             f"({'HW, NMI' if top.hwnoise else 'HW, NMI, IRQ, Softirq, Thread'}), all in threads[].osnoise",
             "no per-interruption rows and no count or size of the gaps (rtla prints neither): the histogram is "
             "empty and the analyses give no interruption rate; noise, CPU available and the longest gap are "
             "rtla's",
             "one window per CPU: the osnoise thread's runtime (the session's duration "
             f"{'is not in the output' if top.duration_s is None else f'was {top.duration_s:g} s'})",
             *(f"rtla said: {note}" for note in top.notes)]
    metadata = _metadata(source, TOP_FORMAT, tool, threads, edges, notes, gap_counts=False,
                         window_ns=max(windows["window_ns"]), duration_s=top.duration_s)
    return write_poll_dataset(output, pa.table(_EMPTY_ROWS), pa.table(table), metadata, overwrite=overwrite,
                              inputs=[source])


def _write_hist(source: Path, hist: OsnoiseHist, output: str | os.PathLike[str], overwrite: bool) -> Path:
    unit = hist.unit_ns
    counts = np.asarray(hist.rows, np.int64).reshape(len(hist.rows), len(hist.cpus))
    index = np.asarray(hist.index, np.int64)
    steps = np.r_[index[index > 0], np.diff(index)]
    step = max(int(np.gcd.reduce(steps)), 1) if steps.size else 1
    maxima = [int(v) for v in hist.stats["max"]]
    # buckets [index, index + step) in the output's unit; the first starts at the tracer's 1 µs minimum; then the
    # "over" bucket from the last row's end (the entries option is not in the output) to the largest sample
    lows = [max(int(i) * unit, THRESHOLD_NS) for i in index] if index.size else []
    over_low = (int(index[-1]) + step) * unit if index.size else THRESHOLD_NS
    top = max(over_low + 1, max(maxima, default=0) * unit + 1)
    edges = sorted({0, *lows, over_low, top})  # lows start at 1 µs: [0, 1 µs) stays an empty first bucket
    buckets = len(edges) - 1
    windows: dict[str, list[int]] = {n: [] for n in ("cpu", "thread", "window_start_ns", "window_ns", "iterations",
                                                     "noise_ns", "interruptions", "max_gap_ns")}
    dense_rows, threads = [], []
    for thread, cpu in enumerate(hist.cpus):
        over = int(hist.stats["over"][thread])
        count = int(hist.stats["count"][thread])
        column = counts[:, thread] if counts.size else np.zeros(0, np.int64)
        if int(column.sum()) + over != count:
            raise fail(HIST_FORMAT, source, f"column CPU-{cpu:03d}", f"bins hold {int(column.sum())} and over "
                       f"{over} but count says {count}", "rows are missing or damaged")
        dense = np.zeros(buckets, np.int64)
        where = np.searchsorted(edges, lows, side="right") - 1
        np.add.at(dense, where, column)
        dense[-1] += over
        mids = np.asarray([(low + (i + step) * unit) // 2 for low, i in zip(lows, index.tolist(), strict=True)],
                          np.int64)
        maximum = maxima[thread] * unit
        noise = int((column * mids).sum()) if column.size else 0
        if over:
            noise += (over - 1) * over_low + max(maximum, over_low)
        for name, value in (("cpu", cpu), ("thread", thread), ("window_start_ns", 0),
                            ("window_ns", round(hist.duration_s * 1e9)), ("iterations", count),
                            ("noise_ns", noise), ("interruptions", count), ("max_gap_ns", maximum)):
            windows[name].append(value)
        dense_rows.append(dense)
        threads.append(ThreadInfo(thread=thread, cpu=cpu, interval_ns=0, samples=0, drops=0, extra={
            "iterations": count, "noise_ns": noise,
            "osnoise": {"unit_ns": unit, **{k: _number(hist.stats[k][thread]) for k in _HIST_STATS
                                            if k in hist.stats}}}))
    table: dict[str, Any] = {k: np.asarray(v, np.int64) for k, v in windows.items()}
    matrix = np.vstack(dense_rows) if dense_rows else np.zeros((0, buckets), np.int64)
    table.update({poll_bucket_column(k): matrix[:, k] for k in range(buckets)})
    notes = [f"rtla osnoise hist: every noise sample osnoise counted (a gap >= its threshold, whole µs, at least 1) "
             f"in buckets of {step} {'ns' if unit == 1 else 'µs'} (inferred from the Index column); no "
             "per-interruption rows (no times, causes or periodic sources)",
             "iterations are the samples counted: osnoise does not count its loop's other iterations",
             "noise: each bucket's count times its midpoint, the 'over' bucket at its lower edge (the last row's "
             "end; rtla's --entries is not in the output) but for the maximum: an estimate",
             "one window per CPU spanning the session's Duration: osnoise's runtime per period is not in the "
             "output, so the CPU available is of the wall time (an upper bound of the noise's share when "
             "runtime < period)",
             "count, min, avg and max as rtla printed them are in threads[].osnoise"]
    metadata = _metadata(source, HIST_FORMAT, "rtla osnoise hist", threads, edges, notes, gap_counts=True,
                         window_ns=round(hist.duration_s * 1e9), duration_s=hist.duration_s)
    return write_poll_dataset(output, pa.table(_EMPTY_ROWS), pa.table(table), metadata, overwrite=overwrite,
                              inputs=[source])


def _number(text: str) -> int | float | str:
    """A summary value as rtla printed it: a count, a decimal (avg), or the text itself ("-")."""
    if re.fullmatch(r"\d{1,15}", text):
        return int(text)
    return float(text) if re.fullmatch(r"\d{1,15}\.\d{1,6}", text) else text[:40]


def _metadata(source: Path, fmt: str, tool: str, threads: list[ThreadInfo], edges: list[int], notes: list[str], *,
              gap_counts: bool, window_ns: int, duration_s: float | None) -> Metadata:
    return Metadata(
        kind="poll", threads=tuple(threads), tool={"name": "jitterscope import", "version": __version__},
        settings={"asked": {"duration_s": duration_s}, "granted": {}}, environment=None,
        source={"format": fmt, "files": [source.name], "notes": notes, "histogram_only": True,
                "gap_counts": gap_counts, "tool": {"name": tool, "version": "unknown"}},
        poll={"threshold_ns": THRESHOLD_NS, "clock": "tsc", "clock_read_ns": None, "iteration_ns": None,
              "histogram_edges_ns": edges, "window_ns": max(window_ns, 1), "rt_throttling": None,
              "rows_dropped": 0},
    )
