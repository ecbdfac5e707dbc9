"""Frequency transitions, the frequency timeline, time in frequency, and cpufreq's claim checked.

Works on the effective-frequency series of :mod:`jitterscope.counters`.  A
*transition* is a step between two frequency levels that differ by more than
a stated relative threshold, each held for at least a minimum dwell (in
wake-ups).  Samples in between (the interval in which the P-state changed
averages the two levels) and blips shorter than the dwell are not levels.

The claimed-vs-measured check compares what cpufreq said when the capture
started (``environment.cpufreq[cpu].cur_khz`` and governor) with what APERF/MPERF
measured: a governor that "holds 2.4 GHz" while the counters show the
frequency moving is flagged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..derive import CounterSeries, CounterSet
from ..errors import AnalysisError
from .defaults import DEFAULT_MIN_DWELL, DEFAULT_THRESHOLD


@dataclass(frozen=True)
class FrequencyLevel:
    """A stretch of wake-ups at one frequency level: rows [start_index, end_index)."""

    start_index: int
    end_index: int
    start_ns: int
    end_ns: int
    level_hz: float


@dataclass(frozen=True)
class Transitions:
    """Frequency transitions of one thread's CPU and the timeline of levels between them.

    ``index`` are row positions in the thread's :class:`CounterSeries` (the first row
    no longer at the old level); ``from_hz``/``to_hz`` the levels on either side.
    """

    thread: int
    cpu: int
    relative_threshold: float
    min_dwell: int
    index: tuple[int, ...]
    seq: tuple[int, ...]
    time_ns: tuple[int, ...]
    from_hz: tuple[float, ...]
    to_hz: tuple[float, ...]
    levels: tuple[FrequencyLevel, ...]

    @property
    def count(self) -> int:
        return len(self.index)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TimeInFrequency:
    """Time spent per frequency bin (f_eff of each interval, weighted by the interval's length)."""

    thread: int
    cpu: int
    bin_mhz: float
    lower_mhz: tuple[float, ...]
    seconds: tuple[float, ...]
    fraction: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClaimCheck:
    """cpufreq's recorded frequency for a CPU against the measured f_eff distribution."""

    thread: int
    cpu: int
    governor: str | None
    driver: str | None
    claimed_mhz: float | None
    measured_median_mhz: float | None
    measured_p5_mhz: float | None
    measured_p95_mhz: float | None
    fraction_within: float | None
    tolerance: float
    transitions: int
    disagree: bool
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FrequencyAnalysis:
    """Transitions, time in frequency and claim checks of every thread with an f_eff series."""

    transitions: tuple[Transitions, ...]
    time_in_frequency: tuple[TimeInFrequency, ...]
    claims: tuple[ClaimCheck, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def detect_transitions(series: CounterSeries, *, relative_threshold: float = DEFAULT_THRESHOLD,
                       min_dwell: int = DEFAULT_MIN_DWELL) -> Transitions:
    """Find steps between frequency levels in a thread's f_eff series.

    Parameters
    ----------
    series : CounterSeries
        One thread's derived counters; rows without a valid f_eff are skipped.
    relative_threshold : float
        Consecutive samples differing by more than this fraction start a new segment,
        and two levels must differ by more than this fraction to make a transition.
    min_dwell : int
        A segment of fewer valid samples is transient (mid-interval P-state change, blip).

    Returns
    -------
    Transitions

    Raises
    ------
    AnalysisError
        Threshold not in (0, 1) or dwell below 1.

    Notes
    -----
    Segments are cut where ``|f[j] - f[j-1]| / f[j-1] > relative_threshold``; segments of
    at least ``min_dwell`` samples are levels (their median); consecutive levels that
    differ by more than the threshold are a transition, located at the first sample
    after the earlier level; levels that do not are merged (a blip in between is ignored).
    Slow drifts made of sub-threshold steps are not transitions.
    """
    if not 0 < relative_threshold < 1:
        raise AnalysisError(f"relative threshold {relative_threshold} is not in (0, 1); use e.g. 0.05 for 5 %")
    if min_dwell < 1:
        raise AnalysisError(f"minimum dwell {min_dwell} is below 1 wake-up")
    detector = TransitionDetector(series.thread, series.cpu, relative_threshold=relative_threshold,
                                  min_dwell=min_dwell)
    detector.update(series)
    return detector.result()


SEGMENT_EXACT = 1 << 20
"""A segment of more valid samples than this gets its median from a histogram (see :class:`TransitionDetector`)."""
SEGMENT_BIN = 1e-6
"""Relative width of that histogram's bins: the level of such a segment is within 1e-6 of the exact median."""


def _median(values: np.ndarray) -> float:
    """``np.median`` of finite values, by one partition (a thread has thousands of segments: its overhead counts)."""
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    middle = np.partition(values, (half - 1, half))
    return float((middle[half - 1] + middle[half]) / 2)


class _SegmentMedian:
    """Median of one segment's samples: exact up to :data:`SEGMENT_EXACT` samples, then from log bins."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.size = 0
        self.keys: np.ndarray | None = None  # log-bin keys and counts once the segment outgrew the buffer
        self.counts: np.ndarray | None = None

    def add(self, values: np.ndarray) -> None:
        if values.size == 0:
            return
        self.size += values.size
        if self.keys is None:
            self.parts.append(values)
            if self.size <= SEGMENT_EXACT:
                return
            values, self.parts = np.concatenate(self.parts), []
            self.keys, self.counts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        keys, counts = np.unique(np.rint(np.log(values) / math.log1p(SEGMENT_BIN)).astype(np.int64),
                                 return_counts=True)
        merged, inverse = np.unique(np.concatenate([self.keys, keys]), return_inverse=True)
        self.counts = np.bincount(inverse, weights=np.concatenate([self.counts, counts]),
                                  minlength=merged.size).astype(np.int64)
        self.keys = merged

    def median(self) -> float:
        if self.keys is None:
            return _median(self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts))
        ends = np.cumsum(self.counts)
        low = self.keys[np.searchsorted(ends, (self.size - 1) // 2, side="right")]
        high = self.keys[np.searchsorted(ends, self.size // 2, side="right")]
        return float(np.exp(0.5 * (low + high) * math.log1p(SEGMENT_BIN)))


class TransitionDetector:
    """Accumulator: :func:`detect_transitions` over a thread's series fed in ``seq`` order, chunk by chunk.

    Memory: the open segment (exact up to :data:`SEGMENT_EXACT` samples, then a histogram
    of log bins :data:`SEGMENT_BIN` wide) and the levels found; the result equals
    :func:`detect_transitions` on the whole series (exactly while no segment is longer than
    :data:`SEGMENT_EXACT`, else with levels within :data:`SEGMENT_BIN` relative).  Sequential:
    chunks must come in order (there is no ``merge``; threads are independent).
    """

    def __init__(self, thread: int, cpu: int, *, relative_threshold: float = DEFAULT_THRESHOLD,
                 min_dwell: int = DEFAULT_MIN_DWELL) -> None:
        if not 0 < relative_threshold < 1:
            raise AnalysisError(f"relative threshold {relative_threshold} is not in (0, 1); use e.g. 0.05 for 5 %")
        if min_dwell < 1:
            raise AnalysisError(f"minimum dwell {min_dwell} is below 1 wake-up")
        self.thread, self.cpu = thread, cpu
        self.threshold, self.dwell = relative_threshold, min_dwell
        self.rows = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self._previous_row_ns: int | None = None
        self._previous_f: float | None = None
        self._segment = _SegmentMedian()
        # merged levels: [level_hz, end] with end = (row, seq, expected_ns, expected_ns of the row before) of
        # the first valid sample after the level's last long segment, None while the level is the last one
        self._levels: list[list[Any]] = []
        # jumps (row, seq) at or after the last level's end: the rows a later transition can still be at
        self._jumps: list[tuple[int, int]] = []

    def update(self, series: CounterSeries) -> TransitionDetector:
        """Add the next rows of the thread (a :class:`CounterSeries` chunk)."""
        n = series.seq.size
        if n == 0:
            return self
        if self.first_ns is None:
            self.first_ns = int(series.expected_ns[0])
        before = np.empty(n, dtype=np.int64)
        before[1:] = series.expected_ns[:-1]
        before[0] = self._previous_row_ns if self._previous_row_ns is not None else series.expected_ns[0]
        pos = np.flatnonzero(np.isfinite(series.f_eff_hz))
        values = series.f_eff_hz[pos]
        if values.size:
            previous = np.concatenate(([self._previous_f], values[:-1])) if self._previous_f is not None else None
            if previous is None:
                jumps = np.concatenate(([False], np.abs(np.diff(values)) > self.threshold * values[:-1]))
            else:
                jumps = np.abs(values - previous) > self.threshold * previous
            starts = np.flatnonzero(jumps)
            cuts = np.concatenate(([0], starts, [values.size]))
            for k in range(cuts.size - 1):
                if k:  # a jump at cuts[k]: the open segment ends there
                    row = int(pos[cuts[k]])
                    self._close((self.rows + row, int(series.seq[row]), int(series.expected_ns[row]),
                                 int(before[row])))
                    self._jumps.append((self.rows + row, int(series.seq[row])))
                self._segment.add(values[cuts[k]:cuts[k + 1]])
            self._previous_f = float(values[-1])
        self.rows += n
        self._previous_row_ns = self.last_ns = int(series.expected_ns[-1])
        # a transition is only ever placed at the last level's end or at a jump after it (ends move forward):
        # earlier jumps are settled, and before any level there is no transition to place
        since = self._levels[-1][1][0] if self._levels else None
        self._jumps = [j for j in self._jumps if since is not None and j[0] >= since]
        return self

    def decided(self) -> list[tuple[int, int]]:
        """``(row, seq)`` of the transitions already certain (each level's end but the last level's), in order."""
        return [(level[1][0], level[1][1]) for level in self._levels[:-1]]

    def pending(self) -> list[tuple[int, int]]:
        """``(row, seq)`` of the jumps seen where a transition may still be placed, once more rows are seen.

        Rows further than the window from these, from the decided transitions and from the last row seen are
        settled: no later row can put a transition near them.  :meth:`result` settles everything.
        """
        return list(self._jumps)

    def _close(self, end: tuple[int, int, int, int] | None) -> None:
        segment, self._segment = self._segment, _SegmentMedian()
        if segment.size < self.dwell:
            return
        level = segment.median()
        if self._levels and abs(level - self._levels[-1][0]) <= self.threshold * self._levels[-1][0]:
            self._levels[-1][1] = end  # same level after a blip: keep the earlier level
            return
        self._levels.append([level, end])

    def result(self) -> Transitions:
        """The transitions and the level timeline (the open segment is closed at the end of the data)."""
        self._close(None)
        levels = [list(level) for level in self._levels]
        index, seq, time_ns, frm, to, timeline = [], [], [], [], [], []
        for k, (level, end) in enumerate(levels):
            if k:
                row, s_, t_, _ = levels[k - 1][1]
                index.append(row)
                seq.append(s_)
                time_ns.append(t_)
                frm.append(levels[k - 1][0])
                to.append(level)
            row_start = 0 if k == 0 else index[-1]
            start_ns = self.first_ns if k == 0 else time_ns[-1]
            last = k == len(levels) - 1
            row_end = self.rows if last else end[0]
            end_ns = self.last_ns if last else end[3]
            timeline.append(FrequencyLevel(start_index=int(row_start), end_index=int(row_end),
                                           start_ns=int(start_ns), end_ns=int(end_ns), level_hz=float(level)))
        return Transitions(
            thread=self.thread, cpu=self.cpu, relative_threshold=self.threshold, min_dwell=self.dwell,
            index=tuple(int(i) for i in index), seq=tuple(int(v) for v in seq), time_ns=tuple(int(v) for v in time_ns),
            from_hz=tuple(float(f) for f in frm), to_hz=tuple(float(f) for f in to), levels=tuple(timeline),
        )


def time_in_frequency(series: CounterSeries, *, bin_mhz: float = 100.0) -> TimeInFrequency:
    """Seconds spent per f_eff bin, each interval weighted by its length (expected_ns spacing).

    Parameters
    ----------
    series : CounterSeries
    bin_mhz : float
        Bin width in MHz; bins are centred on multiples of it.

    Returns
    -------
    TimeInFrequency
        Non-empty bins only.
    """
    if bin_mhz <= 0:
        raise AnalysisError(f"frequency bin width {bin_mhz} MHz is not positive")
    valid = np.flatnonzero(np.isfinite(series.f_eff_hz))
    valid = valid[valid > 0]
    if valid.size == 0:
        return TimeInFrequency(series.thread, series.cpu, bin_mhz, (), (), ())
    seconds = (series.expected_ns[valid] - series.expected_ns[valid - 1]) / 1e9
    # bins centred on multiples of the width, so a level at 1600 MHz does not straddle two bins
    bins = np.floor(series.f_eff_hz[valid] / 1e6 / bin_mhz + 0.5).astype(np.int64)
    uniq, inverse = np.unique(bins, return_inverse=True)
    totals = np.bincount(inverse, weights=seconds)
    return TimeInFrequency(
        thread=series.thread, cpu=series.cpu, bin_mhz=bin_mhz,
        lower_mhz=tuple(float((b - 0.5) * bin_mhz) for b in uniq), seconds=tuple(float(t) for t in totals),
        fraction=tuple(float(t / totals.sum()) for t in totals),
    )


def check_claimed(series: CounterSeries, transitions: Transitions, environment: Mapping[str, Any] | None, *,
                  tolerance: float = DEFAULT_THRESHOLD, agree_fraction: float = 0.9) -> ClaimCheck:
    """Compare cpufreq's recorded ``cur_khz``/governor for the thread's CPU with measured f_eff.

    Parameters
    ----------
    series : CounterSeries
    transitions : Transitions
        Of the same series (their count goes into the message).
    environment : Mapping or None
        The dataset's ``environment`` metadata.
    tolerance : float
        A wake-up agrees when its f_eff is within this fraction of the claimed frequency.
    agree_fraction : float
        The claim holds when at least this fraction of wake-ups agree.

    Returns
    -------
    ClaimCheck
        ``disagree`` True when cpufreq's claim and the measurement differ.
    """
    f = series.f_eff_hz[np.isfinite(series.f_eff_hz)] / 1e6
    p5, median, p95 = (float(v) for v in np.percentile(f, [5, 50, 95])) if f.size else (None, None, None)
    claimed = claimed_hz(environment, series.cpu)
    within = int(np.count_nonzero(np.abs(f * 1e6 - claimed) <= tolerance * claimed)) if claimed and f.size else 0
    return claim_check(series.thread, series.cpu, environment, measured_mhz=(p5, median, p95), within=within,
                       count=int(f.size), transitions=transitions.count, tolerance=tolerance,
                       agree_fraction=agree_fraction)


def claimed_hz(environment: Mapping[str, Any] | None, cpu: int) -> float | None:
    """cpufreq's recorded frequency (Hz) of ``cpu`` in the environment metadata, or None."""
    info = dict(((environment or {}).get("cpufreq") or {}).get(str(cpu)) or {})
    return float(info["cur_khz"]) * 1e3 if info.get("cur_khz") else None


def claim_check(thread: int, cpu: int, environment: Mapping[str, Any] | None, *,
                measured_mhz: tuple[float | None, float | None, float | None], within: int, count: int,
                transitions: int, tolerance: float = DEFAULT_THRESHOLD, agree_fraction: float = 0.9) -> ClaimCheck:
    """The :class:`ClaimCheck` from the measured f_eff p5/median/p95 (MHz) and the count within tolerance.

    ``within`` of ``count`` wake-ups with an f_eff lie within ``tolerance`` of the claimed frequency;
    :func:`check_claimed` computes them from a series, the streamed correlation from histograms.
    """
    info = dict(((environment or {}).get("cpufreq") or {}).get(str(cpu)) or {})
    base = dict(thread=thread, cpu=cpu, governor=info.get("governor"), driver=info.get("driver"),
                tolerance=tolerance, transitions=transitions)
    if count == 0:
        return ClaimCheck(**base, claimed_mhz=None, measured_median_mhz=None, measured_p5_mhz=None,
                          measured_p95_mhz=None, fraction_within=None, disagree=False,
                          message=f"cpu {cpu}: no effective frequency measured; nothing to check")
    p5, median, p95 = measured_mhz
    measured = dict(measured_median_mhz=median, measured_p5_mhz=p5, measured_p95_mhz=p95)
    spread = (f"median {median:.0f} MHz, 5–95 % {p5:.0f}–{p95:.0f} MHz, "
              f"{transitions} transition{'s' if transitions != 1 else ''}")
    if not info.get("cur_khz"):
        return ClaimCheck(**base, **measured, claimed_mhz=None, fraction_within=None, disagree=False,
                          message=f"cpu {cpu}: cpufreq not recorded; measured f_eff {spread}")
    claimed = float(info["cur_khz"]) / 1e3
    fraction = within / count
    who = f"cpufreq claims {claimed:.0f} MHz (governor {info.get('governor') or 'unknown'})"
    disagree = fraction < agree_fraction
    if disagree:
        message = (f"cpu {cpu}: {who} but f_eff is within ±{tolerance:.0%} of it for only "
                   f"{fraction:.0%} of wake-ups ({spread})")
    else:
        message = (f"cpu {cpu}: {who}, and f_eff agrees ({fraction:.0%} of wake-ups within "
                   f"±{tolerance:.0%}; {spread})")
    return ClaimCheck(**base, **measured, claimed_mhz=claimed, fraction_within=fraction, disagree=disagree,
                      message=message)


def analyse_frequency(counters: CounterSet | Sequence[CounterSeries], environment: Mapping[str, Any] | None, *,
                      relative_threshold: float = DEFAULT_THRESHOLD, min_dwell: int = DEFAULT_MIN_DWELL,
                      bin_mhz: float = 100.0) -> FrequencyAnalysis:
    """Transitions, time in frequency and the claim check for every thread with an f_eff series."""
    series = counters.series if isinstance(counters, CounterSet) else tuple(counters)
    found, tif, claims = [], [], []
    for s in series:
        if not s.has_frequency:
            continue
        t = detect_transitions(s, relative_threshold=relative_threshold, min_dwell=min_dwell)
        found.append(t)
        tif.append(time_in_frequency(s, bin_mhz=bin_mhz))
        claims.append(check_claimed(s, t, environment, tolerance=relative_threshold))
    return FrequencyAnalysis(transitions=tuple(found), time_in_frequency=tuple(tif), claims=tuple(claims))
