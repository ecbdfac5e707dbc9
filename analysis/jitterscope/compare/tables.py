"""Tables and plain text of comparisons (select and format; no statistics here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..format import format_change, us_value
from ..render import P_VALUE, Table, tables_text
from .headline import group_headline, pair_headline, tail_blind_tests, unique_differences
from .samples import Comparison, PairComparison

if TYPE_CHECKING:
    from .groups import GroupComparison

US = "{:.3f}"


def runs_table(comparison: Comparison) -> Table:
    """One row per run: size, set-up and its p50 … max."""
    metrics = [name for name, _ in comparison.runs[0].metrics_ns]
    rows = []
    for run in comparison.runs:
        values = dict(run.metrics_ns)
        rows.append((run.label, run.kind, run.n, ",".join(map(str, run.cpus)),
                     "/".join(f"{i / 1000:g}" for i in run.intervals_ns), run.block_length,
                     *(us_value(values[m]) for m in metrics)))
    return Table(
        name="compare-runs", title="Runs compared (the first is the baseline)",
        columns=("run", "kind", "wake-ups", "CPUs", "interval [µs]", "block [wake-ups]",
                 *(f"{m} [µs]" for m in metrics)),
        rows=tuple(rows), formats=("", "", "{:d}", "", "", "{:d}", *(US,) * len(metrics)),
        notes=comparison.notes)


def headline_table(comparison: Comparison) -> Table:
    """One sentence per pair: what changed, the stalls, the environment (and where the tests are tail-blind)."""
    rows = tuple((pair.candidate, pair_headline(comparison, i)) for i, pair in enumerate(comparison.pairs, start=1))
    warnings = tuple(f"{pair.candidate}: {w}" for i, pair in enumerate(comparison.pairs, start=1)
                     if (w := tail_blind_tests(comparison, i)))
    return Table(name="compare-headline", title=f"What changed against {comparison.runs[0].label}",
                 columns=("run", "headline"), rows=rows, formats=("", ""), align=("l", "l"),
                 notes=(*warnings, f"changes from a doubling on are ratios (×2.5); noise threshold "
                                   f"±{comparison.noise:.0%}; 'inconclusive': the interval holds both no change "
                                   "and a change beyond the threshold"))


def _ratio(relative: float | None) -> float | None:
    return None if relative is None else 1.0 + relative


def pair_table(pair: PairComparison, comparison: Comparison, index: int) -> Table:
    """Per metric: baseline, candidate, change in µs and as a ratio with their intervals, the change in words."""
    rows = tuple(
        (m.metric, us_value(m.baseline_ns), us_value(m.candidate_ns), us_value(m.difference_ns),
         us_value(m.ci_low_ns), us_value(m.ci_high_ns), _ratio(m.relative), _ratio(m.relative_low),
         _ratio(m.relative_high), format_change(m.relative), m.verdict)
        for m in pair.metrics)
    return Table(
        name=f"compare-pair-{index}", title=f"{pair.candidate} vs {pair.baseline}",
        columns=("metric", "baseline [µs]", "candidate [µs]", "change [µs]", "CI low [µs]", "CI high [µs]",
                 "ratio", "CI low", "CI high", "change", "verdict"),
        rows=rows, formats=("", US, US, US, US, US, "{:.3g}", "{:.3g}", "{:.3g}", "", ""),
        notes=(comparison.method, "ratio = candidate / baseline", *[m.sentence for m in pair.metrics],
               *pair.notes))


def ratio_table(pair: PairComparison, index: int) -> Table:
    """Exceedance-rate ratios at the baseline's quantiles."""
    rows = tuple((r.level, us_value(r.threshold_ns), r.baseline_rate, r.candidate_rate, r.ratio, r.ratio_low,
                  r.ratio_high, r.baseline_per_s, r.candidate_per_s) for r in pair.exceedance_ratios)
    return Table(
        name=f"compare-exceedances-{index}", title=f"How often {pair.candidate} exceeds the baseline's quantiles",
        columns=("threshold", "level [µs]", "baseline [/wake-up]", "candidate [/wake-up]", "ratio", "CI low",
                 "CI high", "baseline [/s]", "candidate [/s]"),
        rows=rows, formats=("", US, "{:.2e}", "{:.2e}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.3g}", "{:.3g}"),
        notes=("ratio = candidate rate / baseline rate, each with +1/2 (Haldane); interval from the bootstrap of "
               "each run (block bootstrap; for histograms a multinomial bootstrap of the bin counts)",))


def pair_tests_table(pair: PairComparison, index: int, comparison: Comparison | None = None) -> Table:
    """The rank and distribution tests of a pair, with a warning where they cannot see a tail change."""
    rows = tuple((t.name, t.statistic, t.p_value) for t in pair.tests)
    warning = tail_blind_tests(comparison, index) if comparison is not None else ""
    return Table(name=f"compare-tests-{index}", title=f"Rank and distribution tests, {pair.candidate} vs "
                 f"{pair.baseline}", columns=("test", "statistic", "p-value"), rows=rows,
                 formats=("", "{:.4g}", P_VALUE),
                 notes=(*((f"WARNING: {warning}",) if warning else ()), *(t.sentence for t in pair.tests)))


