"""A sweep's tables and text: the headline (which settings matter), conditions, effects, interactions, the LaTeX
table (siunitx) and the methods paragraph."""

from __future__ import annotations

from typing import Any

from ..format import format_p
from ..render import P_VALUE, Table, latex_escape, tables_text
from .results import METRIC_NAMES, VERDICT_EFFECT, VERDICT_NONE, Effect, SweepAnalysis

HEADLINE_METRICS = ("p99", "p99.9", "max")
"""The metrics page 1 speaks of (the tail; p50 moves with everything and is in the tables)."""


def _ratio(effect: Effect) -> str:
    if effect.low is None or effect.high is None:
        return f"x{effect.ratio:.2f} (no interval)"
    return f"x{effect.ratio:.2f} [{effect.low:.2f}, {effect.high:.2f}]"


def headline(result: SweepAnalysis) -> list[str]:
    """Page 1's answer, one line per factor: does it matter, by how much, with what confidence."""
    conf = f"{result.confidence * 100:g} %"
    lines = []
    for factor, levels in result.factors.items():
        if len(levels) == 1:
            lines.append(f"{factor}: held at {levels[0]} in every run (not varied)")
            continue
        mine = [e for e in result.effects if e.factor == factor]
        found = [e for e in mine if e.verdict == VERDICT_EFFECT]
        if found:
            parts = [f"{e.metric} {_ratio(e)} (Holm p {format_p(e.p_holm)})" for e in found]
            levels = sorted({f"{e.level} vs {e.reference}" for e in found})
            lines.append(f"{factor} MATTERS ({'; '.join(levels)}): " + ", ".join(parts))
        elif mine and all(e.verdict == VERDICT_NONE for e in mine if e.metric in HEADLINE_METRICS):
            lines.append(f"{factor}: no effect beyond the stated noise (±{result.noise * 100:g} %) on "
                         f"{', '.join(HEADLINE_METRICS)}: every {conf} interval of the ratio lies inside it")
        else:
            tail = [e for e in mine if e.metric in HEADLINE_METRICS]
            lines.append(f"{factor}: inconclusive: " + ", ".join(f"{e.metric} {_ratio(e)}" for e in tail)
                         + f" (intervals reach beyond ±{result.noise * 100:g} % and no Holm p < "
                           f"{1 - result.confidence:g}; more replicates would say)")
    found = [e for e in result.interactions if e.verdict == VERDICT_EFFECT]
    for e in found:
        lines.append(f"interaction {e.factor} x {e.other_factor}: {e.metric} ratio of ratios {_ratio(e)} "
                     f"(Holm p {format_p(e.p_holm)}): the effect of one depends on the other")
    if result.interactions and not found:
        lines.append(f"no interaction detected between {' and '.join(result.factors)} (Holm-adjusted, "
                     f"{len(result.interactions)} tests)")
    return lines


def _short_level(level: Any) -> str:
    text = level if isinstance(level, str) else str(level)
    return text if len(text) <= 18 else text[:17] + "…"


def conditions_table(result: SweepAnalysis) -> Table:
    rows = []
    for c in result.conditions:
        row: list[Any] = [*(_short_level(c.levels[name]) for name in result.factors), len(c.runs)]
        for metric in METRIC_NAMES:
            est = c.metrics[metric]
            interval = (f" [{_us(est.low_ns)}, {_us(est.high_ns)}]" if est.low_ns is not None
                        and est.high_ns is not None else "")
            row.append(_us(est.value_ns) + interval)
        rows.append(tuple(row))
    return Table("sweep-conditions", "Conditions: geometric mean over runs [interval from the replicates] (µs)",
                 (*result.factors, "runs", *METRIC_NAMES), tuple(rows),
                 notes=(f"{result.confidence * 100:g} % t intervals of the run-level values (log scale); a run is "
                        "the unit, wake-ups are not pooled. Warm-up wake-ups excluded.",))


