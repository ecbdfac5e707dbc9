"""Tables and plain text of a fleet (select and format; no statistics here)."""

from __future__ import annotations

from datetime import UTC, datetime

from ..format import format_p, format_us, us_value
from ..poll import format_gap
from ..render import Table, tables_text
from .poll import PollFleet, PollMachineHistory
from .results import Fleet, GroupStats, MachineHistory

US = "{:.2f}"


def start_text(start_ns: int | None) -> str:
    """A capture start time as UTC text (``n/a`` when not recorded)."""
    if start_ns is None:
        return "n/a"
    return datetime.fromtimestamp(start_ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _interval(group: GroupStats, level: str) -> str:
    q = group.quantile(level)
    return f"{us_value(q.low_ns):.2f} … {us_value(q.high_ns):.2f}" + (" (open)" if q.open_above else "")


def ranking_table(fleet: Fleet) -> Table:
    """Groups worst first: p99.99 and max with intervals, runs and wake-ups."""
    rows = tuple(
        (rank, g.value, g.runs, g.hosts, g.n, us_value(g.quantile("p99").value_ns),
         us_value(g.quantile("p99.9").value_ns), us_value(g.quantile("p99.99").value_ns), _interval(g, "p99.99"),
         us_value(g.max_ns))
        for rank, g in enumerate(fleet.groups, start=1))
    return Table(
        name="fleet-ranking", title=f"Groups by {fleet.by}, worst tail first (by p99.99, then max)",
        columns=("rank", fleet.by, "runs", "machines", "wake-ups", "p99 [µs]", "p99.9 [µs]", "p99.99 [µs]",
                 f"p99.99 {fleet.confidence:.0%} CI [µs]", "max [µs]"),
        rows=rows, formats=("{:d}", "", "{:d}", "{:d}", "{:d}", US, US, US, "", US),
        notes=("each group's runs merged: quantiles from the merged HDR histogram, max exact (no interval: it is "
               "the largest wake-up seen, not an estimate)", fleet.notes[1]))


def key_table(fleet: Fleet) -> Table:
    """For each configuration key: its values worst first, with group quantiles, runs and the test."""
    rows = []
    for k in fleet.keys:
        for i, v in enumerate(k.values):
            g = v.stats
            rows.append((k.key if i == 0 else "", v.value, g.runs, g.hosts, g.n,
                         us_value(g.quantile("p99.9").value_ns), us_value(g.quantile("p99.99").value_ns),
                         us_value(g.max_ns), format_p(k.p_holm) if i == 0 else "",
                         ("yes" if k.significant else "no") if i == 0 else ""))
    return Table(
        name="fleet-keys", title="Which configuration keys separate the worst tails from the best",
        columns=("key", "value", "runs", "machines", "wake-ups", "p99.9 [µs]", "p99.99 [µs]", "max [µs]",
                 "test (Holm)", "separates"),
        rows=tuple(rows), formats=("", "", "{:d}", "{:d}", "{:d}", US, US, US, "", ""),
        notes=(fleet.notes[2], "keys most separating first; 'separates' = Holm-corrected p < 0.05"))


def history_table(history: MachineHistory, fleet: Fleet) -> Table:
    """One machine's runs in order with each run's change against the previous one."""
    rows = []
    for p in history.points:
        q = dict(p.quantiles_ns)
        change = "first run" if p.change is None else (
            "REGRESSED: " + ", ".join(p.change.regressed) if p.change.flagged else "no regression")
        rows.append((start_text(p.start_ns), p.path, p.n, us_value(q.get("p99")), us_value(q.get("p99.9")),
                     us_value(q.get("p99.99")), us_value(p.max_ns), change))
    return Table(
        name=f"fleet-history-{history.host}", title=f"{history.host}: runs by {history.ordered_by}",
        columns=("start [UTC]", "dataset", "wake-ups", "p99 [µs]", "p99.9 [µs]", "p99.99 [µs]", "max [µs]",
                 "against the previous run"),
        rows=tuple(rows), formats=("", "", "{:d}", US, US, US, US, ""), notes=(fleet.notes[3],))


def flagged_table(fleet: Fleet) -> Table:
    """Every flagged run: machine, when, which metrics regressed and by how much."""
    rows = []
    for host, p in fleet.flagged:
        assert p.change is not None
        for metric, verdict, relative, low, high in p.change.metrics:
            if verdict == "regressed":
                rows.append((host, start_text(p.start_ns), p.path, metric, 100 * relative,
                             None if low is None else 100 * low, None if high is None else 100 * high))
    return Table(
        name="fleet-regressions", title="Runs flagged: a metric regressed against the machine's previous run",
        columns=("machine", "start [UTC]", "dataset", "metric", "change [%]", "CI low [%]", "CI high [%]"),
        rows=tuple(rows), formats=("", "", "", "", "{:+.1f}", "{:+.1f}", "{:+.1f}"),
        notes=(f"regressed = the whole {fleet.confidence:.0%} interval of the relative change lies above the "
               f"+{fleet.noise:.0%} noise threshold (compare on bins)",) if rows else ("no run regressed",))


def skipped_table(fleet: Fleet | PollFleet) -> Table:
    """Datasets that could not be used, with their one-line reason."""
    return Table(name="fleet-skipped", title=f"Datasets skipped ({len(fleet.skipped)})",
                 columns=("dataset", "reason"), rows=tuple((s.path, s.reason) for s in fleet.skipped),
                 notes=("skipped datasets are left out of every other table",) if fleet.skipped else ())


def summary_lines(fleet: Fleet) -> list[str]:
    """The fleet's answers in sentences: worst group, separating key, flagged runs, skips."""
    worst = fleet.groups[0]
    lines = [f"{fleet.runs} runs, {fleet.wakeups} wake-ups, {len(fleet.histories)} machines; "
             f"{len(fleet.skipped)} dataset(s) skipped.",
             f"Worst {fleet.by}: {worst.value} (p99.99 {format_us(worst.quantile('p99.99').value_ns)}, "
             f"max {format_us(worst.max_ns)}, {worst.runs} runs)."]
    separating = [k for k in fleet.keys if k.significant]
    if separating:
        for k in separating[:3]:
            worst, best = (k.values[i].stats.quantile(fleet.tail_metric).value_ns for i in (0, -1))
            lines.append(f"Key {k.key} separates the tails ({format_p(k.p_holm)}, Holm-corrected): worst value "
                         f"{k.values[0].value} ({fleet.tail_metric} {format_us(worst)}), best "
                         f"{k.values[-1].value} ({format_us(best)}).")
    else:
        lines.append("No configuration key separates the tails at p < 0.05 (Holm): the fleet cannot name one.")
    if fleet.flagged:
        for host, p in fleet.flagged:
            assert p.change is not None
            lines.append(f"Regression: {host} at {start_text(p.start_ns)} ({p.path}): "
                         f"{', '.join(p.change.regressed)} regressed against its previous run.")
    else:
        lines.append("No run regressed against its machine's previous run.")
    return lines


def fleet_tables(fleet: Fleet) -> list[Table]:
    """Every table of the fleet, in report order (histories of flagged machines only; all are in the PDF)."""
    flagged_hosts = {host for host, _ in fleet.flagged}
    return [ranking_table(fleet), key_table(fleet), flagged_table(fleet),
            *(history_table(h, fleet) for h in fleet.histories if h.host in flagged_hosts), skipped_table(fleet)]


def fleet_text(fleet: Fleet) -> str:
    """The terminal output: the answers, then the tables."""
    return "\n".join(summary_lines(fleet)) + "\n\n" + tables_text(fleet_tables(fleet))


def poll_ranking_table(fleet: PollFleet) -> Table:
    """Poll groups worst first: the CPU lost (with its interval over runs), interruptions per CPU-second, max."""
    labels = [label for label, _ in fleet.groups[0].classes_per_second] if fleet.groups else []
    rows = []
    for rank, g in enumerate(fleet.groups, start=1):
        ci = "n/a" if g.lost_percent_ci is None else f"{g.lost_percent_ci[0]:.3g} … {g.lost_percent_ci[1]:.3g}"
        rows.append((rank, g.value, g.runs, g.hosts, g.cpu_seconds, g.lost_percent, ci, g.per_second,
                     *(rate for _, rate in g.classes_per_second), format_gap(g.max_ns)))
    return Table(
        name="fleet-poll-ranking", title=f"Groups by {fleet.by}, most CPU lost to interruptions first (then max)",
        columns=("rank", fleet.by, "runs", "machines", "CPU-s polled", "CPU lost [%]",
                 f"{fleet.confidence:.0%} CI [%]", "interruptions/s", *(f"{label} [/s]" for label in labels), "max"),
        rows=tuple(rows),
        formats=("{:d}", "", "{:d}", "{:d}", "{:,.0f}", "{:.3g}", "", "{:,.4g}", *("{:,.4g}",) * len(labels), ""),
        notes=fleet.notes[:2])


def poll_history_table(history: PollMachineHistory, fleet: PollFleet) -> Table:
    """One machine's poll runs in order, each against the previous one."""
    rows = []
    for point in history.points:
        change = point.change
        verdict = "first run" if change is None and point is history.points[0] else (
            "not compared" if change is None else ("REGRESSED: " + ", ".join(change.regressed) if change.flagged
                                                   else "no regression"))
        rows.append((point.path, start_text(point.start_ns), point.interruptions, point.lost_percent,
                     format_gap(point.max_ns), verdict))
    return Table(name=f"fleet-poll-history-{history.host}",
                 title=f"Machine {history.host}: runs by {history.ordered_by}",
                 columns=("run", "start (UTC)", "interruptions", "CPU lost [%]", "max", "against the previous run"),
                 rows=tuple(rows), formats=("", "", "{:d}", "{:.3g}", "", ""), notes=(fleet.notes[2],))


def poll_fleet_tables(fleet: PollFleet) -> list[Table]:
    """All tables of a poll fleet: the ranking, each machine's history, the skipped datasets."""
    skipped = [skipped_table(fleet)] if fleet.skipped else []
    return [poll_ranking_table(fleet), *(poll_history_table(h, fleet) for h in fleet.histories), *skipped]


def poll_fleet_text(fleet: PollFleet) -> str:
    """A poll fleet for the terminal: the answers, then the tables."""
    return "\n".join(poll_fleet_lines(fleet)) + "\n\n" + tables_text(poll_fleet_tables(fleet))


def poll_fleet_lines(fleet: PollFleet) -> list[str]:
    """A poll fleet's answers in sentences: the group losing most CPU, the flagged runs."""
    worst = fleet.groups[0]
    flagged = [(h.host, p.path) for h in fleet.histories for p in h.flagged]
    lines = [f"{fleet.runs} busy-poll runs (interruptions >= {fleet.threshold_ns[0] / 1000:g} µs), grouped by "
             f"{fleet.by}: {len(fleet.groups)} group(s)",
             f"most CPU lost: {fleet.by} {worst.value}, {worst.lost_percent:.3g} % over {worst.runs} run(s); worst "
             f"interruption {format_gap(worst.max_ns)} ({worst.max_path})",
             (f"{len(flagged)} run(s) regressed against the machine's previous run: "
              + ", ".join(f"{host} {path}" for host, path in flagged[:5])) if flagged else
             "no run regressed against its machine's previous run"]
    lines += list(fleet.notes[3:])
    return lines
