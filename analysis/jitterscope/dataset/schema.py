"""The jitterscope dataset contract, mirrored from ``docs/dataset-format.md``.

This module is the Python half of the contract; ``capture/schema.h`` is the C
half, and ``tests/test_contract.py`` keeps the document, this module and a file
written by the binary equal.  Change all three together and add a row to the
version history.

Version history
---------------
1 (2026-11-30)
    First version: one row per wake-up, ``cpu``/``thread``/``seq``/
    ``expected_ns``/``actual_ns`` required, clock and counter columns optional,
    metadata under ``jitterscope.*`` keys with JSON values; a separate
    ``histogram`` kind for histogram-only imports.
1 (2026-11-30, addition)
    Optional ``timeline`` metadata key (a turbostat frequency/SMI timeline
    joined by wall-clock time); backward compatible, readers ignore unknown keys.
1 (2026-12-01, addition)
    Optional ``steal`` metadata key: the measured CPUs' steal time from
    ``/proc/stat``, sampled every 10 ms by the capture's writer (issue 21).
    Optional ``experiment`` metadata key: the run of a ``jitterscope sweep`` a
    dataset is (factor levels, replicate, order, warm-up, settings applied).
1 (2026-12-01, addition)
    Kind ``poll`` (``jitterscope-capture --mode poll``, issue 24): one row per
    interruption of a busy loop (``start_ns``/``duration_ns``), the per-second
    table ``_poll/part-NNNNN.parquet`` (iterations, noise, interruptions, max
    gap, a log histogram of every gap) and the ``poll`` metadata key; its
    threads' ``interval_ns`` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 1
"""The newest dataset version this package reads and the one it writes."""

METADATA_PREFIX = "jitterscope."


@dataclass(frozen=True)
class Column:
    """One column of the contract."""

    name: str
    arrow_type: pa.DataType
    required: bool
    unit: str
    meaning: str


# One row per wake-up.  Order here is the order the capture writes them in.
SAMPLE_COLUMNS: tuple[Column, ...] = (
    Column("cpu", pa.int32(), True, "-", "CPU the measuring thread was pinned to"),
    Column("thread", pa.int32(), True, "-", "measuring-thread index, 0-based"),
    Column("seq", pa.int64(), True, "-",
           "per-thread wake-up index from 0; a gap means dropped samples"),
    Column("expected_ns", pa.int64(), True, "ns",
           "programmed absolute wake-up time, CLOCK_MONOTONIC"),
    Column("actual_ns", pa.int64(), True, "ns",
           "CLOCK_MONOTONIC read right after waking"),
    Column("overruns", pa.int32(), False, "periods",
           "whole periods skipped before this wake-up because the thread woke after the next target"),
    Column("tsc", pa.int64(), False, "cycles",
           "time-stamp counter read right after actual_ns (uint64 stored as int64)"),
    Column("run_cpu", pa.int32(), False, "-",
           "CPU the thread actually ran on when it woke (rdtscp TSC_AUX or getcpu)"),
    Column("read_cycles", pa.int32(), False, "cycles",
           "TSC cycles spent reading the frequency counters of this row"),
    Column("aperf", pa.int64(), False, "cycles", "IA32_APERF (MSR 0xE8) or perf msr/aperf"),
    Column("mperf", pa.int64(), False, "cycles", "IA32_MPERF (MSR 0xE7) or perf msr/mperf"),
    Column("smi", pa.int64(), False, "count", "MSR_SMI_COUNT (MSR 0x34) or perf msr/smi"),
    Column("perf_status", pa.int64(), False, "raw",
           "IA32_PERF_STATUS (MSR 0x198): current P-state request, raw"),
)

# Histogram-only datasets (kind == "histogram"): one row per non-empty bin.
HISTOGRAM_COLUMNS: tuple[Column, ...] = (
    Column("thread", pa.int32(), True, "-", "thread index as in the source"),
    Column("cpu", pa.int32(), True, "-", "CPU of the thread, -1 when the source does not say"),
    Column("bin_start_ns", pa.int64(), True, "ns", "inclusive lower edge of the bin"),
    Column("bin_width_ns", pa.int64(), True, "ns", "width of the bin"),
    Column("count", pa.int64(), True, "count", "wake-ups whose latency fell in the bin"),
)

# Poll datasets (kind == "poll"): one row per interruption, a gap >= the threshold between two reads of the
# busy loop.  Order here is the order the capture writes them in.
POLL_COLUMNS: tuple[Column, ...] = (
    Column("cpu", pa.int32(), True, "-", "CPU the polling thread is pinned to"),
    Column("thread", pa.int32(), True, "-", "polling-thread index, 0-based"),
    Column("seq", pa.int64(), True, "-", "per-thread interruption index from 0; a gap means dropped rows"),
    Column("start_ns", pa.int64(), True, "ns", "CLOCK_MONOTONIC of the last loop read before the gap"),
    Column("duration_ns", pa.int64(), True, "ns",
           "the gap: the next read minus start_ns (includes one loop iteration)"),
    Column("tsc", pa.int64(), False, "cycles", "time-stamp counter at start_ns (uint64 stored as int64)"),
    Column("run_cpu", pa.int32(), False, "-", "CPU the thread ran on after the gap (rdtscp TSC_AUX or getcpu)"),
    Column("aperf", pa.int64(), False, "cycles", "IA32_APERF read right after the gap (--counters)"),
    Column("mperf", pa.int64(), False, "cycles", "IA32_MPERF read right after the gap (--counters)"),
    Column("smi", pa.int64(), False, "count", "MSR_SMI_COUNT read right after the gap (--counters)"),
    Column("perf_status", pa.int64(), False, "raw", "IA32_PERF_STATUS read right after the gap (--counters)"),
)

# The per-second table of a poll dataset, DIR/_poll/part-NNNNN.parquet: these columns, then one int64 count
# column per histogram bucket, "h" and the bucket index with at least two digits (h00, h01, ..., h140).
POLL_WINDOW_COLUMNS: tuple[Column, ...] = (
    Column("cpu", pa.int32(), True, "-", "CPU the polling thread is pinned to"),
    Column("thread", pa.int32(), True, "-", "polling-thread index"),
    Column("window_start_ns", pa.int64(), True, "ns", "CLOCK_MONOTONIC start of this window"),
    Column("window_ns", pa.int64(), True, "ns", "length polled in this window (1e9 except the last)"),
    Column("iterations", pa.int64(), True, "count", "loop iterations whose gap started in the window"),
    Column("noise_ns", pa.int64(), True, "ns", "sum of duration_ns of the gaps >= threshold starting in it"),
    Column("interruptions", pa.int64(), True, "count",
           "gaps >= threshold starting in the window (the rows, dropped ones included)"),
    Column("max_gap_ns", pa.int64(), True, "ns", "largest gap starting in the window, any size"),
)
POLL_DIR = "_poll"
"""The per-second table's directory inside a poll dataset directory."""


