"""jitterdebugger output: ``samples.raw``, ``results.json`` and its stdout summary.

``samples.raw`` is a stream of packed 28-byte records written with ``fwrite``
of ``struct latency_sample { uint32_t cpuid; struct timespec ts; uint64_t val; }
__attribute__((packed))``: u32 thread index, i64 tv_sec, i64 tv_nsec
(CLOCK_MONOTONIC after waking), u64 latency in µs (ns with ``-N``), in the
writer's byte order (little-endian on x86 and arm64; the file does not say).
The writer thread drains per-thread rings and stops when the measurement
stops, so the last samples may never reach the file: ``results.json`` counts
them, and the importer reports the difference.

``results.json`` (``"version": 3``): ``sysinfo`` (uname, ``cpus_online``,
``resolution_in_ns``) and per thread ``histogram`` (1 µs bins below 1000 µs),
``count``, ``min``, ``max``, ``avg`` (``%.2f``).  The stdout summary lines are
``T:%2u (%5lu) A:%2u C:%10 Min:%10u Avg:%8.2f Max:%10u`` with VT100 escapes;
``A`` is the CPU the thread was pinned to.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ImportFormatError
from ._common import (
    Parsed,
    SourceSummary,
    ThreadHistogram,
    ThreadSamples,
    fail,
    iter_lines,
    json_histogram,
    json_int,
    json_number,
    open_input,
    read_json,
    show,
)
from .cyclictest_json import sysinfo_environment

SAMPLES_FORMAT = "jitterdebugger-samples"
RESULTS_FORMAT = "jitterdebugger-results"
STDOUT_FORMAT = "jitterdebugger-stdout"

RECORD = np.dtype([("cpuid", "<u4"), ("tv_sec", "<i8"), ("tv_nsec", "<i8"), ("val", "<u8")])
assert RECORD.itemsize == 28
MAX_THREADS = 4096
HIST_ENTRIES = 1000
"""jitterdebugger's histogram has this many 1-unit bins (HIST_MAX_ENTRIES); a larger latency is counted only
in ``count`` (an overflow, in no bin)."""
MAX_LATENCY_NS = 3600 * 10**9  # an hour: anything above is a damaged record

_STDOUT_LINE = re.compile(
    r"T:\s*(\d{1,4}) \(\s*(\d{1,9})\) A:\s*(\d{1,6}) C:\s*(\d{1,15}) Min:\s*(\d{1,15}) "
    r"Avg:\s*(\d{1,15}\.\d+|nan|-nan) Max:\s*(\d{1,15})\s*"
)
_ESCAPE = re.compile(r"\x1b\[\d*[A-Za-z]")


def sniff_results(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return text.lstrip().startswith("{") and '"cpu"' in text and '"file_version"' not in text and (
        '"version"' in text)


def sniff_stdout(head: bytes) -> bool:
    return bool(re.search(rb"T:\s*\d+ \(\s*\d+\) A:\s*\d+ C:", head))


def sniff_samples(head: bytes, size: int) -> bool:
    if size == 0 or size % RECORD.itemsize or len(head) < RECORD.itemsize:
        return False
    records = np.frombuffer(head[: len(head) - len(head) % RECORD.itemsize], dtype=RECORD)
    return bool(np.all(records["cpuid"] < MAX_THREADS) and np.all((records["tv_nsec"] >= 0)
                & (records["tv_nsec"] < 10**9)) and np.all(records["tv_sec"] >= 0))


CHUNK_RECORDS = 1 << 18
"""Records read at a time by :class:`SamplesReader` (7 MiB): memory is bounded by this, not the file's size."""


def parse_samples(path: Path, resolution_ns: int = 1000) -> Parsed:
    """Read a whole ``samples.raw`` into per-thread series (the importer streams it with :class:`SamplesReader`)."""
    reader = SamplesReader(path, resolution_ns)
    pieces: dict[int, list[ThreadRecords]] = {}
    for chunk in reader.chunks():
        for part in chunk:
            pieces.setdefault(part.thread, []).append(part)
    parsed = reader.parsed()
    for thread in sorted(pieces):
        parts = pieces[thread]
        times = np.concatenate([p.actual_ns for p in parts])
        parsed.samples.append(ThreadSamples(
            thread=thread, seq=np.arange(len(times), dtype=np.int64),
            latency_ns=np.concatenate([p.latency_ns for p in parts]), actual_ns=times,
        ))
    return parsed


