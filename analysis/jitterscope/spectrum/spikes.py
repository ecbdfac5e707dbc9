"""Latency spikes as a point process: the threshold, and the inter-spike-interval histogram.

The spike-indicator series (1 where latency exceeds the threshold, else 0) is
fed to a :class:`~jitterscope.spectrum.welch.WelchAccumulator` by the caller;
this module keeps the intervals between consecutive spikes (or between the starts of episodes of
consecutive spikes, one disturbance late for several wake-ups), in log-spaced bins
(20 per decade from 1 µs to 10^5 s), mergeable and of fixed size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ISI_EDGES_S = np.logspace(-6, 5, 11 * 20 + 1)


def default_threshold_ns(latency_ns: np.ndarray) -> float:
    """Spike threshold when none is given: median + 10 interquartile ranges of the latencies seen.

    Robust to spikes up to a quarter of the wake-ups (a high quantile is not:
    a 37 Hz disturbance at 1 kHz is 3.7 % of the samples and would set p99),
    and far enough above the bulk that background noise rarely crosses it
    (lognormal background of sigma 0.3: once in 10^7 wake-ups).
    """
    p25, p50, p75 = np.percentile(np.asarray(latency_ns, dtype=np.float64), [25, 50, 75])
    return float(p50 + 10.0 * max(p75 - p25, 1.0))


def threshold_from_histogram(histogram: Any) -> float:
    """:func:`default_threshold_ns` from a streamed latency histogram (bounded memory, any dataset size).

    ``histogram`` is a :class:`jitterscope.summary.HistogramResult` (the summary's HDR histogram); its
    quartiles are good to its relative error (0.1 %), so the threshold is too.
    """
    q = histogram.percentiles([25.0, 50.0, 75.0])
    return float(q[50.0] + 10.0 * max(q[75.0] - q[25.0], 1.0))


@dataclass(frozen=True)
class InterSpikeIntervals:
    """Histogram of the time between consecutive latency spikes."""

    threshold_ns: float
    threshold_rule: str
    spikes: int
    edges_s: np.ndarray
    counts: np.ndarray
    sums_s: np.ndarray
    """Sum of the intervals that fell in each bin (their mean is exact, the bin only 12 % wide)."""
    episodes: int = 0
    """Runs of spikes no further apart than ``merge_ns``: the intervals are between their starts."""
    merge_ns: float = 0.0

    @property
    def mode_s(self) -> float | None:
        """Mean interval in the most populated bin (None without two spikes)."""
        if not self.counts.any():
            return None
        i = int(np.argmax(self.counts))
        return float(self.sums_s[i] / self.counts[i])

    def to_json(self) -> dict:
        return {"threshold_ns": self.threshold_ns, "threshold_rule": self.threshold_rule, "spikes": self.spikes,
                "edges_s": self.edges_s.tolist(), "counts": self.counts.tolist(), "sums_s": self.sums_s.tolist(),
                "mode_s": self.mode_s, "episodes": self.episodes, "merge_ns": self.merge_ns}


class IsiAccumulator:
    """Counts spikes (latency above ``threshold_ns``) and histograms the intervals between them.

    Parameters
    ----------
    threshold_ns : float
        A wake-up with latency above this is a spike.
    threshold_rule : str
        How the threshold was chosen, for the result.
    """

    def __init__(self, threshold_ns: float, threshold_rule: str = "given", merge_ns: float = 0.0):
        self.threshold_ns = float(threshold_ns)
        self.threshold_rule = threshold_rule
        self.merge_ns = float(merge_ns)
        self.counts = np.zeros(ISI_EDGES_S.size - 1, dtype=np.int64)
        self.sums = np.zeros(ISI_EDGES_S.size - 1)
        self.spikes = 0
        self.episodes = 0
        self._last_ns: int | None = None
        self._episode_ns: int | None = None

    def update(self, actual_ns: np.ndarray, latency_ns: np.ndarray) -> np.ndarray:
        """Add wake-ups (in time order); returns the spike indicator (float 0/1) of the batch.

        Spikes within ``merge_ns`` of the previous spike continue its episode (one disturbance late for
        several consecutive wake-ups); the intervals histogrammed are those between episode starts.
        """
        indicator = np.asarray(latency_ns) > self.threshold_ns
        times = np.asarray(actual_ns, dtype=np.int64)[indicator]
        if times.size:
            gaps = np.diff(times, prepend=times[0] if self._last_ns is None else self._last_ns)
            starts = times[(gaps > self.merge_ns) | ((np.arange(times.size) == 0) & (self._last_ns is None))]
            if starts.size:
                if self._episode_ns is not None:
                    starts_all = np.r_[self._episode_ns, starts]
                else:
                    starts_all = starts
                intervals_s = np.diff(starts_all) / 1e9
                self.counts += np.histogram(intervals_s, bins=ISI_EDGES_S)[0]
                self.sums += np.histogram(intervals_s, bins=ISI_EDGES_S, weights=intervals_s)[0]
                self.episodes += int(starts.size)
                self._episode_ns = int(starts[-1])
            self.spikes += int(indicator.sum())
            self._last_ns = int(times[-1])
        return indicator.astype(np.float64)

    def merge(self, other: IsiAccumulator) -> IsiAccumulator:
        """Add another part of the stream (the interval across the boundary is not counted)."""
        self.counts += other.counts
        self.sums += other.sums
        self.spikes += other.spikes
        self.episodes += other.episodes
        return self

    def result(self) -> InterSpikeIntervals:
        return InterSpikeIntervals(self.threshold_ns, self.threshold_rule, self.spikes, ISI_EDGES_S.copy(),
                                   self.counts.copy(), self.sums.copy(), self.episodes, self.merge_ns)
