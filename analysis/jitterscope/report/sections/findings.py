"""Report page 1: the findings of the post-mortem — what happened, when, where, why, and what to change.

What happened: the worst wake-up of each CPU and when, the events above 100 µs, 1 ms and one interval with
their rates and Poisson intervals, stalls seen by several CPUs at once.  Why: the causes of the events with
their evidence, the power-management verdicts (correlate's tests, with effect sizes) and the periodic
disturbances the spectra find, when those sections are in the report.  What to change: the configuration
red flags, each with its action, and what to run next.  Hashes and raw metadata are in the appendix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ...derive import held_by_meaning
from ...errors import AnalysisError
from ...events import (
    HYPERVISOR,
    Event,
    Events,
    decode_steal,
    event_rates_table,
    event_split_text,
    group_causes,
    rates_basis,
    steal_by_chance,
    threads_share_a_clock,
)
from ...format import format_p, format_us
from ...render import Page, Table, key_value_table, text_pages
from ..build import ReportContext, register_section
from ..findings import configuration_flags, next_steps
from .events import shared_events
from .planted import shared_recovery
from .provenance import SIMULATED_BANNER

SPECTRAL_LINES = 3  # periodic disturbances named on page 1
SPECTRAL_FAP = 0.01
SHARED_ORDER = ("events", "spectrum", "correlation")
"""The order page 1 (and the planted section) compute the shared analyses in.  Each analysis's transient peak
stacks on what the ones before it left (their results and the allocators' leftovers), so the spectra, whose
Lomb-Scargle peaks highest (~0.85 GB at 10^8 wake-ups with gaps) and leave ~0.05 GB, run before correlate, which
leaves ~0.23 GB: 1.28 GB instead of 1.51 GB at the 10^8 report's peak (issue 25's budget is 1.43 GB)."""


@register_section(order=5, name="findings", uses=("spectrum",))
def findings_section(ctx: ReportContext) -> Sequence[Page]:
    """Page 1: what happened, the causes, the red flags with their actions, what to run next."""
    meta = ctx.dataset.metadata
    events: Events | None = None
    problems: list[str] = []
    try:
        events = shared_events(ctx)
    except AnalysisError as exc:
        problems.append(f"events not computed: {exc}")
    what = _what_happened(ctx, events, problems)
    causes = _causes(ctx, events)
    check = configuration_flags(meta, events)
    flag_notes = ((("Not checked (not recorded): " + "; ".join(check.not_checked) + ".") if check.not_checked else
                   "Every check could be made from the metadata.",)
                  + (("The environment of a simulation is what its spec claims.",) if meta.kind == "simulation"
                     else ()))
    flags = Table(
        name="findings-red-flags", title="Configuration red flags (from the recorded environment and settings)",
        columns=("flag", "evidence → action that removes it"),
        # one wrapped last column: text tables shorten the other columns, and neither half may be cut
        rows=tuple((f.name, f"{f.evidence} → {f.action}") for f in check.flags) or (("none", "-"),),
        formats=("", ""), align=("l", "l"), notes=flag_notes,
    )
    has_counters = any(ctx.dataset.has(c) for c in ("smi", "aperf", "mperf")) or meta.timeline is not None
    steps = next_steps(meta, events, check, has_counters=has_counters)
    next_table = Table(name="findings-next", title="What to run next", columns=("#", "step"),
                       rows=tuple((i, step) for i, step in enumerate(steps, start=1)), formats=("", ""),
                       align=("r", "l"))
    # Page 1 has about 50 lines.  On it the worst wake-up of each CPU and the event rates are rows of "What
    # happened", and the red flags and the next steps share one table (a title and a header less); --figures
    # gets each table whole.
    actions = Table(
        name="findings-actions", title="What to change (red flags from the recorded environment and settings) "
                                       "and what to run next",
        columns=("", "evidence → action that removes it / step"),
        rows=tuple((f.name, f"{f.evidence} → {f.action}") for f in check.flags) or (("no red flag", "-"),),
        formats=("", ""), align=("l", "l"), notes=flag_notes)
    actions = replace(actions, rows=actions.rows + tuple((f"next {i}", step) for i, step in next_table.rows))
    exported = [what]
    if events is not None:
        exported += [_worst_per_cpu(ctx, events), event_rates_table(events, name="findings-rates")]
    exported += [causes, flags, next_table]
    banner = SIMULATED_BANNER if meta.kind == "simulation" else None
    pages = list(text_pages("findings", f"Findings: {ctx.dataset.path.name}", [what, causes, actions],
                            banner=banner))
    pages[0] = replace(pages[0], tables=tuple(exported))
    return pages


def _cpu(cpu: int, thread: int) -> str:
    return f"CPU {cpu}" if cpu >= 0 else f"thread {thread} (CPU unknown)"


def _event_where(event: Event) -> str:
    """"CPU 1", "CPUs 0 and 1", "CPUs 0, 1 and 2"; by thread when the source did not record the CPUs."""
    if min(event.cpus) < 0:  # an import that does not record CPUs: name the threads
        names = [str(t) for t in event.threads]
        if len(names) == 1:
            return f"thread {names[0]} (CPU unknown)"
        return f"threads {', '.join(names[:-1])} and {names[-1]} (CPUs unknown)"
    cpus = [str(c) for c in event.cpus]
    if len(cpus) == 1:
        return f"CPU {cpus[0]}"
    return f"CPUs {', '.join(cpus[:-1])} and {cpus[-1]}"


def _what_happened(ctx: ReportContext, events: Events | None, problems: list[str]) -> Table:
    meta = ctx.dataset.metadata
    overall = ctx.summary.overall
    intervals = sorted({t.interval_ns for t in meta.threads if t.interval_ns > 0})
    items: list[tuple[str, Any]] = [(
        "run", f"{meta.kind}, {overall.n:,} wake-ups on {len(meta.threads)} thread(s)"
        + (f" over {events.observed_s:,.1f} s" if events is not None else "")
        + (f", interval {', '.join(format_us(i) for i in intervals)}" if intervals else ""))]
    assumed = import_assumptions(meta)
    if assumed:
        items.append(("import assumed", assumed))
    overflowing = [t for t in ctx.summary.threads if t.overflows]
    if overflowing:
        bounds = {f"p{key}": bound for key, bound in overall.percentiles_above.items()}
        items.append(("above the histogram's range", f"{overall.overflows:,} of {overall.n:,} wake-ups ("
                      + ", ".join(f"{_cpu(t.cpu, t.thread)}: {t.overflows:,}" for t in overflowing)
                      + "), values not recorded; counted in n"
                      + (": " + ", ".join(f"{k} > {format_us(v)}" for k, v in bounds.items()) if bounds else "")))
    worst = max((t for t in ctx.summary.threads if t.spikes.spikes), key=lambda t: t.spikes.spikes[0].latency_ns,
                default=None)
    if worst is not None:
        spike = worst.spikes.spikes[0]
        event = _event_of(events, spike.thread, spike.actual_ns)
        when = _when(ctx, events, spike.actual_ns)
        items.append(("worst wake-up", f"{format_us(spike.latency_ns)} on {_cpu(worst.cpu, worst.thread)} {when}"
                      + (f"; part of an event on {_event_where(event)}, causes: {', '.join(event.cause_kinds)}"
                         if event is not None else "")))
    else:
        known = [t for t in ctx.summary.threads if t.max_ns is not None]
        if known:
            top = max(known, key=lambda t: t.max_ns or 0.0)
            items.append(("worst wake-up", f"{format_us(top.max_ns)} on {_cpu(top.cpu, top.thread)}; when is not "
                                           "recorded (the source kept no wake-up times)"))
    if events is not None and len(ctx.summary.threads) > 1:
        # the worst wake-up overall has its own row: this one names the other CPUs' worst
        worst_rows = _worst_per_cpu(ctx, events).rows
        worst_rows = tuple(row for row in worst_rows if worst is None or row[1] != worst.thread)
        if worst_rows:
            items.append(("other CPUs' worst", "; ".join(
                f"{who} {format_us(worst_us * 1e3)} at {at:,.3f} s"
                + (f" (event on {where}: {causes})" if where != "-" else "")
                for who, _, worst_us, at, where, causes in worst_rows)))
    if events is not None:
        multi = [e for e in events.events if len(e.threads) > 1]
        together = (f"{len(multi):,} hit several CPUs at once" if threads_share_a_clock(meta) else
                    "whether any hit several CPUs at once is unknown: the threads' clocks are not aligned")
        items.append(("events", f"{len(events.events):,} (a wake-up later than {format_us(events.threshold_ns)}: "
                                f"{events.threshold_rule}); {together}"))
        if multi:
            big = max(multi, key=lambda e: e.peak_latency_ns)
            items.append(("largest stall of several CPUs",
                          f"{_event_where(big)} stall together at {big.start_s:,.3f} s: peak "
                          f"{format_us(big.peak_latency_ns)}, {big.duration_ns / 1e3:,.0f} µs long, "
                          f"{big.wakeups} wake-ups, {big.missed_periods} missed periods"))
        virtualised = _virtualised(ctx, events)
        if virtualised:
            items.append(("virtualised", virtualised))
        missed = sum(e.missed_periods for e in events.events)
        items.append(("missed periods", f"{missed:,} in events (overruns, seq gaps, catch-up wake-ups); overruns: "
                                        f"{overall.overruns if overall.overruns is not None else 'n/a'}"))
        if events.rates:
            items.append(("event rates", _rates_text(events)))
        if events.halves is not None and events.events:
            h = events.halves
            items.append(("over time", f"{h.first:,} events in the first half, {h.second:,} in the second "
                                       f"({format_p(h.p_value)}, {h.test})"))
    if "planted" in ctx.sections:
        recovery = shared_recovery(ctx)
        if recovery is not None:
            items.append(("planted effects", f"{recovery.tally()} (simulation; the table follows this page)"))
    items += [("note", problem) for problem in problems]
    return key_value_table("findings-summary", "What happened", items, headers=("what", "finding"))


def _virtualised(ctx: ReportContext, events: Events) -> str | None:
    """"N events coincide with steal" from the capture's steal series, when the hypervisor took a measured CPU."""
    steal = decode_steal(ctx.dataset.metadata.steal)
    if steal is None or not any(steal.total_ns.values()):
        return None
    hit = [e for e in events.events if HYPERVISOR in e.cause_kinds]
    total = ", ".join(f"CPU {cpu} {ns / 1e6:,.0f} ms" for cpu, ns in sorted(steal.total_ns.items()) if ns)
    if not hit:
        return f"no event coincides with steal; the hypervisor stole {total} over the run (/proc/stat)"
    covered = sum(1 for e in hit if e.cause_kinds[0] == HYPERVISOR)
    chance = steal_by_chance(steal, events.events)
    return (f"{len(hit):,} of {len(events.events):,} events coincide with steal (the hypervisor ran something "
            f"else on their vCPUs: /proc/stat steal rose during them, read every {steal.period_ns / 1e6:g} ms; "
            f"{chance:,.1f} expected by chance at these times); in {covered:,} the steal can account for the "
            f"peak latency; stolen over the run: {total}")