@dataclass(frozen=True)
class ThreadRecords:
    """One thread's records within a chunk, in file order."""

    thread: int
    actual_ns: np.ndarray  # int64, CLOCK_MONOTONIC after waking
    latency_ns: np.ndarray  # int64, the recorded latency in ns


class SamplesReader:
    """A ``samples.raw`` read :data:`CHUNK_RECORDS` records at a time; :meth:`chunks` may be iterated again.

    Each chunk's records are checked (thread index, tv_sec, tv_nsec, latency in range; each thread's time
    increasing, also across chunks) and split by thread.  A refusal names the byte and record.
    """

    def __init__(self, path: Path, resolution_ns: int = 1000) -> None:
        self.path, self.resolution_ns = path, resolution_ns
        fmt = SAMPLES_FORMAT
        with open_input(path) as handle:  # a regular file: a device's or a FIFO's size says nothing
            size = os.fstat(handle.fileno()).st_size
        if not size:
            raise fail(fmt, path, "byte 0", "the file is empty", "jitterdebugger wrote no samples (was -s given?)")
        whole = size - size % RECORD.itemsize
        if whole != size:
            raise fail(fmt, path, f"byte {whole}", f"{size} bytes is not a whole number of 28-byte records "
                       f"(the last record is cut after {size - whole} bytes)",
                       f"truncate the file to {whole} bytes to import the complete records")
        self.records = size // RECORD.itemsize

    def parsed(self) -> Parsed:
        return Parsed(format=SAMPLES_FORMAT, path=self.path, role="samples", resolution_ns=self.resolution_ns)

    def chunks(self) -> Iterator[list[ThreadRecords]]:
        """Yield each chunk's records as one :class:`ThreadRecords` per thread, threads in increasing order."""
        fmt, path, resolution_ns = SAMPLES_FORMAT, self.path, self.resolution_ns
        last_time: dict[int, int] = {}
        with open_input(path) as handle:
            for first in range(0, self.records, CHUNK_RECORDS):
                try:
                    data = handle.read(min(CHUNK_RECORDS, self.records - first) * RECORD.itemsize)
                except OSError as exc:
                    raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
                if len(data) % RECORD.itemsize or not data:
                    raise ImportFormatError(f"{path}: the file shrank while it was read; is it being written to?")
                records = np.frombuffer(data, dtype=RECORD)
                _check_field(records["cpuid"] >= MAX_THREADS, "thread index (u32 at offset 0)", records["cpuid"],
                             fmt, path, first)
                _check_field((records["tv_nsec"] < 0) | (records["tv_nsec"] >= 10**9), "tv_nsec (i8 at offset 12)",
                             records["tv_nsec"], fmt, path, first)
                _check_field((records["tv_sec"] < 0) | (records["tv_sec"] > 1 << 40), "tv_sec (i8 at offset 4)",
                             records["tv_sec"], fmt, path, first)
                _check_field(records["val"] > MAX_LATENCY_NS // resolution_ns, "latency (u64 at offset 20)",
                             records["val"], fmt, path, first)
                actual = records["tv_sec"].astype(np.int64) * 10**9 + records["tv_nsec"].astype(np.int64)
                latency = records["val"].astype(np.int64) * resolution_ns
                ids = records["cpuid"]
                order = np.argsort(ids, kind="stable")
                threads, starts = np.unique(ids[order], return_index=True)
                bounds = np.append(starts, ids.size)
                chunk = []
                for thread, begin, end in zip(threads.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(),
                                              strict=True):
                    index = order[begin:end]
                    times = actual[index]
                    before = last_time.get(thread)
                    steps = np.diff(times, prepend=times[0] if before is None else before)
                    if before is None:
                        steps[0] = 1
                    backwards = np.flatnonzero(steps <= 0)
                    if len(backwards):
                        at = int(backwards[0])
                        where = first + int(index[at])
                        previous = int(times[at - 1]) if at else before
                        raise fail(fmt, path, f"byte {where * RECORD.itemsize} (record {where})",
                                   f"thread {thread}'s time does not increase ({int(times[at])} ns after "
                                   f"{previous} ns)", "the file is damaged")
                    last_time[thread] = int(times[-1])
                    chunk.append(ThreadRecords(thread=thread, actual_ns=times, latency_ns=latency[index]))
                yield chunk


