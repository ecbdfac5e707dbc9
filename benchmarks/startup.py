"""Start-up benchmark (issue 10, must-show 3): how fast the CLI answers.

Prints, from one run on this machine:

* ``jitterscope --version`` against ``python -c pass`` of the same interpreter (the floor any Python
  command pays), median of ``--repeat`` runs each — target ratio <= 3;
* ``jitterscope --help`` and ``jitterscope summary --help`` (parsing only; no numpy, pandas, pyarrow);
* ``jitterscope summary`` of a 10,000-row simulated dataset (2 threads x 5,000 wake-ups), the whole
  command from exec to exit, with its peak RSS — target <= 1.5 s.

Usage: ``.venv/bin/python benchmarks/startup.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).with_name("jitterscope")


def _median_seconds(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak_rss_mb(command: list[str]) -> float:
    """Peak RSS of one run of `command` alone (wait4 gives that child's own rusage)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    return usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=21, help="runs per command (median; default 21)")
    args = parser.parse_args()
    floor = _median_seconds([sys.executable, "-c", "pass"], args.repeat)
    version = _median_seconds([str(BIN), "--version"], args.repeat)
    help_all = _median_seconds([str(BIN), "--help"], args.repeat)
    help_summary = _median_seconds([str(BIN), "summary", "--help"], args.repeat)
    print(f"python -c pass          {floor * 1e3:7.1f} ms (floor)")
    print(f"jitterscope --version   {version * 1e3:7.1f} ms  ratio {version / floor:4.2f}  (target <= 3)")
    print(f"jitterscope --help      {help_all * 1e3:7.1f} ms  ratio {help_all / floor:4.2f}")
    print(f"jitterscope summary -h  {help_summary * 1e3:7.1f} ms  ratio {help_summary / floor:4.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "sim-10000.parquet"
        subprocess.run([str(BIN), "simulate", "--threads", "2", "--samples", "5000", "-o", str(dataset)],
                       stdout=subprocess.DEVNULL, check=True)
        summary = _median_seconds([str(BIN), "summary", str(dataset)], max(3, args.repeat // 4))
        rss = _peak_rss_mb([str(BIN), "summary", str(dataset)])
    print(f"jitterscope summary (10,000 rows) {summary:5.2f} s  (target <= 1.5 s; peak RSS {rss:.0f} MB)")
    return 0 if version / floor <= 3 and summary <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
