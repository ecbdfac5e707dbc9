"""What the per-flush fdatasync costs (issue 16, must-show 5): interleaved capture pairs, --sync data vs none.

Each pair runs ``jitterscope-capture -D SECONDS -q`` twice on every CPU at
1 kHz, once with ``--sync data`` (the default: the part and the directory are
synced every flush, so a power cut or a kernel hang loses at most one flush
interval) and once with ``--sync none`` (the page cache decides; only a killed
capture is covered), in alternating order so drift on a shared machine hits
both.  Prints, per mode, latency p50/p99/max over every wake-up of every
pair and the capture process's CPU time (user + system, all threads) per
wake-up, side by side, with the ratio data/none.

Usage: ``python benchmarks/capture_durability.py [--pairs 5] [--seconds 10] [--flush 1]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from jitterscope.dataset import open_dataset
from jitterscope.io import capture_binary

MODES = ("data", "none")


def run_once(binary: Path, out: Path, mode: str, seconds: float, flush_s: float) -> tuple[np.ndarray, float]:
    """One capture; returns (latencies in ns, CPU seconds of the process)."""
    argv = [str(binary), "-D", f"{seconds:g}", "-q", "--flush-interval", f"{flush_s:g}", "--sync", mode,
            "-o", str(out)] + ([] if os.geteuid() == 0 else ["--policy", "other"])
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"capture failed: {proc.stderr.read().decode().strip()}")
    table = open_dataset(out).read(["expected_ns", "actual_ns"])
    latency = table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()
    return latency, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--flush", type=float, default=1.0, help="--flush-interval (s)")
    args = parser.parse_args(argv)
    binary = capture_binary()
    latencies: dict[str, list[np.ndarray]] = {m: [] for m in MODES}
    cpu: dict[str, float] = dict.fromkeys(MODES, 0.0)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for pair in range(args.pairs):
            order = MODES if pair % 2 == 0 else MODES[::-1]
            for mode in order:
                lat, cpu_s = run_once(binary, Path(tmp) / f"{pair}-{mode}", mode, args.seconds, args.flush)
                latencies[mode].append(lat)
                cpu[mode] += cpu_s
                print(f"pair {pair} --sync {mode:4s}: {len(lat)} wake-ups, p99 {np.percentile(lat, 99) / 1e3:.1f} us, "
                      f"CPU {cpu_s * 1e3:.0f} ms", flush=True)
    print(f"\n{args.pairs} pairs x {args.seconds:g} s, flush every {args.flush:g} s, every CPU at 1 kHz")
    print(f"{'':22s}{'--sync data':>14s}{'--sync none':>14s}{'data/none':>11s}")
    rows = {}
    for mode in MODES:
        lat = np.concatenate(latencies[mode])
        rows[mode] = (np.percentile(lat, 50) / 1e3, np.percentile(lat, 99) / 1e3, lat.max() / 1e3,
                      cpu[mode] / len(lat) * 1e9)
    names = ["latency p50 (us)", "latency p99 (us)", "latency max (us)", "CPU per wake-up (ns)"]
    for k, name in enumerate(names):
        data, none = rows["data"][k], rows["none"][k]
        print(f"{name:22s}{data:14.2f}{none:14.2f}{data / none:11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
