"""Per-thread latency series in wake-up order, in memory (for tests, notebooks and the in-memory compare).

Unlike the streaming accumulators (summary, tails, power, compare's
:mod:`jitterscope.compare.stream`), this holds one int64 per wake-up (8 bytes;
10^7 wake-ups = 80 MB).  Rows are ordered by ``seq`` within a thread, as the contract allows
rows of different threads to interleave.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset, ThreadInfo
from ..errors import AnalysisError


@dataclass(frozen=True)
class ThreadSeries:
    """One thread's latencies (ns) in wake-up order, with its metadata."""

    info: ThreadInfo
    latency_ns: np.ndarray

    @property
    def rate_hz(self) -> float:
        """Programmed wake-ups per second."""
        return 1e9 / self.info.interval_ns


def read_thread_series(dataset: Dataset) -> tuple[ThreadSeries, ...]:
    """Latency series of every thread of a sample dataset, ordered by thread index.

    Raises
    ------
    AnalysisError
        The dataset is histogram-only (no per-wake-up order) or has no rows.
    """
    if dataset.is_histogram:
        raise AnalysisError(
            f"{dataset.path}: histogram-only dataset has no wake-up series; "
            "tails and compare need per-sample data (cyclictest -v, jitterdebugger samples, a capture)"
        )
    table = dataset.read(["thread", "seq", "expected_ns", "actual_ns"])
    if table.num_rows == 0:
        raise AnalysisError(f"{dataset.path}: dataset has no rows; capture for longer")
    thread = table.column("thread").to_numpy()
    seq = table.column("seq").to_numpy()
    latency = table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()
    order = np.lexsort((seq, thread))
    thread, latency = thread[order], latency[order]
    bounds = np.flatnonzero(np.diff(thread)) + 1
    infos = {info.thread: info for info in dataset.metadata.threads}
    out = []
    for chunk_thread, chunk in zip(np.split(thread, bounds), np.split(latency, bounds), strict=True):
        index = int(chunk_thread[0])
        info = infos.get(index)
        if info is None:
            raise AnalysisError(
                f"{dataset.path}: rows of thread {index} but no entry for it in metadata threads; "
                "run 'jitterscope validate' on the dataset"
            )
        out.append(ThreadSeries(info, np.ascontiguousarray(chunk)))
    return tuple(out)


def pooled_latency(series: tuple[ThreadSeries, ...]) -> np.ndarray:
    """All threads' series concatenated in thread order (blocks of a block bootstrap rarely straddle threads)."""
    return np.concatenate([s.latency_ns for s in series])
