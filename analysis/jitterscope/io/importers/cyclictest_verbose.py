"""cyclictest ``-v`` output: one ``thread:cycle:latency`` line per wake-up.

rt-tests prints ``"%8d:%8lu:%8ld\\n"`` (thread, cycle, latency in µs, or ns
with ``-N``) and, with ``--smi``, ``"%8d:%8lu:%8ld%8ld\\n"`` (the SMIs counted
during that cycle, glued on without a separator).  The preamble has
``Max CPUs =``, ``Online CPUs =``, ``# /dev/cpu_dma_latency set to 0us`` and one
``Thread N Interval: X`` line per thread.  There are no absolute times: the
importer reconstructs them (see :func:`reconstruct`).

Two cyclictest quirks matter:

* It prints ``Thread N Interval`` *after* adding the distance (``-d``, default
  500 µs) for the next thread, so the header shows thread N+1's interval
  unless a histogram was asked for (which forces distance 0).
* After a late wake-up it silently skips the periods it missed
  (``while (now > next) next += interval``); the skipped periods are
  reconstructed from the latency as the ``overruns`` column.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._common import Parsed, SourceSummary, ThreadSamples, fail, iter_line_chunks, show
from .cyclictest_quiet import summary_from_line

FORMAT = "cyclictest-verbose"
DEFAULT_DISTANCE_US = 500

_SAMPLE = re.compile(r"\s*(\d+):\s*(\d+):(.*)")
_HEADER = re.compile(r"Thread (\d+) Interval: (\d+)\s*")
_PREAMBLE = (
    re.compile(r"Max CPUs = \d+\s*"),
    re.compile(r"Online CPUs = \d+\s*"),
    re.compile(r"Using \d+ cpus\.\s*"),
    re.compile(r"Thread \d+ using cpu \d+\.\s*"),
    re.compile(r"#.*"),
    re.compile(r"(WARN|warning|defaulting|policy and priority|expanding).*", re.IGNORECASE),
    re.compile(r"\s*"),
)


def sniff(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return bool(re.search(r"^Thread \d+ Interval: \d+", text, re.M)) or bool(
        re.search(r"^\s+\d+:\s+\d+:\s+-?\d+", text, re.M)
    )


def parse(path: Path) -> Parsed:
    """Read a whole cyclictest ``-v`` log into per-thread latency series (unit not yet known).

    The in-memory form of :class:`VerboseReader` (the importer itself streams: it never holds every sample).
    """
    reader = VerboseReader(path)
    blocks: dict[int, list[SampleBlock]] = {}
    for chunk in reader.chunks():
        for block in chunk:
            blocks.setdefault(block.thread, []).append(block)
    parsed = reader.parsed()
    empty = np.zeros(0, np.int64)
    for thread in sorted(reader.headers):
        mine = blocks.get(thread, [])
        parsed.samples.append(ThreadSamples(
            thread=thread,
            seq=np.concatenate([b.seq for b in mine]) if mine else empty,
            latency_ns=np.concatenate([b.latency for b in mine]) if mine else empty,  # still in the source's unit
            smi_delta=(np.concatenate([b.smi_delta for b in mine]) if mine else empty) if reader.smi_mode else None,
        ))
    return parsed


@dataclass(frozen=True)
class SampleBlock:
    """Consecutive samples of one thread, as printed (latency in the source's unit)."""

    thread: int
    seq: np.ndarray  # int64 cycle numbers, increasing
    latency: np.ndarray  # int64
    smi_delta: np.ndarray  # int64 SMIs counted during each cycle (zeros without --smi)


class VerboseReader:
    """A cyclictest ``-v`` log read a few MiB at a time (:func:`iter_line_chunks`).

    :meth:`chunks` yields, for each chunk of the file, its samples as one :class:`SampleBlock` per thread
    (threads in increasing order); memory holds one chunk, whatever the file's size.  A chunk of plain
    ``thread:cycle:latency`` lines (all but the preamble and the closing summary) is parsed with numpy in
    one go, any other line by line, with the same checks and messages.  Once :meth:`chunks` is exhausted,
    :attr:`headers`, :attr:`summaries` (``-v -q`` prints them at exit) and :attr:`smi_mode` describe the whole
    file, and :meth:`parsed` gives them as a :class:`Parsed` without samples.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._state = _State(path)

    @property
    def headers(self) -> dict[int, int]:
        """``Thread N Interval:`` values (µs) by thread; complete before the first sample (the log's order)."""
        return self._state.headers

    @property
    def summaries(self) -> list[SourceSummary]:
        return self._state.summaries

    @property
    def smi_mode(self) -> bool:
        return bool(self._state.smi_mode)

    def chunks(self) -> Iterator[list[SampleBlock]]:
        """Yield each chunk's samples; raise :class:`ImportFormatError` naming the line on bad input."""
        state = self._state
        for first_line, chunk in iter_line_chunks(self.path, FORMAT):
            if not (state.headers and state.smi_mode is not True and _fast_chunk(chunk, first_line, state)):
                for number, line in enumerate(chunk.decode("utf-8").split("\n"), first_line):
                    state.line(number, line)
            taken = state.take()
            if taken:
                yield taken
        if not state.headers:
            raise fail(FORMAT, self.path, "preamble", "no 'Thread N Interval:' header", "was cyclictest run with -v?")
        if not state.seen_samples:
            raise fail(FORMAT, self.path, "body", "no sample lines", "the run printed nothing; is the file complete?")

    def parsed(self) -> Parsed:
        """What the file said besides its samples (call after :meth:`chunks` is exhausted)."""
        parsed = Parsed(format=FORMAT, path=self.path, role="samples", summaries=self.summaries)
        parsed.settings["interval_headers_us"] = [self.headers[t] for t in sorted(self.headers)]
        return parsed


class _State:
    """What the parse has seen so far: headers, summaries, and per thread its samples in numpy blocks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.headers: dict[int, int] = {}
        self.summaries: list[SourceSummary] = []  # "-v -q" also prints the summary lines at exit
        self.smi_mode: bool | None = None
        self.seen_samples = False
        self.blocks: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}  # the current chunk's
        self.last_cycle: dict[int, int] = {}
        self._pending: dict[int, tuple[list[int], list[int], list[int]]] = {}  # the slow path's current lists

    def flush(self, thread: int) -> None:
        pending = self._pending.pop(thread, None)
        if pending and pending[0]:
            self.blocks.setdefault(thread, []).append(tuple(np.asarray(v, dtype=np.int64) for v in pending))

    def take(self) -> list[SampleBlock]:
        """The samples read since the last call, one block per thread in thread order; forgotten here."""
        for thread in list(self._pending):
            self.flush(thread)
        taken = []
        for thread in sorted(self.blocks):
            parts = self.blocks[thread]
            if not parts:
                continue
            seq, latency, smi = (p[0] if len(parts) == 1 else np.concatenate(p) for p in zip(*parts, strict=True))
            taken.append(SampleBlock(thread=thread, seq=seq, latency=latency, smi_delta=smi))
        self.blocks = {}
        return taken

    def add_block(self, thread: int, seq: np.ndarray, latency: np.ndarray) -> None:
        self.flush(thread)
        self.blocks.setdefault(thread, []).append((seq, latency, np.zeros(seq.size, np.int64)))
        self.last_cycle[thread] = int(seq[-1])
        self.seen_samples = True

    def line(self, number: int, line: str) -> None:
        path = self.path
        match = _SAMPLE.fullmatch(line)
        if match:
            thread, cycle = int(match[1]), int(match[2])
            latency, smi = _split_tail(match[3], self.smi_mode, path, number, line)
            if self.smi_mode is None:
                self.smi_mode = smi is not None
            elif self.smi_mode != (smi is not None):
                raise fail(FORMAT, path, f"line {number}", f"{show(line)} has "
                           f"{'no ' if self.smi_mode else 'an '}SMI field unlike the lines before")
            if thread > 4095 or cycle >= 1 << 48:
                raise fail(FORMAT, path, f"line {number}", f"{show(line)}: thread or cycle number is implausible")
            if self.headers and thread not in self.headers:
                raise fail(FORMAT, path, f"line {number}", f"thread {thread} has no 'Thread {thread} Interval:' header")
            last = self.last_cycle.get(thread)
            if last is not None and cycle <= last:
                raise fail(FORMAT, path, f"line {number}",
                           f"cycle {cycle} of thread {thread} does not follow cycle {last}",
                           "lines are duplicated or out of order")
            seqs, lats, smis = self._pending.setdefault(thread, ([], [], []))
            seqs.append(cycle)
            lats.append(latency)
            smis.append(0 if smi is None else smi)
            self.last_cycle[thread] = cycle
            self.seen_samples = True
            if len(seqs) >= 1 << 16:  # bounded lists: into numpy every 65536 lines
                self.flush(thread)
            return
        match = _HEADER.fullmatch(line)
        if match:
            thread, interval = int(match[1]), int(match[2])
            if self.seen_samples or thread in self.headers or thread != len(self.headers) or not (
                    0 < interval <= 10_000_000):
                raise fail(FORMAT, path, f"line {number}", f"unexpected header {show(line)}")
            self.headers[thread] = interval
            return
        summary = summary_from_line(line)
        if summary is not None:
            self.summaries.append(summary)
            return
        if any(p.fullmatch(line) for p in _PREAMBLE):
            return
        raise fail(FORMAT, path, f"line {number}", f"{show(line)} is not a 'thread:cycle:latency' line")


def _fast_chunk(chunk: bytes, first_line: int, state: _State) -> bool:
    """Parse a chunk made only of ``%8d:%8lu:%8ld`` lines with numpy; False (nothing taken) for any other chunk.

    Checked exactly as the line parser checks: two colons each right after a digit, three numbers per line,
    a minus sign only in front of the latency, known threads, cycles increasing per thread.
    """
    del first_line  # the slow path reports line numbers; the fast one only accepts what it would accept
    if not chunk.endswith(b"\n"):
        chunk += b"\n"
    if chunk.translate(None, b"0123456789 :-\n"):
        return False
    text = np.frombuffer(chunk, np.uint8)
    newlines = np.flatnonzero(text == 10)
    colon = text == 58
    colons = np.cumsum(colon, dtype=np.int32)  # int32: a chunk is far below 2 GiB (a quarter of int64 memory)
    per_line = np.diff(np.concatenate([[0], colons[newlines]]))
    if per_line.size == 0 or np.any(per_line != 2):
        return False
    if np.any(~np.isin(text[np.flatnonzero(colon) - 1], np.frombuffer(b"0123456789", np.uint8))):
        return False  # "1 :2" is no sample line
    separator = (text == 32) | colon | (text == 10)
    starts = ~separator & np.concatenate([[True], separator[:-1]])
    tokens_per_line = np.diff(np.concatenate([[0], np.cumsum(starts, dtype=np.int32)[newlines]]))
    if np.any(tokens_per_line != 3):
        return False
    minus = np.flatnonzero(text == 45)
    if minus.size:
        line_of = np.searchsorted(newlines, minus)
        line_start = np.concatenate([[0], newlines[:-1] + 1])[line_of]
        colons_before = colons[minus] - colons[line_start] + colon[line_start]
        if np.any(~starts[minus]) or np.any(colons_before != 2):
            return False
    try:
        values = np.array(chunk.replace(b":", b" ").split()).astype(np.int64).reshape(-1, 3)
    except (ValueError, OverflowError):
        return False
    thread, cycle, latency = values[:, 0], values[:, 1], values[:, 2]
    if np.any(thread > 4095) or np.any(cycle >= 1 << 48) or np.any(np.abs(latency) >= 10**15):
        return False
    if not np.all(np.isin(np.unique(thread), list(state.headers))):
        return False
    order = np.argsort(thread, kind="stable")
    threads, bounds = np.unique(thread[order], return_index=True)
    bounds = np.append(bounds, thread.size)
    pieces = []
    for t, begin, end in zip(threads.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        rows = order[begin:end]
        seq = cycle[rows]
        last = state.last_cycle.get(t)
        if np.any(np.diff(seq) <= 0) or (last is not None and seq[0] <= last):
            return False  # the line parser says where
        pieces.append((t, seq, latency[rows]))
    state.smi_mode = False
    for t, seq, lat in pieces:
        state.add_block(t, seq, lat)
    return True


def _split_tail(tail: str, smi_mode: bool | None, path: Path, number: int, line: str) -> tuple[int, int | None]:
    tokens = tail.split()
    # "%8ld%8ld" glues the SMI count to a latency of 8 or more digits: split by width.
    if len(tokens) == 1 and smi_mode and len(tail) == 16:
        tokens = [tail[:8], tail[8:]]
    if len(tokens) not in (1, 2) or not all(re.fullmatch(r"-?\d{1,15}", t) for t in tokens):
        raise fail(FORMAT, path, f"line {number}", f"{show(line)} is not a 'thread:cycle:latency' line")
    return int(tokens[0]), (int(tokens[1]) if len(tokens) == 2 else None)


def resolve_intervals(headers_us: list[int], options: dict | None) -> tuple[list[int], str]:
    """Each thread's interval in µs from the headers (and the command line when known), with how."""
    options = options or {}
    count = len(headers_us)
    if options.get("interval_us") is not None:
        base = int(options["interval_us"])
        distance = 0 if options.get("histogram") else int(options.get("distance_us", DEFAULT_DISTANCE_US))
        intervals = [base + k * distance for k in range(count)]
        if min(intervals) <= 0:
            return list(headers_us), "from the 'Thread N Interval:' headers (the command line gives no valid -i/-d)"
        return intervals, (f"from the command line: -i {base}, distance {distance} µs "
                           f"(interval of thread k = {base} + k*{distance})")
    if options.get("histogram"):
        return list(headers_us), "from the 'Thread N Interval:' headers (histogram mode: no distance added)"
    if count >= 2:
        distance = headers_us[1] - headers_us[0]
        intervals = [h - distance for h in headers_us]
        if distance >= 0 and intervals[0] > 0 and all(
            b - a == distance for a, b in itertools.pairwise(headers_us)
        ):
            return intervals, (f"from the 'Thread N Interval:' headers minus the distance {distance} µs "
                               "(cyclictest prints each header after adding the distance for the next thread)")
        return list(headers_us), "from the 'Thread N Interval:' headers as printed (irregular distances)"
    interval = headers_us[0] - DEFAULT_DISTANCE_US
    if interval <= 0:
        return list(headers_us), "from the 'Thread 0 Interval:' header as printed"
    return [interval], (f"from the 'Thread 0 Interval:' header minus cyclictest's default distance "
                        f"{DEFAULT_DISTANCE_US} µs (ASSUMED: give the --json file to know -d)")


def reconstruct(
    latency_ns: np.ndarray, seq: np.ndarray, interval_ns: int, resolution_ns: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Expected wake-up times (from 0) and overruns of one thread, from its latencies.

    cyclictest advances its target by one interval per wake-up and then, while the
    target is in the past, by further intervals: a wake-up ``L`` ns late skips
    ``(L - 1) // interval`` periods (none when ``L <= interval``).  A latency
    printed in µs is truncated, so the true one is taken as the printed one plus
    ``resolution_ns - 1``.  Returns (expected_ns, overruns), where
    ``overruns[i]`` is the number of periods skipped before wake-up ``i``.
    """
    if len(latency_ns) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    latency = latency_ns.astype(np.int64) + (resolution_ns - 1)
    span = float(seq[-1]) * interval_ns + float(np.sum(np.maximum(latency, 0), dtype=np.float64))
    if span >= 2.0**62 or float(np.max(np.abs(latency))) >= 2.0**61:
        raise ValueError(f"cycle numbers and latencies add up to {span:.3g} ns, beyond the int64 range")
    skipped = np.where(latency > interval_ns, (latency - 1) // interval_ns, 0).astype(np.int64)
    overruns = np.zeros(len(latency), dtype=np.int64)
    overruns[1:] = skipped[:-1]
    steps = np.zeros(len(latency), dtype=np.int64)
    if len(latency) > 1:
        steps[1:] = (np.diff(seq) + overruns[1:]) * interval_ns
    steps[0] = seq[0] * interval_ns if len(seq) else 0
    return np.cumsum(steps), overruns
