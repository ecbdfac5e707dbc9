"""The fleet on Dask: distributed results equal the serial ones, and a worker killed mid-run changes nothing.

One LocalCluster (2 single-threaded worker processes, the fleet's own :func:`local_cluster`) serves the
module; the fixture checks that its worker processes are gone when it closes.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from jitterscope.fleet import GroupKey, local_cluster, run_fleet, write_simulated_fleet

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    owner = local_cluster(2, silence_logs=50)
    client = owner.__enter__()
    yield client
    pids = set(client.run(os.getpid).values())
    owner.__exit__(None, None, None)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the worker processes are gone (and reaped: no zombie answers)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return write_simulated_fleet(tmp_path_factory.mktemp("fleet"), hosts=6, nights=3, samples=5_000, bad_every=3)


def _essentials(fleet):
    """Everything a fleet reports, minus how it was executed."""
    data = fleet.to_json()
    del data["execution"]
    return data


def _thread_pools() -> tuple[int, int, str | None, int]:
    import pyarrow
    return pyarrow.cpu_count(), pyarrow.io_thread_count(), os.environ.get("OPENBLAS_NUM_THREADS"), os.getpid()


def test_the_local_cluster_workers_are_single_core(client) -> None:
    """Each worker is one core: one task thread, pyarrow's CPU and I/O pools and BLAS at one thread."""
    assert set(client.nthreads().values()) == {1}
    pools = list(client.run(_thread_pools).values())
    assert len(pools) == 2 and {p[:3] for p in pools} == {(1, 1, "1")}
    assert len({p[3] for p in pools}) == 2  # two processes, not two threads of one


def test_serial_and_distributed_results_are_equal(planted, client) -> None:
    paths = [*planted.paths, "/nonexistent/run.parquet"]
    serial = run_fleet(paths, by=GroupKey("governor"), scheduler="serial")
    distributed_fleet = run_fleet(paths, by=GroupKey("governor"), client=client)
    assert distributed_fleet.execution["workers"] == 2
    # counts, min and max exact; the merged histograms are the same integer counts whatever the merge order,
    # so the quantiles (within the HDR error of the exact ones, tests/fleet/test_analyze.py) agree exactly too
    for a, b in zip(serial.groups, distributed_fleet.groups, strict=True):
        assert (a.value, a.runs, a.n, a.min_ns, a.max_ns) == (b.value, b.runs, b.n, b.min_ns, b.max_ns)
        assert a.quantiles == b.quantiles
        assert a.mean_ns == pytest.approx(b.mean_ns, rel=1e-12)  # float sums in another order
    assert [p.path for _, p in serial.flagged] == [p.path for _, p in distributed_fleet.flagged] \
        == [planted.regressed_path]
    a, b = _essentials(serial), _essentials(distributed_fleet)
    for group in (*a["groups"], *b["groups"]):
        group.pop("mean_ns"), group.pop("std_ns")
    for key in (*a["keys"], *b["keys"]):
        for value in key["values"]:
            value["stats"].pop("mean_ns"), value["stats"].pop("std_ns")
    assert a == b
    assert distributed_fleet.execution["peak_rss_bytes_max"] > 0


def test_a_worker_killed_mid_run_changes_nothing(planted, client) -> None:
    expected = _essentials(run_fleet(list(planted.paths), scheduler="serial"))
    killed: list[int] = []

    def kill_a_busy_worker() -> None:
        pids = client.run(os.getpid)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            busy = [worker for worker, keys in client.processing().items() if keys]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(pids[busy[0]])
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    fleet = run_fleet(list(planted.paths), client=client)
    killer.join()
    assert killed, "no worker was busy: the kill did not happen mid-run"
    got = _essentials(fleet)
    for data in (expected, got):
        for group in data["groups"]:
            group.pop("mean_ns"), group.pop("std_ns")
        for key in data["keys"]:
            for value in key["values"]:
                value["stats"].pop("mean_ns"), value["stats"].pop("std_ns")
    assert got == expected
    # the nanny restarted the process: the cluster is back to two workers for the next test
    client.wait_for_workers(2, timeout=30)
    assert killed[0] not in client.run(os.getpid).values()


def test_a_task_that_fails_on_the_cluster_is_listed_and_skipped(planted, monkeypatch) -> None:
    """Not a JitterscopeError (a bug, or a worker dying on one dataset every time): listed with its reason."""
    import jitterscope.fleet.engine as engine
    from jitterscope.fleet import summarize_run

    poisoned = planted.paths[4]

    def flaky(path: str, **options):
        if path == poisoned:
            raise RuntimeError("simulated failure")
        return summarize_run(path, **options)

    monkeypatch.setattr(engine, "summarize_run", flaky)
    # threads, not processes: the patched function lives in this process
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0",
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        fleet = run_fleet(list(planted.paths), client=client)
    assert [s.path for s in fleet.skipped] == [poisoned]
    assert "RuntimeError: simulated failure" in fleet.skipped[0].reason
    assert fleet.runs == len(planted.paths) - 1
