"""CI gates: ``--fail-if CONDITION`` (repeatable) and ``--junit FILE`` on summary, tails, compare and events.

A condition is parsed when the arguments are (a malformed one is a usage error, exit 2), evaluated on the
command's results, and reported one line per condition on stderr; when any holds the command exits 3.
``--junit`` writes the verdict as JUnit XML (one test case per condition, a ``<failure>`` for each that
holds), which CI systems (GitLab, Jenkins, GitHub test reporters) display.

Conditions (units ns, us or µs, ms, s; a bare number is µs):

- ``max>100us``, ``p99.99>50us``, ``mean>=20us``, ``p50<1us`` — a latency statistic of all threads together
  (``max``, ``min``, ``mean``, ``pNN`` for any percentile the summary gives: p50 p90 p99 p99.9 p99.99 p99.999);
  operators ``>``, ``>=``, ``<``, ``<=``;
- ``events>1ms:0`` — more than 0 latency spike events with a peak above 1 ms (``events>1ms`` means ``:0``);
- ``overruns>0``, ``drops>0`` — missed periods and dropped samples, all threads;
- ``regressed``, ``inconclusive``, ``improved``, ``changed`` (compare only) — some metric of some run has that
  verdict against the baseline (``changed``: improved or regressed).

Like every module here this one imports no numpy or pandas: it is loaded when the parser is built.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..format import format_us as _us
from .options import output_path

EXIT_FAILED = 3
"""Exit status when a --fail-if condition holds (1 is an error, 2 a usage error)."""

UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "": 1e3}
LATENCY_METRICS = ("max", "min", "mean")
COUNT_METRICS = ("overruns", "drops")
VERDICTS = ("regressed", "inconclusive", "improved", "changed")
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
}
_PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)$")
_COMPARISON = re.compile(r"^\s*([a-z][a-z0-9.]*)\s*(>=|<=|>|<)\s*([0-9][0-9_.eE+-]*)\s*([a-zµμ]*)\s*(?::\s*(\d+))?\s*$")
COMMAND_METRICS: dict[str, tuple[str, ...]] = {
    "summary": ("latency", "percentile", "count", "events"),
    "tails": ("latency", "percentile", "events"),
    "events": ("max", "events"),
    "compare": ("verdict", "latency", "percentile"),
}


@dataclass(frozen=True)
class Condition:
    """One parsed ``--fail-if`` condition.

    Attributes
    ----------
    text
        As the user wrote it.
    metric
        ``max``, ``p99.99``, ``events``, ``overruns``, ``regressed``, ...
    operator
        ``>``, ``>=``, ``<``, ``<=``, or None for a verdict.
    limit
        The limit: ns for latencies and event levels, a count for counts; None for a verdict.
    count
        For ``events``: how many events above ``limit`` are allowed.
    """

    text: str
    metric: str
    operator: str | None = None
    limit: float | None = None
    count: int = 0

    @property
    def kind(self) -> str:
        if self.metric in VERDICTS:
            return "verdict"
        if self.metric == "events":
            return "events"
        if self.metric in COUNT_METRICS:
            return "count"
        if _PERCENTILE.match(self.metric):
            return "percentile"
        return "latency"


@dataclass(frozen=True)
class GateResult:
    """A condition and whether it holds (``holds`` True fails the gate), with the one-line reason."""

    condition: Condition
    holds: bool
    reason: str
    undecided: bool = False  # the data could not answer (the gate fails then too)


@dataclass(frozen=True)
class Facts:
    """What a command measured, for the conditions to be evaluated on.

    ``latency_ns``: statistic -> value in ns (None when the data cannot resolve it), keys ``max``, ``min``,
    ``mean``, ``p50`` ...; ``counts``: ``overruns``/``drops``; ``events_above``: count of events with a
    peak above a level (ns), when events were found; ``verdicts``: verdict -> the "run: metric" items that
    have it (compare); ``scope``: what the numbers describe ("all threads", "run B").
    """

    latency_ns: Mapping[str, float | None] = field(default_factory=dict)
    counts: Mapping[str, int | None] = field(default_factory=dict)
    events_above: Callable[[float], int] | None = None
    events_threshold_ns: float | None = None
    verdicts: Mapping[str, Sequence[str]] = field(default_factory=dict)
    scope: str = "all threads"
    latency_above_ns: Mapping[str, float] = field(default_factory=dict)
    """statistic -> a lower bound, for those known only to lie above it (among a histogram's overflows)."""


def parse_condition(text: str, command: str) -> Condition:
    """Parse one ``--fail-if`` value for ``command``.

    Raises
    ------
    argparse.ArgumentTypeError
        The condition is malformed or not one ``command`` can evaluate (argparse makes it exit 2).
    """
    allowed = COMMAND_METRICS[command]
    raw = text.strip()
    if raw in VERDICTS:
        if "verdict" not in allowed:
            raise argparse.ArgumentTypeError(f"{raw!r}: verdicts are only known to 'jitterscope compare'")
        return Condition(text=raw, metric=raw)
    match = _COMPARISON.match(raw)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a condition; write e.g. 'max>100us', 'p99.99>50us', 'events>1ms:0'"
            + (", 'regressed'" if "verdict" in allowed else ""))
    metric, operator, number, unit, count = match.groups()
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {number!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the limit must be a finite number >= 0")
    condition = Condition(text=raw, metric=metric, operator=operator)
    kind = condition.kind
    percentile = _PERCENTILE.match(metric)
    if percentile and not 0 < float(percentile.group(1)) < 100:  # p101 "held" as undecided (exit 3) before
        raise argparse.ArgumentTypeError(f"{text!r}: {metric!r} is no percentile; pNN takes 0 < NN < 100 "
                                         "(min and max are the ends)")
    if kind == "latency" and metric not in LATENCY_METRICS:
        known = ", ".join([*LATENCY_METRICS, "pNN", *COUNT_METRICS, "events"])
        raise argparse.ArgumentTypeError(f"{text!r}: unknown statistic {metric!r} (known: {known})")
    if kind not in allowed and not (kind == "latency" and metric in allowed):
        raise argparse.ArgumentTypeError(f"{text!r}: 'jitterscope {command}' cannot evaluate {metric!r}; "
                                         f"it knows {', '.join(_describe(allowed))}")
    if count is not None and kind != "events":
        raise argparse.ArgumentTypeError(f"{text!r}: ':N' (events allowed) belongs to events conditions only")
    if kind == "count":
        if unit:
            raise argparse.ArgumentTypeError(f"{text!r}: {metric} is a count, it takes no unit")
        return Condition(text=raw, metric=metric, operator=operator, limit=value)
    if unit not in UNITS_NS:
        raise argparse.ArgumentTypeError(f"{text!r}: unknown unit {unit!r} (use ns, us, ms or s)")
    if kind == "events":
        if operator not in (">", ">="):
            raise argparse.ArgumentTypeError(f"{text!r}: write events>LEVEL:N (more than N events above LEVEL)")
        return Condition(text=raw, metric=metric, operator=operator, limit=value * UNITS_NS[unit],
                         count=int(count or 0))
    return Condition(text=raw, metric=metric, operator=operator, limit=value * UNITS_NS[unit])


def _describe(allowed: Sequence[str]) -> list[str]:
    words = {"latency": "max/min/mean", "percentile": "pNN", "count": "overruns/drops", "events": "events>LEVEL:N",
             "verdict": "regressed/inconclusive/improved/changed", "max": "max"}
    return [words[a] for a in allowed]


def add_gate_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """Add ``--fail-if`` and ``--junit`` to a subcommand's parser."""
    parser.add_argument(
        "--fail-if", action="append", default=[], metavar="CONDITION", dest="fail_if",
        type=lambda text: parse_condition(text, command),
        help="exit with status 3 when CONDITION holds, e.g. 'max>100us', 'p99.99>50us', 'events>1ms:0'"
             + (", 'regressed'" if command == "compare" else "") + "; repeatable; one line per condition on stderr",
    )
    parser.add_argument("--junit", type=output_path, metavar="FILE",
                        help="write the --fail-if verdicts as JUnit XML to FILE (for CI test reports)")


def wants_events(conditions: Sequence[Condition]) -> bool:
    """Whether any condition needs the events (a second pass over the dataset for summary and tails)."""
    return any(c.kind == "events" for c in conditions)


def evaluate(conditions: Sequence[Condition], facts: Facts) -> tuple[GateResult, ...]:
    """Evaluate every condition on ``facts``; a condition the data cannot answer holds (fails the gate)."""
    return tuple(_evaluate(c, facts) for c in conditions)


def _evaluate(condition: Condition, facts: Facts) -> GateResult:
    kind = condition.kind
    label = f"fail-if {condition.text}"
    if kind == "verdict":
        if condition.metric == "changed":
            items = [*facts.verdicts.get("regressed", ()), *facts.verdicts.get("improved", ())]
        else:
            items = list(facts.verdicts.get(condition.metric, ()))
        if items:
            shown = ", ".join(items[:4]) + (f" and {len(items) - 4} more" if len(items) > 4 else "")
            return GateResult(condition, True, f"FAILED {label}: {shown}")
        return GateResult(condition, False, f"passed {label}: no metric of any run is {condition.metric}")
    assert condition.operator is not None and condition.limit is not None
    compare = OPERATORS[condition.operator]
    if kind == "events":
        if facts.events_above is None:
            return GateResult(condition, True, f"FAILED {label}: no events were found to count", undecided=True)
        threshold = facts.events_threshold_ns
        if threshold is not None and condition.limit < threshold:
            return GateResult(condition, True, f"FAILED {label}: cannot tell, events are detected above "
                              f"{_us(threshold)}, more than the level {_us(condition.limit)}; give --threshold",
                              undecided=True)
        level = condition.limit if condition.operator == ">" else math.nextafter(condition.limit, -math.inf)
        n = facts.events_above(level)
        holds = n > condition.count
        verb = "FAILED" if holds else "passed"
        cmp = ">" if holds else "≤"
        return GateResult(condition, holds, f"{verb} {label}: {n} events with a peak above {_us(condition.limit)} "
                                            f"({facts.scope}) {cmp} {condition.count} allowed")
    if kind == "count":
        value = facts.counts.get(condition.metric)
        if value is None:
            return GateResult(condition, True, f"FAILED {label}: {condition.metric} not recorded", undecided=True)
        holds = compare(value, condition.limit)
        verb = "FAILED" if holds else "passed"
        return GateResult(condition, holds, f"{verb} {label}: {condition.metric} = {value:,} ({facts.scope})")
    value = facts.latency_ns.get(condition.metric)
    bound = facts.latency_above_ns.get(condition.metric)
    if value is None and bound is not None:
        # only "above bound" is known: that decides "> limit" and "< limit" when the limit is not above it
        if condition.operator in (">", ">=") and bound >= condition.limit:
            return GateResult(condition, True, f"FAILED {label}: {condition.metric} > {_us(bound)} (among the "
                                               f"histogram's overflows; {facts.scope}), limit {_us(condition.limit)}")
        if condition.operator in ("<", "<=") and bound >= condition.limit:
            return GateResult(condition, False, f"passed {label}: {condition.metric} > {_us(bound)} (among the "
                                                f"histogram's overflows; {facts.scope}), limit {_us(condition.limit)}")
    if value is None or not math.isfinite(value):
        return GateResult(condition, True, f"FAILED {label}: cannot tell, {condition.metric} is not resolved by "
                                           f"the data ({facts.scope})", undecided=True)
    holds = compare(value, condition.limit)
    verb = "FAILED" if holds else "passed"
    return GateResult(condition, holds, f"{verb} {label}: {condition.metric} = {_us(value)} ({facts.scope}), "
                                        f"limit {_us(condition.limit)}")


def report(results: Sequence[GateResult], command: str, junit: str | None) -> int:
    """Print one line per condition on stderr, write ``junit`` if asked; return 3 if any condition holds."""
    for result in results:
        print(f"jitterscope {command}: {result.reason}", file=sys.stderr)
    if junit:
        write_junit(results, junit, command)
    return EXIT_FAILED if any(r.holds for r in results) else 0


def write_junit(results: Sequence[GateResult], path: str, command: str) -> Path:
    """Write the verdicts as a JUnit XML file: one ``<testcase>`` per condition.

    Raises
    ------
    JitterscopeError
        The file cannot be written.
    """
    import xml.etree.ElementTree as ET

    from ..errors import JitterscopeError

    failures = sum(1 for r in results if r.holds and not r.undecided)
    errors = sum(1 for r in results if r.undecided)
    suites = ET.Element("testsuites", name=f"jitterscope {command}", tests=str(len(results)),
                        failures=str(failures), errors=str(errors))
    suite = ET.SubElement(suites, "testsuite", name=f"jitterscope {command} --fail-if", tests=str(len(results)),
                          failures=str(failures), errors=str(errors), skipped="0")
    for result in results:
        case = ET.SubElement(suite, "testcase", name=result.condition.text, classname=f"jitterscope.{command}")
        if result.undecided:
            ET.SubElement(case, "error", message=result.reason, type="undecided").text = result.reason
        elif result.holds:
            ET.SubElement(case, "failure", message=result.reason, type="fail-if").text = result.reason
        else:
            ET.SubElement(case, "system-out").text = result.reason
    out = Path(path)
    try:
        ET.ElementTree(suites).write(out, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise JitterscopeError(f"{out}: cannot write the JUnit file ({exc.strerror})") from None
    return out


def summary_facts(summary: object, events: object | None = None, scope: str = "all threads") -> Facts:
    """Facts from a :class:`jitterscope.summary.Summary` (its overall row) and, if found, the events."""
    overall = summary.overall  # type: ignore[attr-defined]
    latency: dict[str, float | None] = {"max": overall.max_ns, "min": overall.min_ns, "mean": overall.mean_ns}
    # as in the summary table: a percentile the sample cannot resolve (n·(1 − q) < 1) is unknown, not its max
    latency.update({f"p{key}": value if overall.n * (1 - float(key) / 100) >= 1 else None
                    for key, value in overall.percentiles.items()})
    counts = {"overruns": overall.overruns, "drops": overall.drops}
    above = {f"p{key}": bound for key, bound in getattr(overall, "percentiles_above", {}).items()}
    return Facts(latency_ns=latency, counts=counts, scope=scope, latency_above_ns=above, **_event_facts(events))


def _event_facts(events: object | None) -> dict[str, object]:
    if events is None:
        return {}
    return {"events_above": events.count_above,  # type: ignore[attr-defined]
            "events_threshold_ns": events.threshold_ns}  # type: ignore[attr-defined]


def events_facts(events: object) -> Facts:
    """Facts from :class:`jitterscope.events.Events`: ``max`` is the largest peak, and the counts above levels."""
    worst = events.worst(1)  # type: ignore[attr-defined]
    return Facts(latency_ns={"max": worst[0].peak_latency_ns if worst else None}, scope="all threads",
                 **_event_facts(events))


def compare_facts(comparison: object) -> Facts:
    """Facts from a :class:`jitterscope.compare.Comparison` (verdicts of every pair) or a ``GroupComparison`` (of
    the two groups): latencies of the worst candidate run."""
    verdicts: dict[str, list[str]] = {}
    if not hasattr(comparison, "pairs"):  # a group comparison (compare A1 A2 -- B1 B2): one verdict per metric
        c = comparison
        for metric in c.metrics:  # type: ignore[attr-defined]
            verdicts.setdefault(metric.verdict, []).append(
                f"{c.candidate_label} ({len(c.candidate)} runs) {metric.metric} {metric.verdict} "  # type: ignore
                f"against {c.baseline_label} ({len(c.baseline)} runs)")  # type: ignore[attr-defined]
        candidates = c.candidate  # type: ignore[attr-defined]
    else:
        for pair in comparison.pairs:  # type: ignore[attr-defined]
            for metric in pair.metrics:
                verdicts.setdefault(metric.verdict, []).append(f"{pair.candidate} {metric.metric} {metric.verdict} "
                                                               f"against {pair.baseline}")
        candidates = comparison.runs[1:]  # type: ignore[attr-defined]
    latency: dict[str, float | None] = {}
    for run in candidates:
        values = {"max": run.max_ns, **dict(run.metrics_ns)}
        for name, value in values.items():
            if value is not None and (latency.get(name) is None or value > latency[name]):  # type: ignore[operator]
                latency[name] = float(value)
    scope = "the worst of the runs compared to the baseline"
    return Facts(latency_ns=latency, verdicts=verdicts, scope=scope)


def poll_compare_facts(comparison: object) -> Facts:
    """Facts from a :class:`jitterscope.poll.PollComparison`: every CPU's verdicts; ``max`` the largest
    interruption of the candidate runs."""
    verdicts: dict[str, list[str]] = {}
    for pair in comparison.pairs:  # type: ignore[attr-defined]
        for change in pair.changes:
            verdicts.setdefault(change.verdict, []).append(f"{pair.candidate} {change.name} {change.verdict} "
                                                           f"against {pair.baseline}")
    worst = max((n.max_ns for run in comparison.candidates for n in run.noise), default=None)  # type: ignore
    return Facts(latency_ns={"max": None if worst is None else float(worst)}, verdicts=verdicts,
                 scope="the largest interruption of the runs compared to the baseline")
