"""One run's summary, the unit of work a fleet sends to a Dask worker: :func:`summarize_run`.

A task opens one dataset and streams it once through the summary's mergeable
accumulators (the HDR :class:`~jitterscope.summary.LatencyHistogram` and
:class:`~jitterscope.summary.Moments` of latency, per thread merged into one),
so its memory is bounded by two row groups plus one histogram, whatever the
length of the capture.  It never raises for a bad dataset: a
:class:`~jitterscope.errors.JitterscopeError` becomes a :class:`SkippedDataset`
with its one-line message, so one unreadable file cannot stop a fleet.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dataset import Metadata, iter_thread_batches, open_dataset
from ..derive import require_wakeups
from ..errors import JitterscopeError
from ..summary import LatencyHistogram, Moments
from .keys import GroupKey, configuration_keys, start_time_ns

if TYPE_CHECKING:
    from .poll import PollRunRecord

RUN_PERCENTILES: tuple[float, ...] = (50.0, 99.0, 99.9, 99.99)
"""Per-run quantiles kept in a :class:`RunRecord` (percent)."""


@dataclass(frozen=True)
class SkippedDataset:
    """A dataset the fleet could not use, and why (the error's one line)."""

    path: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class RunRecord:
    """One run's streaming summary and what its metadata says about the machine.

    ``histogram`` is the accumulator itself (mergeable: groups merge their runs'
    histograms); ``moments`` holds the exact count, mean, std, min and max of
    latency in ns; ``quantiles_ns`` the run's p50 … p99.99 from the histogram.
    ``peak_rss_bytes`` is the worker process's peak resident size after the task
    (``getrusage``: the process's high-water mark, not this task's alone).
    """

    path: str
    host: str
    start_ns: int | None
    metadata: Metadata
    configuration: dict[str, str]
    histogram: LatencyHistogram
    moments: Moments
    quantiles_ns: dict[float, float]
    wakeups_per_s: float
    overruns: int
    drops: int
    worker_pid: int
    peak_rss_bytes: int

    @property
    def n(self) -> int:
        return int(self.moments.n)

    @property
    def min_ns(self) -> int:
        return int(self.moments.min or 0)

    @property
    def max_ns(self) -> int:
        return int(self.moments.max or 0)


def summarize_run(path: str, *, threads: bool = True) -> RunRecord | PollRunRecord | SkippedDataset:
    """Summarize one dataset in one streaming pass; a bad dataset comes back as :class:`SkippedDataset`.

    Parameters
    ----------
    path
        A dataset file or directory.
    threads
        Read ahead and decode in pyarrow's threads (the fastest for one dataset in this
        process). False keeps the task on one core: a fleet's Dask tasks, whose parallelism is
        one task per worker core, so that a worker does not compete with its neighbours for
        cores and one worker's speed is the honest baseline of the scaling.

    Returns
    -------
    RunRecord, PollRunRecord or SkippedDataset
        The summary (a poll dataset's: :func:`~.poll.summarize_poll_run`), or the reason the dataset
        cannot be used (unreadable, not a jitterscope dataset, a histogram or summary-only import without
        per-wake-up samples, no rows, broken invariants).

    Notes
    -----
    Memory: the dataset's reader holds at most two row groups (one without ``threads``); the
    histogram holds O(octaves x 1024) counts.
    """
    try:
        return _summarize(path, threads)
    except JitterscopeError as exc:
        line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # the messages start with the path; the table has a column for it
        return SkippedDataset(str(path), line.removeprefix(f"{path}: "))


def _summarize(path: str, threads: bool) -> RunRecord | PollRunRecord:
    dataset = open_dataset(path)
    meta = dataset.metadata
    if meta.kind == "poll":
        from .poll import summarize_poll_run  # here: .poll uses .results, which uses this module
        return summarize_poll_run(dataset)
    require_wakeups(dataset, "the fleet's latency histograms")
    if dataset.is_histogram:
        raise JitterscopeError(f"{path}: a histogram-kind dataset (kind histogram) has bins of its own, which do not "
                               "merge with the fleet's HDR histograms; import the tool's per-wake-up output instead")
    histogram, moments = LatencyHistogram(), Moments()
    for _, batch in iter_thread_batches(dataset, ["expected_ns", "actual_ns"], threads=threads):
        latency = batch.column(1).to_numpy() - batch.column(0).to_numpy()
        histogram.update(latency)
        moments.update(latency)
    if moments.n == 0:
        raise JitterscopeError(f"{path}: the dataset has no rows (no wake-ups were recorded)")
    result = histogram.result()
    quantiles = result.percentiles(RUN_PERCENTILES)
    rate = float(sum(1e9 / t.interval_ns for t in meta.threads if t.interval_ns > 0))
    return RunRecord(
        path=str(path), host=GroupKey("host").value(meta), start_ns=start_time_ns(meta), metadata=meta,
        configuration=configuration_keys(meta), histogram=histogram, moments=moments, quantiles_ns=quantiles,
        wakeups_per_s=rate, overruns=meta.overruns, drops=meta.drops, worker_pid=os.getpid(),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
