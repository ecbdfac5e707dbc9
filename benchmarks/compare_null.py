"""Null calibration of compare on runs with identical settings: how often does it claim a change that is not there?

Takes runs with identical settings (``--capture N`` real captures of this machine, ``--simulate N`` simulated runs
with different seeds, or dataset paths) and judges them

* in independent pairs (run 1 vs 2, 3 vs 4, …; no run in two pairs), one run per side: every metric verdict
  (p50 … max) that says "regressed" or "improved" is a false claim.  Issue 21 asks for at most 10 % of all
  verdicts;
* in independent groups (``--group K``: runs 1…K vs K+1…2K, …), by the between-run variation: the stated rate is
  a claim on any metric of a comparison (a ``--fail-if`` gate firing) at most ``1 - confidence``;
* in ``--splits`` random splits into two groups of K (not independent of each other: an estimate of the claim
  rate per metric from few runs, each run's metrics computed once).

Prints each pair's and group's verdicts, then the counts: ``false claims: X of Y metric verdicts (Z %)``.
Exits 1 when the pair rate is above ``--max-rate`` (default 10 %).

Usage::

    python benchmarks/compare_null.py --capture 10 --duration 5s --dir /tmp/null   # real captures (root)
    python benchmarks/compare_null.py /tmp/null/run*                                # datasets already captured
    python benchmarks/compare_null.py --simulate 12 --group 3                       # simulated, no root needed

Captures run one after another with ``jitterscope capture -D DURATION -q``; on a busy machine they are not quiet,
which is what a null of real runs should include.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
from jitterscope.compare import compare_groups, compare_runs, group_changes, group_headline, pair_headline
from jitterscope.compare.groups import GROUP_METRICS
from jitterscope.compare.results import QUANTILE_METRICS
from jitterscope.compare.streamed import stream_run
from jitterscope.dataset import open_dataset, write_dataset
from jitterscope.io import SimulationSpec, simulate

CHANGES = ("regressed", "improved")


def capture(count: int, duration: str, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = directory / f"run{i + 1:02d}"
        cmd = [str(Path(sys.executable).with_name("jitterscope")), "capture", "-D", duration, "-q", "--force",
               "-o", str(path)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        paths.append(path)
    return paths


def simulated(count: int, samples: int, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    spec = SimulationSpec(threads=2, samples=samples)
    return [write_dataset(*_parts(simulate(spec, 1000 + i)), directory / f"sim{i + 1:02d}.parquet")
            for i in range(count)]


def _parts(sim):  # type: ignore[no-untyped-def]
    return sim.table, sim.metadata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", type=Path)
    parser.add_argument("--capture", type=int, default=0, metavar="N", help="capture N runs first (root)")
    parser.add_argument("--duration", default="5s", help="length of each capture (default 5s)")
    parser.add_argument("--simulate", type=int, default=0, metavar="N", help="simulate N runs (different seeds)")
    parser.add_argument("--samples", type=int, default=5_000, help="wake-ups per thread of a simulated run")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/jitterscope-compare-null"))
    parser.add_argument("--group", type=int, default=3, metavar="K", help="runs per side of a group (default 3)")
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--splits", type=int, default=400, metavar="S", help="random splits into two groups")
    parser.add_argument("--max-rate", type=float, default=0.10)
    args = parser.parse_args(argv)
    paths = list(args.datasets)
    if args.capture:
        paths += capture(args.capture, args.duration, args.dir)
    if args.simulate:
        paths += simulated(args.simulate, args.samples, args.dir)
    if len(paths) < 2:
        parser.error("need at least two runs (datasets, --capture N or --simulate N)")
    datasets = [open_dataset(p) for p in paths]

    claims = verdicts = 0
    print(f"== {len(datasets) // 2} independent pairs, one run per side ==")
    for i in range(0, len(datasets) - 1, 2):
        cmp = compare_runs(datasets[i:i + 2], n_boot=args.resamples, seed=i)
        pair = cmp.pairs[0]
        claims += sum(m.verdict in CHANGES for m in pair.metrics)
        verdicts += len(pair.metrics)
        print(f"{paths[i].name} vs {paths[i + 1].name}: {pair_headline(cmp, 1)}")
    rate = claims / verdicts
    print(f"false claims (pairs): {claims} of {verdicts} metric verdicts ({rate:.0%}); allowed {args.max_rate:.0%}")

    k = args.group
    group_claims = group_verdicts = 0
    if len(datasets) >= 2 * k >= 4:
        print(f"== {len(datasets) // (2 * k)} independent groups, {k} runs per side ==")
        for i in range(0, len(datasets) - 2 * k + 1, 2 * k):
            result = compare_groups(datasets[i:i + k], datasets[i + k:i + 2 * k])
            group_claims += sum(m.verdict in CHANGES for m in result.metrics)
            group_verdicts += len(result.metrics)
            print(group_headline(result))
        print(f"false claims (groups): {group_claims} of {group_verdicts} metric verdicts; stated: a claim on any "
              "metric of a comparison at most 5%")
    if len(datasets) >= 2 * k >= 4 and args.splits:
        runs = [stream_run(d, index=i, n_boot=1, seed=0, max_resample=d.num_rows) for i, d in enumerate(datasets)]
        qs = np.array([q for _, q in QUANTILE_METRICS])
        values = np.array([np.r_[r.quantiles(qs), r.max_ns] for r in runs])
        rng = np.random.default_rng(0)
        split_claims = np.zeros(len(GROUP_METRICS))
        any_claim = 0
        for _ in range(args.splits):
            order = rng.permutation(len(datasets))
            a, b = order[:k], order[k:2 * k]
            claimed = [m.verdict in CHANGES for m in group_changes(values[a], values[b], 0.05, 0.95)]
            split_claims += claimed
            any_claim += any(claimed)
        rates = ", ".join(f"{name} {c / args.splits:.1%}" for name, c in zip(GROUP_METRICS, split_claims,
                                                                              strict=True))
        print(f"over {args.splits} random {k}-vs-{k} splits (not independent): a claim on any metric (a --fail-if "
              f"gate firing) in {any_claim / args.splits:.1%} (stated: at most 5%); per metric {rates}")
    return 0 if rate <= args.max_rate else 1


if __name__ == "__main__":
    sys.exit(main())
