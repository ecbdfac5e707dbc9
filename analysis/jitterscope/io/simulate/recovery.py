"""Planted versus recovered: each effect a simulation planted, against what the analyses found.

A simulated dataset's metadata holds the planted truth (``ground_truth``, written by the effects of
:mod:`.effects`).  :func:`planted_recovery` sets every planted effect beside the results the report already
computes — the events (:func:`jitterscope.events.find_events`), correlate's tests
(:func:`jitterscope.power.correlate_dataset`), the spectra (:func:`jitterscope.spectrum.analyze_spectra`) —
and the ``seq`` gaps of the data (:func:`recorded_gaps`, one streaming pass over one column), and gives each
effect a verdict with the tolerance it used.  The results are passed in, never recomputed, so the table costs
no more than the report at any size; an analysis the report did not run (a section left out) leaves the
rows that need it "not checked", saying which.

Verdicts: ``recovered`` (within the tolerance written in the row), ``partly`` (some of it: a share of the
planted events, some of the CPUs), ``missed`` (nothing of it), ``false positive`` (nothing was planted and an
analysis claims an effect: transitions with no coupled latency attributed), ``not checked`` (the analysis it
needs is not available, or the run drew no event of that kind).  An effect kind without a recovery rule
here gets a row saying so, not silence.

Like every compute module this one loads no matplotlib; it imports the analyses' result types only for type
checking (the simulation does not depend on the analyses).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...dataset import Dataset, ThreadInfo, iter_thread_batches
from ...format import format_p, format_percent, format_ratio, format_us, jsonable

if TYPE_CHECKING:
    from ...events import Event, Events
    from ...power import Correlation
    from ...spectrum import SpectralAnalysis

RECOVERED = "recovered"
PARTLY = "partly"
MISSED = "missed"
FALSE_POSITIVE = "false positive"
NOT_CHECKED = "not checked"
VERDICTS = (RECOVERED, PARTLY, MISSED, FALSE_POSITIVE, NOT_CHECKED)

SHARE_RECOVERED = 0.9
"""A planted event list counts as recovered when at least this share of its events is found."""
TRANSITION_WINDOW_INTERVALS = 2
"""A detected frequency transition matches a planted one within this many intervals (f_eff is per interval)."""
LEVEL_TOLERANCE = 0.05
"""A planted P-state level is seen when a detected level is within this fraction of it."""
PEAK_TOLERANCE_BINS = 2.0
"""A spectral peak matches a planted frequency within this many frequency-resolution bins of it."""
SPECTRAL_FAP = 0.01
"""A peak counts as found at a false-alarm probability below this (the findings page's rule)."""
PERIODIC_HARMONICS = 10
"""Harmonics of a planted periodic disturbance (and their aliases) that explain a spectral line."""
NOT_EFFECTS = ("seed", "spec")
"""Ground-truth keys that describe the run, not a planted effect."""


@dataclass(frozen=True)
class PlantedRow:
    """One planted effect: what was planted, what the analyses recovered, the tolerance and the verdict.

    ``values`` holds the numbers behind the two sentences (counts, frequencies, risk ratios), JSON-ready.
    """

    effect: str
    planted: str
    recovered: str
    tolerance: str
    verdict: str
    values: Mapping[str, Any] = field(default_factory=dict)
    planted_effect: bool = True
    """False for a row about something found that nothing planted (spectral lines no effect explains)."""


@dataclass(frozen=True)
class PlantedRecovery:
    """Every planted effect of a simulation and whether the analyses recovered it."""

    rows: tuple[PlantedRow, ...]
    analyses: tuple[str, ...]
    """The analyses whose results were available ("events", "power", "spectrum", "seq gaps")."""
    notes: tuple[str, ...] = ()

    def count(self, verdict: str) -> int:
        """Rows with ``verdict``."""
        return sum(1 for row in self.rows if row.verdict == verdict)

    def verdict_of(self, effect: str) -> str:
        """The verdict of the row named ``effect`` (KeyError when there is none)."""
        for row in self.rows:
            if row.effect == effect:
                return row.verdict
        raise KeyError(effect)

    def tally(self) -> str:
        """"7 recovered, 1 partly, 1 missed of 9 planted effects" (and what was found that nothing planted)."""
        planted = [row for row in self.rows if row.planted_effect]
        parts = [f"{n} {v}" for v in VERDICTS if (n := sum(1 for row in planted if row.verdict == v))]
        text = f"{', '.join(parts)} of {len(planted)} planted effect{'s' if len(planted) != 1 else ''}"
        extra = [row.effect for row in self.rows if not row.planted_effect and row.verdict == FALSE_POSITIVE]
        return text + (f"; false positive: {', '.join(extra)}" if extra else "")

    def to_json(self) -> dict[str, Any]:
        return jsonable(asdict(self))


@dataclass(frozen=True)
class RecordedGaps:
    """``seq`` gaps of one thread in the data: how many gaps, and how many ``seq`` values they miss."""

    thread: int
    gaps: int
    missing: int


def recorded_gaps(dataset: Dataset) -> dict[int, RecordedGaps]:
    """Count each thread's ``seq`` gaps (dropped samples) in one streaming pass over the ``seq`` column."""
    last: dict[int, int] = {}
    gaps: dict[int, list[int]] = {t.thread: [0, 0] for t in dataset.metadata.threads}
    for info, batch in iter_thread_batches(dataset, ["seq"], check=False):
        seq = batch.column("seq").to_numpy()
        if seq.size == 0:
            continue
        previous = last.get(info.thread)
        joined = seq if previous is None else np.concatenate([[previous], seq])
        step = np.diff(joined)
        counts = gaps.setdefault(info.thread, [0, 0])
        counts[0] += int(np.count_nonzero(step > 1))
        counts[1] += int((step[step > 1] - 1).sum())
        last[info.thread] = int(seq[-1])
    return {t: RecordedGaps(thread=t, gaps=g, missing=m) for t, (g, m) in gaps.items()}


def recover_planted(
    dataset: Dataset,
    *,
    events: Events | None = None,
    correlation: Correlation | None = None,
    spectra: SpectralAnalysis | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> PlantedRecovery | None:
    """The planted-versus-recovered rows of a simulated dataset (None for any other dataset).

    Parameters
    ----------
    dataset
        An opened dataset; only a simulation (``ground_truth`` in its metadata) gets rows.
    events, correlation, spectra
        The results the report computed (None: not computed, and the rows that need it say so).
    unavailable
        Why an analysis is missing, by name ("events", "power", "spectrum"), for the rows' text.

    Returns
    -------
    PlantedRecovery or None
    """
    truth = dataset.metadata.ground_truth
    if not truth or dataset.is_histogram:
        return None
    gaps = recorded_gaps(dataset) if "drops" in truth else None
    return planted_recovery(truth, dataset.metadata.threads, events=events, correlation=correlation,
                            spectra=spectra, gaps=gaps, unavailable=unavailable)


def planted_recovery(
    ground_truth: Mapping[str, Any],
    threads: Sequence[ThreadInfo],
    *,
    events: Events | None = None,
    correlation: Correlation | None = None,
    spectra: SpectralAnalysis | None = None,
    gaps: Mapping[int, RecordedGaps] | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> PlantedRecovery:
    """One row per planted effect of ``ground_truth`` against the given results (a pure function).

    See :func:`recover_planted`; ``gaps`` are :func:`recorded_gaps` of the data.
    """
    why = dict(unavailable or {})
    context = _Context(ground_truth=ground_truth, threads=tuple(threads), events=events, correlation=correlation,
                       spectra=spectra, gaps=gaps, why=why)
    rows: list[PlantedRow] = []
    for key, truth in sorted(ground_truth.items(), key=lambda kv: _spec_position(ground_truth, kv[0])):
        if key in NOT_EFFECTS or not isinstance(truth, Mapping):
            continue
        kind = str(truth.get("type") or key.split("[")[0])
        rule = RULES.get(kind)
        if rule is None:
            rows.append(PlantedRow(effect=key, planted=_fields_text(truth), recovered="no recovery analysis for "
                                   f"this effect kind ({kind!r}) yet", tolerance="-", verdict=NOT_CHECKED))
            continue
        rows.extend(rule(key, truth, context))
    if spectra is not None:
        rows.extend(_unplanted_lines(ground_truth, spectra))
    analyses = tuple(name for name, result in (("events", events), ("power", correlation), ("spectrum", spectra),
                                               ("seq gaps", gaps)) if result is not None)
    notes = ("Matched against the report's own results: events, correlate's tests, the spectra, the seq gaps; "
             "a verdict holds only within the tolerance written in its row.",)
    return PlantedRecovery(rows=tuple(rows), analyses=analyses, notes=notes)


def _spec_position(ground_truth: Mapping[str, Any], key: str) -> tuple[int, str]:
    """Where the effect behind ``key`` stands in the spec's effect list (rows follow the spec)."""
    spec = ground_truth.get("spec")
    effects = spec.get("effects") if isinstance(spec, Mapping) else None
    kind, _, rest = key.partition("[")
    if isinstance(effects, list):
        same = [i for i, e in enumerate(effects) if isinstance(e, Mapping) and e.get("type") == kind]
        nth = int(rest.rstrip("]")) if rest.rstrip("]").isdigit() else 0
        if nth < len(same):
            return same[nth], key
    return 1 << 30, key


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


@dataclass
class _Context:
    ground_truth: Mapping[str, Any]
    threads: tuple[ThreadInfo, ...]
    events: Events | None
    correlation: Correlation | None
    spectra: SpectralAnalysis | None
    gaps: Mapping[int, RecordedGaps] | None
    why: dict[str, str]

    _index: _EventIndex | None = None

    @property
    def interval_ns(self) -> int:
        return max((t.interval_ns for t in self.threads), default=0)

    @property
    def index(self) -> _EventIndex:
        """The events as arrays (only when ``events`` is given)."""
        if self._index is None:
            assert self.events is not None
            self._index = _EventIndex.of(self.events.events)
        return self._index

    def cpu_of(self, thread: int) -> int:
        return next((t.cpu for t in self.threads if t.thread == thread), -1)

    def missing(self, analysis: str) -> str:
        return self.why.get(analysis) or f"the {analysis} analysis is not in this report"

    def power_available(self) -> bool:
        return self.correlation is not None and bool(self.correlation.available)

    def power_missing(self) -> str:
        if self.correlation is not None and not self.correlation.available:
            return f"correlate: {self.correlation.reason}"
        return self.missing("power")


# --- helpers -------------------------------------------------------------------------------------------------


def _values(entry: Any) -> tuple[np.ndarray, int, bool]:
    """An event list ``{"count", "values"}`` as (values, count, truncated)."""
    if isinstance(entry, Mapping):
        values = np.asarray(entry.get("values") or [], dtype=np.float64)
        return values, int(entry.get("count", values.size)), bool(entry.get("truncated"))
    values = np.asarray(entry or [], dtype=np.float64)
    return values, int(values.size), False


def _fields_text(truth: Mapping[str, Any]) -> str:
    shown = [f"{k} {v}" for k, v in truth.items() if k != "type" and not isinstance(v, Mapping | list)]
    return ", ".join(shown) or "-"


def _share_verdict(found: int, planted: int) -> str:
    if planted == 0:
        return NOT_CHECKED
    if found >= SHARE_RECOVERED * planted:
        return RECOVERED
    return PARTLY if found else MISSED


def _cut_note(compared: int, count: int, truncated: bool) -> str:
    return f" (the first {compared:,} of {count:,} planted are compared)" if truncated else ""


@dataclass(frozen=True)
class _EventIndex:
    """The events as arrays, built once: spans, and which events hold each thread and each cause kind.

    A million events at 10^8 wake-ups: one Python loop here, numpy masks for every row's question after.
    """

    events: tuple[Event, ...]
    starts: np.ndarray
    ends: np.ndarray
    by_thread: Mapping[int, np.ndarray]
    by_kind: Mapping[str, np.ndarray]

    @classmethod
    def of(cls, events: Sequence[Event]) -> _EventIndex:
        n = len(events)
        by_thread: dict[int, np.ndarray] = {}
        by_kind: dict[str, np.ndarray] = {}
        for position, event in enumerate(events):
            for thread in event.threads:
                mask = by_thread.get(thread)
                if mask is None:
                    mask = by_thread[thread] = np.zeros(n, dtype=bool)
                mask[position] = True
            for cause in event.causes:
                mask = by_kind.get(cause.kind)
                if mask is None:
                    mask = by_kind[cause.kind] = np.zeros(n, dtype=bool)
                mask[position] = True
        return cls(events=tuple(events), starts=np.fromiter((e.start_ns for e in events), np.float64, n),
                   ends=np.fromiter((e.end_ns for e in events), np.float64, n), by_thread=by_thread, by_kind=by_kind)

    def spans(self, thread: int | None = None, kind: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Starts, ends (sorted: events are disjoint in time) and positions of the events of ``thread`` with a
        cause of ``kind`` (None: any)."""
        mask = np.ones(len(self.events), dtype=bool)
        if thread is not None:
            mask &= self.by_thread.get(thread, False)
        if kind is not None:
            mask &= self.by_kind.get(kind, False)
        positions = np.flatnonzero(mask)
        return self.starts[positions], self.ends[positions], positions

    def count(self, kind: str) -> int:
        return int(np.count_nonzero(self.by_kind.get(kind, False)))


def _containing(times: np.ndarray, starts: np.ndarray, ends: np.ndarray, slack_ns: float) -> np.ndarray:
    """For each time, the index of the event whose span ± ``slack_ns`` holds it, else -1."""
    if times.size == 0 or starts.size == 0:
        return np.full(times.size, -1, dtype=np.int64)
    # the last event starting at or before t + slack; it holds t when it ends at or after t - slack
    index = np.searchsorted(starts, times + slack_ns, side="right") - 1
    ok = (index >= 0) & (ends[np.maximum(index, 0)] >= times - slack_ns)
    return np.where(ok, index, -1)


def _pooled_test(correlation: Correlation, condition: str) -> Any | None:
    tests = [t for t in correlation.tests if t.condition == condition]
    pooled = [t for t in tests if t.scope == "all"]
    return (pooled or tests or [None])[0]


def _risk_text(test: Any) -> str:
    if test is None or not test.exceedance:
        return "no test"
    e = test.exceedance[0]
    return (f"risk ratio {format_ratio(e.risk.ratio)} (95 % CI {format_ratio(e.risk.ci_low)}–"
            f"{format_ratio(e.risk.ci_high)}, "
            f"{format_p(e.p_holm)} Holm) above {format_us(e.threshold_ns)}")


def _risk_values(test: Any) -> dict[str, Any]:
    if test is None or not test.exceedance:
        return {}
    e = test.exceedance[0]
    return {"risk_ratio": e.risk.ratio, "ci_low": e.risk.ci_low, "ci_high": e.risk.ci_high, "p_holm": e.p_holm,
            "threshold_ns": e.threshold_ns}


def _cpus_text(cpus: Iterable[int]) -> str:
    cpus = sorted(set(cpus))
    if not cpus:
        return "no CPU"
    if min(cpus) < 0:
        return "CPU unknown"
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ", ".join(str(c) for c in cpus)


# --- one rule per effect kind ----------------------------------------------------------------------------------


def _periodic(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    freq = float(truth.get("frequency_hz") or 0.0)
    amp = float(truth.get("amplitude_ns") or 0.0)
    wanted = truth.get("threads")
    span = ""
    if truth.get("start_ns") is not None or truth.get("stop_ns") is not None:
        stop = truth.get("stop_ns")
        span = (f", active {(truth.get('start_ns') or 0) / 1e9:g} s to "
                + ("the end" if stop is None else f"{stop / 1e9:g} s"))
    planted = (f"{freq:g} Hz {truth.get('shape', 'spikes')}, amplitude {format_us(amp)}"
               + (f", width {format_us(truth.get('width_ns'))}" if truth.get("shape", "spikes") == "spikes" else "")
               + f" on {'every thread' if wanted is None else 'threads ' + ', '.join(str(t) for t in wanted)}{span}")
    tolerance = (f"a peak with FAP < {SPECTRAL_FAP:g} within {PEAK_TOLERANCE_BINS:g} resolution bins of the "
                 "planted frequency (or of its alias below fs/2)")
    if ctx.spectra is None:
        return [PlantedRow(key, planted, f"not checked: {ctx.missing('spectrum')}", tolerance, NOT_CHECKED)]
    analysed = [t for t in ctx.spectra.threads if wanted is None or t.thread in wanted]
    if not analysed:
        return [PlantedRow(key, planted, "no spectrum of the planted threads (skipped: "
                           + ("; ".join(ctx.spectra.skipped) or "no thread analysed") + ")", tolerance, NOT_CHECKED)]
    found: list[tuple[Any, Any, float]] = []
    for thread in analysed:
        target = _alias(freq, thread.fs_hz)
        # a family whose fundamental is the planted frequency (or its alias) recovers it, harmonics and all;
        # else any significant peak there (a harmonic of some other family, say so)
        close = [p for p in thread.peaks if p.fap < SPECTRAL_FAP and getattr(p, "fundamental_hz", None) is not None
                 and min(abs(p.fundamental_hz - freq), abs(p.fundamental_hz - target)) <= PEAK_TOLERANCE_BINS * max(
                     p.resolution_hz, 1e-12)]
        if not close:
            close = [p for p in thread.peaks if p.fap < SPECTRAL_FAP
                     and abs(p.frequency_hz - target) <= PEAK_TOLERANCE_BINS * max(p.resolution_hz, 1e-12)]
        if close:
            best = min(close, key=lambda p: (p.fap, abs(p.frequency_hz - target)))
            found.append((thread, best, target))
    if not found:
        recovered = f"no peak near {freq:g} Hz in the spectra of {_cpus_text(t.cpu for t in analysed)}"
        return [PlantedRow(key, planted, recovered, tolerance, MISSED, {"threads_analysed": len(analysed),
                                                                         "threads_found": 0})]
    thread, best, target = min(found, key=lambda item: item[1].fap)
    fundamental = getattr(best, "fundamental_hz", None) or best.frequency_hz
    by_family = min(abs(fundamental - freq), abs(fundamental - target)) <= PEAK_TOLERANCE_BINS * max(
        best.resolution_hz, 1e-12)
    shown = fundamental if by_family else best.frequency_hz
    reference = freq if by_family and abs(fundamental - freq) <= abs(fundamental - target) else target
    alias = f" (alias of {freq:g} Hz at fs = {thread.fs_hz:g} Hz)" if abs(reference - freq) > 1e-9 else ""
    members = sum(p.harmonic_group == best.harmonic_group for p in thread.peaks)
    if by_family:
        name = f"a family's fundamental, {members} peaks in the family" if members > 1 else "a single line"
    else:
        name = f"harmonic {best.harmonic_number} of a family of {fundamental:.4g} Hz"
    if best.likely_source:
        name += f"; named {best.likely_source}"
    recovered = (f"{shown:.6g} Hz{alias} on {_cpus_text(t.cpu for t, _, _ in found)} of "
                 f"{len(analysed)} analysed (error {shown - reference:+.3g} Hz, resolution "
                 f"{best.resolution_hz:.2g} Hz, {best.method}, SNR {best.snr:.1f}, FAP {format_p(best.fap)[2:]}; "
                 f"{name})")
    verdict = RECOVERED if len(found) == len(analysed) else PARTLY
    return [PlantedRow(key, planted, recovered, tolerance, verdict, {
        "frequency_hz": freq, "found_hz": shown, "error_hz": shown - reference,
        "resolution_hz": best.resolution_hz, "fap": best.fap, "threads_analysed": len(analysed),
        "threads_found": len(found), "family_peaks": members, "fundamental_hz": fundamental})]


def _alias(freq: float, fs_hz: float) -> float:
    """Where a line at ``freq`` shows in a spectrum sampled at ``fs_hz`` (folded into [0, fs/2])."""
    if fs_hz <= 0:
        return freq
    folded = freq % fs_hz
    return min(folded, fs_hz - folded)


def _unplanted_lines(ground_truth: Mapping[str, Any], spectra: SpectralAnalysis) -> list[PlantedRow]:
    """Significant spectral lines that no planted effect explains: a false positive of the spectra.

    A line is explained when it is a planted periodic frequency or a harmonic of one (aliases folded), or a
    harmonic of the cycle of stepped P-states (coupled transitions repeat with it).
    """
    # (base frequency, harmonics counted, folded at fs/2): a disturbance's first harmonics and their aliases; the
    # step cycle's harmonics below fs/2 (a square-ish comb; folding a 1 Hz comb would explain every line)
    bases = [(float(t.get("frequency_hz") or 0), PERIODIC_HARMONICS, True) for k, t in ground_truth.items()
             if k.startswith("periodic") and isinstance(t, Mapping)]
    pstates = ground_truth.get("pstates")
    if isinstance(pstates, Mapping) and pstates.get("process", "steps") == "steps" and pstates.get("dwell_ns"):
        bases.append((1e9 / float(sum(pstates["dwell_ns"])), None, False))
    unexplained: dict[float, list[int]] = {}
    for thread in spectra.threads:
        families: dict[int, list[Any]] = {}
        for peak in thread.peaks:
            families.setdefault(peak.harmonic_group, []).append(peak)
        for members in families.values():
            if min(p.fap for p in members) >= SPECTRAL_FAP:
                continue
            # a family is one disturbance: its fundamental (which need not be a peak) is what is judged
            first = min(members, key=lambda p: p.harmonic_number)
            fundamental = getattr(first, "fundamental_hz", None) or first.frequency_hz
            tolerance = PEAK_TOLERANCE_BINS * max(first.resolution_hz, 1e-12)
            if not any(_is_harmonic(fundamental, base, thread.fs_hz, tolerance, most, fold)
                       for base, most, fold in bases if base > 0):
                unexplained.setdefault(round(fundamental, 2), []).append(thread.cpu)
    if not unexplained:
        return []
    lines = "; ".join(f"{freq:g} Hz on {_cpus_text(cpus)}" for freq, cpus in sorted(unexplained.items()))
    return [PlantedRow("spectrum: lines not planted", "nothing at these frequencies",
                       f"significant spectral lines (FAP < {SPECTRAL_FAP:g}): {lines}",
                       f"a line within {PEAK_TOLERANCE_BINS:g} resolution bins of a planted frequency, a harmonic of "
                       "one, or a harmonic of the P-state step cycle is explained", FALSE_POSITIVE,
                       {"lines_hz": sorted(unexplained)}, planted_effect=False)]


def _is_harmonic(freq: float, base: float, fs_hz: float, tolerance: float, most: int | None, fold: bool) -> bool:
    """Whether ``freq`` is within ``tolerance`` of a harmonic ``k × base`` (k ≤ ``most``; None: all below fs/2),
    or with ``fold`` of its alias below fs/2."""
    nyquist = fs_hz / 2 if fs_hz > 0 else math.inf
    count = most if most is not None else int(min(nyquist / base, 100_000))
    harmonics = base * np.arange(1, max(count, 1) + 1)
    if fold and fs_hz > 0:
        folded = harmonics % fs_hz
        harmonics = np.minimum(folded, fs_hz - folded)
    return bool(np.any(np.abs(harmonics - freq) <= tolerance))


def _pstates(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    levels = [float(v) for v in truth.get("levels_mhz") or ()]
    cpus_truth: Mapping[str, Any] = truth.get("cpus") or {}
    planted_counts = {int(c): _values(v.get("transition_ns")) for c, v in cpus_truth.items()}
    total = sum(count for _, count, _ in planted_counts.values())
    process = truth.get("process", "steps")
    dwell = (", dwell " + "/".join(f"{d / 1e6:g}" for d in truth.get("dwell_ns") or ()) + " ms"
             if process == "steps" else f", mean dwell {float(truth.get('mean_dwell_ns') or 0) / 1e6:g} ms")
    planted = (f"{process} between {', '.join(f'{v:g}' for v in levels)} MHz{dwell}: {total:,} transitions on "
               f"{_cpus_text(planted_counts)}")
    window = TRANSITION_WINDOW_INTERVALS
    tolerance = (f"a detected transition within ±{window} intervals of a planted one (≥ {SHARE_RECOVERED:.0%} found, "
                 f"≤ {1 - SHARE_RECOVERED:.0%} extra); levels within ±{LEVEL_TOLERANCE:.0%}")
    rows = []
    if not ctx.power_available() or ctx.correlation.frequency is None:
        reason = ctx.power_missing() if not ctx.power_available() else "correlate found no f_eff series"
        rows.append(PlantedRow(f"{key}: transitions", planted, f"not checked: {reason}", tolerance, NOT_CHECKED))
    else:
        matched = extra = compared = 0
        seen_levels: set[float] = set()
        cut = False
        by_cpu = {detected.cpu: detected for detected in ctx.correlation.frequency.transitions}
        for cpu, (times, _, truncated) in planted_counts.items():
            detected = by_cpu.get(cpu)
            cut |= truncated
            if detected is None:  # no f_eff series for this CPU: its planted transitions count as not found
                compared += times.size
                continue
            found = np.asarray(detected.time_ns, dtype=np.float64)
            if truncated and times.size:
                found = found[found <= times[-1] + window * ctx.interval_ns]
            compared += times.size
            matched += int(np.count_nonzero(_nearest_gap(times, found) <= window * ctx.interval_ns))
            extra += int(np.count_nonzero(_nearest_gap(found, times) > window * ctx.interval_ns))
            seen_levels.update(level.level_hz / 1e6 for level in detected.levels)
        levels_seen = [v for v in levels if any(abs(s - v) <= LEVEL_TOLERANCE * v for s in seen_levels)]
        ok = compared and matched >= SHARE_RECOVERED * compared and extra <= (1 - SHARE_RECOVERED) * compared
        verdict = (RECOVERED if ok and len(levels_seen) == len(levels) else
                   PARTLY if matched else MISSED if compared else NOT_CHECKED)
        recovered = (f"{matched:,} of {compared:,} planted transitions detected from f_eff, {extra:,} extra; levels "
                     f"seen: {', '.join(f'{v:,.0f}' for v in sorted(_cluster(seen_levels))) or 'none'} MHz"
                     + _cut_note(compared, total, cut))
        rows.append(PlantedRow(f"{key}: transitions", planted, recovered, tolerance, verdict,
                               {"planted": total, "compared": compared, "matched": matched, "extra": extra,
                                "levels_mhz": levels, "levels_seen_mhz": sorted(_cluster(seen_levels))}))
    rows.append(_coupling(key, truth, cpus_truth, ctx))
    return rows


def _nearest_gap(times: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Distance from each of ``times`` to the nearest of ``others`` (sorted); inf when there is none."""
    if others.size == 0:
        return np.full(times.size, np.inf)
    others = np.sort(others)
    index = np.clip(np.searchsorted(others, times), 1, max(others.size - 1, 1))
    left = np.abs(times - others[index - 1])
    right = np.abs(others[np.minimum(index, others.size - 1)] - times)
    return np.minimum(left, right)


def _cluster(levels: Iterable[float]) -> list[float]:
    """Detected levels within the level tolerance of each other, as one (their mean)."""
    out: list[list[float]] = []
    for value in sorted(levels):
        if out and value - out[-1][0] <= LEVEL_TOLERANCE * out[-1][0]:
            out[-1].append(value)
        else:
            out.append([value])
    return [float(np.mean(group)) for group in out]


def _coupling(key: str, truth: Mapping[str, Any], cpus_truth: Mapping[str, Any], ctx: _Context) -> PlantedRow:
    probability = float(truth.get("coupling_probability") or 0.0)
    amplitude = float(truth.get("coupling_amplitude_ns") or 0.0)
    coupled = sum(int(_values(v.get("coupled"))[0].sum()) for v in cpus_truth.values())
    planted_any = probability > 0 and amplitude > 0
    window = int(truth.get("coupling_window") or 0)
    where = "the first wake-up after each" if window == 0 else f"the wake-ups within ±{window} of the first after each"
    planted = (f"{coupled:,} coupled transitions (probability {probability:g}) add {format_us(amplitude)} to "
               f"{where}" if planted_any else
               "no latency coupled to the transitions (a planted null)")
    tolerance = "correlate attributes latency to transitions (Holm-adjusted Fisher p < its alpha, risk ratio > 1)"
    if not ctx.power_available():
        return PlantedRow(f"{key}: coupling", planted, f"not checked: {ctx.power_missing()}", tolerance, NOT_CHECKED)
    from_correlate = ctx.correlation.attributed.get("transition", False)
    test = _pooled_test(ctx.correlation, "transition")
    events = ""
    if ctx.events is not None:
        n = ctx.index.count("frequency transition")
        events = f"; {n:,} events name a frequency transition"
    recovered = ("attributed: " if from_correlate else "not attributed: ") + _risk_text(test) + events
    if planted_any:
        verdict = RECOVERED if from_correlate else MISSED
    else:
        verdict = FALSE_POSITIVE if from_correlate else RECOVERED
    return PlantedRow(f"{key}: coupling", planted, recovered, tolerance, verdict,
                      {"coupled": coupled, "attributed": bool(from_correlate), **_risk_values(test)})


def _smi_rows(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    times, count, truncated = _values(truth.get("times_ns"))
    if truth.get("type") == "transition_smis" or key == "transition_smis":
        planted = (f"{count:,} SMIs at {float(truth.get('probability') or 0):.0%} of the frequency transitions, "
                   f"{float(truth.get('delay_ns') or 0) / 1e3:g} µs after them")
        smi_truth = ctx.ground_truth.get("smi")
        duration = float(smi_truth.get("duration_ns") or 0) if isinstance(smi_truth, Mapping) else 0.0
        if not duration:
            planted += " (no smi effect: they only count in the smi column, they add no latency)"
    else:
        duration = float(truth.get("duration_ns") or 0)
        planted = (f"{count:,} SMIs (Poisson {float(truth.get('rate_hz') or 0):g}/s), each stopping every CPU for "
                   f"{format_us(duration)}")
    slack = ctx.interval_ns
    tolerance = (f"an event with cause SMI within ±1 interval ({format_us(slack)}) of each planted SMI that "
                 f"delayed a wake-up past the events' threshold (≥ {SHARE_RECOVERED:.0%} found); correlate "
                 "attributes latency to SMIs")
    if count == 0:
        return [PlantedRow(key, planted, "nothing to recover: the run drew no SMI", tolerance, NOT_CHECKED)]
    parts: list[str] = []
    values: dict[str, Any] = {"planted": count, "compared": int(times.size)}
    found = None
    if ctx.events is not None:
        starts, ends, chosen = ctx.index.spans(kind="smi")
        which = _containing(times, starts, ends, slack)
        found = int(np.count_nonzero(which >= 0))
        hit = {int(i) for i in which[which >= 0]}
        cpus = sorted({c for i in hit for c in ctx.index.events[chosen[i]].cpus})
        smi_events = len(chosen)
        # an SMI that ends before the next wake-up is due, or delays it by less than the threshold, leaves no
        # late wake-up: no latency analysis can find it, so the verdict counts only those that could be found
        visible = _delays_a_wakeup(times, duration, ctx) > ctx.events.threshold_ns
        seen = int(np.count_nonzero((which >= 0) & visible))
        parts.append(f"{found:,} of {times.size:,} inside {len(hit):,} SMI events on {_cpus_text(cpus)} "
                     f"({smi_events:,} SMI events in all)" + _cut_note(times.size, count, truncated))
        if visible.sum() < times.size:
            parts.append(f"{int(visible.sum()):,} of the {times.size:,} delayed a wake-up past the events' threshold "
                         f"({format_us(ctx.events.threshold_ns)}), {seen:,} of those found")
        values.update(found=found, smi_events=smi_events, visible=int(visible.sum()), visible_found=seen)
    else:
        parts.append(f"events not checked: {ctx.missing('events')}")
    attributed = None
    if ctx.power_available():
        attributed = bool(ctx.correlation.attributed.get("smi", False))
        test = _pooled_test(ctx.correlation, "smi")
        parts.append(("correlate attributes: " if attributed else "correlate does not attribute: ") + _risk_text(test))
        values.update(attributed=attributed, **_risk_values(test))
    else:
        parts.append(f"correlate not checked: {ctx.power_missing()}")
    events_recovered = (found is not None and bool(values["visible"]) and attributed is not False
                        and _share_verdict(seen, values["visible"]) == RECOVERED)
    verdict = _events_and_correlate(found, events_recovered, attributed)
    return [PlantedRow(key, planted, "; ".join(parts), tolerance, verdict, values)]


def _events_and_correlate(found: int | None, events_recovered: bool, attributed: bool | None) -> str:
    """The verdict of an effect judged by the events (``found``; None: not judged by them) and correlate
    (``attributed``; None: not checked): recovered when the events' rule holds, or correlate alone when the
    events cannot judge it; partly when either saw some of it."""
    if found is None and attributed is None:
        return NOT_CHECKED
    if events_recovered or (found is None and attributed):
        return RECOVERED
    if (found or 0) > 0 or attributed:
        return PARTLY
    return MISSED


def _delays_a_wakeup(times: np.ndarray, duration_ns: float, ctx: _Context) -> np.ndarray:
    """How late each stall of every CPU starting at ``times`` makes the first wake-up due inside it (the largest
    over the threads; ≤ 0 when it ends before any is due).  Targets follow the spec: ``start + thread × offset +
    k × interval``."""
    spec = ctx.ground_truth.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    interval = float(spec.get("interval_ns") or ctx.interval_ns or 1)
    start = float(spec.get("start_ns") or 0)
    offset = float(spec.get("thread_offset_ns") or 0)
    worst = np.full(times.size, -np.inf)
    for thread in range(max(len(ctx.threads), 1)):
        base = start + thread * offset
        first_due = base + np.ceil((times - base) / interval) * interval
        worst = np.maximum(worst, times + duration_ns - first_due)
    return worst


def _stalls(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    periods = float(truth.get("periods") or 0)
    per_thread = truth.get("stalled_expected_ns")
    size = f"of {periods:g} intervals ({format_us(periods * ctx.interval_ns)})"
    chance = f"at probability {float(truth.get('probability') or 0):g} per wake-up"
    slack = ctx.interval_ns
    tolerance = f"an event on the stalled CPU within ±1 interval of each stall (≥ {SHARE_RECOVERED:.0%} found)"
    if not isinstance(per_thread, Mapping):
        return [PlantedRow(key, f"stalls {size} {chance}", "not checked: this dataset's ground truth has no stall "
                           "times (simulated before they were recorded)", tolerance, NOT_CHECKED)]
    lists = {int(t): _values(v) for t, v in per_thread.items()}
    count = sum(c for _, c, _ in lists.values())
    planted = (f"{_plural(count, 'stall')} {size} {chance} on "
               f"{_cpus_text(ctx.cpu_of(t) for t, (_, c, _) in lists.items() if c)}")
    if count == 0:
        return [PlantedRow(key, planted, "nothing to recover: the run drew no stall", tolerance, NOT_CHECKED)]
    if ctx.events is None:
        return [PlantedRow(key, planted, f"not checked: {ctx.missing('events')}", tolerance, NOT_CHECKED)]
    found = compared = 0
    hit_events: dict[int, Event] = {}
    cut = False
    for thread, (times, _, truncated) in lists.items():
        cut |= truncated
        starts, ends, chosen = ctx.index.spans(thread)
        which = _containing(times, starts, ends, slack)
        compared += times.size
        found += int(np.count_nonzero(which >= 0))
        hit_events.update({int(chosen[i]): ctx.index.events[chosen[i]] for i in which[which >= 0]})
    peaks = np.asarray([e.peak_latency_ns for e in hit_events.values()], dtype=np.float64)
    missed = sum(e.missed_periods for e in hit_events.values())
    recovered = (f"{found:,} of {compared:,} inside {_plural(len(hit_events), 'event')}"
                 + (f" (peak median {format_us(float(np.median(peaks)))}, {missed:,} missed periods)" if peaks.size
                    else "") + _cut_note(compared, count, cut))
    return [PlantedRow(key, planted, recovered, tolerance, _share_verdict(found, compared),
                       {"planted": count, "compared": compared, "found": found, "events": len(hit_events),
                        "missed_periods": missed})]


def _shared_stall(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    times, count, truncated = _values(truth.get("stall_ns"))
    wanted = truth.get("threads")
    threads = [t.thread for t in ctx.threads] if wanted is None else [int(t) for t in wanted]
    duration = float(truth.get("duration_ns") or 0)
    planted = f"{_plural(count, 'stall')} of {format_us(duration)} on {_cpus_text(map(ctx.cpu_of, threads))} at once"
    slack = ctx.interval_ns
    tolerance = ("each stall one event holding all its CPUs, starting within ±1 interval of it, peak within "
                 "one interval of the planted duration")
    if count == 0:
        return [PlantedRow(key, planted, "nothing to recover: the run drew no stall", tolerance, NOT_CHECKED)]
    if ctx.events is None:
        return [PlantedRow(key, planted, f"not checked: {ctx.missing('events')}", tolerance, NOT_CHECKED)]
    whole = split = 0
    peaks: list[float] = []
    missed: list[int] = []
    starts, ends, chosen = ctx.index.spans()  # events are disjoint in time: one holds each stall
    for index in _containing(times, starts, ends, slack):
        event = ctx.index.events[chosen[index]] if index >= 0 else None
        if event is None or not set(event.threads) & set(threads):
            continue
        if set(threads) <= set(event.threads) and abs(event.peak_latency_ns - duration) <= slack:
            whole += 1
            peaks.append(float(event.peak_latency_ns))
            missed.append(event.missed_periods)
        else:
            split += 1
    every = "both" if len(threads) == 2 else f"all {len(threads)}" if len(threads) > 2 else "its"
    recovered = f"{whole:,} of {times.size:,} as one event on {every} CPU{'s' if len(threads) > 1 else ''}"
    if peaks:
        span = (format_us(peaks[0]) if min(peaks) == max(peaks) else f"{format_us(min(peaks))}–{format_us(max(peaks))}")
        lost = (f"{missed[0]:,}" if min(missed) == max(missed) else f"{min(missed):,}–{max(missed):,}")
        recovered += f" (peak {span}, {lost} missed periods each)"
    if split:
        recovered += f"; {split:,} seen only in part (not all its CPUs in the event, or another peak)"
    recovered += _cut_note(times.size, count, truncated)
    verdict = _share_verdict(whole, times.size)
    if verdict == MISSED and split:
        verdict = PARTLY
    return [PlantedRow(key, planted, recovered, tolerance, verdict,
                       {"planted": count, "compared": int(times.size), "whole": whole, "in_part": split})]


def _drops(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    dropped = sum(t.drops for t in ctx.threads)
    planted = (f"bursts at probability {float(truth.get('probability') or 0):g} per row, mean "
               f"{float(truth.get('mean_burst') or 0):g} rows: {dropped:,} rows dropped (threads[].drops)")
    tolerance = "exact: missing seq values in the data equal the rows the simulation dropped, on every thread"
    if ctx.gaps is None:
        return [PlantedRow(key, planted, "not checked: the seq column was not read", tolerance, NOT_CHECKED)]
    missing = sum(g.missing for g in ctx.gaps.values())
    gaps = sum(g.gaps for g in ctx.gaps.values())
    per_thread_ok = all(ctx.gaps.get(t.thread, RecordedGaps(t.thread, 0, 0)).missing == t.drops for t in ctx.threads)
    recovered = f"{missing:,} seq values missing in {gaps:,} gaps"
    if dropped == 0:
        verdict = RECOVERED if missing == 0 else FALSE_POSITIVE
        recovered += " (none dropped)" if missing == 0 else " although none was dropped"
    else:
        verdict = RECOVERED if per_thread_ok else PARTLY if missing else MISSED
    return [PlantedRow(key, planted, recovered, tolerance, verdict,
                       {"dropped": dropped, "missing": missing, "gaps": gaps})]


def _idle(key: str, truth: Mapping[str, Any], ctx: _Context) -> list[PlantedRow]:
    per_thread = truth.get("deep_expected_ns") or {}
    lists = {int(t): _values(v) for t, v in per_thread.items()}
    count = sum(c for _, c, _ in lists.values())
    planted = (f"{count:,} deep-idle wake-ups (probability {float(truth.get('deep_probability') or 0):g}), exit "
               f"latency {format_us(truth.get('exit_latency_ns'))}, C0 {format_percent(truth.get('deep_c0_fraction'))}"
               " of the interval before")
    slack = ctx.interval_ns
    tolerance = (f"an event with cause idle exit within ±1 interval of each (≥ {SHARE_RECOVERED:.0%} found); "
                 "correlate attributes a low-C0 bin (alone, when the exit latency is below the events' threshold)")
    if count == 0:
        return [PlantedRow(key, planted, "nothing to recover: the run drew no deep-idle wake-up", tolerance,
                           NOT_CHECKED)]
    parts: list[str] = []
    values: dict[str, Any] = {"planted": count}
    found = None
    exit_ns = float(truth.get("exit_latency_ns") or 0)
    if ctx.events is not None and 0 < exit_ns < ctx.events.threshold_ns:
        # below the threshold no idle exit is an event, by design: the verdict rests on correlate alone
        parts.append(f"no idle exit is an event: the exit latency {format_us(exit_ns)} is below the events' "
                     f"threshold {format_us(ctx.events.threshold_ns)}")
    elif ctx.events is not None:
        found = compared = 0
        cut = False
        for thread, (times, _, truncated) in lists.items():
            cut |= truncated
            starts, ends, _ = ctx.index.spans(thread, "idle exit")
            compared += times.size
            found += int(np.count_nonzero(_containing(times, starts, ends, slack) >= 0))
        parts.append(f"{found:,} of {compared:,} inside an event naming an idle exit"
                     + (f" (exit latency {format_us(truth.get('exit_latency_ns'))} vs the events' threshold "
                        f"{format_us(ctx.events.threshold_ns)})" if found < SHARE_RECOVERED * compared else "")
                     + _cut_note(compared, count, cut))
        values.update(found=found, compared=compared)
    else:
        parts.append(f"events not checked: {ctx.missing('events')}")
    attributed = None
    if ctx.power_available():
        bins = [c for c, yes in ctx.correlation.attributed.items() if c.startswith("c0 ") and yes]
        attributed = bool(bins)
        parts.append(f"correlate attributes {', '.join(bins)}" if bins else "correlate attributes no C0 bin")
        values["attributed_bins"] = bins
    else:
        parts.append(f"correlate not checked: {ctx.power_missing()}")
    events_recovered = found is not None and found >= SHARE_RECOVERED * values["compared"]
    verdict = _events_and_correlate(found, events_recovered, attributed)
    return [PlantedRow(key, planted, "; ".join(parts), tolerance, verdict, values)]


RULES: dict[str, Callable[[str, Mapping[str, Any], _Context], list[PlantedRow]]] = {
    "periodic": _periodic,
    "pstates": _pstates,
    "smi": _smi_rows,
    "transition_smis": _smi_rows,
    "stalls": _stalls,
    "shared_stall": _shared_stall,
    "drops": _drops,
    "idle": _idle,
}
"""The recovery rule of each effect kind (:data:`jitterscope.io.simulate.effects.EFFECT_TYPES`)."""
