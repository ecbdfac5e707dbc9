"""Per-wake-up counter series: effective frequency, C0 residency and SMI count deltas.

Each row's counters are read by the measuring thread right after it wakes, so
the difference between a row and the previous row of the same thread describes
the interval that *ended* with this wake-up (docs/dataset-format.md):

- effective frequency  ``f_eff = tsc_hz * ΔAPERF / ΔMPERF`` (Hz, average while in C0),
- C0 residency          ``c0 = ΔMPERF / ΔTSC`` (0..1; low means the CPU slept),
- SMI count delta       ``ΔSMI`` (System Management Interrupts in the interval).

Raw counters are untrustworthy in known ways, and every guard here says how
many rows it discarded and why (:class:`CounterQuality`): counter wrap (the
perf PMU exposes narrower counters than the 64-bit MSRs; MSR_SMI_COUNT is 32
bits), resets (a counter going back without a plausible wrap), migrations
(``run_cpu`` differs from the pinned ``cpu``, so the two reads came from
different CPUs), slow reads (``read_cycles`` far above its median: the thread
was interrupted between the TSC read and the counter reads) and counters that
do not count (all zero, typical inside a virtual machine).

This module belongs to the *derive* stage: it reads a dataset and yields
series; it knows nothing of transitions or statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..dataset import Dataset, column_values, iter_thread_batches
from ..errors import AnalysisError

# Reasons a row's counter delta is discarded, in the order they are checked;
# a row is counted under the first reason that applies.
REASON_FIRST = "first wake-up of the thread (no previous read)"
REASON_MIGRATION = "migration (run_cpu differs from the pinned cpu)"
REASON_TSC = "TSC did not advance"
REASON_RESET = "counter reset (went back without a plausible wrap)"
REASON_SLOW_READ = "slow counter read (read_cycles outlier)"
REASON_NOT_COUNTING = "MPERF did not advance (counter not counting)"
REASON_IMPLAUSIBLE = "implausible delta (MPERF faster than TSC or APERF/MPERF > 8)"
REASONS = (REASON_FIRST, REASON_MIGRATION, REASON_TSC, REASON_RESET, REASON_SLOW_READ,
           REASON_NOT_COUNTING, REASON_IMPLAUSIBLE)

MAX_APERF_RATIO = 8.0
"""APERF/MPERF above this is no real turbo ratio (base-to-max-turbo ratios stay below ~3)."""
MPERF_TSC_SLACK = 1.02
"""MPERF ticks at the TSC rate at most; 2 % slack covers the read order within a row."""
SMI_COUNTER_BITS = 32
"""MSR_SMI_COUNT keeps its count in bits 31:0."""


@dataclass(frozen=True)
class CounterQuality:
    """How many counter deltas of one thread were usable, and why the others were not.

    Attributes
    ----------
    rows : int
        Wake-ups of the thread.
    valid : int
        Rows with a usable C0 residency (and f_eff when APERF is present).
    discarded : Mapping[str, int]
        Reason -> rows discarded for it (reasons in :data:`REASONS`; zero counts omitted).
    wraps_corrected : Mapping[str, int]
        Column -> deltas corrected for a counter wrap (kept, not discarded).
    counter_bits : Mapping[str, int]
        Column -> counter width assumed for wrap correction.
    read_cycles_limit : float | None
        ``read_cycles`` above this were treated as slow reads (median + k·1.4826·MAD).
    all_zero : tuple[str, ...]
        Counter columns that are zero in every row.
    missing : Mapping[str, str]
        Counter column -> why it is absent (from the dataset's ``counters`` metadata).
    """

    rows: int
    valid: int
    discarded: Mapping[str, int]
    wraps_corrected: Mapping[str, int] = field(default_factory=dict)
    counter_bits: Mapping[str, int] = field(default_factory=dict)
    read_cycles_limit: float | None = None
    all_zero: tuple[str, ...] = ()
    missing: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows, "valid": self.valid, "discarded": dict(self.discarded),
            "wraps_corrected": dict(self.wraps_corrected), "counter_bits": dict(self.counter_bits),
            "read_cycles_limit": self.read_cycles_limit, "all_zero": list(self.all_zero),
            "missing": dict(self.missing),
        }


@dataclass(frozen=True, eq=False)
class CounterSeries:
    """Latency and derived counters of one thread, one entry per wake-up in ``seq`` order.

    Arrays hold NaN where a value is unavailable or was discarded (see ``quality``).

    Attributes
    ----------
    thread, cpu : int
        Thread index and the CPU it was pinned to.
    tsc_hz : float | None
        TSC frequency used for f_eff; None when no TSC column exists.
    tsc_hz_source : str
        Where ``tsc_hz`` came from ("metadata", "estimated from tsc and actual_ns", "none").
    seq, expected_ns, latency_ns : numpy.ndarray
        int64 wake-up index, programmed time (ns) and latency (ns).
    f_eff_hz, c0, smi_delta : numpy.ndarray
        float64 effective frequency (Hz), C0 residency (0..1) and SMI count delta.
    quality : CounterQuality
    """

    thread: int
    cpu: int
    tsc_hz: float | None
    tsc_hz_source: str
    seq: np.ndarray
    expected_ns: np.ndarray
    latency_ns: np.ndarray
    f_eff_hz: np.ndarray
    c0: np.ndarray
    smi_delta: np.ndarray
    quality: CounterQuality

    @property
    def has_frequency(self) -> bool:
        return bool(np.isfinite(self.f_eff_hz).any())

    @property
    def has_c0(self) -> bool:
        return bool(np.isfinite(self.c0).any())

    @property
    def has_smi(self) -> bool:
        return bool(np.isfinite(self.smi_delta).any())

    def to_json(self) -> dict[str, Any]:
        """Summary (not the arrays): thread, cpu, TSC frequency and quality."""
        return {"thread": self.thread, "cpu": self.cpu, "tsc_hz": self.tsc_hz,
                "tsc_hz_source": self.tsc_hz_source, "rows": int(self.seq.size),
                "quality": self.quality.to_json()}


@dataclass(frozen=True)
class CounterSet:
    """Counter series of every thread of a dataset, or why there are none.

    ``available`` is False when no thread has a usable f_eff, C0 or SMI series;
    ``reason`` then says why in one line ("counters not recorded (...)").
    """

    series: tuple[CounterSeries, ...]
    available: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"available": self.available, "reason": self.reason,
                "threads": [s.to_json() for s in self.series]}


def derive_counters(
    *,
    seq: np.ndarray,
    expected_ns: np.ndarray,
    actual_ns: np.ndarray,
    cpu: int,
    thread: int = 0,
    tsc: np.ndarray | None = None,
    aperf: np.ndarray | None = None,
    mperf: np.ndarray | None = None,
    smi: np.ndarray | None = None,
    run_cpu: np.ndarray | None = None,
    read_cycles: np.ndarray | None = None,
    tsc_hz: float | None = None,
    read_k: float = 10.0,
    missing: Mapping[str, str] | None = None,
    read_cycles_limit: float | None = None,
    counter_bits: Mapping[str, int] | None = None,
    all_zero: Sequence[str] | None = None,
    tsc_hz_source: str | None = None,
) -> CounterSeries:
    """Derive f_eff, C0 residency and ΔSMI for one thread's rows (already in ``seq`` order).

    Parameters
    ----------
    seq, expected_ns, actual_ns : numpy.ndarray
        The thread's required columns, sorted by ``seq``.
    cpu : int
        CPU the thread was pinned to (rows whose ``run_cpu`` differs are migrations).
    thread : int
        Thread index, carried into the result.
    tsc, aperf, mperf, smi, run_cpu, read_cycles : numpy.ndarray or None
        Optional columns; counters are int64 holding uint64 values.
    tsc_hz : float or None
        TSC frequency; when None it is estimated as the median of ΔTSC / Δactual_ns.  Without a
        ``tsc`` column, intervals are timed by ``actual_ns`` at this frequency.
    read_k : float
        A ``read_cycles`` value above median + read_k·1.4826·MAD (at least 1.5× the
        median) marks a slow read; both deltas touching that row are discarded.
    missing : Mapping[str, str] or None
        Why absent counter columns are absent (kept in the quality record).
    read_cycles_limit, counter_bits, all_zero, tsc_hz_source : optional
        Facts about the *whole* thread when these rows are one chunk of it
        (:func:`iter_counter_chunks`): the slow-read limit, the assumed width of the
        ``aperf``/``mperf`` counters, the columns that are zero on every row of the thread,
        and where ``tsc_hz`` came from.  Computed from these rows when None.

    Returns
    -------
    CounterSeries

    Raises
    ------
    AnalysisError
        Arrays of different lengths.

    Notes
    -----
    Deltas are taken modulo 2**64 (the columns are uint64 stored as int64). A
    delta that is negative as a signed number is a wrap if adding 2**bits (bits =
    the width of the largest value seen, or 32 for SMI) gives a plausible delta
    (MPERF ≤ ΔTSC·1.02, APERF ≤ 8·ΔTSC, SMI < 2**16); otherwise the counter was reset.
    """
    n = int(np.asarray(seq).size)
    arrays = {"expected_ns": expected_ns, "actual_ns": actual_ns, "tsc": tsc, "aperf": aperf,
              "mperf": mperf, "smi": smi, "run_cpu": run_cpu, "read_cycles": read_cycles}
    for name, values in arrays.items():
        if values is not None and np.asarray(values).size != n:
            raise AnalysisError(f"column {name} has {np.asarray(values).size} values for {n} wake-ups")
    expected = np.asarray(expected_ns, dtype=np.int64)
    actual = np.asarray(actual_ns, dtype=np.int64)
    latency = actual - expected
    reason = np.zeros(n, dtype=np.int8)  # 0 = fine, else 1 + index into REASONS
    if n:
        reason[0] = 1 + REASONS.index(REASON_FIRST)
    wraps: dict[str, int] = {}
    bits: dict[str, int] = {}
    if all_zero is None:
        all_zero = tuple(name for name, values in (("aperf", aperf), ("mperf", mperf), ("smi", smi))
                         if values is not None and n and not np.any(np.asarray(values)))
    all_zero = tuple(all_zero)
    widths = dict(counter_bits or {})

    if run_cpu is not None and n:
        off = np.asarray(run_cpu) != cpu
        _mark(reason, off | np.concatenate(([False], off[:-1])), REASON_MIGRATION)

    d_tsc = None
    source = "none"
    if tsc is not None and n:
        d_tsc = _modular_delta(np.asarray(tsc, dtype=np.int64)).astype(np.float64)
        _mark(reason, d_tsc <= 0, REASON_TSC)
        tsc_hz, source = _tsc_frequency(tsc_hz, d_tsc, actual)
        source = tsc_hz_source or source
    elif tsc_hz and n:
        # no TSC column (some imports): the monotonic clock times the interval, in TSC cycles
        d_tsc = np.concatenate(([0.0], np.diff(actual).astype(np.float64))) * (tsc_hz / 1e9)
        _mark(reason, d_tsc <= 0, REASON_TSC)
        source = "metadata (intervals from actual_ns: no tsc column)"

    limit = None
    if read_cycles is not None and n > 1:
        cycles = np.asarray(read_cycles, dtype=np.float64)
        limit = read_cycles_limit if read_cycles_limit is not None else _read_cycles_limit(cycles, read_k)
        slow = cycles > limit
        _mark(reason, slow | np.concatenate(([False], slow[:-1])), REASON_SLOW_READ)

    d_mperf = d_aperf = None
    if mperf is not None and d_tsc is not None and n:
        d_mperf, reset, wrapped, bits["mperf"] = _counter_delta(np.asarray(mperf), d_tsc * MPERF_TSC_SLACK,
                                                              width=widths.get("mperf"))
        wraps["mperf"] = wrapped
        _mark(reason, reset, REASON_RESET)
        _mark(reason, d_mperf <= 0, REASON_NOT_COUNTING)
        _mark(reason, d_mperf > d_tsc * MPERF_TSC_SLACK, REASON_IMPLAUSIBLE)
    if aperf is not None and d_mperf is not None:
        d_aperf, reset, wrapped, bits["aperf"] = _counter_delta(np.asarray(aperf), d_tsc * MAX_APERF_RATIO,
                                                              width=widths.get("aperf"))
        wraps["aperf"] = wrapped
        _mark(reason, reset, REASON_RESET)
        _mark(reason, (d_aperf <= 0) | (d_aperf > d_mperf * MAX_APERF_RATIO), REASON_IMPLAUSIBLE)

    ok = reason == 0
    c0 = f_eff = smi_delta = None  # None: not derivable here, all NaN below
    if d_mperf is not None:
        # whole-array arithmetic, then NaN where a row is discarded (cheaper than gathering the valid rows, nearly
        # all of them); a discarded row may divide by zero, hence the errstate
        with np.errstate(divide="ignore", invalid="ignore"):
            c0 = np.where(ok, np.minimum(d_mperf / d_tsc, 1.0), np.nan)
            if d_aperf is not None and tsc_hz:
                f_eff = np.where(ok, tsc_hz * d_aperf / d_mperf, np.nan)
    # an all-zero SMI count is plausible on its own (no SMIs since boot), not beside all-zero APERF/MPERF
    smi_dead = "smi" in all_zero and {"aperf", "mperf"} & set(all_zero)
    if smi is not None and n and not smi_dead:
        d_smi, reset, wrapped, bits["smi"] = _counter_delta(np.asarray(smi), float(1 << 16), width=SMI_COUNTER_BITS)
        wraps["smi"] = wrapped
        smi_ok = ~reset & ~np.isin(reason, [1 + REASONS.index(REASON_FIRST), 1 + REASONS.index(REASON_MIGRATION)])
        smi_delta = np.where(smi_ok, d_smi, np.nan)
    c0, f_eff, smi_delta = (np.full(n, np.nan) if v is None else v for v in (c0, f_eff, smi_delta))

    counts = np.bincount(reason, minlength=len(REASONS) + 1)
    discarded = {REASONS[i]: int(counts[i + 1]) for i in range(len(REASONS)) if counts[i + 1]}
    has_any = d_mperf is not None
    quality = CounterQuality(
        rows=n, valid=int(ok.sum()) if has_any else 0, discarded=discarded if has_any else {},
        wraps_corrected={k: v for k, v in wraps.items() if v}, counter_bits=bits,
        read_cycles_limit=limit, all_zero=all_zero, missing=dict(missing or {}),
    )
    return CounterSeries(
        thread=thread, cpu=cpu, tsc_hz=tsc_hz, tsc_hz_source=source, seq=np.asarray(seq, dtype=np.int64),
        expected_ns=expected, latency_ns=latency, f_eff_hz=f_eff, c0=c0, smi_delta=smi_delta, quality=quality,
    )


COUNTER_INPUTS = ("tsc", "aperf", "mperf", "smi", "run_cpu", "read_cycles")


def read_counters(dataset: Dataset, *, read_k: float = 10.0, threads: Sequence[int] | None = None) -> CounterSet:
    """Derive the counter series of every thread (or of ``threads``) of a sample dataset.

    Parameters
    ----------
    dataset : Dataset
        An opened sample dataset (not a histogram dataset).
    read_k : float
        Slow-read threshold, see :func:`derive_counters`.
    threads : sequence of int or None
        Restrict to these thread indices.

    Returns
    -------
    CounterSet
        ``available`` False, with the reason from the metadata, when the dataset has
        no usable counters; latency series are still present for every thread.

    Raises
    ------
    AnalysisError
        A histogram dataset, or one without rows.

    Notes
    -----
    Memory: the selected columns of one dataset are held in memory (about 60 bytes
    per wake-up).  For captures of any length, :func:`scan_counters` and
    :func:`iter_counter_chunks` derive the same series chunk by chunk in bounded memory
    (what :func:`jitterscope.power.correlate_dataset` does).
    """
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: histogram-only data has no per-wake-up counters; "
                            "use a capture or a sample-level import")
    if dataset.num_rows == 0:
        raise AnalysisError(f"{dataset.path}: the dataset has no wake-ups")
    present = [c for c in COUNTER_INPUTS if dataset.has(c)]
    columns = _read_columns(dataset, ["thread", "cpu", "seq", "expected_ns", "actual_ns", *present])
    meta_counters = dict(dataset.metadata.counters or {})
    missing = {str(k): str(v) for k, v in dict(meta_counters.get("missing") or {}).items()}
    for name in ("aperf", "mperf", "smi"):
        if name not in present and name not in missing:
            missing[name] = "column not in the dataset (no reason recorded)"
    series = []
    for thread, rows in thread_rows(columns["thread"], columns["seq"], threads):
        pinned = int(columns["cpu"][rows[0]])
        optional = {name: columns[name][rows] for name in present}
        series.append(derive_counters(
            seq=columns["seq"][rows], expected_ns=columns["expected_ns"][rows],
            actual_ns=columns["actual_ns"][rows], cpu=pinned, thread=thread,
            tsc_hz=dataset.metadata.tsc_hz, read_k=read_k, missing=missing, **optional,
        ))
    available = any(s.has_c0 or s.has_smi for s in series)
    return CounterSet(series=tuple(series), available=available,
                      reason="" if available else _unavailable_reason(series, missing, meta_counters))


CHUNK_ROWS = 1 << 18
""":func:`iter_counter_chunks` derives at most this many rows at a time (bounds the temporaries)."""
TSC_ESTIMATE_ROWS = 1 << 20
"""Without a recorded TSC frequency, it is estimated from at most this many first wake-ups of a thread."""


@dataclass(frozen=True)
class ThreadScan:
    """Facts about one thread's whole series that a chunk of it cannot know (:func:`scan_counters`)."""

    thread: int
    cpu: int
    rows: int
    tsc_hz: float | None
    tsc_hz_source: str
    read_cycles_limit: float | None
    counter_bits: Mapping[str, int]
    all_zero: tuple[str, ...]


@dataclass(frozen=True)
class CounterScan:
    """The first, cheap pass of a streamed counter derivation: one :class:`ThreadScan` per thread."""

    threads: tuple[ThreadScan, ...]
    present: tuple[str, ...]
    missing: Mapping[str, str]
    meta_counters: Mapping[str, Any]


def scan_counters(dataset: Dataset, *, read_k: float = 10.0, threads: Sequence[int] | None = None) -> CounterScan:
    """One streaming pass over the counter columns: what :func:`iter_counter_chunks` needs about each thread.

    Per thread: its rows and pinned CPU, the slow-read limit (median + read_k·1.4826·MAD of
    ``read_cycles``, exact from value counts), the width of ``aperf``/``mperf`` (from their
    largest value), the counters zero on every row, and the TSC frequency (from the metadata,
    else the median ΔTSC/Δactual_ns of the first :data:`TSC_ESTIMATE_ROWS` wake-ups, said in
    ``tsc_hz_source``).  Memory: bounded by one row group and the distinct ``read_cycles`` values.

    Raises
    ------
    AnalysisError
        A histogram dataset or one without rows.
    """
    if dataset.is_histogram:
        raise AnalysisError(f"{dataset.path}: histogram-only data has no per-wake-up counters; "
                            "use a capture or a sample-level import")
    if dataset.num_rows == 0:
        raise AnalysisError(f"{dataset.path}: the dataset has no wake-ups")
    present = tuple(c for c in COUNTER_INPUTS if dataset.has(c))
    meta_counters = dict(dataset.metadata.counters or {})
    missing = {str(k): str(v) for k, v in dict(meta_counters.get("missing") or {}).items()}
    for name in ("aperf", "mperf", "smi"):
        if name not in present and name not in missing:
            missing[name] = "column not in the dataset (no reason recorded)"
    estimate = "tsc" in present and not dataset.metadata.tsc_hz
    counted = [c for c in present if c in ("aperf", "mperf", "smi")]
    # the counters' widths and all-zero checks need only their largest values: the row groups' statistics
    # give those without decoding the two widest columns (a fifth of a full read), when they can
    maxima = dataset.thread_maxima(counted) if counted else {}
    # only what the thread-wide facts need (the order of seq is checked by iter_counter_chunks)
    wanted = ["cpu", *(c for c in present if c == "read_cycles"), *(counted if maxima is None else ()),
              *(("tsc", "actual_ns") if estimate else ())]
    state: dict[int, dict[str, Any]] = {}
    for info, batch in _thread_batches(dataset, wanted, threads):
        cols = {name: column_values(batch, name) for name in wanted}
        st = state.setdefault(info.thread, {"cpu": int(cols["cpu"][0]), "rows": 0,
                                            "cycles": {}, "max": {}, "nonzero": {}, "tsc": [], "actual": []})
        if maxima is not None and not st["max"]:
            for name, top in maxima.get(info.thread, {}).items():
                st["max"][name], st["nonzero"][name] = top, top > 0
        st["rows"] += batch.num_rows
        if "read_cycles" in cols:
            cycles = cols["read_cycles"]
            low, high = int(cycles.min()), int(cycles.max())
            if low >= 0 and high < 1 << 20:  # the usual case: a bincount, not a sort
                counts = np.bincount(cycles, minlength=0)
                values = np.flatnonzero(counts)
                counts = counts[values]
            else:
                values, counts = np.unique(cycles, return_counts=True)
            for v, c in zip(values.tolist(), counts.tolist(), strict=True):
                st["cycles"][v] = st["cycles"].get(v, 0) + c
        for name in ("aperf", "mperf", "smi"):
            if name in cols:
                unsigned = cols[name].astype(np.int64, copy=False).view(np.uint64)
                st["max"][name] = max(st["max"].get(name, 0), int(unsigned.max()))
                st["nonzero"][name] = st["nonzero"].get(name, False) or bool(np.any(unsigned))
        taken = sum(a.size for a in st["actual"])
        if estimate and taken < TSC_ESTIMATE_ROWS:
            st["tsc"].append(cols["tsc"][:TSC_ESTIMATE_ROWS - taken])
            st["actual"].append(cols["actual_ns"][:TSC_ESTIMATE_ROWS - taken])
    if not state:
        raise AnalysisError(f"{dataset.path}: no wake-ups of the threads asked for")
    scans = []
    for thread in sorted(state):
        st = state[thread]
        tsc_hz, source = dataset.metadata.tsc_hz, "metadata" if dataset.metadata.tsc_hz else "none"
        if st["tsc"]:
            tsc = np.concatenate(st["tsc"])
            tsc_hz, source = _tsc_frequency(None, _modular_delta(tsc.astype(np.int64)).astype(np.float64),
                                            np.concatenate(st["actual"]).astype(np.int64))
            if tsc.size < st["rows"] and tsc_hz:
                source += f" (first {tsc.size:,} wake-ups)"
        limit = None
        if st["cycles"] and st["rows"] > 1:
            values = np.fromiter(st["cycles"].keys(), dtype=np.float64)
            counts = np.fromiter(st["cycles"].values(), dtype=np.int64)
            limit = _read_cycles_limit_counted(values, counts, read_k)
        bits = {name: max(top.bit_length(), 1) for name, top in st["max"].items() if name in ("aperf", "mperf")}
        zero = tuple(name for name in ("aperf", "mperf", "smi") if name in st["nonzero"] and not st["nonzero"][name])
        scans.append(ThreadScan(thread=thread, cpu=st["cpu"], rows=st["rows"], tsc_hz=tsc_hz, tsc_hz_source=source,
                                read_cycles_limit=limit, counter_bits=bits, all_zero=zero))
    return CounterScan(threads=tuple(scans), present=present, missing=missing, meta_counters=meta_counters)


def iter_counter_chunks(dataset: Dataset, scan: CounterScan, *, read_k: float = 10.0) -> Iterator[CounterSeries]:
    """Derived counter series of the threads in ``scan``, one row group's chunk at a time.

    Each thread's chunks come in ``seq`` order; chunks of different threads interleave as
    the rows do in the files.  A chunk's deltas use the previous chunk's last row, and the
    thread-wide facts of ``scan``, so the chunks of a thread concatenated equal
    :func:`derive_counters` on its whole series (``tsc_hz`` aside when it was estimated from
    the first wake-ups only).  Each chunk's ``quality`` counts its own rows.
    """
    for _, derive in iter_counter_batches(dataset, scan, read_k=read_k):
        yield from derive()


def iter_counter_batches(dataset: Dataset, scan: CounterScan, *,
                         read_k: float = 10.0) -> Iterator[tuple[int, Callable[[], Iterator[CounterSeries]]]]:
    """:func:`iter_counter_chunks` split into reading and deriving, so threads can be derived in parallel.

    Yields, per row group's rows of one thread (read here), the thread and a function that derives
    them into chunks.  Each thread's functions must be called in the order yielded, one at a time
    (they carry the thread's last row); different threads' functions may run concurrently.
    Calling every function as it comes gives exactly :func:`iter_counter_chunks`.
    """
    by_thread = {t.thread: t for t in scan.threads}
    wanted = ["cpu", "seq", "expected_ns", "actual_ns", *scan.present]
    carry: dict[int, dict[str, np.ndarray]] = {}
    for info, batch in _thread_batches(dataset, wanted, list(by_thread)):
        t = by_thread[info.thread]
        columns = {name: column_values(batch, name) for name in wanted}

        def derive(t: ThreadScan = t, columns: dict[str, np.ndarray] = columns) -> Iterator[CounterSeries]:
            for start in range(0, columns["seq"].size, CHUNK_ROWS):  # sub-chunks keep derive's temporaries small
                # after the batch's first sub-chunk the previous row is the one before it: a view, not a copy
                first = start - 1 if start else start
                cols = {name: values[first:start + CHUNK_ROWS] for name, values in columns.items()}
                yield _derive_chunk(dataset, scan, t, cols, carry, read_k, with_previous=start > 0)

        yield info.thread, derive


def _derive_chunk(dataset: Dataset, scan: CounterScan, t: ThreadScan, cols: dict[str, np.ndarray],
                  carry: dict[int, dict[str, np.ndarray]], read_k: float, *,
                  with_previous: bool = False) -> CounterSeries:
    """Derive one chunk of thread ``t``, its deltas starting from the previous chunk's last row.

    ``with_previous``: ``cols`` already starts with that row (the previous sub-chunk of the same batch).
    """
    previous = carry.get(t.thread)
    if with_previous:
        _check_order(dataset, t.thread, None, cols["seq"])
    elif previous is not None:
        _check_order(dataset, t.thread, int(previous["seq"][0]), cols["seq"])
        cols = {name: np.concatenate([previous[name], values]) for name, values in cols.items()}
    starts_with_previous = with_previous or previous is not None
    carry[t.thread] = {name: values[-1:].copy() for name, values in cols.items()}
    series = derive_counters(
        seq=cols["seq"], expected_ns=cols["expected_ns"], actual_ns=cols["actual_ns"], cpu=t.cpu,
        thread=t.thread, tsc_hz=t.tsc_hz, read_k=read_k, missing=scan.missing,
        read_cycles_limit=t.read_cycles_limit, counter_bits=t.counter_bits, all_zero=t.all_zero,
        tsc_hz_source=t.tsc_hz_source, **{name: cols[name] for name in scan.present},
    )
    return _drop_first(series) if starts_with_previous else series


def unavailable_reason(series: Sequence[Any], missing: Mapping[str, str], meta: Mapping[str, Any]) -> str:
    """Why no thread has a usable counter series, in one line (``series``: anything with ``quality``)."""
    return _unavailable_reason(series, missing, meta)


def _thread_batches(dataset: Dataset, columns: Sequence[str], threads: Sequence[int] | None) -> Iterator[Any]:
    for info, batch in iter_thread_batches(dataset, columns, check=False):
        if batch.num_rows and (threads is None or info.thread in threads):
            yield info, batch


def _check_order(dataset: Dataset, thread: int, last_seq: int | None, seq: np.ndarray) -> None:
    if np.any(np.diff(seq) <= 0) or (last_seq is not None and seq.size and seq[0] <= last_seq):
        raise AnalysisError(f"{dataset.path}: rows of thread {thread} are not in seq order; the streamed "
                            "analysis needs them in order (run 'jitterscope validate' on the dataset)")


def _drop_first(series: CounterSeries) -> CounterSeries:
    """The chunk without its first row (the previous chunk's last, carried for the deltas)."""
    q = series.quality
    discarded = dict(q.discarded)
    if REASON_FIRST in discarded:
        discarded[REASON_FIRST] -= 1
        if not discarded[REASON_FIRST]:
            del discarded[REASON_FIRST]
    quality = replace(q, rows=q.rows - 1, discarded=discarded)
    return replace(series, seq=series.seq[1:], expected_ns=series.expected_ns[1:],
                   latency_ns=series.latency_ns[1:], f_eff_hz=series.f_eff_hz[1:], c0=series.c0[1:],
                   smi_delta=series.smi_delta[1:], quality=quality)


def _read_cycles_limit_counted(values: np.ndarray, counts: np.ndarray, k: float) -> float:
    """:func:`_read_cycles_limit` from distinct values and their counts (same numbers)."""
    order = np.argsort(values)
    values, counts = values[order], counts[order]
    median = _counted_median(values, counts)
    deviation = np.abs(values - median)
    order = np.argsort(deviation, kind="stable")
    mad = _counted_median(deviation[order], counts[order])
    return max(median + k * 1.4826 * mad, 1.5 * median, median + 1.0)


def _counted_median(sorted_values: np.ndarray, counts: np.ndarray) -> float:
    """numpy.median of the values each repeated ``counts`` times (mean of the two middle ones)."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    low = sorted_values[np.searchsorted(ends, (total - 1) // 2, side="right")]
    high = sorted_values[np.searchsorted(ends, total // 2, side="right")]
    return float((low + high) / 2)


def thread_rows(
    thread: np.ndarray, seq: np.ndarray, threads: Sequence[int] | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """Each thread (ascending) and the indices of its rows in ``seq`` order.

    Parameters
    ----------
    thread, seq : ndarray
        The dataset's ``thread`` and ``seq`` columns.
    threads : sequence of int, optional
        Only these threads (default: all).

    Yields
    ------
    tuple of (int, ndarray)
        The thread id and its row indices, sorted by ``seq`` (stable).
    """
    for value in np.unique(thread):
        if threads is not None and int(value) not in threads:
            continue
        rows = np.flatnonzero(thread == value)
        yield int(value), rows[np.argsort(seq[rows], kind="stable")]


def _read_columns(dataset: Dataset, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Columns as numpy arrays filled batch by batch (no intermediate Arrow table held beside them)."""
    schema = dataset.schema
    out = {name: np.empty(dataset.num_rows, dtype=schema.field(name).type.to_pandas_dtype()) for name in names}
    at = 0
    for batch in dataset.iter_batches(names):
        for name in names:
            out[name][at:at + batch.num_rows] = batch.column(name).to_numpy()
        at += batch.num_rows
    return {name: values[:at] for name, values in out.items()}


def _unavailable_reason(series: Sequence[CounterSeries], missing: Mapping[str, str],
                        meta: Mapping[str, Any]) -> str:
    zero = sorted({c for s in series for c in s.quality.all_zero})
    if zero:
        return (f"counters not recorded ({', '.join(zero)} read as zero on every wake-up: the counters do not "
                "count here, typical of a virtual machine)")
    absent = [f"{c}: {missing[c]}" for c in ("aperf", "mperf", "smi") if c in missing]
    if absent:
        source = meta.get("source")
        prefix = f"counter source {source}; " if source else ""
        return f"counters not recorded ({prefix}{'; '.join(absent)})"
    reasons: dict[str, int] = {}
    for s in series:
        for why, count in s.quality.discarded.items():
            reasons[why] = reasons.get(why, 0) + count
    worst = max(reasons, key=lambda k: reasons[k]) if reasons else "no TSC column to time the counters"
    return f"counters recorded but no delta is usable (most rows discarded for: {worst})"


def _mark(reason: np.ndarray, where: np.ndarray, why: str) -> None:
    """Give rows in ``where`` the reason ``why`` unless an earlier reason already applies."""
    reason[(reason == 0) & where] = 1 + REASONS.index(why)


def _modular_delta(values: np.ndarray) -> np.ndarray:
    """Row-to-row difference modulo 2**64, as int64 (first row 0); uint64 wrap is exact."""
    raw = values.astype(np.int64, copy=False).view(np.uint64)
    out = np.empty(raw.size, dtype=np.uint64)  # not zeros: calloc'd pages are fresh, each one a page fault
    if raw.size:
        out[0] = 0
        np.subtract(raw[1:], raw[:-1], out=out[1:])
    return out.view(np.int64)


def _counter_delta(values: np.ndarray, max_delta: np.ndarray | float,
                   width: int | None = None) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Deltas with narrow-counter wraps corrected; returns (delta, reset mask, wraps, bits)."""
    delta = _modular_delta(values.astype(np.int64, copy=False)).astype(np.float64)
    if width is None:
        unsigned = values.astype(np.int64, copy=False).view(np.uint64)
        bits = max(int(unsigned.max()).bit_length(), 1) if unsigned.size else 64
    else:
        bits = width
    negative = delta < 0
    negative[0] = False
    if not negative.any():  # the usual chunk: no wrap, no reset
        return delta, negative, 0, bits
    corrected = delta + float(2 ** bits) if bits < 64 else delta
    wrap = negative & (corrected >= 0) & (corrected <= max_delta) if bits < 64 else np.zeros_like(negative)
    delta = np.where(wrap, corrected, delta)
    reset = negative & ~wrap
    return delta, reset, int(wrap.sum()), bits


def _tsc_frequency(given: float | None, d_tsc: np.ndarray, actual: np.ndarray) -> tuple[float | None, str]:
    if given:
        return float(given), "metadata"
    d_ns = np.diff(actual).astype(np.float64)
    usable = (d_tsc[1:] > 0) & (d_ns > 0)
    if not usable.any():
        return None, "none"
    return float(np.median(d_tsc[1:][usable] / d_ns[usable]) * 1e9), "estimated from tsc and actual_ns"


def _read_cycles_limit(cycles: np.ndarray, k: float) -> float:
    median = float(np.median(cycles))
    mad = float(np.median(np.abs(cycles - median)))
    return max(median + k * 1.4826 * mad, 1.5 * median, median + 1.0)
