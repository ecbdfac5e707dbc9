"""Periodic interruptions: the spectrum of the interruption start times as a point process.

The starts of the gaps of one size class (decades, as :mod:`.summary` counts them) on one CPU are a point
process; binned into counts at ``fs_hz`` (0.5 ms bins by default) they are a regularly sampled series whose
Welch spectrum has lines where the interruptions recur: the scheduler tick at CONFIG_HZ among the short
gaps, a periodic device IRQ, RT throttling's once-per-period stop among the long ones.  Classes are
analysed apart because a few long periodic stops (20 in 20 s) are invisible among thousands of ticks in one
count series but are the whole of their own class.

The machinery is the spectrum package's (streaming Welch, the noise-floor test with its false-alarm
probability, harmonic families, known sources); the sources are the dataset's scheduler tick
(``environment.hz``: "scheduler tick (CONFIG_HZ=250)"), RT throttling at 1 / sched_rt_period (offered only
in the class that holds its gap, ``period - runtime``), then 1 Hz housekeeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..errors import AnalysisError
from ..spectrum import (
    MIN_CYCLES,
    Peak,
    Source,
    WelchAccumulator,
    attribute,
    default_sources,
    families_of,
    find_welch_peaks,
    group_harmonics,
    match_source,
)
from .causes import PollCauses
from .read import PollData, read_poll
from .summary import size_classes

FS_HZ = 2000.0
"""Bins of 0.5 ms: the tick (up to CONFIG_HZ=1000) and its harmonic below the Nyquist frequency."""
SEGMENT_S = 4.0
"""Welch segments of 4 s: 0.25 Hz bins, so a 1 Hz line sits clear of bins 0 and 1."""
MIN_EVENTS = 10
ALPHA = 0.01
MIN_SNR = 10.0
"""A family's strongest line must stand this far above the local floor to be reported (the floor test alone
passes the sidebands a gated process makes: ticks missing during each throttled stretch)."""
MAX_LINES = 6
MIN_WELCH_EVENTS = 200
MAX_WELCH_LINES = 3
REGULAR_SHARE = 0.5
REGULAR_TOLERANCE = 0.05
"""Half the starts of a class on one grid of period P (phase within REGULAR_TOLERANCE at most) make a periodic
source: 20 throttling stops in 20 s make a comb whose harmonics are all equal, which a spectrum cannot place,
but their intervals say 1 s at once; a random process puts about 2 × the tolerance of its starts on any grid."""


@dataclass(frozen=True)
class PollLine:
    """One periodic interruption source: a harmonic family of one size class on one CPU."""

    cpu: int
    thread: int
    size_class: str
    frequency_hz: float
    snr: float
    fap: float
    harmonics: int
    source: str | None
    events: int
    """Interruptions of the class on the CPU."""
    method: str = "welch"
    """"welch" (a line of the counts' spectrum) or "intervals" (the class's intervals are regular)."""
    median_ns: float | None = None
    """Median length of the interruptions on the line's grid (intervals method only)."""
    cause: str | None = None
    """The cause most of those interruptions have, when the causes were given (from the trace)."""

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if self.method == "intervals":
            out["snr"] = out["fap"] = None  # no spectrum: the intervals themselves were regular
        return out


@dataclass(frozen=True)
class PollSpectrum:
    path: str
    fs_hz: float
    segment_s: float
    alpha: float
    lines: tuple[PollLine, ...]
    skipped: tuple[str, ...]
    """Classes not analysed and why (too few events, too short)."""

    def line_at(self, frequency_hz: float, tolerance_hz: float = 0.5) -> PollLine | None:
        close = [line for line in self.lines if abs(line.frequency_hz - frequency_hz) <= tolerance_hz]
        return max(close, key=lambda line: line.snr) if close else None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "fs_hz": self.fs_hz, "segment_s": self.segment_s, "alpha": self.alpha,
                "lines": [line.to_json() for line in self.lines], "skipped": list(self.skipped),
                "method": "Welch PSD of the interruption starts binned into counts, per size class; noise-floor "
                          "test; harmonic families"}


