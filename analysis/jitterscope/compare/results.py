"""What a comparison returns, shared by the sample and the binned path: result dataclasses, levels, checks.

:mod:`.samples` (runs with per-wake-up samples) and :mod:`.binned` (histogram
runs) build the same :class:`Comparison`; the parameter checks, the per-pair
notes and the quantile-change verdict live here so both judge alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AnalysisError
from ..format import format_change, format_model_chance, format_us, jsonable
from ..tails import gpd
from .envdiff import EnvironmentDifference
from .episodes import Drift, EpisodeCheck, Exceedances, episode_test
from .pvalues import norm_ppf, poisson_sf

QUANTILE_METRICS: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999))
EXCEEDANCE_LEVELS: tuple[tuple[str, float], ...] = (("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999))
MIN_ABOVE = 10
"""A quantile with fewer wake-ups than this above it (in the smaller run) is judged like the max."""
PLOT_LEVELS = 160
HIST_BINS = 120
ALPHA_MAX = 0.01
TAIL_FIT_TOP = 200
"""The tail a level beyond the bootstrap is judged against: a GPD on this many largest values of the other run."""


@dataclass(frozen=True)
class RunSummary:
    """One run: its size, bootstrap set-up and plot-ready distribution (the figures compute nothing)."""

    label: str
    path: str
    kind: str
    n: int
    threads: int
    cpus: tuple[int, ...]
    intervals_ns: tuple[int, ...]
    wakeups_per_s: float
    max_ns: float
    metrics_ns: tuple[tuple[str, float], ...]
    """p50, p99, p99.9, p99.99 and max of the run, in ns."""
    block_length: int
    block_reason: str
    resample_length: int
    quantile_levels: tuple[float, ...]
    quantiles_ns: tuple[float, ...]
    hist_edges_ns: tuple[float, ...]
    hist_fraction: tuple[float, ...]
    late_wakeups: int = 0
    """Wake-ups later than one interval (the shortest of the run's threads): stalls and their catch-up."""
    missed_periods: int = 0
    """Overruns the metadata records (periods the timer skipped), summed over threads."""


@dataclass(frozen=True)
class MetricChange:
    """Change of one metric from baseline to candidate, with its interval and verdict."""

    metric: str
    baseline_ns: float
    candidate_ns: float
    difference_ns: float
    ci_low_ns: float | None
    ci_high_ns: float | None
    relative: float
    relative_low: float | None
    relative_high: float | None
    verdict: str
    sentence: str
    episodes: EpisodeCheck | None = None
    """Independent episodes of both runs above the lower of the two values (tail metrics that moved)."""


@dataclass(frozen=True)
class TestResult:
    """A rank or distribution test: statistic, p-value (independence assumed), effect and a sentence."""

    name: str
    statistic: float
    p_value: float
    sentence: str
    bound: float = 0.0
    """Most the statistic can differ from the exact one (grid histograms of a streamed run; 0: exact)."""


@dataclass(frozen=True)
class ExceedanceRatio:
    """How much more often the candidate exceeds a baseline quantile than the baseline does (1 = as often)."""

    level: str
    threshold_ns: float
    baseline_rate: float
    candidate_rate: float
    ratio: float
    ratio_low: float
    ratio_high: float
    baseline_per_s: float
    candidate_per_s: float


@dataclass(frozen=True)
class PairComparison:
    """Candidate run against the baseline run."""

    baseline: str
    candidate: str
    metrics: tuple[MetricChange, ...]
    tests: tuple[TestResult, ...]
    exceedance_ratios: tuple[ExceedanceRatio, ...]
    notes: tuple[str, ...]
    qq_ns: tuple[tuple[float, float], ...]
    """(baseline quantile, candidate quantile) at shared levels, for the QQ plot."""

    def verdict(self, metric: str) -> str:
        return next(m.verdict for m in self.metrics if m.metric == metric)


@dataclass(frozen=True)
class Comparison:
    """Every run against the first: changes, tests, exceedance ratios and what differs in the environment."""

    runs: tuple[RunSummary, ...]
    pairs: tuple[PairComparison, ...]
    environment: tuple[EnvironmentDifference, ...]
    notes: tuple[str, ...]
    noise: float
    confidence: float
    n_boot: int
    method: str
    methods: tuple[tuple[str, str], ...] = ()
    """(what, how): which parts are exact and which are bounded, and the bound."""

    def to_json(self) -> dict[str, Any]:
        from .headline import pair_headline, tail_blind_tests  # text built from this result

        out = jsonable(dataclasses.asdict(self))
        out["headlines"] = [pair_headline(self, i) for i in range(1, len(self.runs))]
        out["warnings"] = [w for i in range(1, len(self.runs)) if (w := tail_blind_tests(self, i))]
        return out


def check_parameters(noise: float, confidence: float, n_boot: int) -> None:
    """The parameter check both compare paths (samples, bins) make."""
    if not 0 < confidence < 1 or noise < 0 or n_boot < 20:
        raise AnalysisError("need 0 < confidence < 1, noise >= 0 and at least 20 bootstrap resamples")


def check_run_size(label: str, wakeups: int) -> None:
    """The least run both compare paths accept: 100 wake-ups."""
    if wakeups < 100:
        raise AnalysisError(f"run {label!r} has {wakeups} wake-ups; compare needs at least 100 per run")


TAIL_EPISODE_METRICS = ("p99", "p99.9", "p99.99", "max")
"""Metrics a one-run-per-side comparison judges by episodes: a change needs more episodes than chance gives."""


def episode_rule(metrics: list[MetricChange], a: Exceedances, n_a: int, b: Exceedances, n_b: int,
                 alpha: float) -> list[MetricChange]:
    """Tail changes that a few independent episodes decide become "inconclusive" (a run is the unit).

    For each tail metric called regressed or improved, the two runs' episodes above the lower of its two
    values (:func:`~.episodes.episode_test`) must differ by more than chance at ``alpha``; otherwise one run
    per side cannot tell a changed tail from a run that happened to catch more stalls.
    """
    out = []
    for m in metrics:
        if m.metric not in TAIL_EPISODE_METRICS or m.verdict not in ("regressed", "improved"):
            out.append(m)
            continue
        check = episode_test(a, n_a, b, n_b, min(m.baseline_ns, m.candidate_ns), alpha)
        if check is None or check.shown:
            out.append(dataclasses.replace(m, episodes=check))
            continue
        sentence = m.sentence.replace(f"{m.metric}: {m.verdict} —", f"{m.metric}: inconclusive —", 1)
        out.append(dataclasses.replace(
            m, verdict="inconclusive", episodes=check,
            sentence=f"{sentence}; but only {check.text()}: too few to tell a changed tail from a run that "
                     "caught more stalls; compare replicates (compare A1 A2 A3 -- B1 B2 B3)"))
    return out


def drift_rule(metrics: list[MetricChange], a: Drift | None, b: Drift | None, noise: float,
               confidence: float) -> list[MetricChange]:
    """Widen the p50 and p99 intervals of one run per side by the runs' drift between segments, and re-judge.

    A drifting run (:class:`~.episodes.Drift`) could have been captured in any of its segments' conditions: on
    the log scale the change's interval is at least ``log(1 + change) ± z sqrt(sd_a^2 + sd_b^2)``, with ``sd``
    the spread of the metric's log across each run's segments (0 for a run that does not drift).
    """
    z = norm_ppf(1 - (1 - confidence) / 2)
    out = []
    for m in metrics:
        sd_a = a.sd(m.metric) if a is not None else 0.0
        sd_b = b.sd(m.metric) if b is not None else 0.0
        spread = float(np.hypot(sd_a, sd_b))
        usable = (m.relative_low is not None and m.relative_high is not None and m.relative > -1
                  and np.isfinite(m.relative_low) and m.relative_low > -1 and np.isfinite(m.relative_high))
        if spread == 0 or not usable:
            out.append(m)
            continue
        centre = np.log1p(m.relative)
        low = min(float(np.log1p(m.relative_low)), centre - z * spread)
        high = max(float(np.log1p(m.relative_high)), centre + z * spread)
        if low == np.log1p(m.relative_low) and high == np.log1p(m.relative_high):
            out.append(m)
            continue
        a_ns = m.baseline_ns
        changed = quantile_change(m.metric, a_ns, m.candidate_ns, min(m.ci_low_ns or 0.0, a_ns * np.expm1(low)),
                                  max(m.ci_high_ns or 0.0, a_ns * np.expm1(high)), m.relative, float(np.expm1(low)),
                                  float(np.expm1(high)), noise, confidence)
        why = (f"; interval widened by the runs' drift: their segments' {m.metric} spread by {sd_a:.0%} and "
               f"{sd_b:.0%} (log sd), so another run could differ that much with nothing changed")
        out.append(dataclasses.replace(changed, sentence=changed.sentence + why, episodes=m.episodes))
    return out


VERDICTS = ("regressed", "improved", "within noise", "inconclusive", "not judged")
"""Every verdict a metric can get.  *within noise*: the whole interval of the relative change lies inside
±noise; *inconclusive*: it reaches both inside and beyond (p99.9 at +4.4 % [−4.2 … +16.0] with a 5 %
threshold is not "within noise", it is not known yet); *not judged*: binned data cannot judge the max."""


def quantile_change(name: str, a: float, b: float, lo: float, hi: float, relative: float, r_lo: float,
                     r_hi: float, noise: float, confidence: float, *, show: Callable[[float], str] = format_us,
                     more: str = "wake-ups") -> MetricChange:
    """The verdict of one metric's change from its interval (the rule in :data:`VERDICTS`) and its sentence.

    ``show`` formats the two values (latencies by default; a poll comparison passes rates and percentages),
    ``more`` names what more of would decide an inconclusive change.
    """
    level = f"{100 * confidence:.4g}%"  # 95%, and 99.64% (not "100%") for a Bonferroni level
    if np.isfinite(r_lo) and r_lo > noise:
        verdict, why = "regressed", f"the whole {level} interval lies above the +{noise:.0%} noise threshold"
    elif np.isfinite(r_hi) and r_hi < -noise:
        verdict, why = "improved", f"the whole {level} interval lies below the -{noise:.0%} noise threshold"
    elif np.isfinite(r_lo) and np.isfinite(r_hi) and -noise <= r_lo and r_hi <= noise:
        verdict, why = "within noise", f"the whole {level} interval lies inside ±{noise:.0%}"
    else:
        verdict, why = "inconclusive", (f"the {level} interval holds both changes inside ±{noise:.0%} and "
                                        f"changes beyond it: more {more} would decide")
    interval = f"[{format_change(r_lo)} … {format_change(r_hi)}]"
    sentence = (f"{name}: {verdict} — {show(a)} → {show(b)} "
                f"({format_change(relative)} {interval}); {why}")
    return MetricChange(name, float(a), float(b), float(b - a), float(lo), float(hi), float(relative),
                        float(r_lo), float(r_hi), verdict, sentence)


def pair_notes(a: RunSummary, b: RunSummary) -> tuple[str, ...]:
    notes = []
    if a.intervals_ns != b.intervals_ns:
        notes.append(f"different wake-up intervals ({_intervals(a)} vs {_intervals(b)}): per-wake-up quantiles "
                     "compared as they are; exceedances are also given per second")
    if len(a.cpus) != len(b.cpus):
        notes.append(f"different numbers of measured CPUs ({len(a.cpus)} vs {len(b.cpus)}): each run's CPUs are "
                     "pooled, so a run with more CPUs has more chances at a large maximum")
    if a.kind != b.kind:
        notes.append(f"different kinds of data ({a.kind} vs {b.kind})")
    return tuple(notes)


def _intervals(run: RunSummary) -> str:
    return "/".join(f"{i / 1000:g} µs" for i in run.intervals_ns)




def run_notes(runs: tuple[RunSummary, ...]) -> tuple[str, ...]:
    """Block length and m-out-of-n notes of each run, and how threads are pooled."""
    notes = []
    for run in runs:
        notes.append(f"{run.label}: block length {run.block_length} ({run.block_reason})")
        if run.resample_length < run.n:
            notes.append(f"{run.label}: {run.n} wake-ups, bootstrapped m-out-of-n with m = {run.resample_length} "
                         "and the spread scaled by sqrt(m/n)")
    notes.append("threads of each run are pooled; quantiles are per wake-up")
    return tuple(notes)


def largest(values: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` largest values (all, if fewer), ascending."""
    values = np.asarray(values)
    if values.size > count:
        values = np.partition(values, values.size - count)[values.size - count:]
    return np.sort(values)


def tail_change(name: str, top_base: np.ndarray, n_base: int, top_cand: np.ndarray, n_cand: int, a: float, b: float,
                noise: float, why_no_interval: str, *, what: str = "wake-ups",
                show: Callable[[float], str] = format_us) -> MetricChange:
    """Change of a level too extreme for the bootstrap (the max, or a quantile with few wake-ups above it).

    ``top_base``/``top_cand``: each run's largest values, ascending (at least ``TAIL_FIT_TOP + 1`` of them, or
    all); ``n_base``/``n_cand``: the runs' sizes.  Regressed when ``b`` is more than ``noise`` above ``a`` and the
    baseline's fitted tail makes it implausible (chance < ALPHA_MAX, from the upper confidence bound of the tail)
    that as many of the candidate's wake-ups as did reach ``b``; improved symmetrically with the candidate's tail.
    ``what`` names the values (a poll comparison judges the largest interruptions), ``show`` formats them.
    """
    relative = b / a - 1 if a > 0 else np.nan
    verdict, why = "within noise", f"the change is inside ±{noise:.0%}"
    if b > a * (1 + noise):
        count = int(np.count_nonzero(top_cand >= b))
        chance = _chance_to_reach(top_base, n_base, b, n_cand, count)
        verdict, why = _tail_verdict("regressed", chance, "baseline", b, n_cand, count, what, show)
    elif b < a * (1 - noise):
        count = int(np.count_nonzero(top_base >= a))
        chance = _chance_to_reach(top_cand, n_cand, a, n_base, count)
        verdict, why = _tail_verdict("improved", chance, "candidate", a, n_base, count, what, show)
    sentence = (f"{name}: {verdict} — {show(a)} → {show(b)} "
                f"({format_change(relative)}; {why_no_interval}); {why}")
    return MetricChange(name, float(a), float(b), float(b - a), None, None, float(relative), None, None, verdict,
                        sentence)


def _chance_to_reach(top: np.ndarray, n: int, level: float, wakeups: int, count: int) -> float | None:
    """Upper confidence bound of P(at least ``count`` of ``wakeups`` draws from a run's tail exceed ``level``).

    The tail is a GPD fitted to the :data:`TAIL_FIT_TOP` largest values (``top``, ascending, of a run of ``n``):
    a high threshold, whose model bias is small and whose interval is wide, so the rule errs towards
    "within noise".
    """
    k = min(TAIL_FIT_TOP, n // 5)
    if k < 50:
        return None
    u = float(top[top.size - k - 1])
    y = top[top > u].astype(float) - u
    if level <= u:
        return 1.0
    if y.size < 10:
        return None
    _, _, upper = gpd.exceedance_ci(y, y.size, n, level - u, level=1 - 2 * ALPHA_MAX)
    return poisson_sf(count - 1, wakeups * min(upper, 1.0))


def _tail_verdict(direction: str, chance: float | None, tail_of: str, level: float, wakeups: int,
                  count: int, what: str = "wake-ups", show: Callable[[float], str] = format_us) -> tuple[str, str]:
    # a change beyond the noise threshold that chance could explain is not known to be noise: inconclusive
    if chance is None:
        return "inconclusive", f"too few {what} to fit the {tail_of}'s tail, so this level cannot be judged"
    reach = f"{count} of {wakeups} {what} reach" if count > 1 else f"any of {wakeups} {what} reaches"
    text = (f"the {tail_of}'s fitted tail gives a chance of at most {format_model_chance(chance)} that {reach} "
            f"{show(level)}")
    if chance < ALPHA_MAX:
        return direction, text
    return "inconclusive", text + " — plausible by chance, but not shown to be noise"
