"""Streaming event detection: per-thread episode accumulators, and the merge of episodes into events.

A thread's wake-ups arrive in batches (``seq`` order, as :func:`jitterscope.dataset.iter_thread_batches`
yields them).  :class:`ThreadEpisodes` keeps one row of carry (for catch-up detection and counter deltas),
the last few rows' effective frequency (for the transition window) and the episode still open at the end
of a batch; everything else it keeps is one small :class:`Episode` per episode, so memory grows with the
number of episodes, not of wake-ups.  Two accumulators of the same thread merge by concatenating their
episodes (batches of one thread must still arrive in order: an episode cannot be split between them).
:func:`merge_episodes` then joins the episodes of all threads whose time spans overlap into events.

Membership of a wake-up in an episode:

- *late*: latency above the threshold;
- *catch-up*: its target had already passed when the previous wake-up happened (``expected_ns <=``
  the previous ``actual_ns``): a loop that does not skip missed targets (jitterdebugger, cyclictest
  with some timers) fires them at once after a stall, each looking less late than the one before;
- *missed periods*: right after a late or catch-up wake-up, a wake-up with overruns or a ``seq`` gap
  before it carries the periods the stall made the thread miss (the capture writes them on the next row).

An episode's missed periods are its overruns, its ``seq`` gaps and its catch-up wake-ups (each is a target
that had passed, which the capture would have skipped and counted as an overrun).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..derive import derive_counters, overruns_from_expected
from ..errors import AnalysisError
from .defaults import TRANSITION_WINDOW
from .results import Episode

COUNTER_COLUMNS = ("tsc", "aperf", "mperf", "smi", "run_cpu", "read_cycles")


@dataclass
class _Open:
    """The episode still open at the end of a batch (its later rows may come in the next batch)."""

    episode: Episode


class ThreadEpisodes:
    """Mergeable accumulator of one thread's episodes.

    Parameters
    ----------
    thread, cpu, interval_ns
        The thread, its pinned CPU (-1 when unknown) and its interval (0 when unknown).
    threshold_ns
        A wake-up is late when its latency exceeds this.
    tsc_hz
        TSC frequency for the effective frequency (None: estimated per batch from ``tsc`` and ``actual_ns``).
    relative_threshold
        A relative change of the effective frequency above this within the window is a transition.
    window
        Wake-ups either side of an episode searched for a transition.
    """

    def __init__(self, thread: int, cpu: int, interval_ns: int, threshold_ns: float, *,
                 tsc_hz: float | None = None, relative_threshold: float = 0.05,
                 window: int = TRANSITION_WINDOW) -> None:
        self.thread, self.cpu, self.interval_ns = int(thread), int(cpu), int(interval_ns)
        self.threshold_ns = float(threshold_ns)
        self.tsc_hz, self.relative_threshold, self.window = tsc_hz, float(relative_threshold), int(window)
        self.episodes: list[Episode] = []
        self.wakeups = 0
        self.first_expected_ns: int | None = None
        self.last_actual_ns: int | None = None
        self.notes: set[str] = set()
        self._open: _Open | None = None
        self._carry: dict[str, int] | None = None  # the previous row's raw values
        self._tail_f = np.empty(0)  # effective frequency of the previous batch's last `window` rows

    def update(self, columns: Mapping[str, np.ndarray]) -> ThreadEpisodes:
        """Add the next batch of this thread's rows (columns ``seq``, ``expected_ns``, ``actual_ns``,
        optionally ``overruns`` and the counter columns), in ``seq`` order."""
        seq = np.asarray(columns["seq"], dtype=np.int64)
        n = seq.size
        if n == 0:
            return self
        expected = np.asarray(columns["expected_ns"], dtype=np.int64)
        actual = np.asarray(columns["actual_ns"], dtype=np.int64)
        latency = actual - expected
        carry = self._carry
        prev_actual = np.concatenate([[carry["actual_ns"] if carry else np.iinfo(np.int64).min], actual[:-1]])
        prev_seq = np.concatenate([[carry["seq"] if carry else -1], seq[:-1]])
        late = latency > self.threshold_ns
        catch_up = expected <= prev_actual
        # a catch-up wake-up is a target that had passed: a period the capture would have skipped and counted
        missed = self._missed(columns, seq, expected, carry) + (seq - prev_seq - 1) + catch_up
        base = late | catch_up
        was_member = np.concatenate([[self._open is not None], base[:-1]])
        member = base | ((missed > 0) & was_member)
        f_eff, c0, smi = self._counters(columns, seq, expected, actual, carry)

        if self.first_expected_ns is None:
            self.first_expected_ns = int(expected[0])
        self.last_actual_ns = int(actual[-1])
        self.wakeups += n
        c0_median = float(np.nanmedian(c0)) if np.isfinite(c0).any() else None
        f_window = np.concatenate([self._tail_f, f_eff])
        offset = self._tail_f.size

        if self._open is not None and not member[0]:  # the previous batch's open episode ended with it
            self.episodes.append(self._open.episode)
            self._open = None
        starts = np.flatnonzero(member & ~np.concatenate([[False], member[:-1]]))
        ends = np.flatnonzero(member & ~np.concatenate([member[1:], [False]]))
        pieces = self._episodes(starts, ends, expected=expected, actual=actual, seq=seq, latency=latency,
                                late=late, catch_up=catch_up, missed=missed, base=base, smi=smi, c0=c0,
                                c0_median=c0_median, f_window=f_window, offset=offset)
        for s, e, piece in zip(starts.tolist(), ends.tolist(), pieces, strict=True):
            if s == 0 and self._open is not None:
                piece = _join(self._open.episode, piece)
                self._open = None
            if e == n - 1:
                self._open = _Open(piece)
            else:
                self.episodes.append(piece)
        self._carry = {"seq": int(seq[-1]), "expected_ns": int(expected[-1]), "actual_ns": int(actual[-1])}
        for name in COUNTER_COLUMNS:
            if name in columns:
                self._carry[name] = int(np.asarray(columns[name])[-1])
        self._tail_f = f_window[-self.window:] if self.window else np.empty(0)
        return self

    def _episodes(self, starts: np.ndarray, ends: np.ndarray, *, expected: np.ndarray, actual: np.ndarray,
                  seq: np.ndarray, latency: np.ndarray, late: np.ndarray, catch_up: np.ndarray, missed: np.ndarray,
                  base: np.ndarray, smi: np.ndarray, c0: np.ndarray, c0_median: float | None,
                  f_window: np.ndarray, offset: int) -> list[Episode]:
        """One :class:`Episode` per run of member rows [starts[i], ends[i]] of a batch, every field computed for
        all runs at once (segment reductions: a batch of 10^6 wake-ups can hold 10^5 episodes)."""
        if starts.size == 0:
            return []
        n = latency.size
        marks = np.zeros(n + 1, dtype=np.int64)
        marks[starts] += 1
        marks[ends + 1] -= 1
        inside = np.cumsum(marks[:-1]) > 0  # the rows of some run (runs do not touch: they are maximal)
        starts_at = np.zeros(n, dtype=np.int64)
        starts_at[starts] = 1
        run = np.cumsum(starts_at) - 1  # the run of each row inside one (outside: the run before, or -1)

        # reduceat reduces from each start to the next one; rows outside the runs are neutral values
        def total(values: np.ndarray) -> np.ndarray:
            return np.add.reduceat(np.where(inside, values, 0), starts)

        lowest = np.iinfo(np.int64).min
        timed_end = np.maximum.reduceat(np.where(inside & base, actual, lowest), starts)
        end_ns = np.where(timed_end == lowest, actual[starts], timed_end)
        peak = np.maximum.reduceat(np.where(inside, latency, lowest), starts)
        hit = inside & (latency == peak[np.clip(run, 0, None)])
        first_hit = np.full(starts.size, n, dtype=np.int64)
        rows = np.flatnonzero(hit)
        np.minimum.at(first_hit, run[rows], rows)  # the first row of each run holding its peak (as argmax)
        smi_count = total(np.nan_to_num(smi, nan=0.0))
        late_count = total(late.astype(np.int64))
        catch_count = total((catch_up & ~late).astype(np.int64))
        missed_count = total(missed.astype(np.int64))
        transitions = self._transitions(f_window, offset + starts, offset + ends)
        c0_first = c0[starts]
        return [
            Episode(thread=self.thread, cpu=self.cpu, start_ns=start_ns, end_ns=end, first_seq=first_seq,
                    wakeups=wakeups, late_wakeups=late_n, catch_up_wakeups=catch_n, missed_periods=missed_n,
                    peak_latency_ns=peak_ns, peak_at_ns=peak_at, smi_count=smi_n, transition=transition,
                    c0_before=None if not math.isfinite(c0_s) else c0_s, c0_median=c0_median)
            for start_ns, end, first_seq, wakeups, late_n, catch_n, missed_n, peak_ns, peak_at, smi_n, transition,
            c0_s in zip(expected[starts].tolist(), end_ns.tolist(), seq[starts].tolist(),
                        (ends - starts + 1).tolist(), late_count.tolist(), catch_count.tolist(),
                        missed_count.tolist(), peak.tolist(), actual[first_hit].tolist(), smi_count.tolist(),
                        transitions, c0_first.tolist(), strict=True)
        ]

    def _transitions(self, f_eff: np.ndarray, first: np.ndarray, last: np.ndarray) -> list[tuple[float, float] | None]:
        """(f_eff before, f_eff after) in Hz for each run [first[i], last[i]] (rows of ``f_eff``) when the effective
        frequency moved by more than the threshold within ± the window around it, else None; all runs at once."""
        lo = np.maximum(first - self.window, 0)
        hi = np.minimum(last + self.window + 1, f_eff.size)  # exclusive
        finite = np.isfinite(f_eff)
        padded = np.append(f_eff, np.nan)  # reduceat needs every index inside the array
        pairs = np.empty(2 * lo.size, dtype=np.int64)
        pairs[0::2], pairs[1::2] = lo, hi
        low = np.fmin.reduceat(padded, pairs)[0::2]
        high = np.fmax.reduceat(padded, pairs)[0::2]
        count = np.add.reduceat(np.append(finite, False).astype(np.int64), pairs)[0::2]
        # the first finite value at or after each window's start (inside the window when count >= 1)
        position = np.where(finite, np.arange(f_eff.size), f_eff.size)
        following = np.minimum.accumulate(position[::-1])[::-1]
        before = padded[following[lo]]
        with np.errstate(invalid="ignore", divide="ignore"):
            moved = (count >= 2) & (low > 0) & (high / low - 1 > self.relative_threshold)
        after = np.where(np.abs(high - before) >= np.abs(low - before), high, low)
        return [(b, a) if m else None for m, b, a in zip(moved.tolist(), before.tolist(), after.tolist(), strict=True)]

    def _missed(self, columns: Mapping[str, np.ndarray], seq: np.ndarray, expected: np.ndarray,
                carry: Mapping[str, int] | None) -> np.ndarray:
        if "overruns" in columns:
            return np.asarray(columns["overruns"], dtype=np.int64)
        if self.interval_ns <= 0:
            return np.zeros(seq.size, np.int64)
        with_carry = carry is not None
        s = np.concatenate([[carry["seq"]], seq]) if with_carry else seq
        x = np.concatenate([[carry["expected_ns"]], expected]) if with_carry else expected
        try:
            out = overruns_from_expected(s, x, self.interval_ns)
        except AnalysisError:
            self.notes.add(f"thread {self.thread}: expected_ns steps are not whole intervals, so missed periods "
                           "are counted from seq gaps only")
            return np.zeros(seq.size, np.int64)
        return out[1:] if with_carry else out

    def _counters(self, columns: Mapping[str, np.ndarray], seq: np.ndarray, expected: np.ndarray,
                  actual: np.ndarray, carry: Mapping[str, int] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nan = np.full(seq.size, np.nan)
        present = [c for c in COUNTER_COLUMNS if c in columns]
        if not ({"smi"} & set(present) or {"mperf", "tsc"} <= set(present)):
            return nan, nan, nan
        with_carry = carry is not None and all(c in carry for c in present)

        def joined(name: str, values: np.ndarray) -> np.ndarray:
            values = np.asarray(values, dtype=np.int64)
            return np.concatenate([[carry[name]], values]) if with_carry else values  # type: ignore[index]

        derived = derive_counters(
            seq=joined("seq", seq), expected_ns=joined("expected_ns", expected),
            actual_ns=joined("actual_ns", actual), cpu=self.cpu, thread=self.thread, tsc_hz=self.tsc_hz,
            **{name: joined(name, columns[name]) for name in present},
        )
        cut = 1 if with_carry else 0
        return derived.f_eff_hz[cut:], derived.c0[cut:], derived.smi_delta[cut:]

    def finish(self) -> ThreadEpisodes:
        """Close the episode still open (call once, after the last batch)."""
        if self._open is not None:
            self.episodes.append(self._open.episode)
            self._open = None
        return self

    def merge(self, other: ThreadEpisodes) -> ThreadEpisodes:
        """Add the episodes of ``other`` (the same thread, finished, covering later rows)."""
        if other.thread != self.thread:
            raise AnalysisError(f"cannot merge episodes of thread {other.thread} into thread {self.thread}")
        self.finish()
        other.finish()
        self.episodes.extend(other.episodes)
        self.wakeups += other.wakeups
        if self.first_expected_ns is None:
            self.first_expected_ns = other.first_expected_ns
        if other.last_actual_ns is not None:
            self.last_actual_ns = max(self.last_actual_ns or other.last_actual_ns, other.last_actual_ns)
        self.notes |= other.notes
        return self


def _join(first: Episode, second: Episode) -> Episode:
    """One episode from an open episode and its continuation in the next batch."""
    peak = first if first.peak_latency_ns >= second.peak_latency_ns else second
    timed = second.late_wakeups + second.catch_up_wakeups > 0  # carriers of missed periods do not extend the span
    return replace(
        first, end_ns=max(first.end_ns, second.end_ns) if timed else first.end_ns,
        wakeups=first.wakeups + second.wakeups,
        late_wakeups=first.late_wakeups + second.late_wakeups,
        catch_up_wakeups=first.catch_up_wakeups + second.catch_up_wakeups,
        missed_periods=first.missed_periods + second.missed_periods, peak_latency_ns=peak.peak_latency_ns,
        peak_at_ns=peak.peak_at_ns, smi_count=first.smi_count + second.smi_count,
        transition=first.transition or second.transition,
    )


def merge_episodes(episodes: Sequence[Episode]) -> list[list[Episode]]:
    """Group episodes (of any threads) whose ``[start_ns, end_ns]`` spans overlap, in time order.

    A sweep over the episodes sorted by start: an episode joins the current group when it starts no later
    than the latest end seen in the group, so chains of overlaps become one group.
    """
    ordered = sorted(episodes, key=lambda e: (e.start_ns, e.thread))
    groups: list[list[Episode]] = []
    reach = None
    for episode in ordered:
        if groups and reach is not None and episode.start_ns <= reach:
            groups[-1].append(episode)
            reach = max(reach, episode.end_ns)
        else:
            groups.append([episode])
            reach = episode.end_ns
    return groups
