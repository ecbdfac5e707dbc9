"""Tables of the frequency/SMI correlation (for ``jitterscope correlate`` and the report).

Builders select and format fields of a :class:`~jitterscope.correlate.Correlation`;
they compute no statistics.
"""

from __future__ import annotations

from ..format import format_resampled_p
from ..render import P_VALUE, Table, to_text
from .correlate import Correlation

TEXT_WIDTH = 150


def verdict_table(result: Correlation) -> Table:
    """The plain-words verdicts, one per row, with the cpufreq claims and counter quality as notes."""
    return Table(name="correlation-verdict", title="Which latency spikes did power management cause?",
                 columns=("verdict",), rows=tuple((v,) for v in result.verdicts), formats=("",), align=("l",),
                 notes=(*result.notes, _method(result)) if result.available else ())


def claims_table(result: Correlation) -> Table:
    """cpufreq's recorded frequency per CPU against the measured f_eff."""
    rows = tuple(
        (c.cpu, c.governor, c.claimed_mhz, c.measured_median_mhz, c.measured_p5_mhz, c.measured_p95_mhz,
         None if c.fraction_within is None else 100 * c.fraction_within, c.transitions,
         "DISAGREE" if c.disagree else ("agree" if c.claimed_mhz else "n/a"))
        for c in (result.frequency.claims if result.frequency else ()))
    return Table(
        name="cpufreq-claims", title="cpufreq's claim against the measured effective frequency",
        columns=("cpu", "governor", "claimed [MHz]", "median [MHz]", "p5 [MHz]", "p95 [MHz]", "within tol. [%]",
                 "transitions", "claim"),
        rows=rows, formats=("", "", "{:.0f}", "{:.0f}", "{:.0f}", "{:.0f}", "{:.0f}", "", ""),
        notes=(f"within tol.: wake-ups whose f_eff is within ±{result.relative_threshold:.0%} of the claim; "
               "the claim holds when at least 90% are.",),
    )


def condition_tests_table(result: Correlation) -> Table:
    """Every (scope, condition, threshold) test: sizes, conditional p99, risk ratio, p-values, Cliff's delta."""
    rows = []
    for t in result.tests:
        for e in t.exceedance:
            rows.append((
                t.scope, t.condition, t.n_in, t.n_out, t.quantiles_in_ns["p99"] / 1e3, t.quantiles_out_ns["p99"] / 1e3,
                e.threshold_ns / 1e3, e.risk.exceed_in, e.risk.exceed_out, e.risk.ratio, e.risk.ci_low,
                e.risk.ci_high, e.p_holm, t.rank.cliffs_delta, t.rank_p_holm,
            ))
    return Table(
        name="correlation-tests", title="Latency inside vs outside each condition",
        columns=("scope", "condition", "n in", "n out", "p99 in [µs]", "p99 out [µs]", "threshold [µs]",
                 "exceed in", "exceed out", "risk ratio", "CI low", "CI high", "p Fisher [Holm]",
                 "Cliff's delta", "p rank [Holm]"),
        rows=tuple(rows),
        formats=("", "", "", "", "{:.1f}", "{:.1f}", "{:.1f}", "", "", "{:.3g}", "{:.3g}", "{:.3g}", P_VALUE,
                 "{:+.3f}", P_VALUE),
        notes=("Risk ratio: P(latency > threshold | inside) / P(... | outside), Katz 95% CI; p Fisher: one-sided "
               "exact test, Holm-adjusted over all rows; p rank: one-sided Mann-Whitney, Holm-adjusted; Cliff's "
               "delta > 0 means latency is larger inside.",),
    )


def time_in_frequency_table(result: Correlation) -> Table:
    """Time spent per f_eff bin, per CPU."""
    rows = tuple((t.cpu, lower, lower + t.bin_mhz, seconds, 100 * fraction)
                 for t in (result.frequency.time_in_frequency if result.frequency else ())
                 for lower, seconds, fraction in zip(t.lower_mhz, t.seconds, t.fraction, strict=True))
    return Table(name="time-in-frequency", title="Time in frequency (f_eff, weighted by interval length)",
                 columns=("cpu", "from [MHz]", "to [MHz]", "time [s]", "share [%]"), rows=rows,
                 formats=("", "{:.0f}", "{:.0f}", "{:.3f}", "{:.1f}"))


def event_table(result: Correlation) -> Table:
    """Event-triggered averages: the peak near lag 0 against the surrogate band."""
    rows = []
    for trig in result.event_averages:
        a = trig.average
        centre = [i for i, lag in enumerate(a.lags) if abs(lag) <= a.peak_halfwidth]
        peak = max(centre, key=lambda i: a.mean[i])
        # at its floor 1/(B + 1) the p-value says "≤ 0.005 (floor, B = 199)": no smaller p comes from B surrogates
        p_text = format_resampled_p(a.p_value, a.n_surrogates).removeprefix("p ").removeprefix("= ")
        rows.append((trig.cpu, trig.event, a.n_events, a.lags[peak], a.mean[peak] / 1e3, a.band_high[peak] / 1e3,
                     p_text))
    return Table(name="event-average-peaks", title="Event-triggered average latency around transitions and SMIs",
                 columns=("cpu", "event", "events", "peak lag", "peak mean [µs]", "surrogate 97.5% [µs]",
                          "p (surrogates)"),
                 rows=tuple(rows), formats=("", "", "", "", "{:.1f}", "{:.1f}", ""),
                 notes=("Surrogates: the event train circularly shifted by random offsets; p compares the largest "
                        "mean within the window with the surrogates' largest means.",))


def correlation_tables(result: Correlation) -> list[Table]:
    """All tables of a result, in reading order (just the verdict when counters are missing)."""
    if not result.available:
        return [verdict_table(result)]
    tables = [claims_table(result), condition_tests_table(result), event_table(result), time_in_frequency_table(result)]
    return [verdict_table(result), *(t for t in tables if t.rows)]  # an empty table says nothing


def correlation_text(result: Correlation, *, width: int = TEXT_WIDTH) -> str:
    """What ``jitterscope correlate`` prints: the verdicts, then every table as text."""
    if not result.available:
        return result.reason + "\n"
    lines = ["Verdict:", *(f"  - {v}" for v in result.verdicts), ""]
    methods = dict(result.params.get("methods") or {})  # which statistics are exact, which bounded
    lines += ["Notes:", *(f"  - {n}" for n in result.notes), f"  - {_method(result)}",
              *(f"  - {name.replace('_', ' ')}: {how}" for name, how in methods.items()), ""]
    for table in correlation_tables(result)[1:]:
        lines += [table.title, *to_text(table, max_width=width), ""]
    return "\n".join(lines).rstrip() + "\n"


def _method(result: Correlation) -> str:
    return (f"Method: transitions are steps > {result.relative_threshold:.0%} between levels held ≥ "
            f"{result.min_dwell} wake-ups; 'near' = within ±{result.window} wake-ups; each condition is tested on "
            f"wake-ups free of the other events; attribution needs a Holm-adjusted Fisher p < {result.alpha:g} "
            "with a risk ratio > 1.")