def _us(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    us = ns / 1e3
    return f"{us:.0f}" if us >= 100 else f"{us:.1f}"


def events_table(result: SweepAnalysis) -> Table:
    """Latency spike events per condition: per minute over its runs (min-max of the runs), and their causes."""
    rows = []
    for c in result.conditions:
        runs = [r for r in result.runs if r.id in c.runs and r.events is not None and r.measured_s]
        if not runs:
            continue
        rates = [60 * r.events / r.measured_s for r in runs]  # type: ignore[operator]
        causes: dict[str, int] = {}
        for r in runs:
            for kind, n in r.causes.items():
                causes[kind] = causes.get(kind, 0) + n
        rows.append((*(_short_level(c.levels[name]) for name in result.factors), sum(r.events or 0 for r in runs),
                     sum(rates) / len(rates), min(rates), max(rates),
                     ", ".join(f"{k} {n}" for k, n in sorted(causes.items(), key=lambda kv: -kv[1])) or "none"))
    threshold = (result.event_threshold_ns or 0) / 1e3
    return Table("sweep-events", f"Latency spike events above {threshold:g} µs per condition, and their causes",
                 (*result.factors, "events", "per min", "min", "max", "causes (events)"), tuple(rows),
                 formats=(*("",) * len(result.factors), "", "{:.1f}", "{:.1f}", "{:.1f}", ""),
                 notes=("An event is a stall seen by one or several CPUs with its catch-up wake-ups (jitterscope "
                        "events), counted after the warm-up; per-minute rates are the mean over the condition's "
                        "runs with their range. This VM has no APERF/MPERF or SMI counters, so most events are "
                        "'unexplained' here unless a capture ran with --trace.",))


def effects_table(result: SweepAnalysis, interactions: bool = False) -> Table:
    effects = result.interactions if interactions else result.effects
    rows = tuple((e.label, e.metric, e.ratio, e.low, e.high, e.p, e.p_holm, e.verdict) for e in effects)
    name = "sweep-interactions" if interactions else "sweep-effects"
    title = ("Two-factor interactions (ratio of ratios)" if interactions
             else "Factor effects (ratio to the reference level, averaged over the other factors)")
    return Table(name, title, ("effect", "metric", "ratio", "low", "high", "p", "p Holm", "verdict"), rows,
                 formats=("", "", "{:.3f}", "{:.3f}", "{:.3f}", P_VALUE, P_VALUE, ""),
                 notes=(f"{result.confidence * 100:g} % t intervals on the log scale, df = runs - conditions; Holm "
                        "over every effect, interaction and metric; noise threshold "
                        f"±{result.noise * 100:g} %.",))


def runs_table(result: SweepAnalysis) -> Table:
    rows = tuple((r.id, r.position + 1, r.replicate, ", ".join(f"{k}={v}" for k, v in r.levels.items()), r.samples,
                  r.warmup_samples, *(r.metrics_ns[m] / 1e3 for m in METRIC_NAMES)) for r in result.runs)
    return Table("sweep-runs", "Runs in the order they ran (µs)",
                 ("run", "order", "replicate", "levels", "wake-ups", "warm-up", *METRIC_NAMES), rows,
                 formats=("", "", "", "", "", "", *("{:.1f}",) * len(METRIC_NAMES)))


def latex_table(result: SweepAnalysis, *, wide: bool | None = None) -> str:
    """The conditions (geometric means, µs) and the factor effects (ratios with intervals) as one LaTeX table:
    booktabs + siunitx ``S`` columns; ``table*`` when it would not fit a column (more than four metrics shown).

    Needs ``\\usepackage{booktabs,siunitx}``.
    """
    metrics = ("p50", "p99", "p99.9", "max") if not wide else METRIC_NAMES
    env = "table*" if wide else "table"
    spec = "l" + "".join(" S[table-format=5.1]" for _ in metrics)
    lines = [rf"\begin{{{env}}}[tbp]", r"\centering", r"\small",
             rf"\caption{{Wake-up latency per condition (\si{{\micro\second}}, geometric mean of "
             rf"{_replicates(result)} runs) and factor effects (ratio, {result.confidence * 100:g}\,\% interval).}}",
             r"\label{tab:sweep}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             "Condition & " + " & ".join(rf"{{{latex_escape(m)}}}" for m in metrics) + r" \\", r"\midrule"]
    for c in result.conditions:
        lines.append(latex_escape(c.label) + " & "
                     + " & ".join(f"{c.metrics[m].value_ns / 1e3:.1f}" for m in metrics) + r" \\")
    lines.append(r"\midrule")
    for factor in result.factors:
        for level in result.factors[factor][1:]:
            cells = []
            for m in metrics:
                e = next((x for x in result.effects if x.factor == factor and x.level == level and x.metric == m),
                         None)
                if e is None or e.low is None or e.high is None:
                    cells.append(r"{--}")
                else:
                    mark = r"$^{*}$" if e.verdict == VERDICT_EFFECT else ""
                    cells.append(rf"{{\num{{{e.ratio:.2f}}} [\num{{{e.low:.2f}}}, \num{{{e.high:.2f}}}]{mark}}}")
            reference = result.factors[factor][0]
            lines.append(latex_escape(f"{factor}: {level} / {reference}") + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}",
              rf"\par\smallskip{{\footnotesize $^{{*}}$ Holm-adjusted $p < {1 - result.confidence:g}$. "
              + latex_escape(methods_paragraph(result).split(". ")[0]) + ".}",
              rf"\end{{{env}}}"]
    return "\n".join(lines) + "\n"


def _replicates(result: SweepAnalysis) -> str:
    counts = sorted({len(c.runs) for c in result.conditions})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def methods_paragraph(result: SweepAnalysis) -> str:
    """What was varied, in which order, how many replicates, what was measured, what was restored."""
    design = result.design
    factors = "; ".join(f"{name} ({', '.join(str(v) for v in levels)})" for name, levels in result.factors.items())
    conditions = 1
    for levels in result.factors.values():
        conditions *= len(levels)
    order = ("in randomised complete blocks (each replicate a block holding every condition once, shuffled with "
             f"seed {design.get('seed')})" if design.get("order") == "random" else "in sequential order")
    capture = ", ".join(f"{k}={v}" for k, v in result.capture.items()) or "defaults"
    loads = "; ".join(f"'{cmd}' pinned to CPUs {','.join(str(c) for c in cpus or [])}"
                      for cmd, cpus in result.loads.items())
    restored = ", ".join(result.restored) or "nothing"
    text = (f"We varied {len(result.factors)} factor(s): {factors}, a full factorial of {conditions} conditions, "
            f"with {design.get('replicates')} replicate(s) each ({len(result.runs)} complete runs) run {order}. "
            f"Each run captured wake-up latency with jitterscope-capture ({capture}) for "
            f"{design.get('warmup_s', 0):g} s of warm-up, excluded from the statistics, followed by "
            f"{design.get('duration_s'):g} s measured. "
            + (f"Loads ran for the whole run ({loads}) and were stopped and reaped after it. " if loads else "")
            + f"Before each run its settings were written to an fsync'd journal and applied, and read back; after "
              f"each run and at exit every changed setting ({restored}) was restored and verified. "
              f"For each run we took p50, p90, p99, p99.9, p99.99 and the maximum of its latencies; a run is the "
              f"unit of replication. Factor effects are ratios of geometric means (contrasts of condition means of "
              f"the log metric, averaged over the other factors) with {result.confidence * 100:g} % Student t "
              f"intervals from the pooled between-run variance; p-values are Holm-adjusted over all factors, "
              f"interactions and metrics, and an effect whose whole interval lies within ±{result.noise * 100:g} % "
              f"is reported as no effect beyond that noise.")
    return text


def sweep_text(result: SweepAnalysis) -> str:
    lines = [f"sweep {result.directory}: {len(result.runs)} runs, {len(result.conditions)} conditions",
             *headline(result), ""]
    if result.missing:
        lines += ["runs left out: " + "; ".join(result.missing), ""]
    tables = [conditions_table(result), events_table(result), effects_table(result)]
    if result.interactions:
        tables.append(effects_table(result, interactions=True))
    lines.append(tables_text(tables))
    lines += ["", "Methods: " + methods_paragraph(result)]
    return "\n".join(lines)