def _check_field(bad: np.ndarray, name: str, values: np.ndarray, fmt: str, path: Path, first: int = 0) -> None:
    wrong = np.flatnonzero(bad)
    if len(wrong):
        record = first + int(wrong[0])
        raise fail(fmt, path, f"byte {record * RECORD.itemsize} (record {record})",
                   f"{name} is {int(values[wrong[0]])}, which is impossible",
                   "the file is damaged or not a jitterdebugger samples.raw")


def parse_results(path: Path) -> Parsed:
    fmt = RESULTS_FORMAT
    doc = read_json(path, fmt)
    if not isinstance(doc, dict) or not isinstance(doc.get("cpu"), dict) or not doc["cpu"]:
        raise fail(fmt, path, '"cpu"', "missing or empty", "not a jitterdebugger results.json")
    sysinfo = doc.get("sysinfo") if isinstance(doc.get("sysinfo"), dict) else {}
    resolution_ns = 1 if sysinfo.get("resolution_in_ns") == 1 else 1000
    parsed = Parsed(format=fmt, path=path, role="histogram", resolution_ns=resolution_ns)
    parsed.tool = {"name": "jitterdebugger", "version": f"results.json version {doc.get('version')}"}
    parsed.environment.update(sysinfo_environment(sysinfo))
    for key in sorted(doc["cpu"], key=lambda k: int(k) if str(k).isdigit() else -1):
        where = f'cpu "{key}"'
        entry = doc["cpu"][key]
        if not str(key).isdigit() or int(key) >= MAX_THREADS or not isinstance(entry, dict):
            raise fail(fmt, path, where, "is not a thread entry")
        count = json_int(entry, "count", fmt, path, where, lo=0)
        values, counts = json_histogram(entry.get("histogram", {}), resolution_ns, fmt, path, where)
        if int(counts.sum()) > count:
            raise fail(fmt, path, where, f"histogram holds {int(counts.sum())} wake-ups but count is {count}")
        parsed.summaries.append(SourceSummary(
            thread=int(key), count=count,
            min_ns=json_int(entry, "min", fmt, path, where, lo=0) * resolution_ns if count else None,
            max_ns=json_int(entry, "max", fmt, path, where, lo=0) * resolution_ns if count else None,
            avg_ns=json_number(entry, "avg", fmt, path, where) * resolution_ns if count else None,
            unit_ns=resolution_ns, overflows=count - int(counts.sum()),
        ))
        top = int(values[-1]) + resolution_ns if values.size else 0  # a build with a longer histogram: its end
        parsed.histograms.append(ThreadHistogram(
            thread=int(key), bin_start_ns=values, bin_width_ns=np.full(len(values), resolution_ns, np.int64),
            counts=counts, overflows=count - int(counts.sum()), range_ns=max(HIST_ENTRIES * resolution_ns, top),
        ))
    return parsed


def parse_stdout(path: Path) -> Parsed:
    fmt = STDOUT_FORMAT
    lines = iter_lines(path, fmt)  # a few MiB at a time, not the whole file
    found: dict[int, SourceSummary] = {}
    for number, raw in lines:
        line = _ESCAPE.sub("", raw)
        match = _STDOUT_LINE.fullmatch(line)
        if match:
            count = int(match[4])
            found[int(match[1])] = SourceSummary(
                thread=int(match[1]), tid=int(match[2]), cpu=int(match[3]), count=count,
                min_ns=int(match[5]) * 1000 if count else None,
                avg_ns=float(match[6]) * 1000 if count and "nan" not in match[6] else None,
                max_ns=int(match[7]) * 1000 if count else None,
            )
            continue
        if not line.strip() or line.startswith(("jitterdebugger", "jd_", "affinity:", "warning:", "Thread ")):
            continue
        raise fail(fmt, path, f"line {number}", f"{show(line)} is not a jitterdebugger summary line")
    if not found or sorted(found) != list(range(len(found))):
        raise fail(fmt, path, "whole file", "no complete set of 'T: n (tid) A: cpu C: Min: Avg: Max:' lines")
    parsed = Parsed(format=fmt, path=path, role="summary", resolution_ns=1000)
    parsed.summaries = [found[t] for t in sorted(found)]
    return parsed
