"""What the subprocess benchmarks share: a step runner that times a piece of code and reports its own peak RSS,
the read floor every ratio is taken against, the plain simulated dataset they measure, the work directory
they cache it in, and the verdict over interleaved pairs (trace_cost's captures, peer_speed's steps).

A step is Python source run in a fresh interpreter with ``PATH`` (the dataset) and ``OUT`` (a scratch path)
defined; ``setup`` runs first in the same interpreter, untimed (imports, constants). Lines a step writes to
stderr starting with ``# `` are passed on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

RUNNER = """
import json, resource, sys, time
PATH, OUT = sys.argv[1], sys.argv[2]
exec(compile(sys.argv[3], "setup", "exec"))  # not timed
start, cpu = time.perf_counter(), time.process_time()
exec(compile(sys.argv[4], "step", "exec"))
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": elapsed, "cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def floor_step(columns: Sequence[str]) -> str:
    """The baseline step: pyarrow reading `columns` row group by row group plus one numpy pass (the worst latency).

    The two columns become numpy arrays over Arrow's buffers (``np.frombuffer``): ``to_numpy()`` would import
    pandas on its first call (0.2-0.4 s, a third of the floor at 10^7 wake-ups), a cost of pyarrow's conversion,
    not of reading, so a floor paying it would flatter every ratio taken against it.
    """
    return f"""
import numpy as np, pyarrow.parquet as pq

def values(table, name):
    array = table.column(name).combine_chunks()
    return np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array), offset=array.offset * 8)

f = pq.ParquetFile(PATH)
worst = 0
for g in range(f.num_row_groups):
    t = f.read_row_group(g, columns={list(columns)!r})
    worst = max(worst, int((values(t, "actual_ns") - values(t, "expected_ns")).max()))
"""


def run_step(name: str, code: str, path: Path, out: Path | str = "", setup: str = "") -> dict[str, float]:
    """Run `code` in a fresh interpreter; return its ``seconds`` and peak ``rss_mb`` (exits on failure)."""
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(path), str(out), setup, code],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr}")
    sys.stderr.write("".join(line + "\n" for line in proc.stderr.splitlines() if line.startswith("# ")))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_best(name: str, code: str, path: Path, out: Path | str = "", setup: str = "",
             repeat: int = 1) -> dict[str, float]:
    """:func:`run_step` ``repeat`` times (at least once): the fastest time, the least CPU time (every thread of
    the step's process, user + system: on a loaded machine the steadier figure) and the largest peak RSS."""
    runs = [run_step(name, code, path, out, setup) for _ in range(max(1, repeat))]
    return {"seconds": min(r["seconds"] for r in runs), "cpu": min(r["cpu"] for r in runs),
            "rss_mb": max(r["rss_mb"] for r in runs)}


def ratio_interval(ratios: Sequence[float], *, level: float = 0.95, n_boot: int = 20_000,
                   seed: int = 0) -> tuple[float, float, float]:
    """(median, low, high): the per-pair ratios' median and its percentile bootstrap interval over pairs.

    The pairs are the unit: both runs of a pair share the machine's minute, pairs do not, so the spread between
    pairs is the run-to-run variation a single ratio cannot show.
    """
    import numpy as np

    values = np.asarray(ratios, dtype=np.float64)
    rng = np.random.default_rng(seed)
    medians = np.median(values[rng.integers(0, values.size, (n_boot, values.size))], axis=1)
    alpha = (1.0 - level) / 2.0
    return float(np.median(values)), float(np.quantile(medians, alpha)), float(np.quantile(medians, 1.0 - alpha))


def interval_said(low: float, high: float, target: float) -> str:
    """Met only when the whole interval is within an upper target, NOT met when all of it is beyond, else the
    pairs cannot tell (a single pooled ratio would claim either)."""
    return "met" if high <= target else "NOT met" if low > target else "cannot tell: the interval holds the target"


def interval_verdict(ratios: Sequence[float], target: float) -> str:
    """The per-pair median ratio's 95 % interval judged by interval_said."""
    mid, low, high = ratio_interval(ratios)
    said = interval_said(low, high, target)
    return (f"per-pair median {mid:.3f}, 95 % bootstrap interval over the {len(ratios)} pairs {low:.3f}-{high:.3f} "
            f"(target <= {target:.2f}: {said})")


def simulated(work: Path, rows: int, threads: int) -> Path:
    """``work/sim-ROWS.parquet``: `rows` simulated wake-ups over `threads` threads at 100 µs, seed 1, no planted
    effects; written (and the time it took said on stderr) only if it is not there yet."""
    from jitterscope.io import spec_from_options, write_simulation

    path = work / f"sim-{rows}.parquet"
    if not path.exists():
        started = time.perf_counter()
        spec = spec_from_options(threads=threads, samples=rows // threads, interval_ns=100_000)
        write_simulation(spec, path, seed=1, overwrite=True)
        print(f"# simulated {rows:,} rows in {time.perf_counter() - started:.1f} s -> {path}", file=sys.stderr)
    return path


def work_dir(keep: Path | None) -> Path:
    """`keep` (created if missing), or a fresh temporary directory."""
    work = keep or Path(tempfile.mkdtemp(prefix="jitterscope-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    return work
