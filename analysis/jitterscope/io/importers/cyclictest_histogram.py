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

from ._common import Parsed, SourceSummary, ThreadHistogram, fail, iter_line_chunks, show

FORMAT = "cyclictest-histogram"

_ROW = re.compile(r"(\d{1,9}) (\d{1,15}(?:\t\d{1,15})*)\s*")
_FOOTER = re.compile(
    r"# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows|SMIs):((?: \d{1,15})*)\s*"
)
_OUTLIERS = re.compile(r"# (Histogram Overflow at cycle number:|Thread \d+:.*)\s*")


def sniff(head: bytes) -> bool:
    return bool(re.search(rb"^# Histogram\s*$", head, re.M)) or head.startswith(b"000000 ")


def parse(path: Path, resolution_ns: int = 1000) -> Parsed:
    """Read a cyclictest histogram a few MiB at a time, keeping only each thread's non-empty bins.

    A ``-h 5000000`` run prints five million rows, nearly all zero: memory holds the non-empty bins and one
    chunk of text (:func:`iter_line_chunks`), not the file.
    """
    bins = _Bins()
    footer: dict[str, list[int]] = {}
    start: int | None = None  # line number of "# Histogram"
    for first_line, chunk in iter_line_chunks(path, FORMAT):
        if start is not None and not footer:
            block = _fast_rows(chunk, bins.width, bins.rows)
            if block is not None:
                bins.add_block(*block)
                continue
        for number, line in enumerate(chunk.decode("utf-8").split("\n"), first_line):
            if start is None:
                if line.strip() == "# Histogram":
                    start = number
                continue  # lines before it: live status, the cpu_dma_latency note
            match = _ROW.fullmatch(line)
            if match and not footer:
                row = [int(c) for c in match[2].split("\t")]
                if bins.width is None:
                    bins.width = len(row)
                if len(row) != bins.width:
                    raise fail(FORMAT, path, f"line {number}",
                               f"{len(row)} columns where the rows before have {bins.width}")
                value = int(match[1])
                if value != bins.rows:
                    raise fail(FORMAT, path, f"line {number}", f"bin {value} where bin {bins.rows} was expected",
                               "rows are missing, duplicated or out of order")
                bins.add(value, row)
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
        bins.flush()
    if start is None:
        raise fail(FORMAT, path, "whole file", "no '# Histogram' line", "was cyclictest run with -h?")
    values = bins.rows
    width = bins.width
    if not values:
        raise fail(FORMAT, path, f"line {start + 1}", "no histogram rows after '# Histogram'")
    for key in ("Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows"):
        if key not in footer:
            raise fail(FORMAT, path, "footer", f"'# {key}:' line missing", "the file is truncated")
    threads = len(footer["Min Latencies"])
    if threads == 0 or width not in (threads, threads + 1):
        raise fail(FORMAT, path, "footer", f"{threads} threads in '# Min Latencies:' but {width} histogram columns")
    for key in ("Avg Latencies", "Max Latencies", "Histogram Overflows"):
        if len(footer[key]) < threads:
            raise fail(FORMAT, path, "footer", f"'# {key}:' has {len(footer[key])} values for {threads} threads")
    if len(footer["Total"]) < threads:
        raise fail(FORMAT, path, "footer", f"'# Total:' has {len(footer['Total'])} values for {threads} threads")
    parsed = Parsed(format=FORMAT, path=path, role="histogram", resolution_ns=resolution_ns)
    parsed.settings["histogram_limit"] = values
    for thread in range(threads):
        total = bins.totals[thread]
        if total != footer["Total"][thread]:
            raise fail(FORMAT, path, "footer", f"'# Total:' says {footer['Total'][thread]} for thread {thread} but its "
                       f"column sums to {total}", "rows are missing or damaged")
        overflows = footer["Histogram Overflows"][thread]
        bin_values, counts = bins.column(thread)
        parsed.histograms.append(ThreadHistogram(
            thread=thread, bin_start_ns=bin_values * resolution_ns,
            bin_width_ns=np.full(counts.size, resolution_ns, np.int64), counts=counts, overflows=overflows,
            range_ns=values * resolution_ns,  # cyclictest counts a latency of -h units or more as an overflow
        ))
        count = total + overflows
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