def verdict_summary_table(comparison: Comparison) -> Table:
    """Every candidate against the baseline: relative change and verdict per metric."""
    metrics = [m.metric for m in comparison.pairs[0].metrics]
    rows = []
    for pair in comparison.pairs:
        cells: list[str] = []
        for m in pair.metrics:
            cells.append(f"{format_change(m.relative)} {m.verdict}")
        rows.append((pair.candidate, *cells))
    return Table(name="compare-summary", title=f"Summary: every run against {comparison.runs[0].label}",
                 columns=("run", *metrics), rows=tuple(rows),
                 notes=(comparison.method,))


def methods_table(comparison: Comparison) -> Table:
    """Which parts of the comparison are exact and which within a stated bound."""
    return Table(name="compare-methods", title="Methods: what is exact, what is bounded",
                 columns=("part", "method and bound"), rows=comparison.methods, formats=("", ""), align=("l", "l"),
                 notes=(comparison.method,))


def environment_diff_table(comparison: Comparison) -> Table:
    """What differs between the runs' metadata; one column per run."""
    labels = [r.label for r in comparison.runs]
    differences = unique_differences(comparison.environment)
    rows = tuple((d.key, *("(absent)" if v is None else v for v in d.values)) for d in differences)
    notes = () if rows else ("no difference in environment, settings or thread set-up",)
    if len(differences) < len(comparison.environment):
        notes += (f"{len(comparison.environment) - len(differences)} ground-truth rows that repeat an environment "
                  "row are left out",)
    return Table(name="compare-environment", title="What differs between the runs", columns=("key", *labels),
                 rows=rows, notes=notes)


def comparison_tables(comparison: Comparison) -> list[Table]:
    """All tables of a comparison, in report order."""
    tables = [headline_table(comparison), environment_diff_table(comparison), verdict_summary_table(comparison),
              runs_table(comparison)]
    if comparison.methods:
        tables.append(methods_table(comparison))
    for i, pair in enumerate(comparison.pairs, start=1):
        tables += [pair_table(pair, comparison, i), ratio_table(pair, i), pair_tests_table(pair, i, comparison)]
    return tables


def comparison_text(comparison: Comparison) -> str:
    """The comparison as plain text for a terminal."""
    return tables_text(comparison_tables(comparison))




def group_headline_table(comparison: GroupComparison) -> Table:
    """The group comparison's sentence: runs per side, verdicts, environment."""
    return Table(name="compare-groups-headline",
                 title=f"What changed: {comparison.candidate_label} against {comparison.baseline_label}",
                 columns=("headline",), rows=((group_headline(comparison),),), formats=("",), align=("l",),
                 notes=(comparison.method, *comparison.notes))


def group_metrics_table(comparison: GroupComparison) -> Table:
    """Per metric: the two sides' geometric means, the change with its between-run interval, the verdict."""
    rows = tuple((m.metric, us_value(m.baseline_ns), us_value(m.candidate_ns), _ratio(m.relative),
                  _ratio(m.relative_low), _ratio(m.relative_high), format_change(m.relative), m.verdict)
                 for m in comparison.metrics)
    return Table(name="compare-groups-metrics", title="Verdicts from the between-run variation",
                 columns=("metric", f"{comparison.baseline_label} [µs]", f"{comparison.candidate_label} [µs]",
                          "ratio", "CI low", "CI high", "change", "verdict"),
                 rows=rows, formats=("", US, US, "{:.3g}", "{:.3g}", "{:.3g}", "", ""),
                 notes=tuple(m.sentence for m in comparison.metrics))


def group_runs_table(comparison: GroupComparison) -> Table:
    """One row per run with its side: the values the verdicts compare."""
    metrics = [name for name, _ in comparison.runs[0].metrics_ns]
    rows = []
    for side, runs in ((comparison.baseline_label, comparison.baseline),
                       (comparison.candidate_label, comparison.candidate)):
        for run in runs:
            values = dict(run.metrics_ns)
            rows.append((side, run.label, run.n, *(us_value(values[m]) for m in metrics)))
    return Table(name="compare-groups-runs", title="Runs (each one replicate)",
                 columns=("side", "run", "wake-ups", *(f"{m} [µs]" for m in metrics)),
                 rows=tuple(rows), formats=("", "", "{:d}", *(US,) * len(metrics)))


def group_environment_table(comparison: GroupComparison) -> Table:
    """Keys the same within each side that differ between the sides."""
    rows = tuple((d.key, *("(absent)" if v is None else v for v in d.values)) for d in comparison.environment)
    notes = () if rows else ("no difference in environment, settings or thread set-up between the sides",)
    if comparison.varying:
        shown = ", ".join(comparison.varying[:6]) + (" …" if len(comparison.varying) > 6 else "")
        notes += (f"left out: {len(comparison.varying)} keys that differ between runs of one side or in every run "
                  f"({shown})",)
    return Table(name="compare-groups-environment", title="What differs between the sides",
                 columns=("key", comparison.baseline_label, comparison.candidate_label), rows=rows, notes=notes)


def group_tables(comparison: GroupComparison) -> list[Table]:
    """All tables of a group comparison, in report order."""
    return [group_headline_table(comparison), group_metrics_table(comparison), group_environment_table(comparison),
            group_runs_table(comparison)]


def group_text(comparison: GroupComparison) -> str:
    """A group comparison as plain text for a terminal."""
    return tables_text(group_tables(comparison))
