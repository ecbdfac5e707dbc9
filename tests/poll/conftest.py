"""Poll datasets for the tests: simulations with planted answers and small hand-made ones."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, poll_histogram_edges, write_poll_dataset
from jitterscope.io import PeriodicIrq, PollSpec, simulate_poll

T0 = 5_000_000_000


@pytest.fixture(scope="session")
def traced_poll(tmp_path_factory):
    """20 s on CPU 1: 250 Hz tick of 2 µs, RT throttling 950000/1000000, a 10 Hz IRQ of 8 µs, 3/s bursts of
    30 µs by 'spinner', 1/s hardware gaps of 5 µs, with the kernel trace that explains each."""
    spec = PollSpec(cpus=(1,), duration_s=20, irqs=(PeriodicIrq(10, 8000, "eth0"),), burst_rate_hz=3,
                    burst_ns=30_000, burst_command="spinner", hardware_rate_hz=1, hardware_ns=5000, trace=True)
    return simulate_poll(spec, tmp_path_factory.mktemp("poll") / "traced", seed=7)


def hand_dataset(path, rows: list[tuple[int, int, int]], *, runtime_s: int = 2, cpus: tuple[int, ...] = (1,),
                 windows_interruptions: dict[int, list[int]] | None = None, policy: str = "fifo",
                 throttling: dict | None = None, smi: list[int] | None = None, environment: dict | None = None):
    """A poll dataset from (cpu, start offset ns, duration ns) rows, its per-second table made from them."""
    edges = np.asarray(poll_histogram_edges())
    table_rows = {k: [] for k in ("cpu", "thread", "seq", "start_ns", "duration_ns")}
    seconds = {k: [] for k in ("cpu", "thread", "window_start_ns", "window_ns", "iterations", "noise_ns",
                               "interruptions", "max_gap_ns")}
    hist = []
    threads = []
    for thread, cpu in enumerate(cpus):
        mine = sorted((s, d) for c, s, d in rows if c == cpu)
        for seq, (start, duration) in enumerate(mine):
            for key, value in (("cpu", cpu), ("thread", thread), ("seq", seq), ("start_ns", T0 + start),
                               ("duration_ns", duration)):
                table_rows[key].append(value)
        for w in range(runtime_s):
            inside = [(s, d) for s, d in mine if w * 10**9 <= s < (w + 1) * 10**9]
            counts = np.zeros(edges.size - 1, np.int64)
            for _, d in inside:
                counts[np.searchsorted(edges, d, side="right") - 1] += 1
            claimed = (windows_interruptions or {}).get(cpu, [len(inside)] * runtime_s)[w]
            for key, value in (("cpu", cpu), ("thread", thread), ("window_start_ns", T0 + w * 10**9),
                               ("window_ns", 10**9), ("iterations", 1000 + len(inside)),
                               ("noise_ns", sum(d for _, d in inside)), ("interruptions", claimed),
                               ("max_gap_ns", max([d for _, d in inside], default=40))):
                seconds[key].append(value)
            hist.append(counts)
        threads.append(ThreadInfo(thread=thread, cpu=cpu, interval_ns=0, samples=len(mine), tid=100 + thread))
    if smi is not None:
        table_rows["smi"] = smi
    matrix = np.vstack(hist)
    seconds.update({f"h{k:02d}": matrix[:, k] for k in range(matrix.shape[1])})
    metadata = Metadata(
        kind="poll", threads=tuple(threads), settings={"asked": {}, "granted": {"policy": policy, "priority": 80}},
        environment={"hz": 250, **(environment or {})},
        clock={"realtime_ns": 1_764_460_800_000_000_000, "monotonic_ns": T0},
        poll={"threshold_ns": 1000, "clock": "tsc", "clock_read_ns": 10.0,
              "iteration_ns": {"min": 40.0, "median": 40.0}, "histogram_edges_ns": edges.tolist(),
              "window_ns": 10**9, "rt_throttling": throttling, "rows_dropped": 0},
    )
    return write_poll_dataset(path, pa.table(table_rows), pa.table(seconds), metadata)
