"""cyclictest ``-h/-H`` histogram output (stdout or ``--histfile``).

``# Histogram`` then one row per µs (ns with ``-N``) from 0 to the limit:
``%06d`` value and one ``%06lu`` count per thread, tab-separated (``-H`` adds a
column summing all threads).  The footer: ``# Total:`` (binned wake-ups,
overflows excluded), ``# Min Latencies:``, ``# Avg Latencies:`` (truncated to
a whole unit), ``# Max Latencies:``, ``# Histogram Overflows:``, the cycle
numbers of the overflows, and ``# SMIs:`` with ``--smi``.  Lines before
``# Histogram`` (live status, the cpu_dma_latency note) are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ._common import Parsed, SourceSummary, ThreadHistogram, fail, read_text, show

FORMAT = "cyclictest-histogram"

_ROW = re.compile(r"(\d{1,9}) (\d{1,15}(?:\t\d{1,15})*)\s*")
_FOOTER = re.compile(
    r"# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows|SMIs):((?: \d{1,15})*)\s*"
)
_OUTLIERS = re.compile(r"# (Histogram Overflow at cycle number:|Thread \d+:.*)\s*")


def sniff(head: bytes) -> bool:
    return bool(re.search(rb"^# Histogram\s*$", head, re.M)) or head.startswith(b"000000 ")


def parse(path: Path, resolution_ns: int = 1000) -> Parsed:
    text = read_text(path, FORMAT)
    lines = text.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "# Histogram")
    except StopIteration:
        raise fail(FORMAT, path, "whole file", "no '# Histogram' line", "was cyclictest run with -h?") from None
    values: list[int] = []
    counts: list[list[int]] = []
    footer: dict[str, list[int]] = {}
    width = None
    for number, line in enumerate(lines[start + 1:], start + 2):
        match = _ROW.fullmatch(line)
        if match and not footer:
            row = [int(c) for c in match[2].split("\t")]
            if width is None:
                width = len(row)
            if len(row) != width:
                raise fail(FORMAT, path, f"line {number}", f"{len(row)} columns where the rows before have {width}")
            value = int(match[1])
            if value != len(values):
                raise fail(FORMAT, path, f"line {number}", f"bin {value} where bin {len(values)} was expected",
                           "rows are missing, duplicated or out of order")
            values.append(value)
            counts.append(row)
            continue
        match = _FOOTER.fullmatch(line)
        if match:
            if match[1] in footer:
                raise fail(FORMAT, path, f"line {number}", f"'# {match[1]}:' appears twice")
            footer[match[1]] = [int(v) for v in match[2].split()]
            continue
        if _OUTLIERS.fullmatch(line) or not line.strip():
            continue
        raise fail(FORMAT, path, f"line {number}", f"{show(line)} is neither a histogram row nor a footer line")
    if not values:
        raise fail(FORMAT, path, f"line {start + 2}", "no histogram rows after '# Histogram'")
    for key in ("Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows"):
        if key not in footer:
            raise fail(FORMAT, path, "footer", f"'# {key}:' line missing", "the file is truncated")
    threads = len(footer["Min Latencies"])
    if threads == 0 or width not in (threads, threads + 1):
        raise fail(FORMAT, path, "footer", f"{threads} threads in '# Min Latencies:' but {width} histogram columns")
    table = np.asarray(counts, dtype=np.int64)[:, :threads]
    for key in ("Avg Latencies", "Max Latencies", "Histogram Overflows"):
        if len(footer[key]) < threads:
            raise fail(FORMAT, path, "footer", f"'# {key}:' has {len(footer[key])} values for {threads} threads")
    if len(footer["Total"]) < threads:
        raise fail(FORMAT, path, "footer", f"'# Total:' has {len(footer['Total'])} values for {threads} threads")
    parsed = Parsed(format=FORMAT, path=path, role="histogram", resolution_ns=resolution_ns)
    parsed.settings["histogram_limit"] = len(values)
    bin_values = np.asarray(values, dtype=np.int64) * resolution_ns
    for thread in range(threads):
        column = table[:, thread]
        if int(column.sum()) != footer["Total"][thread]:
            raise fail(FORMAT, path, "footer", f"'# Total:' says {footer['Total'][thread]} for thread {thread} but its "
                       f"column sums to {int(column.sum())}", "rows are missing or damaged")
        overflows = footer["Histogram Overflows"][thread]
        nonzero = column > 0
        parsed.histograms.append(ThreadHistogram(
            thread=thread, bin_start_ns=bin_values[nonzero],
            bin_width_ns=np.full(int(nonzero.sum()), resolution_ns, np.int64),
            counts=column[nonzero], overflows=overflows,
        ))
        count = int(column.sum()) + overflows
        parsed.summaries.append(SourceSummary(
            thread=thread, count=count,
            min_ns=footer["Min Latencies"][thread] * resolution_ns if count else None,
            avg_ns=float(footer["Avg Latencies"][thread] * resolution_ns) if count else None,
            max_ns=footer["Max Latencies"][thread] * resolution_ns if count else None,
            unit_ns=resolution_ns, avg_decimals=0, avg_truncated=True, overflows=overflows,
        ))
    if "SMIs" in footer:
        parsed.settings["smis"] = footer["SMIs"][:threads]
    return parsed