def import_assumptions(meta: Any) -> str:
    """What an import took for given that its files do not say, in one line ("" for captures and simulations):
    the CPUs, the interval (and distance), the unit, whether the threads share a clock."""
    source = meta.source or {}
    if meta.kind not in ("import", "histogram") or not source:
        return ""
    assumed = dict(source.get("assumptions") or {})
    if "cpus" not in assumed and meta.threads and all(t.cpu < 0 for t in meta.threads):
        assumed["cpus"] = "not recorded by the source"
    if "clocks" not in assumed and meta.kind == "import" and not threads_share_a_clock(meta):
        assumed["clocks"] = "each thread's times from its own first wake-up: no event joins several CPUs"
    parts = [f"{what}: {how}" for what, how in assumed.items() if isinstance(how, str)]
    return f"{source.get('format', 'import')}; " + "; ".join(parts) if parts else ""


def _rates_text(events: Events) -> str:
    """"86 above 100 µs in 31 clusters (30,963/h, 95% CI 14,020–60,127); 4 above 1 ms = one interval (...)",
    then how the rates were made (extrapolated from less than an hour, cluster-aware intervals): one line.

    A level that is the same as another at this interval is one rate with both names (``find_events``)."""
    parts = [f"{rate.count:,} {rate.label}" + (f" in {rate.clusters:,} clusters" if rate.clusters < rate.count
                                                else "")
             + f" ({rate.rate_per_s * 3600:,.0f}/h, 95% CI {rate.ci_low_per_s * 3600:,.0f}–"
               f"{rate.ci_high_per_s * 3600:,.0f})" for rate in events.rates]
    return "; ".join(parts) + f"; {rates_basis(events, short=True)}"


