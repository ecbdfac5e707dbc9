"""Sample sources (cyclictest ``-v``, jitterdebugger ``samples.raw``) into a dataset, chunk by chunk.

A builder reads the primary file a chunk at a time and hands each chunk's rows to a sink
(:class:`TableSink` in memory, or a :class:`jitterscope.dataset.DatasetStream` writing row groups), so memory
is bounded by one chunk whatever the file's size.  What needs the whole file is accumulated on the way: per
thread its count, extremes and sum of latencies (checked against the tool's summary at the end), seq gaps,
overruns, and the running values that reconstruction carries from one chunk to the next.  When something
only the end of the file says changes the reconstruction (cyclictest ``-v -q`` prints each thread's
interval in its closing summary lines), the rows written so far are discarded and the file is read again.
Within a chunk, rows are in thread order; a file of one chunk gives the rows in the same order as
reading it whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from ...dataset import Metadata, ThreadInfo
from ...errors import ImportFormatError
from ._build import LatencyTally, check_against, merged_summaries, metadata_for, other_path
from ._common import Parsed, fail
from .cyclictest_quiet import scale as scale_summaries
from .cyclictest_verbose import FORMAT as VERBOSE_FORMAT
from .cyclictest_verbose import VerboseReader, resolve_intervals
from .jitterdebugger import SamplesReader


class Sink(Protocol):
    """Where a builder puts its rows."""

    def write(self, table: pa.Table, kind: str) -> None: ...

    def discard(self) -> None: ...


class TableSink:
    """Rows kept in memory (:func:`jitterscope.io.import_files`)."""

    def __init__(self) -> None:
        self._tables: list[pa.Table] = []

    def write(self, table: pa.Table, kind: str) -> None:
        del kind  # import_files returns the table as built; write_dataset casts it to the contract
        self._tables.append(table)

    def discard(self) -> None:
        self._tables = []

    def table(self) -> pa.Table:
        tables = [t for t in self._tables if t.num_rows] or self._tables[:1]
        return pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0]


@dataclass
class _Carry:
    """One cyclictest thread's reconstruction state between chunks, and what its summary is checked against."""

    interval_ns: int
    tally: LatencyTally = field(default_factory=LatencyTally)
    expected_ns: int = 0  # of the last row
    seq: int = -1  # of the last row
    skipped: int = 0  # periods the last row's lateness skips before the next one
    overruns: int = 0
    smi: int = 0  # running SMI count
    positive_latency: int = 0  # sum of max(latency + resolution - 1, 0): the int64-range check
    largest_latency: int = 0  # largest |latency + resolution - 1|


