"""Null calibration of ``compare`` on busy-poll runs with identical settings: how often does it claim a change?

Takes poll runs with identical settings (``--capture N`` real poll captures of this machine, ``--simulate N``
simulated runs with other seeds, or dataset directories) and judges them

* in independent pairs (run 1 vs 2, 3 vs 4, …), one run per side: every "regressed" or "improved" verdict of any
  CPU's metric is a false claim; the comparison's level (Bonferroni over the metrics) promises a claim on any metric
  in at most ``1 - confidence`` of the pairs *if runs differ only as their seconds do*: real runs also differ from
  one run to the next (the boot, the load of the machine), which one run per side cannot know;
* in independent groups (``--group K``: runs 1…K vs K+1…2K, …) by their between-run variation: a claim on any
  metric at most ``1 - confidence`` of the groups.

Prints each comparison's headline, then ``false claims: pairs X of Y (any metric), metrics A of B``.

Usage::

    python benchmarks/poll_compare_null.py --simulate 20 --group 3
    python benchmarks/poll_compare_null.py --capture 6 --cpu 1 --duration 5s --dir /tmp/pollnull   # root
    python benchmarks/poll_compare_null.py /tmp/pollnull/run*
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from jitterscope.io import PeriodicIrq, PollSpec, simulate_poll
from jitterscope.poll import compare_poll, compare_poll_groups, poll_compare_headlines

CLAIMS = ("regressed", "improved")


def _runs(args: argparse.Namespace) -> list[Path]:
    if args.datasets:
        return [Path(p) for p in args.datasets]
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(args.simulate or args.capture):
        path = root / f"run{i:02d}"
        if args.simulate:
            spec = PollSpec(cpus=(1, 2), duration_s=args.seconds, irqs=(PeriodicIrq(10, 8000, "eth0"),),
                            burst_rate_hz=5, burst_ns=30_000, hardware_rate_hz=1, hardware_ns=5000)
            simulate_poll(spec, path, seed=1000 + i, overwrite=True)
        else:
            subprocess.run([sys.executable, "-m", "jitterscope", "capture", "--mode", "poll", "-a", args.cpu,
                            "-p", str(args.priority), "-D", args.duration, "-q", "-o", str(path)], check=True)
        out.append(path)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*")
    parser.add_argument("--simulate", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of a simulated run")
    parser.add_argument("--capture", type=int, default=0)
    parser.add_argument("--cpu", default="1")
    parser.add_argument("--priority", type=int, default=80)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--dir", default="/tmp/poll-null")
    parser.add_argument("--group", type=int, default=0)
    args = parser.parse_args()
    runs = _runs(args)
    pairs = any_claim = metrics = claims = 0
    for a, b in zip(runs[::2], runs[1::2], strict=False):
        comparison = compare_poll([a, b])
        verdicts = [c.verdict for c in comparison.pairs[0].changes]
        pairs += 1
        metrics += len(verdicts)
        claims += sum(v in CLAIMS for v in verdicts)
        any_claim += any(v in CLAIMS for v in verdicts)
        print(poll_compare_headlines(comparison)[0])
    print(f"false claims, one run per side: pairs {any_claim} of {pairs} (any metric), metrics {claims} of {metrics}")
    if args.group:
        k, groups, hit = args.group, 0, 0
        for start in range(0, len(runs) - 2 * k + 1, 2 * k):
            comparison = compare_poll_groups(runs[start:start + k], runs[start + k:start + 2 * k])
            groups += 1
            hit += any(c.verdict in CLAIMS for c in comparison.pairs[0].changes)
            print(poll_compare_headlines(comparison)[0])
        print(f"false claims, groups of {k}: {hit} of {groups} (any metric)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
