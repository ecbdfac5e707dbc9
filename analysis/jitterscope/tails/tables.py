"""Tables and plain text of tail fits (select and format; no statistics here)."""

from __future__ import annotations

from ..format import format_thread_cpu, format_us, model_probability, us_value
from ..render import Table, tables_text
from .checks import ALPHA
from .fit import TailFit, TailsReport, shape_text


def tail_fit_table(report: TailsReport) -> Table:
    """One row per thread: threshold, shape, exceedance probability of the maximum, return levels, gate.

    Return levels are empty (n/a) where the fit does not extrapolate; the notes say why.
    """
    rows = []
    for f in report.threads:
        p_max = dict(f.exceedance_probabilities)[f.observed_max_ns]
        levels = {r.period: r.level_ns for r in f.return_levels}
        hour, day = levels.get("hour"), levels.get("day")
        # a probability from the model below 1e-6 is "< 1e-6 (model)"; a recorded fraction is data, printed as is
        shown = model_probability if f.extrapolated else _number
        rows.append((f.thread, _cpu(f.cpu), f.n, us_value(f.threshold_ns), f.exceedances, f.xi, f.xi_se,
                     us_value(f.sigma_ns),
                     us_value(f.observed_max_ns), shown(p_max.estimate), shown(p_max.lower), shown(p_max.upper),
                     us_value(hour.estimate) if hour else None, us_value(hour.lower) if hour else None,
                     us_value(hour.upper) if hour else None, us_value(day.estimate) if day else None,
                     "yes" if f.extrapolated else "withheld", "ok" if f.assumptions_ok else "NOT MET"))
    conf = report.threads[0].confidence
    unit, value = _words(report)
    notes = [f"n {unit}s; u threshold with k exceedances; intervals: {conf:.0%} profile likelihood; '1/hour' = "
             f"{value} exceeded about once per hour at the thread's {unit} rate (expected count one)"]
    if any(f.xi_se != f.xi_se for f in report.threads):  # NaN: said in words, not as "± nan"
        notes.append("'± se' n/a: the standard error of ξ is undefined (maximum likelihood is not regular at "
                     "ξ < −0.5)")
    for f in report.threads:
        if not f.extrapolated:
            notes.append(f"thread {f.thread}: {f.withheld}; P(>max) is the recorded fraction (0) with its "
                         f"Clopper-Pearson {conf:.0%} interval")
    notes += [f"thread {t}: skipped — {why}" for t, why in report.skipped]
    return Table(
        name="tails-fit", title="Tail fits (generalised Pareto above a threshold)",
        columns=("thread", "CPU", "n", "u [µs]", "k", "ξ", "± se", "σ [µs]", "max [µs]",
                 f"P(>max) [/{unit}]", "low", "high", "1/hour [µs]", "low [µs]", "high [µs]", "1/day [µs]",
                 "beyond max", "assumptions"),
        rows=tuple(rows),
        formats=("{:d}", "{:d}", "{:d}", "{:.4g}", "{:d}", "{:.3f}", "{:.3f}", "{:.4g}", "{:.4g}", "{:.2e}",
                 "{:.2e}", "{:.2e}", "{:.4g}", "{:.4g}", "{:.4g}", "{:.4g}", "", ""),
        notes=tuple(notes))


def tail_events_table(report: TailsReport) -> Table:
    """Per thread and level: declustered events above it counted in the data, and their rate per hour."""
    rows = tuple((f.thread, _cpu(f.cpu), us_value(r.level_ns), r.events, r.clusters, r.wakeups, r.hours,
                  r.per_hour, r.per_hour_lower, r.per_hour_upper)
                 for f in report.threads for r in f.large_events)
    conf = report.threads[0].confidence
    unit, _ = _words(report)
    timer = unit == "wake-up"
    notes = [(f"an event: {unit}s above the level at most 10 {unit}s apart"
              + (" (a stall and its catch-up wake-ups); " if timer else "; ")
              + "clusters: the events declustered once more by their extremal index (Ferro-Segers intervals "
              f"estimator; storms of stalls are one cluster); per hour = events / hours captured, with a {conf:.0%} "
              "interval that is the Poisson interval of the clusters times the mean cluster size (approximate; "
              "exact only for independent events); levels: the fit's threshold, "
              + ("one interval (a missed period), " if timer else "")
              + "100 µs, 1 ms and 10 ms, up to the first above the maximum")]
    shortest = min((r.hours for f in report.threads for r in f.large_events), default=1.0)
    if shortest < 1.0:
        notes.append(f"per hour is extrapolated: the capture lasted {shortest * 3600:,.1f} s, less than an hour")
    return Table(
        name="tails-events", title="Large events counted in the data (no model)",
        columns=("thread", "CPU", "above [µs]", "events", "clusters", f"{unit}s", "hours", "per hour", "low",
                 "high"),
        rows=rows,
        formats=("{:d}", "{:d}", "{:.6g}", "{:d}", "{:d}", "{:d}", "{:.3g}", "{:.4g}", "{:.4g}", "{:.4g}"),
        notes=tuple(notes))


