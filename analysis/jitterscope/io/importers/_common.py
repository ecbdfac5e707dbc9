"""Shared pieces of the importers: what a parser returns, and how it complains.

A parser reads one file into a :class:`Parsed`: per-thread samples (latency
series), per-thread histograms, or per-thread summaries (what the tool printed
at the end: count/min/avg/max).  ``importers/__init__.py`` combines a primary
file with companion files of the same run and builds the dataset table; the
parsers never write datasets.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ...dataset import MAX_JSON_DEPTH, json_depth
from ...errors import ImportFormatError

MAX_INPUT_BYTES = 256 << 20
"""Largest file read whole into memory (JSON documents, kernel trace text); the line formats stream and have
no size limit (their memory is bounded by :data:`CHUNK_BYTES` and :data:`MAX_LINE_BYTES`)."""
MAX_LINE_BYTES = 1 << 20
"""Longest line of a text input (1 MiB; the formats' lines are tens to a few thousand bytes): a longer one is an
error naming its line number, so a file without newlines cannot make a reader hold all of it."""

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


def open_input(path: Path) -> BinaryIO:
    """Open an input file for reading, after checking that it is a regular file.

    A device (``/dev/zero`` never ends), a FIFO (its open waits for a writer that may never come) or a socket is
    refused in one line before it is opened: inputs are files.

    Raises
    ------
    ImportFormatError
        The path is missing, not a regular file, or cannot be read.
    """
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise ImportFormatError(f"{path}: is {_kind(mode)}, not a regular file; jitterscope imports files "
                                    "(save the tool's output to a file first)")
        return open(path, "rb")
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _kind(mode: int) -> str:
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")


def read_bytes(path: Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """Read a whole input file (a regular file), refusing one larger than ``limit``."""
    with open_input(path) as handle:
        try:
            data = handle.read(limit + 1)  # bounded even if the file grows while it is read
        except OSError as exc:
            raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise ImportFormatError(f"{path}: more than {limit >> 20} MiB, too large to read into memory "
                                f"(the limit for this format); is it the right file?")
    return data


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
    handle = open_input(path)
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
            chunk, carry = data[:cut], data[cut:]
            _check_line_lengths(chunk, carry, line, fmt, path)
            if cut == 0:
                continue
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


def _check_line_lengths(chunk: bytes, carry: bytes, first_line: int, fmt: str, path: Path) -> None:
    """Refuse a line longer than :data:`MAX_LINE_BYTES` in ``chunk`` (whole lines) or ``carry`` (the unfinished
    last line), naming its number."""
    if len(carry) > MAX_LINE_BYTES:
        number = first_line + chunk.count(b"\n")
    elif len(chunk) > MAX_LINE_BYTES:
        ends = np.flatnonzero(np.frombuffer(chunk, np.uint8) == ord("\n"))
        lengths = np.diff(ends, prepend=-1) - 1
        long = np.flatnonzero(lengths > MAX_LINE_BYTES)
        if not long.size:
            return
        number = first_line + int(long[0])
    else:
        return
    raise fail(fmt, path, f"line {number}", f"longer than {MAX_LINE_BYTES >> 20} MiB (the longest line an "
               "import reads)", "the file is binary or damaged, or not this format")


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
    if json_depth(text) > MAX_JSON_DEPTH:  # before parsing: Python's parser recurses until RecursionError
        raise fail(fmt, path, "JSON", f"nested more than {MAX_JSON_DEPTH} levels deep", "the file is damaged or "
                   "not this tool's output")
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
