"""Throughput and memory of the streaming spectral analysis, as a ratio to the read floor.

Writes a synthetic single-file dataset (default 10^7 wake-ups on 2 threads at
1 kHz, a 37 Hz sine planted on thread 0) in row groups of 2^20 rows, then times

* the read floor: streaming the three columns the analysis needs
  (``thread``, ``expected_ns``, ``actual_ns``) into numpy, nothing else;
* ``analyze_spectra`` on the same file (Welch PSD + spectrogram + spike
  spectrum + ISI per thread, peaks, sources),

and prints both, their ratio, the wake-ups per second, and the peak resident
memory of each phase, which stays near one row group whatever the row count.
Also repeats the 100-seed detection/false-alarm check of the tests with its
numbers.  Usage: ``python benchmarks/spectral_throughput.py [--rows N] [--dir D]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, sample_schema
from jitterscope.spectrum import WelchAccumulator, analyze_spectra, find_welch_peaks

ROW_GROUP = 1 << 20
INTERVAL_NS = 1_000_000


def write_dataset(path: Path, rows: int, threads: int = 2) -> None:
    per_thread = rows // threads
    metadata = Metadata(kind="simulation", threads=tuple(
        ThreadInfo(thread=t, cpu=t, interval_ns=INTERVAL_NS, samples=per_thread) for t in range(threads)))
    schema = sample_schema(["cpu", "thread", "seq", "expected_ns", "actual_ns"]).with_metadata(metadata.to_kv())
    rng = np.random.default_rng(1)
    with pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=False) as writer:
        for thread in range(threads):
            for first in range(0, per_thread, ROW_GROUP):
                seq = np.arange(first, min(first + ROW_GROUP, per_thread), dtype=np.int64)
                expected = 10**12 + seq * INTERVAL_NS
                latency = 3000 * np.exp(0.3 * rng.standard_normal(seq.size))
                if thread == 0:
                    latency += 300 * np.sin(2 * np.pi * 37.0 * seq / 1000.0)
                n = seq.size
                writer.write_table(pa.table({
                    "cpu": np.full(n, thread, np.int32), "thread": np.full(n, thread, np.int32), "seq": seq,
                    "expected_ns": expected, "actual_ns": expected + latency.astype(np.int64)}, schema=schema),
                    row_group_size=ROW_GROUP)


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_floor(path: Path) -> float:
    ds = open_dataset(path)
    start = time.perf_counter()
    total = 0
    for batch in ds.iter_batches(["thread", "expected_ns", "actual_ns"]):
        total += int(batch.column(0).to_numpy().size + batch.column(2).to_numpy()[-1] * 0
                     + batch.column(1).to_numpy()[-1] * 0)
    assert total == ds.num_rows
    return time.perf_counter() - start


def seeds_check(seeds: int = 100) -> None:
    n, nperseg, fs = 1 << 16, 1024, 1000.0
    for rms in (0.03, 0.045, 0.06, 0.1):
        hits = 0
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            f0 = rng.uniform(10, 490)
            x = rng.normal(size=n) + rms * np.sqrt(2) * np.sin(2 * np.pi * f0 * np.arange(n) / fs)
            acc = WelchAccumulator(fs, nperseg)
            acc.update(x)
            peaks = find_welch_peaks(acc.result())
            hits += bool(peaks) and abs(peaks[0].frequency_hz - f0) <= fs / nperseg
        print(f"  sine RMS {rms:.3f} x background SD: found within one bin in {hits}/{seeds} seeds")
    for amplitude in (0.5, 1.0, 1.5, 2.0, 3.0):
        hits = 0
        for seed in range(seeds):
            rng = np.random.default_rng(3000 + seed)
            f0 = rng.uniform(10, 200)
            x = rng.lognormal(np.log(3000), 0.3, n)
            phase = (np.arange(n) / fs * f0 + rng.uniform()) % 1.0
            x += amplitude * x.std() * (phase < f0 / fs)  # one wake-up per period
            acc = WelchAccumulator(fs, nperseg)
            acc.update(x)
            hits += any(abs(p.frequency_hz - f0) <= fs / nperseg for p in find_welch_peaks(acc.result()))
        print(f"  spike train, 1 wake-up of {amplitude:.1f} x background SD per period, f0 10..200 Hz: "
              f"fundamental within one bin in {hits}/{seeds} seeds")
    for average in ("mean", "median"):
        false = 0
        for seed in range(seeds):
            acc = WelchAccumulator(fs, nperseg, average=average)
            acc.update(np.random.default_rng(seed).lognormal(np.log(3000), 0.3, n))
            false += bool(find_welch_peaks(acc.result(), alpha=0.01))
        print(f"  no disturbance, {average} average: false peak at FAP 1 % in {false}/{seeds} seeds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**7, help="wake-ups in the dataset (default 10^7)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the dataset (default: a temp dir)")
    parser.add_argument("--skip-seeds", action="store_true", help="skip the 100-seed detection check")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "bench.parquet"
        start = time.perf_counter()
        write_dataset(path, args.rows)
        print(f"wrote {args.rows:.3g} wake-ups in {time.perf_counter() - start:.1f} s "
              f"({path.stat().st_size / 2**20:.0f} MiB)")
        rss_before = max_rss_mib()
        floor = read_floor(path)
        rss_floor = max_rss_mib()
        start = time.perf_counter()
        result = analyze_spectra(open_dataset(path))
        spectral = time.perf_counter() - start
        rss_spectral = max_rss_mib()
    peak = result.threads[0].peaks[0]
    print(f"read floor:      {floor:7.2f} s  ({args.rows / floor / 1e6:6.1f} M wake-ups/s)")
    print(f"analyze_spectra: {spectral:7.2f} s  ({args.rows / spectral / 1e6:6.1f} M wake-ups/s)")
    print(f"ratio to read floor: {spectral / floor:.2f}")
    print(f"projected for 10^8 wake-ups: {spectral * 1e8 / args.rows:.1f} s (target <= 30 s)")
    print(f"peak RSS: {rss_before:.0f} MiB before, {rss_floor:.0f} MiB after read floor, "
          f"{rss_spectral:.0f} MiB after analysis")
    print(f"strongest peak thread 0: {peak.frequency_hz:.3f} Hz (planted 37 Hz), FAP {peak.fap:.1e}")
    if not args.skip_seeds:
        seeds_check()
    return 0


if __name__ == "__main__":
    sys.exit(main())
