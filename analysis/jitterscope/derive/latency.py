"""Values derived from the stored columns: latency, period, period error, drops, TSC-clock latency.

Pure functions of arrays (or of a record batch), one thread's rows in order;
nothing here reads files.  The dataset stores only what was measured
(docs/dataset-format.md, "Invariants"); everything else is computed here.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..dataset import column_values
from ..errors import AnalysisError


def _column(batch: pa.RecordBatch | pa.Table, name: str) -> np.ndarray:
    if name not in batch.schema.names:
        raise AnalysisError(f"column '{name}' is needed but the rows do not have it")
    return column_values(batch, name)  # not to_numpy: its first call imports pandas (0.9 s of CPU here)


def latency_ns(batch: pa.RecordBatch | pa.Table) -> np.ndarray:
    """Wake-up latency ``actual_ns - expected_ns`` (int64 ns) of each row."""
    return _column(batch, "actual_ns") - _column(batch, "expected_ns")


def period_ns(actual_ns: np.ndarray) -> np.ndarray:
    """Measured periods: differences of consecutive ``actual_ns`` of one thread (length n - 1).

    Parameters
    ----------
    actual_ns
        Wake-up times of one thread in order (int64 ns).

    Returns
    -------
    numpy.ndarray
        ``actual_ns[i] - actual_ns[i-1]`` for i = 1 .. n-1.
    """
    values = np.asarray(actual_ns)
    if values.ndim != 1:
        raise AnalysisError("period_ns takes a 1-D array of one thread's wake-up times")
    return np.diff(values.astype(np.int64, copy=False))


def period_error_ns(actual_ns: np.ndarray, interval_ns: int) -> np.ndarray:
    """Period minus nominal interval (int64 ns): positive when the period was long.

    periodic_timer prints the opposite sign (``nominal - period``); see
    :class:`jitterscope.accumulators.IntervalBlock`.
    """
    if interval_ns <= 0:
        raise AnalysisError(f"interval_ns must be > 0, got {interval_ns}")
    return period_ns(actual_ns) - int(interval_ns)


def seq_gaps(seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where samples were dropped: ``(positions, dropped_counts)``.

    ``positions[j]`` is the index of the first row after a gap and
    ``dropped_counts[j]`` how many ``seq`` values are missing before it.  A
    first ``seq`` above 0 counts as a gap at position 0.

    Raises
    ------
    AnalysisError
        ``seq`` is not strictly increasing.
    """
    values = np.asarray(seq, dtype=np.int64)
    if values.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    step = np.diff(values)
    if np.any(step <= 0):
        raise AnalysisError("seq is not strictly increasing; rows of one thread must be given in order")
    missing = np.concatenate([[values[0]], step - 1])
    positions = np.flatnonzero(missing > 0)
    return positions, missing[positions]


def overruns_from_expected(seq: np.ndarray, expected_ns: np.ndarray, interval_ns: int) -> np.ndarray:
    """Periods skipped before each row, from the ``expected_ns`` steps (for data without an ``overruns`` column).

    ``expected_ns[i] - expected_ns[i-1] = interval * (seq[i] - seq[i-1] + overruns)``
    (docs/dataset-format.md); the first row gets 0.  Across a drop the skipped
    rows' overruns are counted on the row after the gap.

    Raises
    ------
    AnalysisError
        A step is not a whole multiple of the interval, or shorter than the seq step.
    """
    if interval_ns <= 0:
        raise AnalysisError(f"interval_ns must be > 0, got {interval_ns}")
    seq = np.asarray(seq, dtype=np.int64)
    expected = np.asarray(expected_ns, dtype=np.int64)
    if seq.shape != expected.shape:
        raise AnalysisError("seq and expected_ns must have the same length")
    periods, remainder = np.divmod(np.diff(expected), int(interval_ns))
    skipped = periods - np.diff(seq)
    if np.any(remainder) or np.any(skipped < 0):
        raise AnalysisError("expected_ns steps are not whole intervals beyond the seq steps; "
                            "the rows are not one thread's, in order, at this interval")
    return np.concatenate([np.zeros(min(1, seq.size), np.int64), skipped])


def tsc_latency_ns(
    tsc: np.ndarray, expected_ns: np.ndarray, tsc_hz: float, *, reference: int = 0,
) -> np.ndarray:
    """Latency measured on the TSC clock instead of CLOCK_MONOTONIC (periodic_timer's ``-T -F``).

    Each TSC reading is converted to ns with ``tsc_hz``.  The offset between
    the TSC and CLOCK_MONOTONIC is unknown, so it is taken from the
    least-delayed wake-up: the result is each wake-up's delay beyond the best
    one, in TSC time.  Against ``latency_ns - latency_ns.min()`` it shows where
    the clocks disagree (a wrong ``tsc_hz`` makes it drift linearly).

    Parameters
    ----------
    tsc
        Raw TSC values (int64 holding uint64) of one thread's rows.
    expected_ns
        Programmed wake-up times of those rows.
    tsc_hz
        TSC frequency (from metadata ``clock.tsc_hz`` or given by the user).
    reference
        Index of the row whose TSC value is the origin of the conversion
        (keeps the float arithmetic exact on long captures).

    Returns
    -------
    numpy.ndarray
        float64 ns, >= 0 by construction.
    """
    if not tsc_hz or tsc_hz <= 0:
        raise AnalysisError("the TSC frequency is unknown; pass it (e.g. --tsc-hz) or use a dataset that records it")
    counts = np.asarray(tsc, dtype=np.int64)
    expected = np.asarray(expected_ns, dtype=np.int64)
    if counts.size == 0:
        return np.zeros(0)
    # differences in uint64 arithmetic handle a wrapped int64 representation
    ticks = (counts.view(np.uint64) - np.uint64(counts[reference])).view(np.int64).astype(np.float64)
    tsc_ns = ticks * (1e9 / tsc_hz)
    offset = tsc_ns - (expected - expected[reference]).astype(np.float64)
    return offset - offset.min()


def tsc_period_ns(tsc: np.ndarray, tsc_hz: float) -> np.ndarray:
    """Periods measured on the TSC clock (float64 ns), length n - 1."""
    if not tsc_hz or tsc_hz <= 0:
        raise AnalysisError("the TSC frequency is unknown; pass it (e.g. --tsc-hz) or use a dataset that records it")
    counts = np.asarray(tsc, dtype=np.int64)
    return np.diff(counts.view(np.uint64)).view(np.int64) * (1e9 / tsc_hz)


def require_wakeups(dataset: object, what: str) -> None:
    """Refuse a busy-poll dataset (kind ``poll``) where an analysis needs timer wake-ups, in one line.

    A poll dataset's rows are interruptions of a loop that never sleeps: there is no expected wake-up, so no
    latency; its own analyses are ``jitterscope summary``, ``spectrum``, ``events``, ``compare``, ``tails``,
    ``fleet`` and ``report``.

    Raises
    ------
    AnalysisError
        ``dataset`` (anything with ``metadata.kind`` and ``path``) is of kind poll.
    """
    metadata = getattr(dataset, "metadata", None)
    if getattr(metadata, "kind", None) == "poll":
        raise AnalysisError(f"{getattr(dataset, 'path', 'dataset')}: a busy-poll dataset (kind poll) has no timer "
                            f"wake-ups for {what}; use 'jitterscope summary', 'spectrum', 'events', 'compare', "
                            "'tails', 'fleet' or 'report' on it (they read its interruptions)")
