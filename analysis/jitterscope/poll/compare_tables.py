"""Tables and text of a poll comparison (select and format; no statistics here).

The headline words each CPU's verdicts as a timer comparison's pair headline does
(:func:`jitterscope.compare.verdict_sentence`), e.g. "B against A: CPU 1: regressed; interruptions/s–10 µs –
100 µs/s regressed (+52%, ×3.1); …".
"""

from __future__ import annotations

import math

from ..compare import environment_causes, unique_differences, verdict_sentence
from ..format import format_change, format_percent
from ..render import Table, tables_text
from .compare import DURATION, PERCENT, PollChange, PollComparison, PollPair
from .text import format_gap


def _value(unit: str, value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    if unit == DURATION:
        return format_gap(value)
    if unit == PERCENT:
        return f"{value:.3g} %"
    return f"{value:,.4g}/s"


def _interval(change: PollChange) -> str:
    m = change.change
    if m.relative_low is None or m.relative_high is None:
        return "–"
    if m.baseline_ns == 0 and m.candidate_ns > 0:  # from none: the difference's interval, in the metric's unit
        return f"[{_value(change.unit, m.ci_low_ns)} … {_value(change.unit, m.ci_high_ns)}]"
    return f"[{format_change(m.relative_low)} … {format_change(m.relative_high)}]"


def _by_cpu(pair: PollPair) -> dict[str, list[PollChange]]:
    out: dict[str, list[PollChange]] = {}
    for change in pair.changes:
        out.setdefault(change.name.removesuffix(" " + change.metric), []).append(change)
    return out


def pair_headline(comparison: PollComparison, pair: PollPair) -> str:
    """One sentence: the candidate against the baseline, each CPU's verdicts, what differs in the environment."""
    parts = []
    for cpu, changes in _by_cpu(pair).items():
        words = verdict_sentence([c.change for c in changes], comparison.noise)
        parts.append(f"{cpu}: " + "; ".join(words))
    environment = environment_causes(comparison.environment)
    if environment:
        parts.append("environment: " + ", ".join(environment))
    return f"{pair.candidate} against {pair.baseline}: " + " — ".join(parts)


def poll_compare_headlines(comparison: PollComparison) -> list[str]:
    """The headline of every pair, in order."""
    return [pair_headline(comparison, pair) for pair in comparison.pairs]


def headline_table(comparison: PollComparison) -> Table:
    rows = tuple((pair.candidate, pair_headline(comparison, pair)) for pair in comparison.pairs)
    what = (f"{comparison.sides[1]} against {comparison.sides[0]}" if comparison.sides else
            f"against {comparison.runs[0].label}")
    return Table(name="compare-poll-headline", title=f"What changed {what} (busy-poll interruptions)",
                 columns=("run", "headline"), rows=rows, formats=("", ""), align=("l", "l"),
                 notes=(f"noise threshold ±{comparison.noise:.0%}; 'inconclusive': the interval holds both no change "
                        "and a change beyond the threshold", *comparison.notes))


def runs_table(comparison: PollComparison) -> Table:
    """One row per run and CPU: how long it polled, its interruptions, the CPU lost, the worst one."""
    rows = []
    k = comparison.runs_per_side[0] if comparison.runs_per_side else None
    for i, run in enumerate(comparison.runs):
        side = "" if k is None else (comparison.sides or ("A", "B"))[0 if i < k else 1]
        for noise in run.noise:
            rows.append((*((side,) if k is not None else ()), run.label, noise.cpu, run.runtime_s, run.whole_seconds,
                         noise.interruptions, noise.per_second, format_percent(noise.lost_percent / 100),
                         format_gap(noise.max_ns)))
    columns = ("run", "CPU", "polled [s]", "whole s", "interruptions", "per second", "CPU lost", "max")
    formats = ("", "{:d}", "{:.1f}", "{:d}", "{:d}", "{:,.4g}", "", "")
    if k is not None:
        columns, formats = ("side", *columns), ("", *formats)
    thresholds = sorted({r.threshold_ns for r in comparison.runs})
    return Table(name="compare-poll-runs", title="Runs compared" + ("" if k is not None else
                                                                     " (the first is the baseline)"),
                 columns=columns, rows=tuple(rows), formats=formats,
                 notes=(f"interruptions: gaps of at least {thresholds[0] / 1000:g} µs",))


def pair_table(comparison: PollComparison, pair: PollPair, index: int) -> Table:
    """Per CPU and metric: the two values, the change with its interval, the verdict."""
    rows = tuple((c.name, _value(c.unit, c.change.baseline_ns), _value(c.unit, c.change.candidate_ns),
                  format_change(c.change.relative) if c.change.baseline_ns else ("–" if not c.change.candidate_ns
                                                                                  else "from none"),
                  _interval(c), c.verdict, "" if c.block_seconds is None else c.block_seconds)
                 for c in pair.changes)
    return Table(name=f"compare-poll-pair-{index}", title=f"{pair.candidate} vs {pair.baseline}",
                 columns=("metric", "baseline", "candidate", "change", "interval", "verdict", "block [s]"),
                 rows=rows, formats=("", "", "", "", "", "", ""),
                 notes=(comparison.method, *[c.change.sentence for c in pair.changes if c.verdict != "within noise"],
                        *pair.notes))


def environment_table(comparison: PollComparison) -> Table:
    differences = unique_differences(comparison.environment)
    if comparison.sides:
        columns = ("key", *comparison.sides)
    else:
        columns = ("key", *(r.label for r in comparison.runs))
    rows = tuple((d.key, *("(absent)" if v is None else v for v in d.values)) for d in differences)
    return Table(name="compare-poll-environment", title="What differs between the runs", columns=columns, rows=rows,
                 notes=() if rows else ("no difference in environment, settings or thread set-up",))


def poll_compare_tables(comparison: PollComparison) -> list[Table]:
    """Every table of a poll comparison, in report order."""
    return [headline_table(comparison), *(pair_table(comparison, p, i) for i, p in enumerate(comparison.pairs, 1)),
            environment_table(comparison), runs_table(comparison)]


def poll_compare_text(comparison: PollComparison) -> str:
    """A poll comparison as plain text for a terminal."""
    return tables_text(poll_compare_tables(comparison))