def _sources(data: PollData, low: int, high: int | None, fs_hz: float) -> tuple[Source, ...]:
    environment = data.dataset.metadata.environment or {}
    sources = list(default_sources(environment, None))
    if not environment.get("hz"):
        # CONFIG_HZ not recorded (no readable kernel config): the usual values, said to be a guess
        sources += [Source(f"scheduler tick? (CONFIG_HZ not recorded; {hz} is a usual value)", float(hz), harmonics=1)
                    for hz in (100, 250, 300, 1000)]
    throttling = data.rt_throttling
    if throttling is not None:
        runtime, period = throttling
        off_ns = (period - runtime) * 1000
        if off_ns >= low and (high is None or off_ns < high):
            # before the tick and the 1 Hz housekeeping: in this class a 1/period line is the throttling
            sources.insert(0, Source(f"RT throttling ({runtime} of {period} µs)", 1e6 / period))
    return tuple(sources)


def poll_spectrum(dataset: Dataset | PollData | str, *, fs_hz: float = FS_HZ, segment_s: float = SEGMENT_S,
                  alpha: float = ALPHA, causes: PollCauses | None = None) -> PollSpectrum:
    """The periodic sources of interruptions, per CPU and size class.

    Parameters
    ----------
    dataset
        A poll dataset with rows (not a histogram-only import).
    fs_hz
        Rate at which the starts are binned into counts.
    segment_s
        Welch segment length (shortened to half the record when the record is shorter than two segments).
    alpha
        False-alarm probability of a line over the tested bins.
    causes
        The interruptions' causes (:func:`~jitterscope.poll.explain_interruptions`): each line then names the
        cause most of its interruptions have.

    Raises
    ------
    AnalysisError
        Not a poll dataset, or one without per-interruption rows.
    """
    data = dataset if isinstance(dataset, PollData) else read_poll(dataset)
    if not data.has_rows:
        raise AnalysisError(f"{data.dataset.path}: no per-interruption rows (a histogram-only import): the "
                            "spectrum needs the interruption times; capture with 'jitterscope capture --mode poll'")
    lines: list[PollLine] = []
    skipped: list[str] = []
    for thread in data.threads:
        if not thread.windows["window_start_ns"].size:
            continue
        t0 = int(thread.windows["window_start_ns"][0])
        n_bins = int(thread.runtime_ns * fs_hz / 1e9)
        nperseg = int(min(segment_s, n_bins / fs_hz / 2) * fs_hz)
        for label, low, high in size_classes(data.threshold_ns):
            mask = (thread.duration_ns >= low) & (thread.duration_ns < (high if high is not None else np.inf))
            starts = thread.start_ns[mask]
            if starts.size < MIN_EVENTS or nperseg < 16:
                skipped.append(f"CPU {thread.cpu} {label}: {starts.size} interruption(s), too few for a spectrum")
                continue
            sources = _sources(data, low, high, fs_hz)
            # a regular train is its own fundamental: 10 Hz is not "harmonic 10 of 1 Hz housekeeping"
            fundamentals = tuple(Source(src.name, src.frequency_hz, harmonics=1) for src in sources)
            found = []
            rest = starts
            rest_rows = np.flatnonzero(mask)
            # peel regular sources off one at a time: the tick, then a periodic IRQ among what is left
            for _ in range(MAX_LINES):
                regular = _regular_line(rest)
                if regular is None:
                    break
                frequency, spread, on_grid = regular
                probe = Peak(frequency_hz=frequency, power=0.0, snr=math.inf, fap=0.0, prominence_db=0.0,
                             bin_index=0, resolution_hz=max(spread * frequency, frequency * 0.01), method="intervals")
                lines.append(PollLine(cpu=thread.cpu, thread=thread.thread, size_class=label, frequency_hz=frequency,
                                      snr=math.inf, fap=0.0, harmonics=1, method="intervals",
                                      source=match_source(probe, fundamentals, fs_hz=None),
                                      events=int(on_grid.sum()),
                                      median_ns=float(np.median(thread.duration_ns[rest_rows[on_grid]])),
                                      cause=_common_cause(causes, thread.thread, rest_rows[on_grid])))
                found.append(frequency)
                rest, rest_rows = rest[~on_grid], rest_rows[~on_grid]
            if found or starts.size < MIN_WELCH_EVENTS:
                continue
            index = ((starts - t0) * fs_hz / 1e9).astype(np.int64)
            counts = np.bincount(index[(index >= 0) & (index < n_bins)], minlength=n_bins).astype(np.float64)
            welch = WelchAccumulator(fs_hz, nperseg)
            welch.update(counts)
            peaks = find_welch_peaks(welch.result(), alpha=alpha)
            if not peaks:
                continue
            # no folding: harmonics up to 16 only, so a 1 Hz gating (throttling removes ticks) cannot swallow the
            # 250 Hz tick as its 250th harmonic
            peaks = attribute(group_harmonics(peaks, fs_hz=None), sources, fs_hz=None)
            kept = [f for f in families_of(peaks) if f.strongest.snr >= MIN_SNR][:MAX_WELCH_LINES]
            for family in kept:
                source = next((p.likely_source for p in family.members if p.harmonic_number == 1), None)
                lines.append(PollLine(cpu=thread.cpu, thread=thread.thread, size_class=label,
                                      frequency_hz=float(family.fundamental_hz), snr=float(family.strongest.snr),
                                      fap=float(family.fap), harmonics=len(family.members), source=source,
                                      events=int(starts.size), method="welch"))
    return PollSpectrum(path=str(data.dataset.path), fs_hz=fs_hz, segment_s=segment_s, alpha=alpha,
                        lines=tuple(sorted(lines, key=lambda line: (line.cpu, -line.snr))), skipped=tuple(skipped))


