"""Shared pieces of the importers: what a parser returns, and how it complains.

A parser reads one file into a :class:`Parsed`: per-thread samples (latency
series), per-thread histograms, or per-thread summaries (what the tool printed
at the end: count/min/avg/max).  ``importers/__init__.py`` combines a primary
file with companion files of the same run and builds the dataset table; the
parsers never write datasets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ImportFormatError

MAX_INPUT_BYTES = 8 << 30
"""Files larger than this are refused rather than read into memory."""

_INT = re.compile(r"-?\d+")


@dataclass
class SourceSummary:
    """What a tool printed about one thread at the end of its run (latencies in ns)."""

    thread: int
    count: int
    min_ns: int | None = None
    avg_ns: float | None = None
    max_ns: int | None = None
    unit_ns: int = 1000  # the unit the tool printed latencies in
    avg_decimals: int = 2  # decimals of the printed average, in that unit
    avg_truncated: bool = False  # printed average was truncated to a whole unit, not rounded
    cpu: int | None = None
    tid: int | None = None
    priority: int | None = None  # the P: field of cyclictest's summary line
    overflows: int | None = None
    interval_ns: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific facts kept in threads[]

    @property
    def avg_precision_ns(self) -> float:
        return self.unit_ns * 10.0 ** -self.avg_decimals


@dataclass
class ThreadSamples:
    """One thread's samples as the source printed them."""

    thread: int
    seq: np.ndarray  # int64, per-thread wake-up index
    latency_ns: np.ndarray  # int64
    actual_ns: np.ndarray | None = None  # int64, absolute times when the source has them
    smi_delta: np.ndarray | None = None  # int64, SMIs counted since the previous wake-up
    interval_ns: int | None = None
    cpu: int | None = None


@dataclass
class ThreadHistogram:
    """One thread's histogram: bins in ns, overflows beyond the last bin."""

    thread: int
    bin_start_ns: np.ndarray  # int64
    bin_width_ns: np.ndarray  # int64
    counts: np.ndarray  # int64
    overflows: int = 0
    cpu: int | None = None
    range_ns: int | None = None  # overflows are wake-ups at or above this (the histogram's range), when known


@dataclass
class Parsed:
    """Everything one file said."""

    format: str
    path: Path
    role: str  # "samples", "histogram" or "summary"
    samples: list[ThreadSamples] = field(default_factory=list)
    histograms: list[ThreadHistogram] = field(default_factory=list)
    summaries: list[SourceSummary] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    reconstructed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tool: Mapping[str, Any] | None = None
    resolution_ns: int | None = None  # unit of latencies, when the file says


def fail(fmt: str, path: Path, where: str, what: str, hint: str = "") -> ImportFormatError:
    """An :class:`ImportFormatError` with one line: file, format, place, problem, hint."""
    msg = f"{path}: not valid {fmt} output: {where}: {what}"
    if hint:
        msg += f"; {hint}"
    return ImportFormatError(" ".join(msg.split()))


def read_bytes(path: Path) -> bytes:
    """Read a whole input file, refusing absurd sizes."""
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise ImportFormatError(f"{path}: {size} bytes is too large to import (limit {MAX_INPUT_BYTES})")
        return path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_text(path: Path, fmt: str) -> str:
    """Read a text file; a byte that is not UTF-8 is reported with its offset."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(fmt, path, f"byte {exc.start}", f"0x{data[exc.start]:02x} is not text",
                   "the file is binary or damaged") from None


CHUNK_BYTES = 4 << 20
"""Text read at a time by :func:`iter_line_chunks`: memory for the text is bounded by this, not the file size."""


def iter_line_chunks(path: Path, fmt: str, chunk_bytes: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(number of the first line, bytes of whole lines)`` of a text file, a few MiB at a time.

    Each chunk ends at a newline (the last may not, at the end of the file) and is checked to be UTF-8 (a byte
    that is not is reported with its offset in the file).

    Raises
    ------
    ImportFormatError
        The file cannot be read or is not text.
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    line, offset, carry = 1, 0, b""
    with handle:
        while True:
            try:
                block = handle.read(chunk_bytes)
            except OSError as exc:
                raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
            data = carry + block
            if not block:
                if data:
                    _check_utf8(data, offset, fmt, path)
                    yield line, data
                return
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            chunk, carry = data[:cut], data[cut:]
            _check_utf8(chunk, offset, fmt, path)
            yield line, chunk
            line += chunk.count(b"\n")
            offset += len(chunk)


def iter_lines(path: Path, fmt: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line)`` of a text file read a few MiB at a time: the lines of
    ``text.split("\\n")`` of the whole file (a file ending in a newline ends with an empty line), without
    holding the file.

    Raises
    ------
    ImportFormatError
        The file cannot be read or is not text (the first byte that is not UTF-8, with its offset).
    """
    last = 0
    ends_with_newline = True  # an empty file reads as one empty line, as "".split("\\n") does
    for first_line, chunk in iter_line_chunks(path, fmt):
        lines = chunk.decode("utf-8").split("\n")
        ends_with_newline = chunk.endswith(b"\n")
        if ends_with_newline:
            lines.pop()  # the empty piece after the chunk's last newline: the next chunk starts there
        for number, line in enumerate(lines, first_line):
            yield number, line
            last = number
    if ends_with_newline:
        yield last + 1, ""


