"""periodic_timer interval-statistics logs: period statistics every N periods.

Each block is two lines (µs, two decimals)::

    period: 16666.67 usecs min: 16552.33 max: 16772.62 mean: 16667.12 stddev: 5.72
    585 > 1 usec errors min: -105.95 max: 114.34 mean: -0.48 stddev: 28.12

The first line describes the measured periods (time between consecutive
wake-ups) of one block, the second the periods whose error ``nominal - period``
exceeded the tolerance (the statistics are absent when there are none).
``jitterscope summary --interval-stats`` prints the same shape, with a
``thread N (cpu C):`` heading before each thread's blocks; those headings are
understood.  The log holds no latencies and no histogram, only these blocks:
they become a summary-only dataset whose ``threads[].period_blocks`` keep them.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._common import Parsed, SourceSummary, fail, iter_lines, show

FORMAT = "periodic-timer"

_NUM = r"(-?\d{1,12}\.\d+|-?\d{1,12}|nan|-nan)"
_PERIOD = re.compile(
    rf"\s*period: {_NUM} usecs min: {_NUM} max: {_NUM} mean: {_NUM} stddev: {_NUM}\s*"
)
_ERRORS = re.compile(
    rf"\s*(\d{{1,15}}) > {_NUM} usec errors(?: min: {_NUM} max: {_NUM} mean: {_NUM} stddev: {_NUM})?\s*"
)
_HEADING = re.compile(r"\s*thread (\d{1,4}) \(cpu (-?\d{1,6})\):\s*")
_KEYS = ("nominal_us", "min_us", "max_us", "mean_us", "stddev_us")
_ERROR_KEYS = ("error_min_us", "error_max_us", "error_mean_us", "error_stddev_us")


def sniff(head: bytes) -> bool:
    return bool(re.search(rb"^\s*period: [\d.]+ usecs min: ", head, re.M))


def parse(path: Path) -> Parsed:
    lines = iter_lines(path, FORMAT)  # a few MiB at a time, not the whole file
    blocks: dict[int, list[dict]] = {}
    cpus: dict[int, int] = {}
    thread = 0
    pending: dict | None = None
    for number, line in lines:
        match = _PERIOD.fullmatch(line)
        if match:
            if pending is not None:
                raise fail(FORMAT, path, f"line {number}", "a 'period:' line follows a 'period:' line",
                           "the errors line of the block before is missing")
            pending = {k: _number(v, path, number) for k, v in zip(_KEYS, match.groups(), strict=True)}
            if pending["nominal_us"] is None or pending["nominal_us"] <= 0:
                raise fail(FORMAT, path, f"line {number}", "the nominal period is not a positive number")
            continue
        match = _ERRORS.fullmatch(line)
        if match:
            if pending is None:
                raise fail(FORMAT, path, f"line {number}", "an errors line without its 'period:' line before it")
            pending["errors"] = int(match[1])
            pending["tolerance_us"] = _number(match[2], path, number)
            for key, value in zip(_ERROR_KEYS, match.groups()[2:], strict=True):
                pending[key] = _number(value, path, number) if value is not None else None
            if pending["errors"] and match[3] is None:
                raise fail(FORMAT, path, f"line {number}", f"{pending['errors']} errors but no error statistics")
            blocks.setdefault(thread, []).append(pending)
            pending = None
            continue
        match = _HEADING.fullmatch(line)
        if match and pending is None:
            thread = int(match[1])
            if thread in blocks:
                raise fail(FORMAT, path, f"line {number}", f"a second heading for thread {thread}")
            cpus[thread] = int(match[2])
            continue
        if line.strip():
            raise fail(FORMAT, path, f"line {number}", f"{show(line)} is not a periodic_timer statistics line")
    if pending is not None:
        raise fail(FORMAT, path, "end of file", "the last block has no errors line", "the log is truncated")
    if not blocks:
        raise fail(FORMAT, path, "whole file", "no 'period: ... usecs' block")
    parsed = Parsed(format=FORMAT, path=path, role="summary")
    parsed.tool = {"name": "periodic_timer", "version": "unknown"}
    for index, (thread_id, thread_blocks) in enumerate(sorted(blocks.items())):
        nominal = thread_blocks[0]["nominal_us"]
        parsed.summaries.append(SourceSummary(
            thread=index, count=0, cpu=cpus.get(thread_id), interval_ns=round(nominal * 1000),
            extra={"period_blocks": thread_blocks},
        ))
    parsed.notes.append("periodic_timer logs hold period statistics per block (threads[].period_blocks, µs), "
                        "not latencies: no latency numbers or bins; the number of periods per block is not "
                        "in the log, so samples = 0")
    return parsed


def _number(text: str, path: Path, number: int) -> float | None:
    if "nan" in text:
        return None
    value = float(text)
    if abs(value) > 1e12:
        raise fail(FORMAT, path, f"line {number}", f"{text} µs is not a plausible period")
    return value
