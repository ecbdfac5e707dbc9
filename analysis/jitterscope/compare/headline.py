"""The sentences a comparison leads with: one headline per pair, and a warning where the tests are tail-blind.

Text only, built from a :class:`~.results.Comparison` (no statistics here): which metrics changed and how
(ratios from a doubling on, never "+6284.1%"), the stalls and missed periods of each run, and what
differs in the environment, e.g.::

    tail regressed: 4 wake-ups later than one interval, up to 12,029 µs (0 before); p50–p99 unchanged;
    p99.9 inconclusive (+4.4% [−4.1% … +14.7%]); p99.99–max regressed (×63.8, ×33.3); environment: no_hz off → idle
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..format import format_change, format_count, format_percent, format_us

if TYPE_CHECKING:
    from .envdiff import EnvironmentDifference
    from .groups import GroupComparison
    from .results import Comparison, MetricChange

TAIL_METRICS = ("p99.9", "p99.99", "max")
BODY_METRICS = ("p50", "p90")
"""A change here is not confined to the tail, so the rank and distribution tests can see it."""
"""Metrics a change of which is a change of the tail."""
CHANGES = ("regressed", "improved")
ENVIRONMENT_PREFIXES = ("environment.", "settings.", "threads.", "counters.")
"""Metadata keys that can explain a difference (ground truth, tool version and the kind cannot)."""
MAX_ENVIRONMENT = 3
TESTS_ALPHA = 0.05
TAIL_SHARE_MAX = 0.01
"""A tail change confined to fewer wake-ups than this share is beyond what whole-distribution tests can see."""
TAIL_SHARES = (("p99.9", 0.001), ("p99.99", 0.0001))


def pair_headline(comparison: Comparison, index: int) -> str:
    """One sentence for pair ``index`` (1-based: run ``index`` against the baseline).

    Lead (the direction, "tail" when only p99.9 and above moved), the late wake-ups and missed periods of
    both runs, the metrics grouped by verdict in metric order, and up to three environment differences.
    """
    pair = comparison.pairs[index - 1]
    base, cand = comparison.runs[0], comparison.runs[index]
    lead = _lead(pair.metrics, comparison.noise)
    stalls = []
    if base.late_wakeups or cand.late_wakeups:
        stalls.append(f"{format_count(cand.late_wakeups)} wake-ups later than one interval"
                      + (f", up to {format_us(cand.max_ns)}" if cand.late_wakeups else "")
                      + f" ({format_count(base.late_wakeups)} before)")
    if base.missed_periods or cand.missed_periods:
        stalls.append(f"{format_count(cand.missed_periods)} missed periods "
                      f"({format_count(base.missed_periods)} before)")
    parts = [lead + (": " + ", ".join(stalls) if stalls else "")]
    parts += [_group_text(group) for group in _groups(pair.metrics)]
    environment = environment_causes(comparison.environment)
    if environment:
        parts.append("environment: " + ", ".join(environment))
    return "; ".join(parts)


def verdict_sentence(metrics: Sequence[MetricChange], noise: float) -> list[str]:
    """The lead ("regressed", "mixed: …", "no change beyond ±5%") and the metrics grouped by verdict, in order,
    as a pair's headline words them (for comparisons of other metrics: a poll run's interruptions per CPU),
    each metric of a group named (not "first–last": those metrics are no ordered scale)."""
    return [_lead(metrics, noise), *(_group_text(group, ranges=False) for group in _groups(tuple(metrics)))]


def _lead(metrics: Sequence[Any], noise: float) -> str:
    """The verdict of a set of metrics in a few words: one direction, mixed, inconclusive or no change."""
    changed = [m for m in metrics if m.verdict in CHANGES]
    directions = {m.verdict for m in changed}
    if len(directions) > 1:
        return "mixed: some metrics regressed, others improved"
    if directions:
        return ("tail " if all(m.metric in TAIL_METRICS for m in changed) else "") + directions.pop()
    if any(m.verdict == "inconclusive" for m in metrics):
        return "no change shown, some inconclusive"
    return f"no change beyond ±{noise:.0%}"


def group_headline(comparison: GroupComparison) -> str:
    """One sentence for a group comparison: how many runs each side has, then the metrics as for a pair.

    E.g. "B (3 runs) against A (3 runs), between-run variation: p99 regressed (+20.3% [+11.2% … +30.1%]);
    p50 unchanged; …; environment: governor powersave → performance".
    """
    lead = _lead(comparison.metrics, comparison.noise)
    sides = (f"{comparison.candidate_label} ({_runs(len(comparison.candidate))}) against "
             f"{comparison.baseline_label} ({_runs(len(comparison.baseline))}), between-run variation")
    parts = [f"{sides}: {lead}", *(_group_text(group) for group in _groups(comparison.metrics))]
    environment = environment_causes(comparison.environment)
    if environment:
        parts.append("environment: " + ", ".join(environment))
    return "; ".join(parts)


def _runs(count: int) -> str:
    return f"{count} run" + ("" if count == 1 else "s")


def tail_blind_tests(comparison: Comparison, index: int) -> str:
    """A warning when the tail changed in a share of wake-ups the rank and distribution tests cannot see, else "".

    Mann-Whitney, Kolmogorov-Smirnov and Anderson-Darling weigh every wake-up alike: a change confined to a
    share ``s`` of the wake-ups moves the Mann-Whitney effect or the KS distance by at most about ``s``, so
    below :data:`TAIL_SHARE_MAX` their p-values describe the body, whatever they are.
    """
    pair = comparison.pairs[index - 1]
    tail = [m for m in pair.metrics if m.verdict in CHANGES and m.metric in TAIL_METRICS]
    body = [m for m in pair.metrics if m.verdict in CHANGES and m.metric in BODY_METRICS]
    tests = [t for t in pair.tests if t.p_value == t.p_value]  # binned data has none (NaN)
    if not tail or not tests or body:
        return ""  # a body that moved too is a change the tests can see: nothing is confined to the tail
    cand = comparison.runs[index]
    if cand.late_wakeups:
        share = cand.late_wakeups / cand.n
        what = f"the {format_count(cand.late_wakeups)} wake-ups ({format_percent(share)}) later than one interval"
    else:
        share = dict(TAIL_SHARES).get(tail[0].metric, 1 / cand.n)
        what = f"the wake-ups above {tail[0].metric} ({format_percent(share)})"
    if share >= TAIL_SHARE_MAX:
        return ""
    quiet = all(t.p_value >= TESTS_ALPHA for t in tests)
    return (f"the rank and distribution tests ({', '.join(t.name for t in tests)}) weigh every wake-up alike and "
            f"cannot see a change confined to {what}: "
            + (f"their p ≥ {TESTS_ALPHA:g} says nothing about the tail" if quiet else
               "their p-values describe the body of the distribution, not the tail")
            + f"; read the {', '.join(m.metric for m in tail)} verdicts and the exceedance ratios instead")


def environment_causes(differences: tuple[EnvironmentDifference, ...], limit: int = MAX_ENVIRONMENT) -> list[str]:
    """Up to ``limit`` differences that can explain a change, as "no_hz off → idle" (baseline → first candidate).

    Ground-truth rows repeat what the environment rows say, and the tool version or data kind explain
    nothing: only environment, settings, thread and counter keys count.
    """
    out = []
    relevant = [d for d in differences if d.key.startswith(ENVIRONMENT_PREFIXES)]
    for d in relevant[:limit]:
        key = d.key.split(".", 1)[1]
        a, b = ("absent" if v is None else v for v in d.values[:2])
        tokens_a, tokens_b = a.split(), b.split()
        if len(tokens_a) > 1 and len(tokens_b) > 1 and set(tokens_a) & set(tokens_b):
            # a command line: say what was taken out and put in, not two long strings
            delta = [f"−{t}" for t in tokens_a if t not in tokens_b] + [f"+{t}" for t in tokens_b if t not in tokens_a]
            out.append(f"{key} {' '.join(delta)}")
        else:
            out.append(f"{key} {_short(a)} → {_short(b)}")
    if len(relevant) > limit:
        out.append(f"{len(relevant) - limit} more")
    return out


def unique_differences(differences: tuple[EnvironmentDifference, ...]) -> tuple[EnvironmentDifference, ...]:
    """The differences without ground-truth rows that repeat an environment or settings row's values."""
    seen = {(d.key, d.values) for d in differences}
    out = []
    for d in differences:
        if d.key.startswith("ground_truth.spec."):
            plain = d.key.removeprefix("ground_truth.spec.")
            if (plain, d.values) in seen:
                continue
        out.append(d)
    return tuple(out)