def _check_utf8(chunk: bytes, offset: int, fmt: str, path: Path) -> None:
    if chunk.isascii():
        return
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(fmt, path, f"byte {offset + exc.start}", f"0x{chunk[exc.start]:02x} is not text",
                   "the file is binary or damaged") from None


def read_json(path: Path, fmt: str) -> Any:
    """Read a UTF-8 JSON file; a syntax error is reported with its line and column."""
    text = read_text(path, fmt)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(fmt, path, f"line {exc.lineno} column {exc.colno}", exc.msg, "the JSON is truncated or damaged") \
            from None


def show(line: str, limit: int = 60) -> str:
    """A line as it can be quoted inside a one-line message."""
    text = line.strip()
    text = text if len(text) <= limit else text[:limit] + "..."
    return repr(text)


def to_int(text: str, fmt: str, path: Path, where: str, *, lo: int = -(1 << 62), hi: int = 1 << 62) -> int:
    """Parse a decimal integer strictly and check its range."""
    if not _INT.fullmatch(text.strip()):
        raise fail(fmt, path, where, f"{show(text)} is not an integer")
    value = int(text)
    if not lo <= value <= hi:
        raise fail(fmt, path, where, f"{value} is out of range [{lo}, {hi}]")
    return value


def to_float(text: str, fmt: str, path: Path, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise fail(fmt, path, where, f"{show(text)} is not a number") from None
    if not np.isfinite(value) or abs(value) > 1e15:
        raise fail(fmt, path, where, f"{text} is not a plausible value")
    return value


def json_int(obj: Mapping[str, Any], key: str, fmt: str, path: Path, where: str,
             *, lo: int = -(1 << 62), hi: int = 1 << 62) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(fmt, path, where, f"\"{key}\" is {value!r}, expected an integer")
    if not lo <= value <= hi:
        raise fail(fmt, path, where, f"\"{key}\" = {value} is out of range [{lo}, {hi}]")
    return value


def json_number(obj: Mapping[str, Any], key: str, fmt: str, path: Path, where: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise fail(fmt, path, where, f"\"{key}\" is {value!r}, expected a number")
    if abs(value) > 1e15:
        raise fail(fmt, path, where, f"\"{key}\" = {value} is not plausible")
    return float(value)


def json_histogram(obj: Any, scale_ns: int, fmt: str, path: Path, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode a ``{"value": count}`` histogram object into (values_ns, counts), sorted."""
    if not isinstance(obj, Mapping):
        raise fail(fmt, path, where, f"histogram is {type(obj).__name__}, expected an object")
    values, counts = [], []
    for key, count in obj.items():
        if not re.fullmatch(r"\d{1,12}", str(key)):
            raise fail(fmt, path, where, f"histogram key {key!r} is not a non-negative integer")
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < (1 << 62):
            raise fail(fmt, path, where, f"histogram count for {key!r} is {count!r}, expected a count")
        values.append(int(key) * scale_ns)
        counts.append(count)
    order = np.argsort(np.asarray(values, dtype=np.int64), kind="stable")
    return np.asarray(values, dtype=np.int64)[order], np.asarray(counts, dtype=np.int64)[order]


def format_avg(total: int, count: int, decimals: int) -> str:
    """The average as C's printf("%.Nf", (double)total / count) prints it."""
    return f"{total / count:.{decimals}f}"
