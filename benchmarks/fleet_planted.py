"""The issue-14 must-show at full size: 200 simulated captures with one planted bad configuration and one
planted regression, run as `jitterscope fleet` runs it (LocalCluster, one worker per core).

Usage: python benchmarks/fleet_planted.py [--hosts 20] [--nights 10] [--samples 50000] [--keep DIR]
                                          [--workers N] [--pdf fleet.pdf]

Machines rt-00 … vary kernel, governor, hz, isolcpus/nohz_full and idle=poll; governor powersave on every
fifth machine adds 60 µs to 0.5 % of its wake-ups; machine rt-01's middle night gets a 25 Hz +40 µs
disturbance (:func:`jitterscope.fleet.write_simulated_fleet`).  Checks, and prints PASS/FAIL for each:
the bad configuration ranked worst by governor, the bad machines the worst by host, governor the only
key the key table names (Holm p < 0.05) with powersave its worst value, exactly the planted night
flagged, and the two broken files added to the fleet listed as skipped.  Also prints the time per
capture against one capture summarized in this process (the baseline of the same run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import work_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--nights", type=int, default=10)
    parser.add_argument("--samples", type=int, default=50_000, help="wake-ups per thread (2 threads)")
    parser.add_argument("--keep", type=Path, help="directory to keep (and reuse) the simulated fleet in")
    parser.add_argument("--workers", type=int, help="LocalCluster workers (default: one per core)")
    parser.add_argument("--pdf", type=Path, help="also write the fleet report here")
    args = parser.parse_args()
    from jitterscope.fleet import (
        GroupKey,
        fleet_text,
        run_fleet,
        summarize_run,
        write_fleet_report,
        write_simulated_fleet,
    )

    work = work_dir(args.keep)
    folder = work / f"planted-{args.hosts}x{args.nights}x{args.samples}"
    started = time.perf_counter()
    truth = write_simulated_fleet(folder, hosts=args.hosts, nights=args.nights, samples=args.samples, seed=7,
                                  overwrite=True)
    print(f"# wrote {len(truth.paths)} captures in {time.perf_counter() - started:.0f} s -> {folder}",
          file=sys.stderr)
    broken = folder / "broken.parquet"
    broken.write_bytes(b"PAR1 truncated")
    missing = folder / "never-written.parquet"
    paths = [*truth.paths, str(broken), str(missing)]

    summarize_run(truth.paths[1])  # warm: imports and the histogram's lookup table, as a worker has them
    started = time.perf_counter()
    summarize_run(truth.paths[0])
    one = time.perf_counter() - started
    started = time.perf_counter()
    fleet = run_fleet(paths, by=GroupKey("governor"), workers=args.workers, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - started
    by_host = run_fleet(paths, workers=args.workers)
    print(fleet_text(fleet))
    if args.pdf:
        info = write_fleet_report(fleet, args.pdf)
        print(f"# {info.path}: {info.pages} pages", file=sys.stderr)
    flagged = [p.path for _, p in fleet.flagged]
    significant = [k.key for k in fleet.keys if k.significant]
    print(f"{fleet.runs} captures ({fleet.wakeups:,} wake-ups) in {seconds:.1f} s with "
          f"{fleet.execution['workers']} workers, cluster start included: {seconds / fleet.runs * 1e3:.0f} ms per "
          f"capture against {one * 1e3:.0f} ms for one capture summarized in this process (ratio "
          f"{seconds / fleet.runs / one:.2f}); peak RSS per worker "
          f"{fleet.execution['peak_rss_bytes_max'] / 2**20:.0f} MiB")
    checks = [
        (f"worst governor is {fleet.groups[0].value} (planted: {truth.bad_value})",
         fleet.groups[0].value == truth.bad_value),
        (f"the {len(truth.bad_hosts)} worst machines are the planted ones",
         {g.value for g in by_host.groups[:len(truth.bad_hosts)]} == set(truth.bad_hosts)),
        (f"keys the table names: {significant}; worst value of the first: {fleet.keys[0].values[0].value}",
         significant == [truth.bad_key] and fleet.keys[0].values[0].value == truth.bad_value),
        (f"flagged runs: {flagged} (planted: {truth.regressed_path})", flagged == [truth.regressed_path]),
        (f"skipped: {[s.path for s in fleet.skipped]}", [s.path for s in fleet.skipped] == [str(broken),
                                                                                              str(missing)]),
        (f"tail metric of the key table: {fleet.tail_metric}", fleet.tail_metric == "p99.99"),
    ]
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
