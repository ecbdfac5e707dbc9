"""Running a fleet on Dask: :func:`run_fleet`.

Each dataset is one task (:func:`~jitterscope.fleet.tasks.summarize_run`) on a
dask.distributed cluster: a :class:`~distributed.LocalCluster` with one
single-threaded worker process per core by default (the tasks are CPU-bound
numpy, so processes, not threads), or an existing cluster at ``scheduler``
(``tcp://HOST:PORT``).  Each task is single-core wherever it runs: it reads
and decodes in its own thread (``summarize_run(threads=False)``: no read-ahead
thread, not pyarrow's thread pool), and the LocalCluster's workers start with
pyarrow's and the BLAS libraries' pools at one thread (:data:`SINGLE_CORE_ENV`),
so N workers use N cores and one worker is the honest baseline.  The
comparisons of each machine's consecutive runs are tasks too, fed the records'
futures so the histograms stay on the workers.  A
worker lost mid-run loses its tasks; the scheduler runs them again elsewhere (a
LocalCluster's nanny also restarts the process), so the results are the same.
``scheduler="serial"`` runs the same functions in this process, without Dask.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import JitterscopeError
from .analyze import analyze_fleet, compare_consecutive, consecutive_pairs
from .keys import GroupKey
from .poll import (
    PollFleet,
    PollRunRecord,
    analyze_poll_fleet,
    check_one_kind,
    compare_poll_consecutive,
    poll_consecutive_pairs,
)
from .results import Fleet
from .tasks import RunRecord, SkippedDataset, summarize_run

SERIAL = "serial"
SINGLE_CORE_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "1",  # OpenMP, and the size of pyarrow's CPU pool (Arrow reads it)
    "ARROW_IO_THREADS": "1",  # pyarrow's I/O pool
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
"""The environment of a LocalCluster's worker processes (Dask's default configuration sets the BLAS ones too; a
site configuration may not)."""
CONNECT_TIMEOUT = "10s"
"""How long to try reaching a scheduler given by address before saying it cannot be reached."""


def run_fleet(
    paths: Sequence[str],
    *,
    by: GroupKey | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    client: Any = None,
    progress: bool = False,
    noise: float = 0.05,
    confidence: float = 0.95,
) -> Fleet | PollFleet:
    """Summarize every dataset as a Dask task, merge per group, flag regressions, rank.

    A fleet of busy-poll datasets (kind poll) gives a :class:`~.poll.PollFleet` (:mod:`.poll`); one of both kinds
    is refused.

    Parameters
    ----------
    paths
        Dataset files or directories.
    by
        Grouping key of the ranking (default: host).
    scheduler
        None: start a LocalCluster (``workers`` processes, default one per core);
        ``"serial"``: run in this process without Dask; else the address of a running
        scheduler (``tcp://HOST:PORT``).
    workers
        Worker processes of the LocalCluster (ignored with a scheduler address).
    client
        A :class:`distributed.Client` to use as it is (tests reuse one cluster).
    progress
        A progress bar on stderr while the tasks run.
    noise, confidence
        As for the compare machinery.

    Returns
    -------
    Fleet or PollFleet

    Raises
    ------
    JitterscopeError
        No datasets, the scheduler cannot be reached, no dataset was usable, or poll and timer datasets mixed.
    """
    if not paths:
        raise JitterscopeError("no datasets given: name them, or use --glob 'runs/**/*.parquet'")
    by = by or GroupKey("host")
    paths = [str(p) for p in paths]
    if len(set(paths)) != len(paths):
        raise JitterscopeError("a dataset is given twice; give each dataset once")
    if scheduler == SERIAL and client is None:
        return _run_serial(paths, by, progress, noise, confidence)
    with ExitStack() as stack:
        if client is None:
            client = stack.enter_context(_connect(scheduler, workers))
        futures, outcomes, execution = _summaries(client, paths, progress)
        records = [o for o in outcomes if isinstance(o, RunRecord)]
        polls = [o for o in outcomes if isinstance(o, PollRunRecord)]
        skipped = [o for o in outcomes if isinstance(o, SkippedDataset)]
        check_one_kind(records, polls)
        execution["scheduler"] = scheduler or "LocalCluster"
        if polls:
            return analyze_poll_fleet(polls, skipped, by=by, changes=_poll_changes(client, polls, noise, confidence),
                                      noise=noise, confidence=confidence, execution=execution)
        changes = _changes(client, dict(zip(paths, futures, strict=True)), records, noise, confidence)
        return analyze_fleet(records, skipped, by=by, changes=changes, noise=noise, confidence=confidence,
                             execution=execution)


def _run_serial(paths: list[str], by: GroupKey, progress: bool, noise: float,
                confidence: float) -> Fleet | PollFleet:
    from tqdm import tqdm
    outcomes = [summarize_run(p) for p in tqdm(paths, desc="fleet", unit="dataset", disable=not progress)]
    records = [o for o in outcomes if isinstance(o, RunRecord)]
    polls = [o for o in outcomes if isinstance(o, PollRunRecord)]
    skipped = [o for o in outcomes if isinstance(o, SkippedDataset)]
    check_one_kind(records, polls)
    if polls:
        return analyze_poll_fleet(polls, skipped, by=by, noise=noise, confidence=confidence,
                                  execution={"scheduler": SERIAL, "workers": 1, **_memory(polls)})
    return analyze_fleet(records, skipped, by=by, noise=noise, confidence=confidence,
                         execution={"scheduler": SERIAL, "workers": 1, **_memory(records)})


def _connect(scheduler: str | None, workers: int | None) -> Any:
    from distributed import Client
    if scheduler is None:
        # the CPUs this process may run on (a container or taskset may allow fewer than the machine has)
        count = workers if workers is not None else len(os.sched_getaffinity(0)) or 1
        return local_cluster(count)
    try:
        return _ClusterClient(Client(scheduler, timeout=CONNECT_TIMEOUT), None)
    except (OSError, TimeoutError, ValueError) as exc:  # ValueError: an address Dask cannot parse
        raise JitterscopeError(f"cannot reach the Dask scheduler at {scheduler} ({exc}); start one with "
                               "'dask scheduler' and 'dask worker ADDRESS', or leave out --scheduler") from None


def local_cluster(workers: int, *, silence_logs: int = 40) -> Any:
    """Start the fleet's LocalCluster: ``workers`` single-threaded worker processes, each confined to one core.

    Parameters
    ----------
    workers
        Worker processes (>= 1).
    silence_logs
        Level below which the cluster's log messages are dropped (``logging.ERROR`` by default).

    Returns
    -------
    context manager
        Yields a :class:`distributed.Client` of the cluster; leaving it closes both.
    """
    from distributed import Client, LocalCluster
    if workers < 1:
        raise JitterscopeError(f"--workers must be >= 1, got {workers}")
    # one single-threaded process per core: the tasks hold the GIL in numpy loops part of the time
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=silence_logs, env=dict(SINGLE_CORE_ENV))
    try:
        return _ClusterClient(Client(cluster), cluster)
    except BaseException:
        cluster.close()
        raise


class _ClusterClient:
    """A client and the LocalCluster it owns, closed together (a context manager)."""

    def __init__(self, client: Any, cluster: Any) -> None:
        self.client, self.cluster = client, cluster

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _summaries(client: Any, paths: list[str], progress: bool) -> tuple[list[Any], list[RunRecord | SkippedDataset],
                                                                        dict[str, Any]]:
    from distributed import as_completed
    from tqdm import tqdm
    # pure=False: a file may have changed since a previous call with the same path
    # threads=False: one core per task, the workers are the parallelism (see the module's docstring)
    futures = client.map(summarize_run, paths, threads=False, pure=False, retries=2)
    with tqdm(total=len(futures), desc="fleet", unit="dataset", disable=not progress) as bar:
        for _ in as_completed(futures):
            bar.update(1)
    outcomes = [_outcome(future, path) for future, path in zip(futures, paths, strict=True)]
    records = [o for o in outcomes if isinstance(o, RunRecord | PollRunRecord)]
    workers = len(client.scheduler_info().get("workers", {}))
    return futures, outcomes, {"workers": workers, **_memory(records)}


def _changes(client: Any, futures: dict[str, Any], records: list[RunRecord], noise: float,
             confidence: float) -> dict[tuple[str, str], Any]:
    """Compare each machine's consecutive runs as tasks on the records' futures (the histograms stay put)."""
    from distributed import wait
    pairs = consecutive_pairs(records)
    if not pairs:
        return {}
    tasks = [client.submit(compare_consecutive, futures[a.path], futures[b.path], noise=noise,
                           confidence=confidence, pure=False, retries=2) for a, b in pairs]
    wait(tasks)
    # a comparison whose task failed on the cluster is left out: analyze_fleet runs it here instead
    return {(a.path, b.path): task.result() for (a, b), task in zip(pairs, tasks, strict=True)
            if task.status == "finished"}


def _poll_changes(client: Any, records: list[PollRunRecord], noise: float,
                  confidence: float) -> dict[tuple[str, str], Any]:
    """Compare each machine's consecutive poll runs as tasks (each reads its two datasets where it runs)."""
    from distributed import wait
    pairs = poll_consecutive_pairs(records)
    tasks = [client.submit(compare_poll_consecutive, a.path, b.path, noise=noise, confidence=confidence, pure=False,
                           retries=1) for a, b in pairs]
    wait(tasks)
    # a comparison that failed on the cluster (e.g. the runs polled other CPUs) is left to analyze_poll_fleet,
    # which runs it here and says why it could not be made
    return {(a.path, b.path): task.result() for (a, b), task in zip(pairs, tasks, strict=True)
            if task.status == "finished"}


def _outcome(future: Any, path: str) -> RunRecord | PollRunRecord | SkippedDataset:
    """A finished task's record; a task that failed even after Dask's retries (an exception that is not a
    JitterscopeError, or its worker died every time it ran: out of memory?) becomes a skipped dataset."""
    if future.status == "finished":
        return future.result()
    exc = future.exception()
    return SkippedDataset(path, f"its task failed on the cluster ({type(exc).__name__}: {exc}); run "
                                f"'jitterscope summary {path}' to see the error in this process")


def _memory(records: Sequence[RunRecord | PollRunRecord]) -> dict[str, Any]:
    """Peak resident memory of each worker process that ran a task (its high-water mark), in bytes."""
    peaks: dict[int, int] = {}
    for record in records:
        peaks[record.worker_pid] = max(peaks.get(record.worker_pid, 0), record.peak_rss_bytes)
    return {"peak_rss_bytes_by_worker": {str(pid): peak for pid, peak in sorted(peaks.items())},
            "peak_rss_bytes_max": max(peaks.values(), default=0)}