class _Bins:
    """Histogram rows as they are read: the non-empty bins of each column, and each column's total."""

    def __init__(self) -> None:
        self.width: int | None = None
        self.rows = 0  # rows read: the next row must be bin number ``rows``
        self.totals: list[int] = []
        self._values: list[int] = []
        self._counts: list[list[int]] = []
        self._kept: list[list[tuple[np.ndarray, np.ndarray]]] = []

    def add(self, value: int, row: list[int]) -> None:
        self._values.append(value)
        self._counts.append(row)
        self.rows += 1

    def flush(self) -> None:
        """Keep the non-empty bins of the rows read since the last flush, as arrays."""
        if not self._values:
            return
        values = np.asarray(self._values, dtype=np.int64)
        counts = np.asarray(self._counts, dtype=np.int64).reshape(values.size, -1)
        self._values, self._counts = [], []
        self._keep(values, counts)

    def add_block(self, values: np.ndarray, counts: np.ndarray) -> None:
        """Rows parsed in one go (:func:`_fast_rows`): bin numbers and a (rows, columns) array of counts."""
        self.flush()
        self.width = self.width or counts.shape[1]
        self.rows += values.size
        self._keep(values, counts)

    def _keep(self, values: np.ndarray, counts: np.ndarray) -> None:
        if not self._kept:
            self._kept = [[] for _ in range(counts.shape[1])]
            self.totals = [0] * counts.shape[1]
        for column in range(counts.shape[1]):
            nonzero = np.flatnonzero(counts[:, column])
            self._kept[column].append((values[nonzero], counts[nonzero, column]))
            self.totals[column] += int(counts[:, column].sum())

    def column(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """(bin numbers, counts) of one column's non-empty bins, in bin order."""
        kept = self._kept[index]
        return (np.concatenate([v for v, _ in kept]), np.concatenate([c for _, c in kept]))


def _fast_rows(chunk: bytes, width: int | None, next_bin: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(bin numbers, counts) of a chunk made only of histogram rows, parsed with numpy; None for any other chunk.

    Accepts exactly what the line parser accepts of such rows (``%d %d\\t%d...`` with at most 9 and 15 digits,
    the same number of columns on every line, bins numbered on from ``next_bin``); anything else (a blank
    line, trailing blanks, the footer) goes to the line parser, which says where it is wrong.
    """
    if not chunk.endswith(b"\n"):
        chunk += b"\n"
    if chunk.translate(None, b"0123456789 \t\n"):
        return None
    text = np.frombuffer(chunk, np.uint8)
    separators = np.flatnonzero((text == 32) | (text == 9) | (text == 10))
    kinds = text[separators]
    lengths = np.diff(separators, prepend=-1) - 1  # digits before each separator
    lines = int(np.count_nonzero(kinds == 10))
    if width is None:
        width = int(np.flatnonzero(kinds == 10)[0])  # separators on the first line, less its newline
    if width < 1 or np.any(lengths == 0) or kinds.size != lines * (width + 1):
        return None
    kinds, lengths = kinds.reshape(lines, width + 1), lengths.reshape(lines, width + 1)
    if np.any(kinds[:, 0] != 32) or np.any(kinds[:, 1:-1] != 9) or np.any(kinds[:, -1] != 10):
        return None
    if np.any(lengths[:, 0] > 9) or np.any(lengths[:, 1:] > 15):
        return None
    values = np.array(chunk.split()).astype(np.int64).reshape(lines, width + 1)
    if not np.array_equal(values[:, 0], np.arange(next_bin, next_bin + lines)):
        return None
    return values[:, 0].copy(), values[:, 1:]
