"""Tables and plain text of comparisons and tail fits (select and format; no statistics here)."""

from __future__ import annotations

from .compare import Comparison, PairComparison
from .tables import Table, to_text
from .tails import TailFit, TailsReport

US = "{:.3f}"
TEXT_WIDTH = 150


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000.0


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def runs_table(comparison: Comparison) -> Table:
    """One row per run: size, set-up and its p50 … max."""
    metrics = [name for name, _ in comparison.runs[0].metrics_ns]
    rows = []
    for run in comparison.runs:
        values = dict(run.metrics_ns)
        rows.append((run.label, run.kind, run.n, ",".join(map(str, run.cpus)),
                     "/".join(f"{i / 1000:g}" for i in run.intervals_ns), run.block_length,
                     *(_us(values[m]) for m in metrics)))
    return Table(
        name="compare-runs", title="Runs compared (the first is the baseline)",
        columns=("run", "kind", "wake-ups", "CPUs", "interval [µs]", "block [wake-ups]",
                 *(f"{m} [µs]" for m in metrics)),
        rows=tuple(rows), formats=("", "", "{:d}", "", "", "{:d}", *(US,) * len(metrics)),
        notes=comparison.notes)


def pair_table(pair: PairComparison, comparison: Comparison, index: int) -> Table:
    """Per metric: baseline, candidate, change with its interval, verdict."""
    rows = tuple(
        (m.metric, _us(m.baseline_ns), _us(m.candidate_ns), _us(m.difference_ns), _us(m.ci_low_ns),
         _us(m.ci_high_ns), _pct(m.relative), _pct(m.relative_low), _pct(m.relative_high), m.verdict)
        for m in pair.metrics)
    return Table(
        name=f"compare-pair-{index}", title=f"{pair.candidate} vs {pair.baseline}",
        columns=("metric", "baseline [µs]", "candidate [µs]", "change [µs]", "CI low [µs]", "CI high [µs]",
                 "change [%]", "CI low [%]", "CI high [%]", "verdict"),
        rows=rows, formats=("", US, US, US, US, US, "{:+.1f}", "{:+.1f}", "{:+.1f}", ""),
        notes=(comparison.method, *[m.sentence for m in pair.metrics], *pair.notes))


def ratio_table(pair: PairComparison, index: int) -> Table:
    """Exceedance-rate ratios at the baseline's quantiles."""
    rows = tuple((r.level, _us(r.threshold_ns), r.baseline_rate, r.candidate_rate, r.ratio, r.ratio_low,
                  r.ratio_high, r.baseline_per_s, r.candidate_per_s) for r in pair.exceedance_ratios)
    return Table(
        name=f"compare-exceedances-{index}", title=f"How often {pair.candidate} exceeds the baseline's quantiles",
        columns=("threshold", "level [µs]", "baseline [/wake-up]", "candidate [/wake-up]", "ratio", "CI low",
                 "CI high", "baseline [/s]", "candidate [/s]"),
        rows=rows, formats=("", US, "{:.2e}", "{:.2e}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.3g}", "{:.3g}"),
        notes=("ratio = candidate rate / baseline rate, each with +1/2 (Haldane); interval from the bootstrap of "
               "each run (block bootstrap; for histograms a multinomial bootstrap of the bin counts)",))


def tests_table(pair: PairComparison, index: int) -> Table:
    rows = tuple((t.name, t.statistic, t.p_value) for t in pair.tests)
    return Table(name=f"compare-tests-{index}", title=f"Rank and distribution tests, {pair.candidate} vs "
                 f"{pair.baseline}", columns=("test", "statistic", "p-value"), rows=rows,
                 formats=("", "{:.4g}", "{:.2g}"), notes=tuple(t.sentence for t in pair.tests))


def verdict_summary_table(comparison: Comparison) -> Table:
    """Every candidate against the baseline: relative change and verdict per metric."""
    metrics = [m.metric for m in comparison.pairs[0].metrics]
    rows = []
    for pair in comparison.pairs:
        cells: list[str] = []
        for m in pair.metrics:
            change = "n/a" if m.relative is None else f"{100 * m.relative:+.1f}%"
            cells.append(f"{change} {m.verdict}")
        rows.append((pair.candidate, *cells))
    return Table(name="compare-summary", title=f"Summary: every run against {comparison.runs[0].label}",
                 columns=("run", *metrics), rows=tuple(rows),
                 notes=(comparison.method,))


def environment_table(comparison: Comparison) -> Table:
    """What differs between the runs' metadata; one column per run."""
    labels = [r.label for r in comparison.runs]
    rows = tuple((d.key, *("(absent)" if v is None else v for v in d.values)) for d in comparison.environment)
    notes = () if rows else ("no difference in environment, settings or thread set-up",)
    return Table(name="compare-environment", title="What differs between the runs", columns=("key", *labels),
                 rows=rows, notes=notes)


