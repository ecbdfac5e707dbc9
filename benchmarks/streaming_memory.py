"""Issue 11: time and peak RSS of every analysis on simulated datasets *with counters*, at 1e7 and 1e8 wake-ups.

Usage: python benchmarks/streaming_memory.py [--sizes 1e7 1e8] [--keep DIR] [--steps floor power ...] [--repeat N]

Each dataset (2 threads at 100 µs, P-states 1.6/2.4/3.0 GHz with 0.5 s dwell, transitions that delay the
next wake-up, 1 SMI/s of 50 µs, idle exits: the counters the power section needs) is simulated once and
cached in --keep.  Each step runs in a fresh interpreter, so its peak RSS is its own:

  floor    pyarrow reading the columns correlate reads, row group by row group, + one numpy pass
  latfloor the same over the latency columns only (thread, seq, expected_ns, actual_ns): compare's floor
  power    jitterscope.power.correlate_dataset (a scan of read_cycles, then one streaming pass)
  summary  jitterscope.summary.summarize
  spectrum jitterscope.spectrum.analyze_spectra
  tails    jitterscope.tails.analyze_tails
  compare  jitterscope.compare.compare_runs of the dataset against itself (streamed; its ratio to latfloor too:
           it reads the latency columns twice, once per run, two runs at a time)
  report   jitterscope.report.write_report, every section

It prints seconds, the ratio to the floor of the same run, peak RSS (MiB), and for the second size the RSS
growth against the first.  Targets (issue 11): peak RSS <= 1.5 GB (1.5e9 bytes) at 1e8 and within 10 % of 1e7's;
power <= 4x its read floor; report on 1e8 <= 180 s on 2 cores.  Say next to the numbers whether the
machine was shared.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import floor_step, run_best, work_dir

POWER_COLUMNS = ["thread", "cpu", "seq", "expected_ns", "actual_ns", "tsc", "aperf", "mperf", "smi", "run_cpu",
                 "read_cycles"]

LATENCY_COLUMNS = ["thread", "seq", "expected_ns", "actual_ns"]

IMPORTS = {  # each step's imports, run untimed beside SETUP (as the floor's numpy and pyarrow are): start-up is
    # benchmarks/startup.py's measure, not this one's
    "power": "from jitterscope.dataset import open_dataset\nfrom jitterscope.power import correlate_dataset\n",
    "summary": "from jitterscope.dataset import open_dataset\nfrom jitterscope.summary import summarize\n",
    "spectrum": "from jitterscope.dataset import open_dataset\nfrom jitterscope.spectrum import analyze_spectra\n",
    "tails": "from jitterscope.dataset import open_dataset\nfrom jitterscope.tails import analyze_tails\n",
    "compare": "from jitterscope.dataset import open_dataset\nfrom jitterscope.compare import compare_runs\n",
    "report": "from jitterscope.report import write_report\n",
}

STEPS: dict[str, str] = {
    "floor": floor_step(POWER_COLUMNS),
    "latfloor": floor_step(LATENCY_COLUMNS),
    "power": """
result, _ = correlate_dataset(open_dataset(PATH))
print("# attributed:", dict(result.attributed), file=sys.stderr)
""",
    "summary": """
summarize(open_dataset(PATH))
""",
    "spectrum": """
analyze_spectra(open_dataset(PATH))
""",
    "tails": """
analyze_tails(open_dataset(PATH))
""",
    "compare": """
result = compare_runs([open_dataset(PATH), open_dataset(PATH)])
print("# compare:", "; ".join(f"{m.metric} {m.verdict}" for m in result.pairs[0].metrics), file=sys.stderr)
""",
    "report": """
info = write_report(PATH, OUT + "/report.pdf", overwrite=True)  # --keep: the last run's report is there
print("# sections:", ", ".join(f"{name} {secs:.1f} s" for name, secs in info.seconds), file=sys.stderr)
""",
}
SETUP = "import sys, numpy, pyarrow.parquet, jitterscope\n"
RSS_LIMIT_MIB = 1.5e9 / 2**20  # "1.5 GB" read strictly: 1.5e9 bytes, 1,430.5 MiB (ru_maxrss is in KiB)
TARGETS = {"power": 4.0}


def rss_checks(rss_mib: float, first_mib: float | None) -> list[str]:
    """The memory targets of issue 11: at most 1.5 GB, and within 10 % of the first size's (when there is one)."""
    checks = [f"RSS <= 1.5 GB ({RSS_LIMIT_MIB:,.0f} MiB): {'met' if rss_mib <= RSS_LIMIT_MIB else 'MISSED'}"]
    if first_mib is not None:
        checks.append(f"flat within 10 %: {'met' if rss_mib <= 1.1 * first_mib else 'MISSED'}")
    return checks


def simulate_with_counters(work: Path, rows: int) -> Path:
    """``work/power-ROWS.parquet`` (2 threads, counters and planted power effects), written once."""
    path = work / f"power-{rows}.parquet"
    if not path.exists():
        import subprocess

        started = time.perf_counter()
        cli = Path(sys.executable).with_name("jitterscope")  # the console script of this environment
        subprocess.run([str(cli), "simulate", "-o", str(path), "--threads", "2",
                        "--samples", str(rows // 2), "--interval-us", "100", "--pstates", "1600,2400,3000",
                        "--dwell-ms", "500", "--coupling", "0.5:20:2", "--smi", "1:50", "--idle", "0.1:30",
                        "--seed", "1"], check=True)
        print(f"# simulated {rows:,} rows in {time.perf_counter() - started:.1f} s -> {path}", file=sys.stderr)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e7])
    parser.add_argument("--keep", type=Path, help="directory to cache the simulated datasets in")
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=list(STEPS))
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per step; the fastest counts (runs here vary by 20-50 %%), the largest RSS")
    args = parser.parse_args()
    work = work_dir(args.keep)
    print(f"{'rows':>12} {'step':>9} {'seconds':>9} {'x floor':>8} {'peak RSS':>10} {'RSS vs first':>13}  target")
    first: dict[str, float] = {}
    for size in args.sizes:
        rows = int(size)
        path = simulate_with_counters(work, rows)
        results = {}
        steps = ["floor", *(["latfloor"] if "compare" in args.steps else []),
                 *[s for s in args.steps if s not in ("floor", "latfloor")]]
        for name in steps:
            results[name] = run_best(name, STEPS[name], path, work, setup=SETUP + IMPORTS.get(name, ""),
                                     repeat=args.repeat)
        floor = results["floor"]["seconds"]
        for name, result in results.items():
            ratio = result["seconds"] / floor
            growth = f"{result['rss_mb'] / first[name]:12.2f}x" if name in first else f"{'':>13}"
            checks = []
            if name == "compare":
                checks.append(f"{result['seconds'] / results['latfloor']['seconds']:.2f}x latency-column floor")
            if name in TARGETS:
                checks.append(f"<= {TARGETS[name]:g}x floor: {'met' if ratio <= TARGETS[name] else 'MISSED'}")
            if name != "floor":
                checks += rss_checks(result["rss_mb"], first.get(name))
            print(f"{rows:>12,} {name:>9} {result['seconds']:9.2f} {ratio:8.2f} {result['rss_mb']:6.0f} MiB {growth}  "
                  + "; ".join(checks), flush=True)
        for name, result in results.items():
            first.setdefault(name, result["rss_mb"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