def _when(ctx: ReportContext, events: Events | None, actual_ns: int) -> str:
    if events is None:
        return ""
    text = f"at {(actual_ns - events.first_expected_ns) / 1e9:,.3f} s"
    clock = ctx.dataset.metadata.clock or {}
    if isinstance(clock.get("realtime_ns"), int) and isinstance(clock.get("monotonic_ns"), int):
        wall = actual_ns + clock["realtime_ns"] - clock["monotonic_ns"]
        text += f" ({datetime.fromtimestamp(wall / 1e9, UTC).strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]} UTC)"
    return text


def _event_of(events: Events | None, thread: int, when_ns: int) -> Event | None:
    if events is None:
        return None
    return next((e for e in events.events if thread in e.threads and e.start_ns <= when_ns <= e.end_ns), None)


def _worst_per_cpu(ctx: ReportContext, events: Events) -> Table:
    rows = []
    for item in ctx.summary.threads:
        if not item.spikes.spikes:
            continue
        spike = item.spikes.spikes[0]
        event = _event_of(events, item.thread, spike.actual_ns)
        rows.append((_cpu(item.cpu, item.thread), item.thread, spike.latency_ns / 1000.0,
                     (spike.actual_ns - events.first_expected_ns) / 1e9,
                     _event_where(event) if event is not None else "-",
                     ", ".join(event.cause_kinds) if event is not None else "-"))
    return Table(name="findings-worst", title="Worst wake-up of each CPU",
                 columns=("CPU", "thread", "worst [µs]", "at [s]", "its event", "causes"), rows=tuple(rows),
                 formats=("", "", "{:,.1f}", "{:,.3f}", "", ""), align=("l", "r", "r", "r", "l", "l"),
                 notes=("at: seconds after the first programmed wake-up; its event: the CPUs of the event that "
                        "holds it.",))


