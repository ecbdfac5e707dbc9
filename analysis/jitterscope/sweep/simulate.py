"""A sweep with planted effects: each condition's runs simulated (``jitterscope.io.simulate``) with its factors'
multipliers on the latency scale and a run-to-run spread, so the analysis can be checked against known answers.

Each run's latencies are lognormal with median ``median_ns x product of its levels' multipliers x exp(N(0,
run_sd))``: a multiplier of 1.3 moves every percentile, p99 included, by 30 %; ``run_sd`` is the between-run
variation a real host shows (drift, other tenants), the noise a sweep's replicates must see through.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..dataset import write_dataset
from ..io import BaseLatency, SimulationSpec, simulate
from ..summary import LatencyHistogram
from .analyze import histogram_metrics
from .results import RunMetrics


def _runs(factors: Mapping[str, Sequence[Any]], replicates: int, seed: int) -> list[tuple[int, int, tuple[Any, ...]]]:
    """(position, block, levels) in randomised complete blocks."""
    rng = random.Random(seed)
    combos = list(itertools.product(*factors.values()))
    out = []
    for block in range(replicates):
        order = list(combos)
        rng.shuffle(order)
        out += [(len(out) + i, block, combo) for i, combo in enumerate(order)]
    return out


def _simulated(factors: Mapping[str, Sequence[Any]], multipliers: Mapping[str, Mapping[Any, float]], *,
               replicates: int, samples: int, run_sd: float, median_ns: float, spread: float, seed: int,
               ) -> list[tuple[int, int, dict[str, Any], Any]]:
    rng = np.random.default_rng(seed)
    combos = list(itertools.product(*factors.values()))
    out = []
    for position, block, combo in _runs(factors, replicates, seed):
        levels = dict(zip(factors, combo, strict=True))
        scale = math.prod(multipliers.get(name, {}).get(level, 1.0) for name, level in levels.items())
        median = median_ns * scale * math.exp(rng.normal(0.0, run_sd))
        spec = SimulationSpec(threads=1, samples=samples, base=BaseLatency("lognormal", median_ns=median,
                                                                          spread=spread),
                              counters=())
        sim = simulate(spec, seed=seed * 100_003 + position)
        out.append((position, block, levels, sim, combos.index(combo)))
    return out


def simulated_sweep_runs(factors: Mapping[str, Sequence[Any]], multipliers: Mapping[str, Mapping[Any, float]], *,
                         replicates: int = 3, samples: int = 5_000, run_sd: float = 0.02, median_ns: float = 20_000,
                         spread: float = 0.3, seed: int = 0) -> list[RunMetrics]:
    """The runs of a planted sweep as :class:`RunMetrics`, in memory (the metrics as ``sweep report`` takes them:
    from an HDR histogram of each run's latencies)."""
    runs = []
    for position, block, levels, sim, condition in _simulated(
            factors, multipliers, replicates=replicates, samples=samples, run_sd=run_sd, median_ns=median_ns,
            spread=spread, seed=seed):
        table = sim.table
        latency = table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()
        histogram = LatencyHistogram().update(latency)
        runs.append(RunMetrics(id=f"run-{position + 1:03d}", position=position, replicate=block + 1,
                               condition=condition, levels=levels, samples=histogram.count, warmup_samples=0,
                               metrics_ns=histogram_metrics(histogram)))
    return runs


def write_simulated_sweep(directory: str | Path, factors: Mapping[str, Sequence[Any]],
                          multipliers: Mapping[str, Mapping[Any, float]], *, replicates: int = 3,
                          samples: int = 5_000, run_sd: float = 0.02, median_ns: float = 20_000, spread: float = 0.3,
                          seed: int = 0) -> Path:
    """Write a planted sweep as ``sweep run`` lays one out (``manifest.json``, ``runs/<id>/part-00000.parquet``
    with ``jitterscope.experiment``; the truth in each dataset's ``ground_truth``), for ``sweep report``."""
    root = Path(directory)
    (root / "runs").mkdir(parents=True, exist_ok=True)
    entries = []
    for position, block, levels, sim, condition in _simulated(
            factors, multipliers, replicates=replicates, samples=samples, run_sd=run_sd, median_ns=median_ns,
            spread=spread, seed=seed):
        run_id = f"run-{position + 1:03d}"
        experiment = {"sweep": root.name, "run": run_id, "position": position, "replicate": block + 1,
                      "condition": condition, "levels": levels, "warmup_ns": 0, "order": "random", "seed": seed}
        truth = dict(sim.metadata.ground_truth or {})
        truth["sweep_multipliers"] = {name: {json.dumps(k): v for k, v in m.items()} for name, m in
                                      multipliers.items()}
        metadata = sim.metadata.with_changes(experiment=experiment, ground_truth=truth)
        (root / "runs" / run_id).mkdir()
        write_dataset(sim.table, metadata, root / "runs" / run_id / "part-00000.parquet")
        entries.append({"id": run_id, "position": position, "block": block, "condition": condition,
                        "label": ", ".join(f"{k}={v}" for k, v in levels.items()), "levels": levels,
                        "status": "complete"})
    manifest = {"version": 1, "plan": "simulated", "plan_text": "", "machine_root": "/",
                "factors": {name: list(levels) for name, levels in factors.items()},
                "design": {"replicates": replicates, "order": "random", "seed": seed, "warmup_s": 0.0,
                           "duration_s": samples / 1000.0},
                "capture": {"simulated": True}, "runs": entries, "simulated": {"run_sd": run_sd,
                                                                               "median_ns": median_ns}}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return root