def _regular_line(starts: np.ndarray) -> tuple[float, float, np.ndarray] | None:
    """(frequency, phase spread, which starts lie on its grid) when a share of ``starts`` recur at one period.

    The candidate period is the most common interval (bins of 1 % of its length); the grid is fitted to the
    starts near it (time against cycle number), and a start is on it when its phase is within five times the
    near starts' median offset (at least 0.2 %, at most :data:`REGULAR_TOLERANCE`).  A source needs
    :data:`REGULAR_SHARE` of the starts on its grid over at least ``MIN_CYCLES`` cycles: a random process puts
    about twice the tolerance of its starts on any grid.
    """
    if starts.size < 5:
        return None
    intervals = np.diff(starts).astype(np.float64)
    positive = np.flatnonzero(intervals > 0)
    if positive.size < 4:
        return None
    bins = np.round(np.log(intervals[positive]) / 0.01).astype(np.int64)
    values, counts = np.unique(bins, return_counts=True)
    if counts.max() < 4:
        return None
    in_mode = positive[bins == values[np.argmax(counts)]]
    period = float(np.median(intervals[in_mode]))
    reference = float(starts[in_mode[0]])
    for _ in range(3):
        cycles = np.round((starts - reference) / period)
        phase = (starts - reference) / period - cycles
        close = np.abs(phase) <= REGULAR_TOLERANCE
        if close.sum() < 5:
            return None
        offset = np.abs(phase - float(np.median(phase[close])))
        # as tight as the source is regular (a tick is phase-exact to a few µs), so that other interruptions of
        # the class are left for the next source
        on_grid = offset <= min(REGULAR_TOLERANCE, max(0.002, 5 * float(np.median(offset[close]))))
        if on_grid.sum() < 5:
            return None
        slope, intercept = np.polyfit(cycles[on_grid], starts[on_grid].astype(np.float64) - reference, 1)
        period, reference = float(slope), reference + float(intercept)
    if on_grid.mean() < REGULAR_SHARE or np.ptp(cycles[on_grid]) < MIN_CYCLES:
        return None
    residual = (starts[on_grid] - reference) / period - cycles[on_grid]
    return 1e9 / period, float(np.std(residual)), on_grid


def _common_cause(causes: PollCauses | None, thread: int, rows: np.ndarray) -> str | None:
    if causes is None or thread not in causes.per_row or not rows.size:
        return None
    names = [causes.per_row[thread][i] for i in rows.tolist()]
    return max(set(names), key=names.count)
