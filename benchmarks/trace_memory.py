"""Time and peak RSS of kernel-trace attribution as the trace grows: it streams, so memory stays flat.

Usage: python benchmarks/trace_memory.py [--sizes 1e5 1e6] [--keep DIR]

For each size N it writes (once, cached in --keep) a dataset directory of N wake-ups at 1 kHz on CPU 1 (in row
groups of 20 s, as the capture writes them) and a
kernel trace of 6 events per wake-up (the timer vector's entry and exit, the wake-up, the switch in and out)
in parts of 1,000,000 events, as a capture writes them; every 100th wake-up is delayed 300 µs by a planted
SCHED_FIFO thread ("spinner", pid 77) that the trace shows running.  Then, each in a fresh subprocess so peak
RSS is the step's own:
  floor      pyarrow reading the trace's columns part by part, row group by row group, plus one numpy pass
  attribute  jitterscope.derive.attribute_spikes (threshold 100 µs), checked: N/100 spikes, every one with
             the spinner as its longest cause
and prints seconds, the ratio to the floor and peak RSS.  Target: attribution RSS flat as N grows tenfold
(the old reader held every event and every wake-up in memory).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import run_step, work_dir
from jitterscope.dataset import TRACE_COLUMNS, TRACE_EVENTS, Metadata, ThreadInfo, trace_schema, write_dataset

INTERVAL_NS = 1_000_000
PART_EVENTS = 1_000_000
STRINGS = ["swapper/1", "js-cpu1", "spinner", "local_timer"]
JS_TID, SPINNER_PID = 500, 77


def _events(n: int) -> dict[str, np.ndarray]:
    """6 events per wake-up; every 100th wake-up the spinner holds the CPU from 100 µs before it to 300 µs after."""
    k = np.arange(n, dtype=np.int64)
    expected = 1_000_000_000 + k * INTERVAL_NS
    spike = k % 100 == 0
    late = np.where(spike, 300_000, 5_000)
    e = TRACE_EVENTS
    # (time, event, other_pid, other_comm, other_prio, number, name) of each of the six events; the first is
    # the switch to the spinner before a spike, an hrtimer expiry otherwise
    rows = [
        (expected - np.where(spike, 100_000, 0), np.where(spike, e["switch"], e["hrtimer"]),
         np.where(spike, SPINNER_PID, -1), np.where(spike, 2, -1), np.where(spike, 9, -1),
         -1, -1),
        (expected + 1_000, np.full(n, e["vector_entry"]), -1, -1, -1, 236, 3),
        (expected + 2_000, np.full(n, e["wakeup"]), JS_TID, 1, 19, 1, -1),
        (expected + 3_000, np.full(n, e["vector_exit"]), -1, -1, -1, 236, 3),
        (expected + late - 1_000, np.full(n, e["switch"]), JS_TID, 1, 19, -1, -1),
        (expected + late + 2_000, np.full(n, e["switch"]), 0, 0, 120, -1, -1),
    ]
    order = np.argsort(np.concatenate([r[0] for r in rows]), kind="stable")

    def col(i: int) -> np.ndarray:
        return np.concatenate([np.broadcast_to(np.asarray(r[i]), (n,)) for r in rows])[order]

    ts, event = col(0), col(1)
    columns = {"ts_ns": ts, "cpu": np.ones(ts.size), "event": event, "pid": np.zeros(ts.size),
               "comm": np.zeros(ts.size), "number": col(5), "name": col(6), "other_pid": col(2),
               "other_prio": col(4), "other_comm": col(3), "prio": np.full(ts.size, 120), "value": np.zeros(ts.size)}
    return {c.name: columns[c.name].astype(np.int64 if c.arrow_type == pa.int64() else np.int32) for c in TRACE_COLUMNS}


def make(work: Path, n: int) -> Path:
    """The dataset of size n, written by a child process: a step's peak RSS (ru_maxrss, kept across fork and
    exec) must not start from this process having held the generated arrays."""
    root = work / f"traced-{n}"
    if not (root / "_trace").is_dir():
        import subprocess
        subprocess.run([sys.executable, __file__, "--make", str(n), str(root)], check=True)
    return root


def _write(root: Path, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    k = np.arange(n, dtype=np.int64)
    expected = 1_000_000_000 + k * INTERVAL_NS
    actual = expected + np.where(k % 100 == 0, 300_000, 5_000)
    table = pa.table({"thread": pa.array(np.zeros(n, np.int32)), "cpu": pa.array(np.ones(n, np.int32)),
                      "seq": pa.array(k), "expected_ns": pa.array(expected), "actual_ns": pa.array(actual)})
    meta = Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=1, interval_ns=INTERVAL_NS, samples=n,
                                                        tid=JS_TID),))
    write_dataset(table, meta, root / "part-00000.parquet", row_group_size=20_000)  # a capture's 20 s row groups
    events = _events(n)
    info = {"version": 1, "instance": "synthetic", "clock": "mono", "resolution_ns": 1, "cpus": [1],
            "lost": {"per_cpu": [{"cpu": 1, "overrun": 0, "dropped": 0}], "total": 0}}
    schema = trace_schema().with_metadata({"jitterscope.trace": json.dumps(info),
                                           "jitterscope.trace_strings": json.dumps(STRINGS)})
    (root / "_trace").mkdir()
    total = events["ts_ns"].size
    for part, start in enumerate(range(0, total, PART_EVENTS)):
        chunk = pa.table({c: pa.array(v[start:start + PART_EVENTS]) for c, v in events.items()}, schema=schema)
        pq.write_table(chunk, root / "_trace" / f"part-{part:05d}.parquet", row_group_size=131_072)
    print(f"# wrote {n:,} wake-ups and {total:,} events in {-(-total // PART_EVENTS)} part(s) -> {root}",
          file=sys.stderr)


FLOOR = """
import glob, numpy as np, pyarrow.parquet as pq
worst = 0
for name in sorted(glob.glob(PATH + "/_trace/part-*.parquet")):
    f = pq.ParquetFile(name)
    for g in range(f.num_row_groups):
        t = f.read_row_group(g, columns=["ts_ns", "cpu", "event", "other_pid"])
        worst = max(worst, int(np.diff(t.column("ts_ns").to_numpy()).max()))
"""
ATTRIBUTE = """
from jitterscope.dataset import open_dataset
from jitterscope.derive import attribute_spikes
r = attribute_spikes(open_dataset(PATH), 100_000)
named = sum(s.longest is not None and s.longest.startswith("spinner (SCHED_FIFO") for s in r.spikes)
print(f"# {r.n_wakeups:,} wake-ups, {r.n_spikes:,} spikes, {named:,} with the spinner longest", file=sys.stderr)
assert r.n_spikes == r.n_wakeups // 100 + (r.n_wakeups % 100 > 0) and named == r.n_spikes, (r.n_spikes, named)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6])
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--make", nargs=2, metavar=("N", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        _write(Path(args.make[1]), int(args.make[0]))
        return 0
    work = work_dir(args.keep)
    print(f"{'wake-ups':>10} {'events':>11} {'step':>10} {'seconds':>8} {'x floor':>8} {'peak RSS MB':>12}")
    for size in args.sizes:
        n = int(size)
        root = make(work, n)
        floor = run_step("floor", FLOOR, root)
        step = run_step("attribute", ATTRIBUTE, root, setup="import sys")
        for name, r in (("floor", floor), ("attribute", step)):
            print(f"{n:>10,} {6 * n:>11,} {name:>10} {r['seconds']:>8.2f} {r['seconds'] / floor['seconds']:>8.1f} "
                  f"{r['rss_mb']:>12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