def poll_bucket_column(index: int) -> str:
    """The per-second table's column of histogram bucket ``index`` (``h00``, ..., ``h140``)."""
    return f"h{index:02d}"


POLL_LINEAR_BUCKETS = 8
POLL_TOP_OCTAVE = 36


def poll_histogram_edges() -> list[int]:
    """The capture's gap-histogram edges (capture/pollwin.h, the C mirror): 0..7 one per ns, then 4 buckets per
    octave from 8 ns up to 2^36 ns, the last bucket [2^36 ns, INT64_MAX) open; bucket k is ``[e[k], e[k+1])``."""
    edges = list(range(POLL_LINEAR_BUCKETS))
    for octave in range(3, POLL_TOP_OCTAVE):
        edges += [(1 << octave) + sub * (1 << (octave - 2)) for sub in range(4)]
    return [*edges, 1 << POLL_TOP_OCTAVE, 2**63 - 1]


SAMPLE_COLUMN_NAMES = tuple(c.name for c in SAMPLE_COLUMNS)
REQUIRED_SAMPLE_COLUMNS = tuple(c.name for c in SAMPLE_COLUMNS if c.required)
COUNTER_COLUMNS = ("aperf", "mperf", "smi", "perf_status")

DATASET_KINDS = ("capture", "import", "simulation", "histogram", "poll")

# Metadata keys (each value is a JSON document).  Required for every dataset:
REQUIRED_METADATA_KEYS = ("schema_version", "kind", "tool", "threads")
# Optional, present when the producer knows them:
OPTIONAL_METADATA_KEYS = (
    "settings", "environment", "counters", "clock", "status",
    "source", "ground_truth", "pack", "timeline", "steal", "experiment", "poll",
)
METADATA_KEYS = REQUIRED_METADATA_KEYS + OPTIONAL_METADATA_KEYS


def column(name: str) -> Column:
    """Return the sample or histogram column called ``name``."""
    for col in SAMPLE_COLUMNS + HISTOGRAM_COLUMNS:
        if col.name == name:
            return col
    raise KeyError(name)


def sample_schema(columns: tuple[str, ...] | list[str] | None = None) -> pa.Schema:
    """Arrow schema for the given sample columns (all of them by default), in contract order."""
    wanted = set(SAMPLE_COLUMN_NAMES if columns is None else columns)
    unknown = wanted - set(SAMPLE_COLUMN_NAMES)
    if unknown:
        raise KeyError(f"not dataset columns: {sorted(unknown)}")
    return pa.schema(
        [pa.field(c.name, c.arrow_type, nullable=False) for c in SAMPLE_COLUMNS if c.name in wanted]
    )


def poll_schema(columns: tuple[str, ...] | list[str] | None = None) -> pa.Schema:
    """Arrow schema for the given poll columns (all of them by default), in contract order."""
    names = tuple(c.name for c in POLL_COLUMNS)
    wanted = set(names if columns is None else columns)
    unknown = wanted - set(names)
    if unknown:
        raise KeyError(f"not poll dataset columns: {sorted(unknown)}")
    return pa.schema([pa.field(c.name, c.arrow_type, nullable=False) for c in POLL_COLUMNS if c.name in wanted])


def poll_window_schema(buckets: int) -> pa.Schema:
    """Arrow schema of the per-second table with ``buckets`` histogram columns."""
    return pa.schema([pa.field(c.name, c.arrow_type, nullable=False) for c in POLL_WINDOW_COLUMNS]
                     + [pa.field(poll_bucket_column(k), pa.int64(), nullable=False) for k in range(buckets)])


def histogram_schema() -> pa.Schema:
    """Arrow schema of a histogram-kind dataset."""
    return pa.schema([pa.field(c.name, c.arrow_type, nullable=False) for c in HISTOGRAM_COLUMNS])
