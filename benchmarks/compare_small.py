"""compare on small runs (issue 26): two 20,000-wake-up runs, beside the 10^7 and 10^8 figures of the streamed
compare (streaming_memory.py). Targets: <= 1 s and <= 300 MB.

Simulates two runs of 2 threads x 10,000 wake-ups (a 10 s capture at 1 kHz on 2 CPUs), then measures
``compare_runs`` in this process (time; peak RSS above what the imports took) and ``jitterscope compare`` as a
user runs it (wall time and peak RSS of the whole process, imports included, from ``wait4``), best of
``--repeat``.

Usage: ``python benchmarks/compare_small.py [--repeat 3] [--wakeups 20000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"


def _cli(a: Path, b: Path) -> tuple[float, int]:
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CLI, "compare", str(a), str(b)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return time.perf_counter() - started, usage.ru_maxrss << 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--wakeups", type=int, default=20_000, help="wake-ups per run (2 threads)")
    args = parser.parse_args()
    from jitterscope.compare import compare_runs
    from jitterscope.dataset import open_dataset, write_dataset
    from jitterscope.io import SimulationSpec, simulate

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for seed in (1, 2):
            table, metadata = simulate(SimulationSpec(threads=2, samples=args.wakeups // 2), seed)
            paths.append(write_dataset(table, metadata, Path(tmp) / f"run{seed}.parquet"))
        datasets = [open_dataset(p) for p in paths]
        compare_runs(datasets, n_boot=20, seed=0)  # warm: imports and first-call costs out of the measurement
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
        best = min(_timed(compare_runs, datasets) for _ in range(args.repeat))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
        cli = min(_cli(*paths) for _ in range(args.repeat))
    print(f"compare_runs, 2 x {args.wakeups:,} wake-ups, 1000 resamples: {best:.2f} s, peak RSS "
          f"{peak >> 20} MiB ({(peak - before) >> 20} MiB above the imports)")
    print(f"jitterscope compare (the whole process, imports included): {cli[0]:.2f} s, peak RSS {cli[1] >> 20} MiB")
    print("targets: <= 1 s and <= 300 MB (timings on the machine that ran it; note whether it was quiet)")
    return 0


def _timed(function, datasets) -> float:
    started = time.perf_counter()
    function(datasets, n_boot=1000, seed=0)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
