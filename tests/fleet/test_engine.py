"""The fleet on Dask: distributed results equal the serial ones, and a worker killed mid-run changes nothing.

One LocalCluster (2 single-threaded worker processes) serves the module; the fixture checks that its
worker processes are gone when it closes.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from jitterscope.fleet import GroupKey, run_fleet, write_simulated_fleet

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=50)
    client = distributed.Client(cluster)
    yield client
    pids = set(client.run(os.getpid).values())
    client.close()
    cluster.close()
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

    def flaky(path: str):
        if path == poisoned:
            raise RuntimeError("simulated failure")
        return summarize_run(path)

    monkeypatch.setattr(engine, "summarize_run", flaky)
    # threads, not processes: the patched function lives in this process
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0",
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        fleet = run_fleet(list(planted.paths), client=client)
    assert [s.path for s in fleet.skipped] == [poisoned]
    assert "RuntimeError: simulated failure" in fleet.skipped[0].reason
    assert fleet.runs == len(planted.paths) - 1
