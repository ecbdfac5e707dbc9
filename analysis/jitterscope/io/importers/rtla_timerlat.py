"""``rtla timerlat hist`` output: per-CPU histograms of the kernel's timerlat tracer.

::

    # RTLA timerlat histogram
    # Time unit is microseconds (us)
    # Duration:   0 00:10:00
    Index   IRQ-000   Thr-000   IRQ-001   Thr-001
    0        276489         0    206089         0
    ...
    over:         0         0         0         0
    count:   600002    600002    600002    600002
    min:          0         1         0         1
    avg:          0         5         0         5
    max:         16        36        15        58

``Index`` is the bin's lower edge (bucket number times ``--bucket-size``);
all-zero rows are skipped unless ``--with-zeros``.  Columns are ``IRQ-CCC``
(latency of the timer IRQ), ``Thr-CCC`` (the timerlat kernel thread) and, with
``-u``, ``Usr-CCC`` (a user-space thread).  The thread columns (``Thr``) are the
latency a cyclictest-like task sees and become the dataset's threads; the IRQ
and user summaries are kept in each thread's metadata.  ``-n`` switches the
unit to ns.  A later ``ALL:`` block (newer rtla) is ignored.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ._common import Parsed, SourceSummary, ThreadHistogram, fail, iter_lines, show

FORMAT = "rtla-timerlat-hist"

_COLUMN = re.compile(r"(IRQ|Thr|Usr)-(\d{1,6})")
_STATS = ("over", "count", "min", "avg", "max")


def sniff(head: bytes) -> bool:
    return b"# RTLA timerlat histogram" in head or bool(re.search(rb"^Index\s+(IRQ|Thr|Usr)-\d+", head, re.M))


def parse(path: Path) -> Parsed:
    lines = iter_lines(path, FORMAT)  # a few MiB at a time, not the whole file
    unit_ns = 1000
    columns: list[tuple[str, int]] | None = None
    index_values: list[int] = []
    rows: list[list[int]] = []
    stats: dict[str, list[str]] = {}
    for number, line in lines:
        words = line.split()
        if not words:
            continue
        if line.startswith("#"):
            if "Time unit is nanoseconds" in line:
                unit_ns = 1
            continue
        if words[0] == "Index":
            if columns is not None:
                raise fail(FORMAT, path, f"line {number}", "a second 'Index' header", "import one run at a time")
            columns = []
            for word in words[1:]:
                match = _COLUMN.fullmatch(word)
                if not match:
                    raise fail(FORMAT, path, f"line {number}", f"column {word!r} is not IRQ-/Thr-/Usr-CPU")
                columns.append((match[1], int(match[2])))
            continue
        if words[0] == "ALL:":
            break
        if columns is None:
            raise fail(FORMAT, path, f"line {number}", f"{show(line)} before the 'Index' header")
        if len(words) != len(columns) + 1:
            raise fail(FORMAT, path, f"line {number}", f"{len(words) - 1} values for {len(columns)} columns")
        key = words[0].rstrip(":")
        if words[0].endswith(":") and key in _STATS:
            stats[key] = words[1:]
            continue
        if stats or not all(re.fullmatch(r"\d{1,15}", w) for w in words):
            raise fail(FORMAT, path, f"line {number}", f"{show(line)} is not a histogram row")
        value = int(words[0])
        if index_values and value <= index_values[-1]:
            raise fail(FORMAT, path, f"line {number}", f"index {value} after {index_values[-1]}")
        index_values.append(value)
        rows.append([int(w) for w in words[1:]])
    if columns is None:
        raise fail(FORMAT, path, "whole file", "no 'Index' header line")
    for key in ("over", "count"):
        if key not in stats:
            raise fail(FORMAT, path, f"'{key}:' line", "missing", "the output is truncated (or was --no-summary used?)")
    parsed = Parsed(format=FORMAT, path=path, role="histogram", resolution_ns=unit_ns)
    parsed.tool = {"name": "rtla timerlat hist", "version": "unknown"}
    table = np.asarray(rows, dtype=np.int64).reshape(len(rows), len(columns))
    values = np.asarray(index_values, dtype=np.int64)
    bucket = _bucket_size(values)
    present = {c for c, _ in columns}
    context = "Thr" if "Thr" in present else ("Usr" if "Usr" in present else "IRQ")
    chosen = [i for i, (c, _) in enumerate(columns) if c == context]
    for thread, col in enumerate(chosen):
        cpu = columns[col][1]
        counts = table[:, col] if len(rows) else np.zeros(0, np.int64)
        over = _stat_int(stats, "over", col, path)
        count = _stat_int(stats, "count", col, path)
        if int(counts.sum()) + over != count:
            raise fail(FORMAT, path, f"column {context}-{cpu:03d}",
                       f"bins hold {int(counts.sum())} and over {over} but count says {count}",
                       "rows are missing or damaged")
        nonzero = counts > 0
        parsed.histograms.append(ThreadHistogram(
            thread=thread, bin_start_ns=values[nonzero] * unit_ns,
            bin_width_ns=np.full(int(nonzero.sum()), bucket * unit_ns, np.int64),
            counts=counts[nonzero], overflows=over, cpu=cpu,
        ))
        parsed.summaries.append(SourceSummary(
            thread=thread, count=count, cpu=cpu, unit_ns=unit_ns, avg_decimals=0, overflows=over,
            min_ns=_stat_scaled(stats, "min", col, unit_ns), avg_ns=_stat_scaled(stats, "avg", col, unit_ns),
            max_ns=_stat_scaled(stats, "max", col, unit_ns),
        ))
    others = sorted({c for c, _ in columns} - {context})
    parsed.notes.append(f"threads are the {context}-CPU columns (timerlat {'thread' if context == 'Thr' else context} "
                        f"latency); {', '.join(others) or 'no other'} columns not imported; bucket size "
                        f"{bucket} {'ns' if unit_ns == 1 else 'µs'} inferred from the Index column; "
                        "avg as rtla printed it")
    return parsed


def _bucket_size(values: np.ndarray) -> int:
    size = 0
    for v in np.concatenate([values, np.diff(values)]) if len(values) > 1 else values:
        size = math.gcd(size, int(v))
    return size or 1


def _stat_int(stats: dict[str, list[str]], key: str, col: int, path: Path) -> int:
    text = stats[key][col]
    if not re.fullmatch(r"\d{1,15}", text):
        raise fail(FORMAT, path, f"'{key}:' line", f"{text!r} is not a count")
    return int(text)


def _stat_scaled(stats: dict[str, list[str]], key: str, col: int, unit_ns: int):
    if key not in stats:
        return None
    try:
        return float(stats[key][col]) * unit_ns if key == "avg" else int(stats[key][col]) * unit_ns
    except ValueError:
        return None  # rtla prints "-" for a CPU without samples