def tail_levels_table(report: TailsReport) -> Table:
    """Per thread and asked level (``--level-us``): P(latency > level) per wake-up and per hour, and where it comes
    from: the fraction recorded, the fit beyond its threshold, or withheld (beyond the largest recorded latency
    of a fit that does not extrapolate, as its return levels are)."""
    conf = report.threads[0].confidence if report.threads else 0.9
    unit, value = _words(report)
    rows, withheld = [], []
    for f in report.threads:
        known = dict(f.exceedance_probabilities)
        per_hour = f.rate_hz * 3600.0  # wake-ups per hour
        for level in report.levels_ns:
            p = known.get(level)
            if p is None:
                why = "rarer than once per day" if f.extrapolated else f"beyond the max {format_us(f.observed_max_ns)}"
                rows.append((f.thread, _cpu(f.cpu), us_value(level), None, None, None, None, None, None,
                             f"withheld: {why}"))
                withheld.append((f.thread, f.extrapolated))
                continue
            model = level > f.threshold_ns and f.extrapolated
            source = "GPD fit" if model else "recorded fraction"
            shown = model_probability if model else _number
            rows.append((f.thread, _cpu(f.cpu), us_value(level), shown(p.estimate), shown(p.lower), shown(p.upper),
                         p.estimate * per_hour, p.lower * per_hour, p.upper * per_hour, source))
    notes = [f"P(> level) per {unit} with its {conf:.0%} interval (recorded fraction: Clopper-Pearson; GPD fit: "
             f"profile likelihood above the threshold u); per hour = P x the thread's {unit} rate"]
    for thread, extrapolated in dict.fromkeys(withheld):
        notes.append(f"thread {thread}: " + (
            "a level rarer than once per day is beyond what the fit is asked (its return levels stop at a day; "
            "the 1/day level is in the tail fits)" if extrapolated else
            f"no probability beyond the largest recorded {value}: the fit does not extrapolate (see the tail fits' "
            "notes); the large events table counts what was recorded"))
    return Table(
        name="tails-levels", title=f"Asked levels: how often {value} exceeds them",
        columns=("thread", "CPU", "level [µs]", f"P(>level) [/{unit}]", "low", "high", "per hour", "low", "high",
                 "from"),
        rows=tuple(rows),
        formats=("{:d}", "{:d}", "{:.6g}", "{:.3e}", "{:.3e}", "{:.3e}", "{:.4g}", "{:.4g}", "{:.4g}", ""),
        notes=tuple(notes))


def tail_checks_table(fit: TailFit) -> Table:
    """The assumption checks of one thread, each with its sentence."""
    rows = tuple((c.name, c.statistic, c.p_text, c.result) for c in fit.checks)
    notes = [f"verdict: {fit.verdict}",
             f"one rule for every check with a p-value: FAIL when p < {ALPHA:g}, pass otherwise; the checks without "
             "one compare their statistic with the bound their sentence states"]
    if fit.block_maxima is not None:
        notes.append(fit.block_maxima.sentence)
    if fit.mrl_xi == fit.mrl_xi:  # not NaN: enough candidates above the threshold for a slope
        notes.append(f"mean-residual-life slope above the threshold implies ξ = {fit.mrl_xi:.3f} "
                     f"(GPD fit {shape_text(fit.xi, fit.xi_se)})")
    else:
        notes.append("mean-residual-life slope: fewer than 3 candidate thresholds above the chosen one")
    for r in fit.return_levels:
        notes.append(f"once per {r.period}: {r.level_ns.estimate / 1000:.4g} µs "
                     f"[{r.level_ns.lower / 1000:.4g} … {r.level_ns.upper / 1000:.4g}] — {r.extrapolation:.0f}× "
                     "beyond the capture's length" + (", so it rests on the model more than on the data"
                                                      if r.extrapolation > 10 else ""))
    if not fit.extrapolated:
        largest = [r for r in fit.large_events if r.events > 0]
        if largest:
            r = largest[-1]
            notes.append(f"large events: {r.events} above {format_us(r.level_ns)} in {r.hours:.3g} h = "
                         f"{r.per_hour:.3g} per hour [{r.per_hour_lower:.3g} … {r.per_hour_upper:.3g}], "
                         f"largest recorded {format_us(fit.observed_max_ns)}")
    notes += [c.sentence for c in fit.checks]
    return Table(name=f"tails-checks-{fit.thread}", title=f"{format_thread_cpu(fit.thread, fit.cpu)}: assumptions",
                 columns=("check", "statistic", "p-value", "result"), rows=rows,
                 formats=("", "{:.4g}", "", ""), notes=tuple(notes))


def tails_tables(report: TailsReport) -> list[Table]:
    """The fit table, the asked levels (when ``--level-us`` asked for some), the events counted, the checks."""
    levels = [tail_levels_table(report)] if report.levels_ns else []
    return [tail_fit_table(report), *levels, tail_events_table(report),
            *(tail_checks_table(f) for f in report.threads)]


def tails_text(report: TailsReport) -> str:
    """The tail report as plain text, ending with what EVT can and cannot promise."""
    return tables_text(tails_tables(report)) + "\n\n" + report.promise + "\n"


def _words(report: TailsReport) -> tuple[str, str]:
    """What one value is and what it measures: (wake-up, latency) or, for a poll dataset, (interruption, its
    length)."""
    return (report.unit, "latency") if report.unit == "wake-up" else (report.unit, f"{report.unit} length")


def _number(value: float) -> float:
    return value


def _cpu(cpu: int) -> int | None:
    """A known CPU, or None (printed n/a): imports that did not record the CPU say -1, which is no CPU."""
    return cpu if cpu >= 0 else None