def _causes(ctx: ReportContext, events: Events | None) -> Table:
    rows: list[tuple[str, str, str]] = []
    notes = ["Each event counts once, under its first cause (the top causes, the rest as 'other'); an event can "
             "have more causes (the events section lists them). Power-management lines are correlate's verdicts "
             "over all wake-ups."]
    if events is not None and events.events:
        for group in group_causes(events):
            rows.append((group.label, f"{len(group.events):,} of {len(events.events):,} events, largest "
                                      f"{format_us(group.largest.peak_latency_ns)}", group.evidence))
        split = event_split_text(events)
        if split is not None:
            with_split = sum(1 for e in events.events if (e.latency_split or {}).get("source") is not None)
            traced = sum(1 for e in events.events if e.latency_split is not None)
            rows.append(("interrupt vs thread latency", f"{with_split:,} of {traced:,} traced events", split))
        if any("held by" in row[2] for row in rows):
            granted = ctx.dataset.metadata.granted
            notes.append(held_by_meaning(granted.get("policy"), granted.get("priority")))
    spectral = _spectral_lines(ctx)  # first: see SHARED_ORDER
    for verdict in _power_verdicts(ctx):
        rows.append(("power management", "correlate's tests", verdict))
    for line in spectral:
        rows.append(("periodic disturbance", "spectrum", line))
    if not rows and ctx.dataset.is_histogram:
        rows.append(("not available", "-", "histogram-only data keeps no wake-up times: no events, no causes"))
    elif not rows:
        rows.append(("none", "-", "no events and no test found a cause"))
    return Table(name="findings-causes", title="Why: causes and their evidence",
                 columns=("cause", "how many", "evidence"),
                 rows=tuple(rows), formats=("", "", ""), align=("l", "l", "l"), notes=tuple(notes))