def _short(value: str, width: int = 40) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"


def _groups(metrics: tuple[MetricChange, ...]) -> list[list[MetricChange]]:
    groups: list[list[MetricChange]] = []
    for m in metrics:
        if groups and groups[-1][-1].verdict == m.verdict:
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


def _group_text(group: list[MetricChange], ranges: bool = True) -> str:
    names = group[0].metric if len(group) == 1 else (
        f"{group[0].metric}–{group[-1].metric}" if ranges else ", ".join(m.metric for m in group))
    verdict = group[0].verdict
    if verdict == "within noise":
        return f"{names} unchanged"
    if verdict == "not judged":
        return f"{names} not judged"
    changes = []
    for m in group:
        text = format_change(m.relative)
        if verdict == "inconclusive" and m.episodes is not None and not m.episodes.shown:
            # a few episodes decided it: say how few, not an interval that looks decisive
            text += (f", {m.episodes.baseline} vs {m.episodes.candidate} independent episodes above "
                     f"{format_us(m.episodes.level_ns)}")
        elif verdict == "inconclusive" and m.relative_low is not None and m.relative_low == m.relative_low:
            text += f" [{format_change(m.relative_low)} … {format_change(m.relative_high)}]"
        changes.append(text)
    return f"{names} {verdict} ({', '.join(changes)})"
