"""Streaming accumulators of the power-management correlation: bounded memory at any dataset size.

:func:`jitterscope.power.correlate` and :func:`~jitterscope.power.correlate_dataset` pass each
thread's derived counter rows once, chunk by chunk in ``seq`` order, through
``correlate._ThreadPass``, which feeds:

- :class:`CounterProfile`: the transitions (:class:`~.cpufreq.TransitionDetector`), histograms of
  latency, f_eff, |Δf_eff| and C0 (for the spike threshold, cpufreq's claim check and ranks), time in
  frequency, counter quality, SMI totals;
- the latency histogram and exceedance counts of each wake-up class (:class:`ConditionClasses`: near a
  transition, with an SMI, both, or away from both by C0 bin; one
  :class:`~jitterscope.summary.KeyedLatencyHistograms` update per chunk), merged at the end into each
  condition's inside and outside (:class:`ConditionCounts`), SMI coincidence counts (:class:`SmiCounts`),
  event-triggered sums over blocks (:class:`EventBlocks`), the rows of the lagged rank correlations' sample
  (:class:`RankSample`, ranked at the end by :class:`LaggedRanks`) and the rows kept for figures
  (:class:`DisplayRows`).

What the conditions need of the whole thread is settled on the way: a wake-up's distance to the
transitions is final once the detector can no longer place one near it (rows near an undecided jump
wait, a few per jump), a pending transition's event sums wait beside the totals, and without a given
threshold the exceedances come from the histograms at the pooled threshold, the top of its bucket.

Each thread's chunks go through its own worker (:func:`run_per_thread`; numpy and Parquet decoding
release the GIL, so the threads' derivation and accumulators overlap on several cores); the threads
meet only at the end (the pooled threshold and tests).

Memory is a few row groups read ahead, a chunk per thread, the histograms (a few thousand buckets
each), the event blocks (2 × :data:`EVENT_BLOCK_ROWS` latencies per thread), the rank sample
(:data:`RANK_SAMPLE_ROWS` rows per thread, :data:`RANK_SAMPLE_TOTAL` in all) and the results; not the series.

What is exact and what is bounded (stated in the result's ``params["methods"]``):

- exceedance counts, risk ratios, Fisher p-values, SMI shares, time in frequency: exact;
- conditional quantiles: from HDR histograms (:data:`RELATIVE_ERROR`), max exact;
- Mann-Whitney U and Cliff's delta: from the histograms, pairs in one bucket counted as ties,
  so U is within ±``rank.u_bound`` of the exact U (in the result);
- Spearman ranks of the lagged correlations: mid-ranks of histogram buckets (values in one
  bucket share a rank: latency in ns and |Δf_eff| in Hz in 0.1 % buckets, C0 in 1 ppm buckets),
  over every wake-up up to :data:`RANK_SAMPLE_ROWS` per thread, beyond that over a seeded uniform
  sample of blocks (:class:`RankSample`; the n and null band are the sample's);
- event-triggered surrogates: the events are shifted circularly *within* blocks of at least
  :data:`EVENT_BLOCK_ROWS` wake-ups (one block, the whole series, when it has fewer than twice that);
- the default spike threshold, when the series is read from a dataset: the p99 / median / MAD rule
  of :func:`~.correlate.default_threshold` on the HDR histogram (within :data:`RELATIVE_ERROR`).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..derive import CounterQuality, CounterSeries
from ..summary import HistogramResult, LatencyHistogram
from .association import CrossCorrelation, EventAverage, event_average_from_sums, event_sums
from .cpufreq import TimeInFrequency, TransitionDetector, Transitions

RELATIVE_ERROR = 1e-3
"""Relative bucket width of every histogram here (HDR, 1024 buckets per octave)."""
EVENT_BLOCK_ROWS = 1 << 20
"""Event-triggered surrogates shift events circularly within blocks of this many wake-ups (or more)."""
DISPLAY_ROWS = 200_000
"""Rows per thread kept for figures: all of them up to this many, else the latest-latency wake-up of each run of k."""
C0_SCALE = 1e6
"""C0 residency is ranked in ppm, on a histogram with one bucket per ppm (:data:`C0_RELATIVE_ERROR`)."""
C0_RELATIVE_ERROR = 2.0 ** -20  # every integer below 2**20 > 10**6 ppm gets its own bucket
RANK_SAMPLE_ROWS = 1 << 20
"""Wake-ups per thread the lagged rank correlations use at most (:class:`RankSample`)."""
RANK_SAMPLE_TOTAL = 1 << 21
"""...and over all threads together (24 bytes a wake-up are kept until the end: 16 CPUs get 2^17 each)."""
RANK_BLOCK_ROWS = 1 << 14
"""Consecutive wake-ups per block of that sample (far longer than the lags, so few pairs are lost at its edges)."""
TIF_BIN_MHZ = 100.0
IN_FLIGHT = 2
"""Batches read ahead of the workers at most (:func:`run_per_thread`): bounds memory to a few row groups."""


def run_per_thread(batches: Iterable[tuple[int, Callable[[], Iterable[CounterSeries]]]],
                   handle: Callable[[CounterSeries], Any], *, in_flight: int = IN_FLIGHT) -> None:
    """Call ``handle(chunk)`` on every non-empty chunk, each thread's chunks in order, threads in parallel.

    ``batches`` yields ``(thread, derive)`` (:func:`jitterscope.derive.iter_counter_batches`); the
    caller's thread reads, and each dataset thread's ``derive()`` and ``handle`` calls run in that
    thread's own worker, in the order yielded.  The accumulators are per thread, so the threads'
    work is independent; numpy and Parquet decoding release the GIL, so it overlaps on several
    cores.  At most ``in_flight`` batches wait for a worker (memory: a few row groups).  The first
    exception raised in a worker is raised here.
    """
    workers: dict[int, ThreadPoolExecutor] = {}
    pending: deque[Future[None]] = deque()

    def work(derive: Callable[[], Iterable[CounterSeries]]) -> None:
        for chunk in derive():
            if chunk.seq.size:
                handle(chunk)

    try:
        for thread, derive in batches:
            worker = workers.get(thread)
            if worker is None:
                worker = workers[thread] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"power-{thread}")
            pending.append(worker.submit(work, derive))
            while len(pending) > in_flight:
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        for worker in workers.values():
            worker.shutdown(wait=True)


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    # einsum's own loop: BLAS's threaded ddot is ~100x slower on a loaded machine (measured on 2 shared cores)
    return float(np.einsum("i,i->", x, y))


def _hist() -> LatencyHistogram:
    return LatencyHistogram(RELATIVE_ERROR)


def merge_quality(a: CounterQuality | None, b: CounterQuality) -> CounterQuality:
    """Quality of two chunks of one thread (counts add; the thread-wide facts are b's)."""
    if a is None:
        return b
    discarded = dict(a.discarded)
    for why, count in b.discarded.items():
        discarded[why] = discarded.get(why, 0) + count
    wraps = dict(a.wraps_corrected)
    for name, count in b.wraps_corrected.items():
        wraps[name] = wraps.get(name, 0) + count
    return CounterQuality(rows=a.rows + b.rows, valid=a.valid + b.valid, discarded=discarded,
                          wraps_corrected=wraps, counter_bits=b.counter_bits or a.counter_bits,
                          read_cycles_limit=b.read_cycles_limit, all_zero=b.all_zero, missing=b.missing)


@dataclass(frozen=True)
class ThreadFacts:
    """What the verdicts need to know of one thread's counters (in place of its whole series)."""

    thread: int
    cpu: int
    tsc_hz: float | None
    tsc_hz_source: str
    rows: int
    has_frequency: bool
    has_c0: bool
    has_smi: bool
    smi_events: int
    smi_total: float
    quality: CounterQuality

    def to_json(self) -> dict[str, Any]:
        """As :meth:`jitterscope.derive.CounterSeries.to_json`."""
        return {"thread": self.thread, "cpu": self.cpu, "tsc_hz": self.tsc_hz, "tsc_hz_source": self.tsc_hz_source,
                "rows": self.rows, "quality": self.quality.to_json()}


@dataclass
class ProfileResult:
    """Everything the profile learnt about one thread."""

    facts: ThreadFacts
    transitions: Transitions
    latency: HistogramResult
    latency_histogram: LatencyHistogram
    frequency: HistogramResult | None
    change: LatencyHistogram | None
    c0: LatencyHistogram | None
    frequency_within: int
    frequency_count: int
    time_in_frequency: TimeInFrequency


class CounterProfile:
    """The profile of one thread, fed its chunks (in ``seq`` order): transitions, histograms, totals.

    ``claimed_hz`` (cpufreq's recorded frequency, or None) and ``tolerance`` give the count of
    wake-ups whose f_eff agrees with the claim.  Sequential per thread (no ``merge``); the
    histograms it returns merge across threads.
    """

    def __init__(self, thread: int, cpu: int, *, relative_threshold: float, min_dwell: int,
                 claimed_hz: float | None, tolerance: float) -> None:
        self.thread, self.cpu = thread, cpu
        self.detector = TransitionDetector(thread, cpu, relative_threshold=relative_threshold, min_dwell=min_dwell)
        self.claimed_hz, self.tolerance = claimed_hz, tolerance
        self.latency, self.frequency, self.change = _hist(), _hist(), _hist()
        self.c0 = LatencyHistogram(C0_RELATIVE_ERROR)
        self.rows = 0
        self.quality: CounterQuality | None = None
        self.tsc_hz: float | None = None
        self.tsc_hz_source = "none"
        self.within = 0
        self.smi_events = 0
        self.smi_total = 0.0
        self.smi_known = 0
        self.tif: dict[int, float] = {}
        self._previous_f = np.nan
        self._previous_ns: int | None = None
        # the last chunk's |Δf_eff| and SMI masks, computed here once for the pass's other accumulators
        self.last_change = np.zeros(0)
        self.last_smi_known = self.last_smi = np.zeros(0, dtype=bool)

    def update(self, chunk: CounterSeries) -> CounterProfile:
        n = chunk.seq.size
        if n == 0:
            return self
        self.detector.update(chunk)
        self.tsc_hz, self.tsc_hz_source = chunk.tsc_hz, chunk.tsc_hz_source
        self.quality = merge_quality(self.quality, chunk.quality)
        self.latency.update(chunk.latency_ns)
        f = chunk.f_eff_hz
        finite = np.isfinite(f)
        f_finite = f[finite]  # every use below takes the finite f_eff: gathered once
        if f_finite.size:
            self.frequency.update(np.rint(f_finite).astype(np.int64))
            if self.claimed_hz:
                self.within += int(np.count_nonzero(np.abs(f_finite - self.claimed_hz)
                                                    <= self.tolerance * self.claimed_hz))
        change = self.last_change = np.abs(np.diff(np.concatenate(([self._previous_f], f))))
        self.change.update(np.rint(change[np.isfinite(change)]).astype(np.int64))
        c0 = chunk.c0[np.isfinite(chunk.c0)]
        self.c0.update(np.rint(c0 * C0_SCALE).astype(np.int64))
        smi = chunk.smi_delta
        known = np.isfinite(smi)
        self.smi_known += int(known.sum())
        positive = smi > 0  # False where unknown (NaN)
        self.last_smi_known, self.last_smi = known, positive  # the chunk's, for the caller's other accumulators
        self.smi_events += int(positive.sum())
        self.smi_total += float(smi[positive].sum())
        # time in frequency: each valid interval (not the thread's first row) weighted by its length
        if f_finite.size:
            expected = chunk.expected_ns
            intervals = np.empty(n, dtype=np.int64)
            intervals[1:] = expected[1:] - expected[:-1]
            intervals[0] = expected[0] - (self._previous_ns if self._previous_ns is not None else 0)
            seconds, levels = intervals[finite] / 1e9, f_finite
            if self._previous_ns is None and finite[0]:  # the thread's first row has no interval before it
                seconds, levels = seconds[1:], levels[1:]
            if levels.size:
                bins = np.floor(levels / 1e6 / TIF_BIN_MHZ + 0.5).astype(np.int64)
                low = int(bins.min())
                # a few dozen 100 MHz bins (f_eff is at most 8 x the TSC's): bincount, cheaper than unique
                totals = np.bincount(bins - low, weights=seconds)
                for b in np.flatnonzero(np.bincount(bins - low)).tolist():
                    self.tif[low + b] = self.tif.get(low + b, 0.0) + float(totals[b])
        self._previous_f = float(f[-1])
        self._previous_ns = int(chunk.expected_ns[-1])
        self.rows += n
        return self

    def result(self) -> ProfileResult:
        assert self.quality is not None, "no rows"
        facts = ThreadFacts(thread=self.thread, cpu=self.cpu, tsc_hz=self.tsc_hz, tsc_hz_source=self.tsc_hz_source,
                            rows=self.rows, has_frequency=self.frequency.count > 0, has_c0=self.c0.count > 0,
                            has_smi=self.smi_known > 0, smi_events=self.smi_events, smi_total=self.smi_total,
                            quality=self.quality)
        bins = sorted(self.tif)
        totals = np.array([self.tif[b] for b in bins])
        tif = TimeInFrequency(
            thread=self.thread, cpu=self.cpu, bin_mhz=TIF_BIN_MHZ,
            lower_mhz=tuple(float((b - 0.5) * TIF_BIN_MHZ) for b in bins), seconds=tuple(float(t) for t in totals),
            fraction=tuple(float(t / totals.sum()) for t in totals))
        return ProfileResult(
            facts=facts, transitions=self.detector.result(), latency=self.latency.result(),
            latency_histogram=self.latency, frequency=self.frequency.result() if self.frequency.count else None,
            change=self.change if self.change.count else None, c0=self.c0 if self.c0.count else None,
            frequency_within=self.within, frequency_count=self.frequency.count, time_in_frequency=tif)


@dataclass
class ConditionCounts:
    """Accumulator: latency inside and outside one condition (histograms, exceedance counts).

    ``update(inside, outside)`` / ``merge(other)`` (threads pool into the "all" scope by merging).
    """

    thresholds: tuple[float, ...]
    inside: LatencyHistogram = field(default_factory=_hist)
    outside: LatencyHistogram = field(default_factory=_hist)
    exceed_in: np.ndarray = field(default=None)  # type: ignore[assignment]
    exceed_out: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.exceed_in is None:
            self.exceed_in = np.zeros(len(self.thresholds), dtype=np.int64)
            self.exceed_out = np.zeros(len(self.thresholds), dtype=np.int64)

    def update(self, inside: np.ndarray, outside: np.ndarray) -> ConditionCounts:
        self.inside.update(inside)
        self.outside.update(outside)
        for k, threshold in enumerate(self.thresholds):
            self.exceed_in[k] += int(np.count_nonzero(inside > threshold))
            self.exceed_out[k] += int(np.count_nonzero(outside > threshold))
        return self

    def merge(self, other: ConditionCounts) -> ConditionCounts:
        self.inside.merge(other.inside)
        self.outside.merge(other.outside)
        self.exceed_in += other.exceed_in
        self.exceed_out += other.exceed_out
        return self

    def copy(self) -> ConditionCounts:
        return ConditionCounts(self.thresholds).merge(self)


@dataclass
class SmiCounts:
    """Accumulator: wake-ups with a known SMI count, with an SMI, spikes, and spikes with an SMI (exact)."""

    known: int = 0
    with_smi: int = 0
    spikes: int = 0
    spikes_with_smi: int = 0

    def update(self, latency: np.ndarray, smi_delta: np.ndarray, threshold: float) -> SmiCounts:
        known = np.isfinite(smi_delta)
        smi = smi_delta[known] > 0
        spike = latency[known] > threshold
        self.known += int(known.sum())
        self.with_smi += int(smi.sum())
        self.spikes += int(spike.sum())
        self.spikes_with_smi += int((spike & smi).sum())
        return self

    def merge(self, other: SmiCounts) -> SmiCounts:
        self.known += other.known
        self.with_smi += other.with_smi
        self.spikes += other.spikes
        self.spikes_with_smi += other.spikes_with_smi
        return self


EventSource = Callable[[], tuple[np.ndarray, np.ndarray]]
"""Where one kind of event is: ``() -> (decided rows, pending rows)`` (thread rows), asked at each block's end."""
SPECULATIVE_LIMIT = 256
"""Pending events (maybe transitions) whose sums :class:`EventBlocks` holds per kind; beyond, the oldest are
left out."""


class EventBlocks:
    """Accumulator: event-triggered sums of one thread's latency, block by block (see :func:`event_sums`).

    Each kind of event is fixed rows (an array), SMI rows found on the way (None), or an
    :data:`EventSource` for events decided only later (frequency transitions, found in the same pass): a
    block's pending candidates get their own sums, added once they are decided to be events, dropped
    once decided not to be (at most :data:`SPECULATIVE_LIMIT` held; :attr:`left_out` counts any beyond).
    Rows are buffered until 2 × ``block_rows`` are held, then the first ``block_rows`` are summed with
    their neighbours; the rest at :meth:`result`.  A series shorter than 2 × ``block_rows`` is one block,
    which is :func:`jitterscope.power.event_average` on the whole series.  A block draws its surrogate
    shifts for a kind when it holds an event or a pending candidate of that kind.
    """

    def __init__(self, kinds: Sequence[tuple[str, np.ndarray | EventSource | None]], *, max_lag: int,
                 n_surrogates: int, seeds: Sequence[np.random.SeedSequence],
                 block_rows: int = EVENT_BLOCK_ROWS) -> None:
        self.kinds = [(name, _as_source(where)) for name, where in kinds]
        self.max_lag, self.n_surrogates, self.block_rows = max_lag, n_surrogates, block_rows
        self.rngs = [np.random.default_rng(s) for s in seeds]
        self.lag_count = 2 * max_lag + 1
        self.sums = [[np.zeros(self.lag_count), np.zeros(self.lag_count, dtype=np.int64),
                      np.zeros((n_surrogates, self.lag_count)), np.zeros((n_surrogates, self.lag_count),
                                                                         dtype=np.int64)] for _ in self.kinds]
        self.events = [0] * len(self.kinds)
        self.left_out = [0] * len(self.kinds)
        self._speculative: list[dict[int, tuple[np.ndarray, ...]]] = [{} for _ in self.kinds]
        # one float64 buffer, reused: [the last block's last max_lag values (its halo) | the rows not yet summed]
        # (fresh arrays of megabytes per chunk and per block cost page faults, on the first pass of a process)
        self._values = np.empty(0)
        self._halo = 0  # values of the halo at the buffer's start
        self._buffered = 0
        self._smi: list[np.ndarray] = []
        self._start = 0  # thread row of the first buffered value after the halo

    def update(self, latency: np.ndarray, smi_rows: np.ndarray) -> EventBlocks:
        """Add the next latencies and the thread rows (absolute) of SMIs among them."""
        fill = self._halo + self._buffered
        if fill + latency.size > self._values.size:
            grown = np.empty(max(fill + latency.size, 2 * self.block_rows + 2 * self.max_lag + latency.size))
            grown[:fill] = self._values[:fill]
            self._values = grown
        self._values[fill:fill + latency.size] = latency
        self._smi.append(np.asarray(smi_rows, dtype=np.int64))
        self._buffered += latency.size
        if self._buffered >= 2 * self.block_rows:
            self._flush(final=False)
        return self

    def _add(self, k: int, sums: Sequence[np.ndarray], count: int) -> None:
        for total, part in zip(self.sums[k], sums, strict=True):
            total += part
        self.events[k] += count

    def _settle(self, k: int, decided: np.ndarray, pending: np.ndarray) -> None:
        held = self._speculative[k]
        if not held:
            return
        events, still = set(decided.tolist()), set(pending.tolist())
        for row in [r for r in held if r in events or r not in still]:
            sums = held.pop(row)
            if row in events:
                self._add(k, sums, 1)

    def _flush(self, *, final: bool) -> None:
        smi = np.concatenate(self._smi) if self._smi else np.zeros(0, dtype=np.int64)
        length = self._buffered if final else self.block_rows
        if length == 0:
            return
        left = self._halo
        # the block with its halo before it and up to max_lag true neighbours after it
        x = self._values[:left + min(self._buffered, length + self.max_lag)]
        block = x[left:left + length]
        # the block wrapped by max_lag on either side, for every kind's surrogates (built once)
        lag = self.max_lag
        wrapped = np.concatenate([block[length - lag:], block, block[:lag]]) if lag else block
        stop = self._start + length
        min_shift = self.lag_count
        for k, (_, source) in enumerate(self.kinds):
            decided, pending = (smi, np.zeros(0, dtype=np.int64)) if source is None else source()
            if source is not None:
                self._settle(k, decided, pending)
            mine = decided[(decided >= self._start) & (decided < stop)] - self._start
            maybe = pending[(pending >= self._start) & (pending < stop)] - self._start
            if mine.size == 0 and maybe.size == 0:
                continue
            shifts = (self.rngs[k].integers(min_shift, length - min_shift, size=self.n_surrogates)
                      if length > 2 * min_shift else np.zeros(0, dtype=np.int64))
            if shifts.size < self.n_surrogates:  # a block too short to shift gives no surrogates
                continue
            if mine.size:
                self._add(k, event_sums(x, left, length, mine, max_lag=self.max_lag, shifts=shifts, wrapped=wrapped),
                          int(mine.size))
            held = self._speculative[k]
            for row in maybe.tolist():
                held[self._start + row] = event_sums(x, left, length, np.array([row]), max_lag=self.max_lag,
                                                     shifts=shifts, wrapped=wrapped)
                if len(held) > SPECULATIVE_LIMIT:
                    del held[next(iter(held))]
                    self.left_out[k] += 1
        # keep the block's last max_lag values as the next halo, then the rows after the block
        halo = min(self.max_lag, length)
        rest = self._buffered - length
        end = left + length
        self._values[:halo + rest] = self._values[end - halo:end + rest]  # overlapping ranges: numpy copies safely
        self._halo, self._buffered = halo, rest
        self._smi = [smi[smi >= stop]]
        self._start = stop

    def result(self, *, peak_halfwidth: int) -> list[tuple[str, EventAverage]]:
        """One :class:`EventAverage` per kind of event that occurred (every source must be settled by now)."""
        self._flush(final=True)
        out = []
        for k, (name, source) in enumerate(self.kinds):
            if source is not None:
                decided, pending = source()
                assert pending.size == 0, "event source still pending at the end"
                self._settle(k, decided, pending)
            if self.events[k]:
                out.append((name, event_average_from_sums(tuple(self.sums[k]), n_events=self.events[k],
                                                          max_lag=self.max_lag, peak_halfwidth=peak_halfwidth)))
        return out


def _as_source(where: np.ndarray | EventSource | None) -> EventSource | None:
    if where is None or callable(where):
        return where
    fixed = np.asarray(where, dtype=np.int64)
    return lambda: (fixed, np.zeros(0, dtype=np.int64))


def _centred_ranks(hist: LatencyHistogram, values: np.ndarray, centre: float) -> np.ndarray:
    if values.dtype.kind in "iu":  # latency: ranked as it is (no float round trip)
        return hist.mid_ranks(values) - centre
    out = np.full(values.size, np.nan)
    finite = np.isfinite(values)
    if finite.all():
        return hist.mid_ranks(np.rint(values).astype(np.int64)) - centre
    if finite.any():
        out[finite] = hist.mid_ranks(np.rint(values[finite]).astype(np.int64)) - centre
    return out


class _RangeSums:
    """Sums of ``values[i0:i1]`` for ranges that start in the first ``head`` values and end in the last
    ``tail``: the whole sum less a prefix and a suffix, so one pass over the values serves every range."""

    def __init__(self, values: np.ndarray, head: int, tail: int) -> None:
        self.size = values.size
        self.total = float(values.sum())
        self.head = np.concatenate(([0.0], np.cumsum(values[:head])))
        self.tail_start = max(self.size - tail, 0)
        self.tail = np.concatenate((np.cumsum(values[self.tail_start:][::-1])[::-1], [0.0]))

    def between(self, i0: int, i1: int) -> float:
        if i1 <= i0:
            return 0.0
        return self.total - float(self.head[i0]) - float(self.tail[i1 - self.tail_start])


class LaggedRanks:
    """Accumulator: Spearman correlation of ``x[t]`` with ``y[t + lag]`` from histogram mid-ranks.

    ``x_ranks``/``y_ranks`` are the thread's histograms of the two series (the profile's, complete at the
    pass's end) that give each value its rank.  Sums of centred ranks, their squares and products per lag; the last
    ``max_lag`` ranks carry into the next chunk.  Sequential per thread.
    """

    def __init__(self, x_ranks: LatencyHistogram, y_ranks: LatencyHistogram, *, max_lag: int) -> None:
        self.x_ranks, self.y_ranks, self.max_lag = x_ranks, y_ranks, max_lag
        self.x_centre, self.y_centre = (x_ranks.count + 1) / 2.0, (y_ranks.count + 1) / 2.0
        self.lags = np.arange(-max_lag, max_lag + 1)
        self.sums = np.zeros((self.lags.size, 6))  # n, Σa, Σb, Σa², Σb², Σab
        self._carry_a = np.zeros(0)
        self._carry_b = np.zeros(0)

    def reset(self) -> LaggedRanks:
        """The next rows do not follow the last ones (a gap in a :class:`RankSample`): pair nothing across."""
        self._carry_a, self._carry_b = np.zeros(0), np.zeros(0)
        return self

    def x_ranks_of(self, x: np.ndarray) -> np.ndarray:
        """Centred ranks of ``x`` (for :meth:`update_ranks`: one computation serves every pair sharing x)."""
        return _centred_ranks(self.x_ranks, x, self.x_centre)

    def update(self, x: np.ndarray, y: np.ndarray) -> LaggedRanks:
        return self.update_ranks(self.x_ranks_of(x), y)

    def update_ranks(self, x_ranks: np.ndarray, y: np.ndarray) -> LaggedRanks:
        """:meth:`update` with the chunk's x already ranked (:meth:`x_ranks_of`)."""
        a = np.concatenate([self._carry_a, x_ranks])
        b = np.concatenate([self._carry_b, _centred_ranks(self.y_ranks, y, self.y_centre)])
        old, size = self._carry_a.size, a.size
        spans = []
        for lag in self.lags:
            # each pair once: in the chunk where its later member arrives; pairs (a[j - lag], b[j])
            start = min(max(old, abs(int(lag))), size)  # a piece shorter than the lag: no pair ends in it
            i0, i1 = (start - lag, size - lag) if lag >= 0 else (start, size)
            spans.append((i0, i1, i0 + lag, i1 + lag))
        b0 = np.nan_to_num(b)
        if np.isfinite(a).all():
            # the usual case (latency is never missing): whole-chunk sums less the few values outside each lag's
            # span (every span starts within old + max_lag of the start and ends within max_lag of the end),
            # minus the few pairs whose b is missing, and one dot product per lag
            missing = np.flatnonzero(~np.isfinite(b))
            head = old + self.max_lag + 1
            ranged = [_RangeSums(v, head, self.max_lag + 1) for v in (a, a * a, b0, b0 * b0)]
            for k, (i0, i1, j0, j1) in enumerate(spans):
                bad = missing[(missing >= j0) & (missing < j1)]
                gone = a[bad - self.lags[k]]
                sa, saa = ranged[0].between(i0, i1), ranged[1].between(i0, i1)
                sb, sbb = ranged[2].between(j0, j1), ranged[3].between(j0, j1)
                self.sums[k] += ((j1 - j0) - bad.size, sa - gone.sum(), sb, saa - _dot(gone, gone), sbb,
                                 _dot(a[i0:i1], b0[j0:j1]))
        else:
            # NaN as 0 with a 0/1 weight: every sum over the pairs where both exist is a dot product
            wa, wb = np.isfinite(a).astype(np.float64), np.isfinite(b).astype(np.float64)
            a0 = np.nan_to_num(a)
            aa, bb = a0 * a0, b0 * b0
            for k, (i0, i1, j0, j1) in enumerate(spans):
                i, j = slice(i0, i1), slice(j0, j1)
                self.sums[k] += (_dot(wa[i], wb[j]), _dot(a0[i], wb[j]), _dot(wa[i], b0[j]), _dot(aa[i], wb[j]),
                                 _dot(wa[i], bb[j]), _dot(a0[i], b0[j]))
        self._carry_a, self._carry_b = a[-self.max_lag:], b[-self.max_lag:]
        return self

    def update_runs(self, x_ranks: np.ndarray, y: np.ndarray, run_starts: np.ndarray) -> LaggedRanks:
        """Add many runs at once: ``x_ranks`` (:meth:`x_ranks_of`) and ``y`` of rows that follow one another
        except at ``run_starts`` (positions where a new run begins); no pair spans two runs, as with
        :meth:`reset` before each run and :meth:`update_ranks` on it.  Nothing carries in or out.

        One dot product per lag over all the runs, less the few pairs that span a run's start or whose ``y``
        is missing (a sample's runs are thousands of rows, the lags a few), instead of a Python loop over
        lags for every run.
        """
        a = np.asarray(x_ranks, dtype=np.float64)
        size = a.size
        starts = np.unique(np.asarray(run_starts, dtype=np.int64))
        starts = starts[(starts > 0) & (starts < size)]
        if not np.isfinite(a).all():  # missing x (not latency): run by run
            for lo, hi in itertools.pairwise([0, *starts.tolist(), size]):
                self.reset().update_ranks(a[lo:hi], y[lo:hi])
            self.reset()
            return self
        b = _centred_ranks(self.y_ranks, y, self.y_centre)
        missing = np.flatnonzero(~np.isfinite(b))
        b0 = np.nan_to_num(b)
        # every lag's range starts within max_lag of the start and ends within max_lag of the end
        ranged = [_RangeSums(v, self.max_lag + 1, self.max_lag + 1) for v in (a, a * a, b0, b0 * b0)]
        for k, lag in enumerate(self.lags.tolist()):
            # pairs (a[i], b[i + lag]) for i in [lo, hi): less those across a run's start or with b missing
            lo, hi = max(0, -lag), size - max(0, lag)
            if hi <= lo:
                continue
            steps = np.arange(abs(lag))
            across = (starts[:, None] - 1 - steps[None, :]) if lag > 0 else (starts[:, None] + steps[None, :])
            gone = np.concatenate([across.ravel(), missing - lag])
            gone = np.unique(gone[(gone >= lo) & (gone < hi)])
            ga, gb = a[gone], b0[gone + lag]
            i, j = slice(lo, hi), slice(lo + lag, hi + lag)
            sa, saa, sb, sbb = (r.between(span.start, span.stop) for r, span in zip(ranged, (i, i, j, j), strict=True))
            self.sums[k] += (hi - lo - gone.size, sa - ga.sum(), sb - gb.sum(), saa - _dot(ga, ga),
                             sbb - _dot(gb, gb), _dot(a[i], b0[j]) - _dot(ga, gb))
        self.reset()
        return self

    def result(self) -> CrossCorrelation:
        r, n = [], []
        for count, sa, sb, saa, sbb, sab in self.sums:
            n.append(int(count))
            if count < 3:
                r.append(float("nan"))
                continue
            var_a, var_b = saa - sa * sa / count, sbb - sb * sb / count
            denom = math.sqrt(max(var_a, 0.0) * max(var_b, 0.0))
            r.append(float((sab - sa * sb / count) / denom) if denom > 0 else float("nan"))
        band = [1.96 / np.sqrt(k) if k > 3 else float("nan") for k in n]
        return CrossCorrelation(lags=tuple(int(v) for v in self.lags), r=tuple(r), n=tuple(n),
                                null_band=tuple(float(v) for v in band))


class RankSample:
    """The wake-ups of one thread its lagged correlations use: every one up to :data:`RANK_SAMPLE_ROWS`, else a
    uniform random sample (seeded) of :data:`RANK_BLOCK_ROWS`-wake-up blocks, that many wake-ups in all.

    Pairs are taken within runs of consecutive chosen blocks, so each lag's n counts the pairs used and the
    null band (±1.96/√n) is the sample's.  The ranks still come from the whole thread's histograms.
    """

    def __init__(self, rows: int, seed: np.random.SeedSequence, *, sample_rows: int | None = None,
                 block_rows: int | None = None, threads: int = 1) -> None:
        self.rows = rows
        self.block_rows = block_rows or RANK_BLOCK_ROWS
        limit = sample_rows or max(min(RANK_SAMPLE_ROWS, RANK_SAMPLE_TOTAL // max(threads, 1)), 4 * self.block_rows)
        self.chosen: np.ndarray | None = None
        if rows > limit:
            blocks = -(-rows // self.block_rows)
            picked = np.random.default_rng(seed).choice(blocks, size=max(1, limit // self.block_rows),
                                                        replace=False)
            self.chosen = np.zeros(blocks, dtype=bool)
            self.chosen[picked] = True
        self._kept: list[np.ndarray] = []  # the sampled rows' columns (see keep), allocated on the first
        self._fill = 0
        self._breaks: list[int] = []
        self._next_row = -1

    @property
    def size(self) -> int:
        """Wake-ups in the sample."""
        if self.chosen is None:
            return self.rows
        blocks = np.flatnonzero(self.chosen)
        return int(np.sum(np.minimum((blocks + 1) * self.block_rows, self.rows) - blocks * self.block_rows))

    def keep(self, start: int, *columns: np.ndarray) -> None:
        """Keep the sampled rows of a chunk from thread row ``start`` (its columns, all of one length), in arrays
        of the sample's size allocated once (no list of pieces to join at the end)."""
        n = columns[0].size
        for lo, hi in self.segments(start, n):
            if not self._kept:
                self._kept = [np.empty(max(self.size, hi - lo), dtype=c.dtype) for c in columns]
            if self._fill + hi - lo > self._kept[0].size:  # more rows than the scan counted: grow
                self._kept = [np.concatenate([k[:self._fill], np.empty(self._fill + hi - lo, dtype=k.dtype)])
                              for k in self._kept]
            if self._fill and start + lo != self._next_row:
                self._breaks.append(self._fill)  # a run breaks: this piece does not follow the last
            for kept, column in zip(self._kept, columns, strict=True):
                kept[self._fill:self._fill + hi - lo] = column[lo:hi]
            self._fill += hi - lo
            self._next_row = start + hi

    def kept(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The kept columns and the positions where a run of consecutive wake-ups breaks; then forgets them."""
        columns = [k[:self._fill] for k in self._kept]
        breaks = np.array(self._breaks, dtype=np.int64)
        self._kept, self._fill, self._breaks, self._next_row = [], 0, [], -1
        return columns, breaks

    @property
    def note(self) -> str | None:
        """What the sample is, for the result (None: every wake-up is used)."""
        if self.chosen is None:
            return None
        used = min(int(self.chosen.sum()) * self.block_rows, self.rows)
        return (f"a uniform random sample of {int(self.chosen.sum()):,} blocks of {self.block_rows:,} consecutive "
                f"wake-ups ({used:,} of {self.rows:,}); ranks from every wake-up")

    def segments(self, start: int, n: int) -> list[tuple[int, int]]:
        """The runs ``[lo, hi)`` (positions in a chunk of ``n`` rows from thread row ``start``) to use."""
        if self.chosen is None:
            return [(0, n)] if n else []
        first, last = start // self.block_rows, (start + n - 1) // self.block_rows
        out: list[tuple[int, int]] = []
        for block in np.flatnonzero(self.chosen[first:last + 1]) + first:
            lo = max(int(block) * self.block_rows - start, 0)
            hi = min((int(block) + 1) * self.block_rows - start, n)
            if out and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return out


class DisplayRows:
    """Accumulator: the rows of one thread kept for figures (all up to ``limit``; else one in each k).

    ``k`` = ceil(rows / limit); each run of k consecutive wake-ups keeps the one with the largest
    latency, so spikes stay visible in the timeline.  :meth:`result` gives a :class:`CounterSeries` of those rows.
    """

    def __init__(self, rows: int, limit: int | None = None) -> None:
        self.k = max(1, -(-rows // (limit or DISPLAY_ROWS)))
        self.parts: list[tuple[np.ndarray, ...]] = []
        self._pending: tuple[int, tuple[np.ndarray, ...]] | None = None  # (run, one-row arrays) across chunks
        self._row = 0
        self.template: CounterSeries | None = None

    def update(self, chunk: CounterSeries) -> DisplayRows:
        n = chunk.seq.size
        if n == 0:
            return self
        self.template = chunk
        arrays = (chunk.seq, chunk.expected_ns, chunk.latency_ns, chunk.f_eff_hz, chunk.c0, chunk.smi_delta)
        if self.k == 1:
            self.parts.append(tuple(a.copy() for a in arrays))
            self._row += n
            return self
        best = self._run_maxima(chunk.latency_ns)  # per run (ascending) its first row with the largest latency
        rows = tuple(a[best] for a in arrays)
        runs = (self._row + best) // self.k
        if self._pending is not None:
            run0, row0 = self._pending
            if runs[0] != run0:
                self.parts.append(row0)
            elif row0[2][0] >= rows[2][0]:  # the run began in the previous chunk with a later wake-up
                rows = tuple(np.concatenate([r0, r[1:]]) for r0, r in zip(row0, rows, strict=True))
        self.parts.append(tuple(r[:-1] for r in rows))
        self._pending = (int(runs[-1]), tuple(r[-1:] for r in rows))
        self._row += n
        return self

    def _run_maxima(self, latency: np.ndarray) -> np.ndarray:
        """Position of the first largest latency in each run of k the chunk touches (runs start at rows k·j)."""
        k, n = self.k, latency.size
        head = min((-self._row) % k, n)  # the end of a run begun in an earlier chunk
        whole = (n - head) // k
        body = latency[head:head + whole * k].reshape(whole, k)  # the runs wholly inside: one argmax each
        parts = [np.argmax(latency[:head], keepdims=True)] if head else []
        parts.append(head + np.arange(whole) * k + np.argmax(body, axis=1))
        if head + whole * k < n:  # a run that goes on in the next chunk
            parts.append(head + whole * k + np.argmax(latency[head + whole * k:], keepdims=True))
        return np.concatenate(parts)

    def result(self) -> CounterSeries | None:
        parts = self.parts + ([self._pending[1]] if self._pending is not None else [])
        if self.template is None:
            return None
        seq, expected, latency, f, c0, smi = (np.concatenate([p[i] for p in parts]) for i in range(6))
        t = self.template
        return CounterSeries(thread=t.thread, cpu=t.cpu, tsc_hz=t.tsc_hz, tsc_hz_source=t.tsc_hz_source, seq=seq,
                             expected_ns=expected, latency_ns=latency, f_eff_hz=f, c0=c0, smi_delta=smi,
                             quality=t.quality)


class ConditionClasses:
    """Every wake-up's class for the condition tests: its histograms are kept per class, in one pass.

    A wake-up near a transition (``near``: ±window wake-ups of a detected one, or, from a turbostat timeline,
    in an interval next to a frequency change) or in an interval with an SMI is in one of three classes:
    near only, SMI only, both.  Every other wake-up is *away* from both events, and its class records
    whether its f_eff is known (a turbostat timeline can leave rows outside it), whether its SMI count is
    known, and its C0 bin (one of the bins, finite but in no bin, unknown).  Each condition's inside and
    outside is then a union of classes (:meth:`inside`, :meth:`outside`), each away from the other events:

    - transition: near only / away with f_eff known;
    - SMI: SMI only / away with the SMI count known;
    - a C0 bin: away in that bin / away in another bin or with a finite C0 in none.

    Counting per class (:class:`~jitterscope.summary.KeyedLatencyHistograms`) and merging classes at the
    end is exact, and indexes a chunk's latencies once instead of once per condition.
    """

    NEAR, SMI, BOTH, AWAY = 0, 1, 2, 3

    def __init__(self, edges: Sequence[float], *, transition: str, smi: str, c0_bins: Sequence[str]) -> None:
        """``transition``, ``smi``, ``c0_bins``: the names of the conditions (one per bin, in edge order)."""
        self.edges = np.asarray(edges, dtype=np.float64)
        self.transition, self.smi, self.c0_bins = transition, smi, list(c0_bins)
        self.bins = self.edges.size - 1
        self.c0_classes = self.bins + 2  # the bins, finite C0 in no bin, no C0
        self.size = self.AWAY + 4 * self.c0_classes

    def _away(self, f_known: int, smi_known: int, c0_class: int) -> int:
        return self.AWAY + (2 * f_known + smi_known) * self.c0_classes + c0_class

    def classes(self, chunk: CounterSeries, near: np.ndarray, *, turbostat: bool) -> np.ndarray:
        """The class (int64) of each of ``chunk``'s wake-ups; ``near``: those near a transition."""
        smi_known = np.isfinite(chunk.smi_delta)
        smi = chunk.smi_delta > 0  # False where unknown (NaN)
        c0, edges = chunk.c0, self.edges
        # bin j holds edges[j] <= c0 < edges[j + 1], the last bin its top edge too (as the labels say): the
        # number of inner edges at or below c0 (comparisons: cheaper than a search for a few edges)
        key = (c0 >= edges[1]).astype(np.int64) if self.bins > 1 else np.zeros(c0.size, dtype=np.int64)
        for edge in edges[2:-1]:
            key += c0 >= edge
        outside = (c0 < edges[0]) | (c0 > edges[-1])
        if outside.any():
            key[outside] = self.bins
        unknown = ~np.isfinite(c0)
        if unknown.any():
            key[unknown] = self.bins + 1
        key += self.AWAY
        key += smi_known * self.c0_classes
        key += (np.isfinite(chunk.f_eff_hz) if turbostat else True) * (2 * self.c0_classes)
        special = np.flatnonzero(near | smi)  # a few rows: the events and their windows
        if special.size:
            key[special] = np.where(near[special], np.where(smi[special], self.BOTH, self.NEAR), self.SMI)
        return key

    def inside(self, condition: str) -> list[int]:
        """The classes of the wake-ups inside ``condition``."""
        if condition == self.transition:
            return [self.NEAR]
        if condition == self.smi:
            return [self.SMI]
        j = self.c0_bins.index(condition)
        return [self._away(f, k, j) for f in (0, 1) for k in (0, 1)]

    def outside(self, condition: str) -> list[int]:
        """The classes of the wake-ups outside ``condition`` (and away from the other events)."""
        if condition == self.transition:
            return [self._away(1, k, c) for k in (0, 1) for c in range(self.c0_classes)]
        if condition == self.smi:
            return [self._away(f, 1, c) for f in (0, 1) for c in range(self.c0_classes)]
        j = self.c0_bins.index(condition)
        return [self._away(f, k, c) for f in (0, 1) for k in (0, 1) for c in range(self.bins + 1) if c != j]