def _power_verdicts(ctx: ReportContext) -> list[str]:
    if "power" not in ctx.sections or ctx.dataset.is_histogram:
        return []
    from ...power import correlate_dataset
    try:
        result, _ = ctx.shared("correlation", lambda: correlate_dataset(ctx.dataset))
    except AnalysisError as exc:
        return [f"not computed: {exc}"]
    if not result.available:
        # the reason lists every counter's failure (four lines on a VM): page 1 says what it means, the power
        # section has the details
        head = result.reason.split(";", 1)[0]
        head += ")" if head.count("(") > head.count(")") else ""
        return [f"{head}: no SMI, frequency or idle test (the power section says why)"]
    return _one_claim_line(result.verdicts)


CLAIM_PREFIX = "Claimed vs measured: "


def _one_claim_line(verdicts: Sequence[str]) -> list[str]:
    """correlate's verdicts with its per-CPU claim checks as one line: the first CPU's, naming the others.

    Page 1 has no room for one near-identical sentence per CPU; the power section lists each.
    """
    claims = [v for v in verdicts if v.startswith(CLAIM_PREFIX)]
    if len(claims) < 2:
        return list(verdicts)
    others = [claim.rsplit("(", 1)[-1].rstrip(").") for claim in claims[1:]]
    merged = claims[0].rstrip(".") + f"; {', '.join(others)} disagree too (the power section has each)."
    out: list[str] = []
    for verdict in verdicts:
        if verdict == claims[0]:
            out.append(merged)
        elif verdict not in claims:
            out.append(verdict)
    return out


def _spectral_lines(ctx: ReportContext) -> list[str]:
    """Each periodic disturbance once: its family's fundamental, on the CPUs where it was found.

    Families whose fundamentals lie within two resolution bins on different CPUs are one line; lines present
    through the run come first, a line present only part of it says where (it is no steady periodicity).
    """
    if "spectrum" not in ctx.sections or ctx.dataset.is_histogram:
        return []
    from ...spectrum import MERGE_BINS, analyze_spectra, families_of, presence_text
    try:
        analysis = ctx.shared("spectrum", lambda: analyze_spectra(ctx.dataset))
    except AnalysisError:
        return []
    found: list[tuple[float, float, list[tuple[Any, Any]]]] = []  # fundamental, resolution, (thread, family)
    for thread in analysis.threads:
        for family in families_of(thread.peaks):
            if family.fap >= SPECTRAL_FAP:
                continue
            resolution = family.strongest.resolution_hz
            near = next((e for e in found if abs(e[0] - family.fundamental_hz) <= MERGE_BINS * max(e[1], resolution)),
                        None)
            if near is None:
                found.append((family.fundamental_hz, resolution, [(thread, family)]))
            else:
                near[2].append((thread, family))
    lines = []
    ranked = sorted(found, key=lambda e: (not any(f.through_run for _, f in e[2]),
                                          -max(f.strongest.snr for _, f in e[2])))
    for _, _, hits in ranked[:SPECTRAL_LINES]:
        _, best = max(hits, key=lambda h: h[1].strongest.snr)
        top = best.strongest
        cpus = ", ".join(sorted({_cpu(t.cpu, t.thread) for t, _ in hits}))
        members = len(best.members)
        family = (f"fundamental of {members} harmonically related peaks" if members > 1 else "a single line") + (
            "" if best.has_fundamental or members == 1 else ", itself no peak")
        source = next((p.likely_source for p in best.members if p.harmonic_number == 1 and p.likely_source), None)
        source = f"; likely {source}" if source else ""
        if best.through_run:
            lines.append(f"{best.fundamental_hz:.4g} Hz on {cpus} ({family}; strongest SNR {top.snr:.1f}, "
                         f"{top.method}, FAP {format_p(best.fap)}; present {presence_text(top)}){source}")
        else:
            lines.append(f"{best.fundamental_hz:.4g} Hz on {cpus}, only part of the run: present "
                         f"{presence_text(top)} ({family}); not a steady periodicity{source}")
    return lines
