"""Reading a poll dataset for the analyses: the interruption rows per thread and the per-second table.

Thin on purpose: the dataset layer owns the contract (``open_dataset`` checks the rows' columns and the
``jitterscope.poll`` metadata, ``read_poll_table`` is the one reader of the per-second table, from a directory
or a packed file); this module only gathers what the poll analyses need in memory (a poll
capture keeps a few hundred rows per CPU and second, not one per loop iteration).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..dataset import Dataset, column_values, open_dataset, poll_bucket_column, read_poll_table
from ..errors import AnalysisError

ROW_COLUMNS = ("cpu", "thread", "seq", "start_ns", "duration_ns")


@dataclass(frozen=True)
class PollThread:
    """One polling thread: its interruptions (``start_ns`` increasing) and its per-second windows."""

    thread: int
    cpu: int
    start_ns: np.ndarray
    duration_ns: np.ndarray
    smi: np.ndarray | None
    windows: Mapping[str, np.ndarray]
    """The ``_poll`` rows of this thread in time order: ``window_start_ns``, ``window_ns``, ``iterations``,
    ``noise_ns``, ``interruptions``, ``max_gap_ns`` and ``histogram`` (windows x buckets)."""

    @property
    def runtime_ns(self) -> int:
        return int(self.windows["window_ns"].sum())


@dataclass(frozen=True)
class PollData:
    """A poll dataset in memory for the analyses."""

    dataset: Dataset
    info: Mapping[str, Any]
    """The ``jitterscope.poll`` metadata."""
    threads: tuple[PollThread, ...]
    edges_ns: np.ndarray
    has_rows: bool
    """False for imports that only have histograms (oslat): class counts then come from the buckets."""
    has_counts: bool = True
    """False where the source gives neither the number nor the sizes of the gaps (rtla osnoise top): no rate."""

    @property
    def threshold_ns(self) -> int:
        return int(self.info["threshold_ns"])

    @property
    def rt_throttling(self) -> tuple[int, int] | None:
        """(runtime_us, period_us) when RT throttling was on: ``jitterscope.poll``'s, else the environment's."""
        recorded = self.info.get("rt_throttling")
        environment = self.dataset.metadata.environment or {}
        if not isinstance(recorded, Mapping):
            recorded = {"runtime_us": environment.get("rt_runtime_us"), "period_us": environment.get("rt_period_us")}
        runtime, period = recorded.get("runtime_us"), recorded.get("period_us")
        if isinstance(runtime, int) and isinstance(period, int) and 0 < runtime < period:
            return runtime, period
        return None  # off (-1), or not recorded

    @property
    def start_ns(self) -> int:
        return min(int(t.windows["window_start_ns"][0]) for t in self.threads if t.windows["window_start_ns"].size)


def read_poll(dataset: Dataset | str | Path) -> PollData:
    """Open (if needed) and read a poll dataset for the analyses.

    Raises
    ------
    AnalysisError
        The dataset is not of kind ``poll``.
    """
    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)
    if dataset.metadata.kind != "poll":
        raise AnalysisError(f"{dataset.path}: a {dataset.metadata.kind} dataset, not a busy-poll one (kind poll); "
                            "the poll analyses need 'jitterscope capture --mode poll' or 'jitterscope simulate "
                            "--mode poll'")
    info = dataset.metadata.poll or {}
    if "threshold_ns" not in info or "histogram_edges_ns" not in info:
        raise AnalysisError(f"{dataset.path}: metadata jitterscope.poll lacks threshold_ns or histogram_edges_ns; "
                            "the dataset is damaged or was written by an older jitterscope")
    edges = np.asarray(info["histogram_edges_ns"], np.int64)
    # the dataset layer's reader: contract-checked (h00..hNN as many as the edges say), sorted by thread and time
    seconds = read_poll_table(dataset)
    names = [poll_bucket_column(k) for k in range(edges.size - 1)]
    wanted = [c for c in (*ROW_COLUMNS, "smi") if c in dataset.columns]
    rows: dict[int, list[pa.RecordBatch]] = {}
    for batch in dataset.iter_batches(wanted):
        thread_of = column_values(batch, "thread")
        for thread in np.unique(thread_of).tolist():
            rows.setdefault(int(thread), []).append(batch.filter(pa.array(thread_of == thread)))
    sec_thread = seconds.column("thread").to_numpy()
    threads = []
    for info_thread in dataset.metadata.threads:
        t = info_thread.thread
        batches = rows.get(t, [])
        table = pa.Table.from_batches(batches) if batches else None

        def col(name: str, table: pa.Table | None = table) -> np.ndarray:
            return np.zeros(0, np.int64) if table is None else table.column(name).to_numpy().astype(np.int64)

        mine = seconds.filter(pa.array(sec_thread == t))
        windows = {n: mine.column(n).to_numpy().astype(np.int64)
                   for n in ("window_start_ns", "window_ns", "iterations", "noise_ns", "interruptions", "max_gap_ns")}
        windows["histogram"] = (np.column_stack([mine.column(n).to_numpy() for n in names]).astype(np.int64)
                                if mine.num_rows else np.zeros((0, len(names)), np.int64))
        threads.append(PollThread(thread=t, cpu=info_thread.cpu, start_ns=col("start_ns"),
                                  duration_ns=col("duration_ns"),
                                  smi=col("smi") if "smi" in wanted and table is not None else None,
                                  windows=windows))
    source = dataset.metadata.source or {}
    has_rows = not bool(source.get("histogram_only"))
    return PollData(dataset=dataset, info=info, threads=tuple(threads), edges_ns=edges, has_rows=has_rows,
                    has_counts=source.get("gap_counts") is not False)