def comparison_tables(comparison: Comparison) -> list[Table]:
    """All tables of a comparison, in report order."""
    tables = [verdict_summary_table(comparison), runs_table(comparison), environment_table(comparison)]
    for i, pair in enumerate(comparison.pairs, start=1):
        tables += [pair_table(pair, comparison, i), ratio_table(pair, i), tests_table(pair, i)]
    return tables


def comparison_text(comparison: Comparison) -> str:
    """The comparison as plain text for a terminal."""
    return _render(comparison_tables(comparison))


def tail_fit_table(report: TailsReport) -> Table:
    """One row per thread: threshold, shape, exceedance probability of the maximum, return levels, gate."""
    rows = []
    for f in report.threads:
        p_max = dict(f.exceedance_probabilities)[f.observed_max_ns]
        levels = {r.period: r.level_ns for r in f.return_levels}
        hour, day = levels.get("hour"), levels.get("day")
        rows.append((f.thread, f.cpu, f.n, _us(f.threshold_ns), f.exceedances, f.xi, f.xi_se, _us(f.sigma_ns),
                     _us(f.observed_max_ns), p_max.estimate, p_max.lower, p_max.upper,
                     _us(hour.estimate) if hour else None, _us(hour.lower) if hour else None,
                     _us(hour.upper) if hour else None, _us(day.estimate) if day else None,
                     "ok" if f.assumptions_ok else "NOT MET"))
    conf = report.threads[0].confidence
    return Table(
        name="tails-fit", title="Tail fits (generalised Pareto above a threshold)",
        columns=("thread", "CPU", "n", "u [µs]", "k", "ξ", "± se", "σ [µs]", "max [µs]",
                 "P(>max) [/wake-up]", "low", "high", "1/hour [µs]", "low [µs]", "high [µs]", "1/day [µs]",
                 "assumptions"),
        rows=tuple(rows),
        formats=("{:d}", "{:d}", "{:d}", "{:.4g}", "{:d}", "{:.3f}", "{:.3f}", "{:.4g}", "{:.4g}", "{:.2e}",
                 "{:.2e}", "{:.2e}", "{:.4g}", "{:.4g}", "{:.4g}", "{:.4g}", ""),
        notes=(f"n wake-ups; u threshold with k exceedances; intervals: {conf:.0%} profile likelihood; '1/hour' = "
               "latency exceeded about once per hour at the thread's wake-up rate (expected count one)",
               *[f"thread {t}: skipped — {why}" for t, why in report.skipped]))


def tail_checks_table(fit: TailFit) -> Table:
    """The assumption checks of one thread, each with its sentence."""
    rows = tuple((c.name, c.statistic, c.p_value, "pass" if c.passed else "FAIL") for c in fit.checks)
    notes = [f"verdict: {fit.verdict}"]
    if fit.block_maxima is not None:
        notes.append(fit.block_maxima.sentence)
    if fit.mrl_xi == fit.mrl_xi:  # not NaN: enough candidates above the threshold for a slope
        notes.append(f"mean-residual-life slope above the threshold implies ξ = {fit.mrl_xi:.3f} "
                     f"(GPD fit ξ = {fit.xi:.3f} ± {fit.xi_se:.3f})")
    else:
        notes.append("mean-residual-life slope: fewer than 3 candidate thresholds above the chosen one")
    for r in fit.return_levels:
        notes.append(f"once per {r.period}: {r.level_ns.estimate / 1000:.4g} µs "
                     f"[{r.level_ns.lower / 1000:.4g} … {r.level_ns.upper / 1000:.4g}] — {r.extrapolation:.0f}× "
                     "beyond the capture's length" + (", so it rests on the model more than on the data"
                                                      if r.extrapolation > 10 else ""))
    notes += [c.sentence for c in fit.checks]
    return Table(name=f"tails-checks-{fit.thread}", title=f"Thread {fit.thread} (CPU {fit.cpu}): assumptions",
                 columns=("check", "statistic", "p-value", "result"), rows=rows,
                 formats=("", "{:.4g}", "{:.2g}", ""), notes=tuple(notes))


def tails_tables(report: TailsReport) -> list[Table]:
    return [tail_fit_table(report), *(tail_checks_table(f) for f in report.threads)]


def tails_text(report: TailsReport) -> str:
    """The tail report as plain text, ending with what EVT can and cannot promise."""
    return _render(tails_tables(report)) + "\n\n" + report.promise + "\n"


def _render(tables: list[Table]) -> str:
    blocks = []
    for table in tables:
        blocks.append(table.title + "\n" + "\n".join(to_text(table, max_width=TEXT_WIDTH)))
    return "\n\n".join(blocks)
