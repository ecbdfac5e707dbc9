"""Spectral false alarms and a planted line under a comb, at full size (issue 12, "Must show" 2).

Prints:

* 100 white-noise series (30 000 wake-ups at 1 kHz, half with 0.1 % of wake-ups missing so they go
  through Lomb-Scargle) and 100 shuffled copies of ``data/capture-1khz-30s.parquet`` (each thread's
  latencies permuted: its times, gaps and values, no order): series with any peak (want <= 2 %) and
  peaks with fewer than 10 cycles in the record (want 0);
* a 113 Hz sine (600 ns) planted in 10^7 wake-ups with P-state steps every 50 ms (a 20, 40, ... Hz comb
  of 20 µs coupled spikes) and drops (so the peaks come from Lomb-Scargle): whether the 113 Hz family is
  in the report's peak table, its rank, and the time the analysis took.

Usage: ``python benchmarks/spectral_nulls.py [--series 100] [--wakeups 10000000]``.  Several minutes on
two cores (the 10^7 simulation alone is about a minute).  The tests run a reduced version
(tests/spectrum/test_nulls.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from jitterscope.dataset import open_dataset
from jitterscope.io import BaseLatency, Drops, PeriodicDisturbance, PStates, SimulationSpec, write_simulation
from jitterscope.spectrum import MIN_CYCLES, analyze_spectra, peak_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "spectrum"))
from test_nulls import _shuffled_capture, _white_noise  # the test's own series makers


def _count(path: Path) -> tuple[bool, int]:
    analysis = analyze_spectra(open_dataset(path))
    any_peak, short = False, 0
    for thread in analysis.threads:
        for peak in (*thread.peaks, *thread.spike_peaks):
            any_peak = True
            short += peak.frequency_hz * thread.span_s < MIN_CYCLES
    return any_peak, short


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--wakeups", type=int, default=10_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in ("white noise", "shuffled capture"):
            start = time.perf_counter()
            results = []
            for seed in range(args.series):
                path = folder / f"{kind.replace(' ', '-')}-{seed}.parquet"
                if kind == "white noise":
                    _white_noise(path, seed, gaps=seed % 2 == 1)
                else:
                    _shuffled_capture(path, seed)
                results.append(_count(path))
                path.unlink()
            false = sum(r[0] for r in results)
            print(f"{kind:17s}: series with a peak {false}/{args.series} (want <= {0.02 * args.series:.0f}); "
                  f"peaks with < {MIN_CYCLES} cycles: {sum(r[1] for r in results)} (want 0)   "
                  f"[{time.perf_counter() - start:.0f} s]", flush=True)
        start = time.perf_counter()
        base = BaseLatency(distribution="lognormal", median_ns=3_000, spread=0.3)
        effects = (PStates(levels_mhz=(1200.0, 2400.0), dwell_ns=(50_000_000, 50_000_000), coupling_probability=1.0,
                           coupling_amplitude_ns=20_000, coupling_window=1),
                   PeriodicDisturbance(frequency_hz=113.0, amplitude_ns=600, shape="sine"), Drops(probability=1e-5))
        path = write_simulation(SimulationSpec(base=base, threads=1, samples=args.wakeups, effects=effects),
                                folder / "planted.parquet", 1)
        simulated = time.perf_counter() - start
        start = time.perf_counter()
        analysis = analyze_spectra(open_dataset(path))
        analysed = time.perf_counter() - start
        thread = analysis.threads[0]
        table = peak_table(analysis)
        freq = table.columns.index("freq [Hz]")
        resolution = thread.peaks[0].resolution_hz if thread.peaks else float("nan")
        rows = [i for i, row in enumerate(table.rows) if abs(row[freq] - 113.0) <= 2 * resolution]
        print(f"113 Hz in {args.wakeups} wake-ups under a 20 Hz comb ({thread.method_text}): "
              + (f"in the peak table at row {rows[0] + 1} of {len(table.rows)}" if rows else "NOT in the peak table")
              + f"; {len(thread.peaks)} peaks kept   [simulate {simulated:.0f} s, analyse {analysed:.0f} s]")


if __name__ == "__main__":
    main()
