"""cyclictest's per-thread summary lines (``-q`` prints them once, at exit).

``T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld`` plus
`` SMI:%8ld`` with ``--smi``.  ``Avg`` is truncated to a whole µs (ns with
``-N``); ``I`` is the thread's interval in µs.  Without ``-q`` the live screen
repeats the lines with cursor-movement escapes; the last line of each thread
wins.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._common import Parsed, SourceSummary, fail, iter_lines, show

FORMAT = "cyclictest-quiet"

_LINE = re.compile(
    r"T:\s*(\d{1,4}) \(\s*(\d{1,9})\) P:\s*(\d{1,3}) I:\s*(\d{1,9}) C:\s*(\d{1,15}) Min:\s*(-?\d{1,15}) "
    r"Act:\s*(-?\d{1,15}) Avg:\s*(-?\d{1,15}) Max:\s*(-?\d{1,15})(?: SMI:\s*(\d{1,15}))?\s*"
)
_ESCAPE = re.compile(r"\x1b\[\d*[A-Za-z]")
_IGNORED = re.compile(r"(#.*|policy: .*|\s*|WARN.*|.*defaulting realtime priority.*)")


def sniff(head: bytes) -> bool:
    return bool(re.search(rb"T:\s*\d+ \(\s*\d+\) P:\s*\d+ I:\s*\d+ C:", head))


def summary_from_line(raw: str) -> SourceSummary | None:
    """The summary of one ``T: ...`` line (latencies still in the printed unit), or None."""
    match = _LINE.fullmatch(_ESCAPE.sub("", raw))
    if not match:
        return None
    count = int(match[5])
    return SourceSummary(
        thread=int(match[1]), tid=int(match[2]), priority=int(match[3]), interval_ns=int(match[4]) * 1000, count=count,
        min_ns=int(match[6]) if count else None, avg_ns=float(match[8]) if count else None,
        max_ns=int(match[9]) if count else None, avg_decimals=0, avg_truncated=True,
    )


def parse(path: Path) -> Parsed:
    lines = iter_lines(path, FORMAT)  # a few MiB at a time, not the whole file
    found: dict[int, SourceSummary] = {}
    for number, raw in lines:
        line = _ESCAPE.sub("", raw)
        summary = summary_from_line(line)
        if summary is not None:
            found[summary.thread] = summary
            continue
        if _IGNORED.fullmatch(line):
            continue
        raise fail(FORMAT, path, f"line {number}", f"{show(line)} is not a cyclictest summary line")
    if not found:
        raise fail(FORMAT, path, "whole file", "no 'T: n (tid) P: I: C: Min: Act: Avg: Max:' line",
                   "with --histogram cyclictest prints no summary lines; import the histogram instead")
    if sorted(found) != list(range(len(found))):
        raise fail(FORMAT, path, "whole file", f"threads {sorted(found)} are not numbered 0..{len(found) - 1}")
    parsed = Parsed(format=FORMAT, path=path, role="summary")
    parsed.summaries = [found[t] for t in sorted(found)]
    return parsed


def scale(parsed: Parsed, resolution_ns: int) -> None:
    """Convert the summaries' latencies from the printed unit to ns (in place)."""
    for summary in parsed.summaries:
        if summary.min_ns is not None:
            summary.min_ns *= resolution_ns
            summary.max_ns = None if summary.max_ns is None else summary.max_ns * resolution_ns
            summary.avg_ns = None if summary.avg_ns is None else summary.avg_ns * resolution_ns
        summary.unit_ns = resolution_ns
    parsed.resolution_ns = resolution_ns