def _reconstruct_block(latency_ns: np.ndarray, seq: np.ndarray, carry: _Carry, resolution_ns: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cyclictest_verbose.reconstruct` continued from ``carry`` (the thread's rows before these)."""
    interval_ns = carry.interval_ns
    latency = latency_ns + (resolution_ns - 1)
    skipped = np.where(latency > interval_ns, (latency - 1) // interval_ns, 0).astype(np.int64)
    overruns = np.empty(len(latency), dtype=np.int64)
    overruns[0] = carry.skipped
    overruns[1:] = skipped[:-1]
    steps = np.empty(len(latency), dtype=np.int64)
    steps[1:] = (np.diff(seq) + overruns[1:]) * interval_ns
    if carry.seq < 0:  # the thread's first row: its target is seq * interval from 0
        steps[0] = seq[0] * interval_ns
        expected = np.cumsum(steps)
    else:
        steps[0] = (seq[0] - carry.seq + overruns[0]) * interval_ns
        expected = np.cumsum(steps) + carry.expected_ns
    carry.expected_ns, carry.seq, carry.skipped = int(expected[-1]), int(seq[-1]), int(skipped[-1])
    carry.overruns += int(overruns.sum())
    carry.positive_latency += int(np.maximum(latency, 0).sum(dtype=np.int64))
    carry.largest_latency = max(carry.largest_latency, int(np.abs(latency).max()))
    return expected, overruns


def _verbose_plan(reader: VerboseReader, companions: list[Parsed], options: dict[str, Any], resolution: int,
                  with_embedded: bool) -> tuple[list[int], str, list[Parsed]]:
    """(interval of each thread in µs, how it was found, companions) from the headers and the companions.

    With ``with_embedded``, the summary lines at the end of a ``-v -q`` log count as a companion (known only
    once the file has been read).
    """
    if with_embedded and reader.summaries:
        embedded = Parsed(format="cyclictest-quiet", path=reader.path, role="summary",
                          summaries=[type(s)(**vars(s)) for s in reader.summaries])
        companions = [*companions, embedded]
    headers = [reader.headers[t] for t in sorted(reader.headers)]
    if not headers:  # sample lines without the preamble (a log cut at its start): no interval to go by
        raise fail(VERBOSE_FORMAT, reader.path, "preamble", "no 'Thread N Interval:' header",
                   "was cyclictest run with -v, and is the start of its output in the file?")
    intervals_us, how = resolve_intervals(headers, options)
    for comp in companions:
        if comp.format == "cyclictest-quiet" and comp.resolution_ns is None:
            scale_summaries(comp, resolution)
    quiet = next((c for c in companions if c.format == "cyclictest-quiet"), None)
    if quiet is not None and len(quiet.summaries) == len(headers):
        intervals_us = [s.interval_ns // 1000 for s in quiet.summaries]
        how = "from the I: field of cyclictest's summary lines"
    return intervals_us, how, companions


def build_cyclictest_verbose(reader: VerboseReader, companions: list[Parsed], sink: Sink) -> Metadata:
    """Stream a cyclictest ``-v`` log into ``sink``; return the dataset's metadata.

    Two passes only when the log's closing summary lines (``-v -q``) give other intervals or CPUs than
    its headers and the companions did.
    """
    options: dict[str, Any] = {}
    resolution = None
    for comp in companions:
        options.update(comp.settings.get("options", {}))
        if comp.format == "cyclictest-json":
            resolution = comp.resolution_ns
    if options.get("nsecs"):
        resolution = 1
    notes: list[str] = []
    if resolution is None:
        resolution = 1000
        notes.append("latencies taken as µs: cyclictest -v output does not say its unit (-N prints ns); "
                     "give the --json file to know")
    path = reader.path
    forced: tuple[list[int], list[int]] | None = None  # the second pass's intervals and CPUs
    while True:
        carries, cpus, has_smi, used = _verbose_pass(reader, companions, options, resolution, sink, forced)
        intervals_us, how_interval, all_companions = _verbose_plan(reader, companions, options, resolution, True)
        summaries = merged_summaries(all_companions)
        final_cpus = [_cpu(summaries, t) for t in sorted(reader.headers)]
        if used == (intervals_us, final_cpus):
            break
        if forced is not None:  # cannot happen: the second pass used what the whole file says
            raise ImportFormatError(f"{path}: the intervals changed between two reads of the file; "
                                    "is it being written to?")
        sink.discard()
        forced = (intervals_us, final_cpus)
        reader = VerboseReader(path)
    primary = reader.parsed()
    reconstructed = {
        "expected_ns": ("seq * interval (plus skipped periods) from 0 at each thread's first wake-up: cyclictest -v "
                        f"prints no absolute times; interval {how_interval}"),
        "actual_ns": "expected_ns + the printed latency "
                     f"({'ns' if resolution == 1 else 'µs, truncated by cyclictest'})",
        "overruns": ("periods cyclictest skipped silently after a late wake-up: a wake-up L ns late (a printed "
                     "µs value taken as its upper end) skips (L - 1) // interval periods"),
        "cpu": "from the --json file's per-thread cpu, else -1 (unknown)",
    }
    if options.get("relative"):
        notes.append("cyclictest ran with -r (relative timer): wake-up targets were not on a fixed grid, so "
                     "expected_ns is only approximate")
    if options.get("oscope", 1) > 1:
        notes.append(f"cyclictest ran with -o {options['oscope']}: each line is the maximum of "
                     f"{options['oscope']} wake-ups")
    known = set(reader.headers)
    if summaries and set(summaries) != known:
        raise ImportFormatError(f"{primary.path}: threads {sorted(known)} but {other_path(all_companions)} describe "
                                f"threads {sorted(summaries)}; the files are not from the same run")
    if has_smi:
        reconstructed["smi"] = "running sum of the per-wake-up SMI counts of --smi, from 0"
    threads = []
    for thread, cpu in zip(sorted(reader.headers), cpus, strict=True):
        carry = carries[thread]
        span = float(carry.seq) * carry.interval_ns + float(carry.positive_latency) if carry.tally.n else 0.0
        if span >= 2.0**62 or float(carry.largest_latency) >= 2.0**61:
            raise ImportFormatError(f"{primary.path}: not valid cyclictest-verbose output: thread {thread}: cycle "
                                    f"numbers and latencies add up to {span:.3g} ns, beyond the int64 range; "
                                    "the file is damaged")
        summary = summaries.get(thread)
        extra = check_against(thread, carry.tally, summary, "cyclictest", notes, primary)
        threads.append(ThreadInfo(
            thread=thread, cpu=cpu, tid=summary.tid if summary is not None else None, interval_ns=carry.interval_ns,
            samples=carry.tally.n, drops=carry.tally.gaps, overruns=carry.overruns, extra=extra,
        ))
    assumptions = {"clocks": "each thread's times rebuilt from its own first wake-up (cyclictest -v prints no "
                             "times): threads are not aligned, so no event joins several CPUs",
                   "interval": how_interval}
    if any(t.cpu < 0 for t in threads):
        assumptions["cpus"] = "not recorded (give cyclictest's --json file)"
    if resolution == 1000 and not any(c.format == "cyclictest-json" for c in all_companions) \
            and not options.get("nsecs"):
        assumptions["unit"] = "µs (the -v output does not say; give the --json file)"
    return metadata_for("import", threads, primary, all_companions, reconstructed, notes, absolute_times=False,
                        assumptions=assumptions)


def _cpu(summaries: dict, thread: int) -> int:
    summary = summaries.get(thread)
    return summary.cpu if summary is not None and summary.cpu is not None else -1


def _verbose_pass(reader: VerboseReader, companions: list[Parsed], options: dict[str, Any], resolution: int,
                  sink: Sink, forced: tuple[list[int], list[int]] | None
                  ) -> tuple[dict[int, _Carry], list[int], bool, tuple[list[int], list[int]]]:
    """One read of the log into ``sink``: (per-thread state, CPUs, SMI column?, (intervals µs, CPUs) used)."""
    carries: dict[int, _Carry] = {}
    cpus: list[int] = []
    intervals_us: list[int] = []
    columns = ["cpu", "thread", "seq", "expected_ns", "actual_ns", "overruns"]
    for chunk in reader.chunks():
        if not carries:  # the first samples: every header has been read
            if forced is None:
                intervals_us, _, known = _verbose_plan(reader, companions, options, resolution, False)
                summaries = merged_summaries(known)
                cpus = [_cpu(summaries, t) for t in sorted(reader.headers)]
            else:
                intervals_us, cpus = forced
            carries = {t: _Carry(interval_ns=i * 1000) for t, i in zip(sorted(reader.headers), intervals_us,
                                                                        strict=True)}
            if reader.smi_mode:
                columns.append("smi")
        cpu_of = dict(zip(sorted(reader.headers), cpus, strict=True))
        pieces: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        for block in chunk:
            carry = carries[block.thread]
            latency = block.latency * resolution
            carry.tally.update(latency, block.seq)
            expected, overruns = _reconstruct_block(latency, block.seq, carry, resolution)
            n = block.seq.size
            pieces["cpu"].append(np.full(n, cpu_of[block.thread], np.int32))
            pieces["thread"].append(np.full(n, block.thread, np.int32))
            pieces["seq"].append(block.seq)
            pieces["expected_ns"].append(expected)
            pieces["actual_ns"].append(expected + latency)
            pieces["overruns"].append(overruns.astype(np.int32))
            if reader.smi_mode:
                smi = np.cumsum(block.smi_delta) + carry.smi
                carry.smi = int(smi[-1])
                pieces["smi"].append(smi)
        sink.write(pa.table({k: np.concatenate(v) for k, v in pieces.items()}), "import")
    return carries, cpus, reader.smi_mode, (intervals_us, cpus)


class _ValueCounts:
    """Exact counts of int64 values (for an exact median without holding every value).

    Memory is the number of distinct values: a few thousand for the steps of a periodic timer.
    """

    def __init__(self) -> None:
        self.values = np.zeros(0, np.int64)
        self.counts = np.zeros(0, np.int64)

    def update(self, values: np.ndarray) -> None:
        if values.size == 0:
            return
        new, counts = np.unique(values, return_counts=True)
        merged, inverse = np.unique(np.concatenate([self.values, new]), return_inverse=True)
        total = np.zeros(merged.size, np.int64)
        np.add.at(total, inverse, np.concatenate([self.counts, counts]))
        self.values, self.counts = merged, total

    def median(self) -> float:
        """As ``numpy.median`` of the values counted (the mean of the two middle ones for an even count)."""
        n = int(self.counts.sum())
        ends = np.cumsum(self.counts)
        middle = self.values[np.searchsorted(ends, [(n - 1) // 2, n // 2], side="right")]
        return float(np.mean(middle)) if n % 2 == 0 else float(middle[1])


@dataclass
class _Grid:
    """One jitterdebugger thread's grid of targets, found over three reads of the file."""

    n: int = 0
    rough_first: int = 0  # actual - recorded latency of the first record
    rough_last: int = 0
    steps: _ValueCounts = field(default_factory=_ValueCounts)
    interval_ns: int = 0
    seq_last: int = -1
    upper: int | None = None  # bounds on the first target, from every record
    lower: int | None = None
    bases: _ValueCounts | None = None  # only when the bounds disagree: for their median
    first_ns: int = 0
    off: int = 0  # records whose latency the grid does not give back exactly
    tally: LatencyTally = field(default_factory=LatencyTally)
    catch_up: int = 0
    late: int = 0
    actual_last: int | None = None


def build_jitterdebugger(reader: SamplesReader, companions: list[Parsed], sink: Sink) -> Metadata:
    """Stream a jitterdebugger ``samples.raw`` into ``sink``; return the dataset's metadata.

    The targets' grid needs the whole file (the interval is the median step, the first target the one every
    record agrees with), so the file is read three times, a chunk at a time: steps, then the grid's bounds,
    then the rows.
    """
    primary = reader.parsed()
    unit = primary.resolution_ns or 1000
    notes = list(primary.notes)
    summaries = merged_summaries(companions)
    stdout = next((c for c in companions if c.format == "jitterdebugger-stdout"), None)
    results = next((c for c in companions if c.format == "jitterdebugger-results"), None)
    if results is not None and results.resolution_ns != primary.resolution_ns:
        raise ImportFormatError(f"{primary.path}: samples were read in µs but {results.path} says "
                                f"resolution_in_ns={results.resolution_ns}; re-run the import (internal order error)")
    reconstructed = {
        "expected_ns": ("first target + seq * interval: jitterdebugger's targets lie on a grid of its interval; "
                        "the first target is the one consistent with every record (each says the target lies "
                        "in (actual - (latency + 1 unit), actual - latency]), so actual_ns - expected_ns "
                        "truncated to the recorded unit gives back each recorded latency exactly, and finer"),
        "interval_ns": "median step of (actual_ns - recorded latency), rounded to the recorded unit: "
                       "samples.raw and results.json do not record the interval",
        "seq": "grid index of each target from the first record's: wake-ups missing from samples.raw "
               "(jitterdebugger's ring drops silently) appear as seq gaps",
        "overruns": ("threads[].overruns, not a column (jitterdebugger fires every target, late ones at once): "
                     "the catch-up wake-ups, whose target had passed when the previous wake-up happened, are the "
                     "periods jitterscope-capture would have counted as overruns and skipped; "
                     "threads[].late_wakeups counts the wake-ups later than one interval"),
        "cpu": ("the A: (affinity) field of jitterdebugger's stdout" if stdout else
                "ASSUMED: thread i on CPU i (jitterdebugger's default, all online CPUs in order); "
                "give its stdout to know"),
    }
    grids: dict[int, _Grid] = {}
    for chunk in reader.chunks():  # first read: every record checked; each thread's steps counted
        for part in chunk:
            grid = grids.setdefault(part.thread, _Grid())
            rough = part.actual_ns - part.latency_ns
            if grid.n == 0:
                grid.rough_first = int(rough[0])
            else:
                grid.steps.update(np.array([rough[0] - grid.rough_last], np.int64))
            grid.steps.update(np.diff(rough))
            grid.n += rough.size
            grid.rough_last = int(rough[-1])
    expected_threads = sorted(summaries) if summaries else sorted(grids)
    unknown = sorted(set(grids) - set(expected_threads))
    if unknown:
        raise ImportFormatError(f"{primary.path}: holds samples of thread(s) {unknown} that the results/stdout files "
                                "do not know; the files are not from the same run")
    for thread in expected_threads:
        grid = grids.setdefault(thread, _Grid())
        if grid.n >= 2:
            grid.interval_ns = round(grid.steps.median() / unit) * unit
            if grid.interval_ns <= 0:
                raise _off_grid(primary, thread)
    _grid_bounds(reader, grids, unit, primary)
    for thread in expected_threads:
        grid = grids[thread]
        if grid.n >= 2 and grid.lower is not None and grid.upper is not None and grid.lower > grid.upper:
            grid.bases = _ValueCounts()
    if any(g.bases is not None for g in grids.values()):
        _grid_bounds(reader, grids, unit, primary)  # a fourth read, only for a grid the records disagree on
    for grid in grids.values():
        if grid.n >= 2 and grid.bases is None:
            assert grid.lower is not None and grid.upper is not None
            grid.first_ns = (grid.lower + grid.upper) // 2
        elif grid.bases is not None:
            grid.first_ns = int(grid.bases.median())
    cpus = {t: (summaries[t].cpu if t in summaries and summaries[t].cpu is not None and stdout else t)
            for t in expected_threads}
    wrote = False
    for chunk in reader.chunks():  # last read: the rows
        columns: dict[str, list[np.ndarray]] = {k: [] for k in ("cpu", "thread", "seq", "expected_ns", "actual_ns")}
        for part in chunk:
            grid = grids[part.thread]
            rough = part.actual_ns - part.latency_ns
            if grid.n >= 2:
                seq = np.rint((rough - grid.rough_first) / grid.interval_ns).astype(np.int64)
                expected = grid.first_ns + seq * grid.interval_ns
                if grid.bases is not None:
                    grid.off += int(np.count_nonzero((part.actual_ns - expected) // unit * unit != part.latency_ns))
            else:
                seq, expected = np.arange(rough.size, dtype=np.int64), rough
            grid.tally.update(part.latency_ns, seq)
            before = part.actual_ns[:-1] if grid.actual_last is None else np.concatenate(
                [[grid.actual_last], part.actual_ns[:-1]])
            grid.catch_up += int(np.sum(expected[1:] <= before)) if grid.actual_last is None else int(
                np.sum(expected <= before))
            if grid.interval_ns > 0:
                grid.late += int(np.sum(part.actual_ns - expected > grid.interval_ns))
            grid.actual_last = int(part.actual_ns[-1])
            n = rough.size
            columns["cpu"].append(np.full(n, cpus[part.thread], np.int32))
            columns["thread"].append(np.full(n, part.thread, np.int32))
            columns["seq"].append(seq)
            columns["expected_ns"].append(expected)
            columns["actual_ns"].append(part.actual_ns)
        sink.write(pa.table({k: np.concatenate(v) for k, v in columns.items()}), "import")
        wrote = True
    if not wrote:
        empty = np.zeros(0, np.int64)
        sink.write(pa.table({"cpu": empty.astype(np.int32), "thread": empty.astype(np.int32), "seq": empty,
                             "expected_ns": empty, "actual_ns": empty}), "import")
    threads = []
    for thread in expected_threads:
        grid = grids[thread]
        if grid.n >= 2 and grid.bases is None:
            assert grid.lower is not None and grid.upper is not None
            notes.append(f"thread {thread}: the grid of targets is pinned down to {grid.upper - grid.lower + 1} ns "
                         f"by the {grid.n} records (latencies are exact to that, not just to the recorded unit)")
        elif grid.bases is not None:
            assert grid.lower is not None and grid.upper is not None
            notes.append(f"thread {thread}: the targets are not exactly on one grid ({grid.off} of {grid.n} records "
                         f"disagree by up to {(grid.upper - grid.lower) / 1000:.3f} µs); grid from the median")
        summary = summaries.get(thread)
        extra = check_against(thread, grid.tally, summary, "jitterdebugger", notes, primary)
        extra["late_wakeups"] = grid.late
        if grid.catch_up or grid.late:
            notes.append(f"thread {thread}: {grid.late} wake-ups later than one interval; {grid.catch_up} catch-up "
                         "wake-ups (targets already passed) counted as overruns, as the capture counts skipped "
                         "periods")
        threads.append(ThreadInfo(thread=thread, cpu=cpus[thread], interval_ns=grid.interval_ns, samples=grid.n,
                                  drops=grid.tally.gaps, overruns=grid.catch_up,
                                  tid=summary.tid if summary else None, extra=extra))
    assumptions = {"interval": "the median step of the targets (jitterdebugger does not record it)"}
    if stdout is None:
        assumptions["cpus"] = "thread i on CPU i (jitterdebugger's default; give its stdout to know)"
    return metadata_for("import", threads, primary, companions, reconstructed, notes, absolute_times=True,
                        assumptions=assumptions)


def _off_grid(primary: Parsed, thread: int) -> ImportFormatError:
    return ImportFormatError(f"{primary.path}: thread {thread}'s wake-up targets are not on a grid of one "
                             "interval; not jitterdebugger samples.raw as known (or damaged)")


def _grid_bounds(reader: SamplesReader, grids: dict[int, _Grid], unit: int, primary: Parsed) -> None:
    """One read: each record's grid index (checked increasing) and bounds on the first target.

    A record of latency L (in units) at time A says its target lies in (A - L - unit, A - L]; on a grid
    ``first + seq * interval`` that bounds ``first``.  Where :attr:`_Grid.bases` is set, the bounds are
    known to disagree and this read counts the records' values of ``first`` instead, for their median.
    """
    collecting = any(g.bases is not None for g in grids.values())
    for grid in grids.values():
        grid.seq_last = -1
    for chunk in reader.chunks():
        for part in chunk:
            grid = grids[part.thread]
            if grid.n < 2 or (collecting and grid.bases is None):
                continue
            rough = part.actual_ns - part.latency_ns
            seq = np.rint((rough - grid.rough_first) / grid.interval_ns).astype(np.int64)
            if np.any(np.diff(seq) <= 0) or seq[0] <= grid.seq_last:
                raise _off_grid(primary, part.thread)
            grid.seq_last = int(seq[-1])
            base = rough - seq * grid.interval_ns
            if grid.bases is not None:
                grid.bases.update(base)
                continue
            upper, lower = int(base.min()), int((base - unit + 1).max())
            grid.upper = upper if grid.upper is None else min(grid.upper, upper)
            grid.lower = lower if grid.lower is None else max(grid.lower, lower)
