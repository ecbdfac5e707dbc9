"""The per-thread invariants of docs/dataset-format.md, checked while streaming rows.

:class:`InvariantChecker` sees each thread's rows in order, batch by batch,
in O(batch) time and O(threads) memory.  Strict mode raises
:class:`SchemaError` at the first violation (what readers such as
``summarize`` want); otherwise it collects one line per problem (what
``jitterscope validate`` prints).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SchemaError
from .metadata import Metadata, ThreadInfo

_FIX = "the dataset breaks its contract; 'jitterscope validate' lists every problem"
MAX_PROBLEMS = 50
MAX_LATENCY_NS = float(2**62)
"""A latency this large (146 years) means damaged data; bounding it keeps int64 arithmetic exact."""


@dataclass
class _ThreadState:
    info: ThreadInfo
    rows: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    last_expected: int | None = None
    gaps: int = 0
    overruns: int = 0


class InvariantChecker:
    """Checks rows against the contract; feed each thread's rows in order with :meth:`check`."""

    def __init__(self, metadata: Metadata, *, where: str, strict: bool = True) -> None:
        self.where = where
        self.strict = strict
        self.kind = metadata.kind
        self.problems: list[str] = []
        self._threads = {info.thread: _ThreadState(info) for info in metadata.threads}

    def _problem(self, message: str) -> None:
        if self.strict:
            raise SchemaError(f"{self.where}: {message}; {_FIX}")
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append("... further problems not listed")

    def info(self, thread: int) -> ThreadInfo | None:
        """The metadata of ``thread``, or None (and a problem) when the metadata does not list it."""
        state = self._threads.get(thread)
        if state is None:
            self._problem(f"rows of thread {thread}, which metadata jitterscope.threads does not list")
            self._threads[thread] = _ThreadState(ThreadInfo(thread=thread, cpu=-1, interval_ns=0))
            return None
        return state.info

    def check(
        self, thread: int, cpu: np.ndarray, seq: np.ndarray, expected_ns: np.ndarray, actual_ns: np.ndarray,
        overruns: np.ndarray | None,
    ) -> None:
        """Check consecutive rows of one thread."""
        if seq.size == 0:
            return
        if self.info(thread) is None:
            return
        state = self._threads[thread]
        info = state.info
        if self._regular(state, cpu, seq, expected_ns, actual_ns, overruns):
            return
        if info.cpu >= 0 and np.any(cpu != info.cpu):
            self._problem(f"thread {thread}: rows with cpu {int(cpu[cpu != info.cpu][0])}, metadata says {info.cpu}")
        if state.last_seq is not None:
            seq = np.concatenate([[state.last_seq], seq])
            expected = np.concatenate([[state.last_expected], expected_ns])
            over = None if overruns is None else np.concatenate([[0], overruns])
        else:
            state.first_seq = int(seq[0])
            expected, over = expected_ns, overruns
            if seq[0] < 0:
                self._problem(f"thread {thread}: seq starts at {int(seq[0])}, below 0")
        state.rows += actual_ns.size
        state.overruns += 0 if overruns is None else int(overruns.sum())
        self._check_steps(thread, info.interval_ns, seq, expected, over, state)
        # bounds from reductions (cheap): |actual|, |expected| < 2**61 keep every latency below 2**62, exact in int64
        low, high = int(actual_ns.min()), int(actual_ns.max())
        first, last = int(expected_ns.min()), int(expected_ns.max())
        if max(-low, high, -first, last) >= MAX_LATENCY_NS / 2:
            latency = actual_ns.astype(np.float64) - expected_ns.astype(np.float64)
            absurd = np.abs(latency) >= MAX_LATENCY_NS
            if np.any(absurd):
                i = int(np.argmax(absurd))
                self._problem(f"thread {thread}: actual_ns - expected_ns is {latency[i]:.3g} ns at seq "
                              f"{int(seq[-actual_ns.size + i])}, beyond any possible latency")
        if self.kind == "capture":
            early = actual_ns < expected_ns
            if np.any(early):
                i = int(np.argmax(early))
                self._problem(f"thread {thread}: actual_ns < expected_ns at seq {int(seq[-actual_ns.size + i])} "
                              "(a capture never wakes early)")
        state.last_seq, state.last_expected = int(seq[-1]), int(expected[-1])

    def _regular(self, state: _ThreadState, cpu: np.ndarray, seq: np.ndarray, expected_ns: np.ndarray,
                 actual_ns: np.ndarray, overruns: np.ndarray | None) -> bool:
        """True (and the state advanced) for the common batch, checked in a few reductions: no overruns,
        consecutive ``seq`` steps of one interval each (after at most a drop from the previous batch), the
        metadata's cpu, times in bounds.  False sends the rows through the full check, which names any problem.
        """
        info = state.info
        interval, n = info.interval_ns, seq.size
        if interval <= 0 or (overruns is not None and int(overruns.sum()) != 0):
            return False
        first_seq, last_seq = int(seq[0]), int(seq[-1])
        first_expected, last_expected = int(expected_ns[0]), int(expected_ns[-1])
        gap = 0
        if state.last_seq is not None:
            assert state.last_expected is not None
            seq_step, step = first_seq - state.last_seq, first_expected - state.last_expected
            if seq_step == 1:
                if step != interval:
                    return False
            elif seq_step <= 0 or step <= 0 or step % interval or step // interval < seq_step:
                return False
            gap = seq_step - 1
        elif first_seq < 0:
            return False
        # n - 1 steps adding up to n - 1 (resp. (n - 1) intervals), none smaller than 1 (an interval): all equal
        if last_seq - first_seq != n - 1 or last_expected - first_expected != interval * (n - 1):
            return False
        if n > 1 and (_min_step(seq) < 1 or _min_step(expected_ns) < interval):
            return False
        if info.cpu >= 0 and not int(cpu.min()) == int(cpu.max()) == info.cpu:
            return False
        bound = MAX_LATENCY_NS / 2  # as in check: times in bounds keep every latency exact in int64
        if max(-int(actual_ns.min()), int(actual_ns.max()), -first_expected, last_expected) >= bound:
            return False
        if self.kind == "capture" and bool(np.less(actual_ns, expected_ns).any()):
            return False
        if state.last_seq is None:
            state.first_seq = first_seq
        state.rows += n
        state.gaps += gap
        state.last_seq, state.last_expected = last_seq, last_expected
        return True

    def _check_steps(
        self, thread: int, interval: int, seq: np.ndarray, expected: np.ndarray, over: np.ndarray | None,
        state: _ThreadState,
    ) -> None:
        dseq = np.diff(seq)
        if dseq.size == 0:
            return
        bad = dseq <= 0
        if np.any(bad):
            i = int(np.argmax(bad))
            self._problem(f"thread {thread}: seq goes from {int(seq[i])} to {int(seq[i + 1])}, not increasing")
            return
        state.gaps += int((dseq - 1).sum())
        step = np.diff(expected)
        skipped = 0 if over is None else over[1:]
        if interval > 0 and np.array_equal(step, interval * (dseq + skipped)):
            return  # the common case, checked without a division: every step exactly as seq and overruns say
        bad = step <= 0
        if np.any(bad):
            i = int(np.argmax(bad))
            self._problem(f"thread {thread}: expected_ns not increasing at seq {int(seq[i + 1])} "
                          f"({int(expected[i])} then {int(expected[i + 1])})")
            return
        if interval <= 0:
            self._problem(f"thread {thread}: metadata interval_ns is {interval}, not > 0")
            return
        bad = step % interval != 0
        if np.any(bad):
            i = int(np.argmax(bad))
            self._problem(f"thread {thread}: expected_ns steps by {int(step[i])} ns at seq {int(seq[i + 1])}, "
                          f"not a multiple of the interval {interval} ns (mixed intervals within a thread)")
            return
        periods = step // interval
        # with a drop the skipped rows' overruns are unknown, so only a lower bound holds there
        wrong = np.where(dseq == 1, periods != 1 + skipped, periods < dseq + skipped)
        if np.any(wrong):
            i = int(np.argmax(wrong))
            self._problem(f"thread {thread}: expected_ns advances {int(periods[i])} intervals at seq "
                          f"{int(seq[i + 1])}, but seq and overruns account for "
                          f"{int(dseq[i] + (0 if over is None else over[i + 1]))}")

    def finish(self, has_overruns: bool, *, empty_ok: bool = False) -> None:
        """Check the per-thread totals against the metadata (after all rows).

        ``empty_ok``: a dataset without rows is no problem (``validate`` on a capture that ended before its first
        wake-up, whose metadata says so); readers that need wake-ups keep refusing it.
        """
        total = sum(s.rows for s in self._threads.values())
        if total == 0 and empty_ok and not any(s.info.samples for s in self._threads.values()):
            return
        if total == 0:
            if self.strict:  # not a broken contract: nothing was recorded, so there is nothing to analyse
                raise SchemaError(f"{self.where}: the dataset has no rows (no wake-ups were recorded); nothing to "
                                  "analyse: capture for longer")
            self._problem("the dataset has no rows (no wake-ups were recorded)")
            return
        for thread, state in sorted(self._threads.items()):
            info = state.info
            if state.rows == 0:
                if info.samples:
                    self._problem(f"thread {thread}: metadata says {info.samples} samples, the data has none")
                continue
            if info.samples != state.rows:
                self._problem(f"thread {thread}: metadata says {info.samples} samples, the data has {state.rows}")
            drops = state.gaps + (state.first_seq or 0)
            if info.drops != drops:
                self._problem(f"thread {thread}: metadata says {info.drops} drops, seq gaps add up to {drops}")
            # overruns of dropped rows are counted in the metadata but not in the column
            too_few = info.overruns < state.overruns
            if has_overruns and (too_few or (info.drops == 0 and info.overruns != state.overruns)):
                self._problem(f"thread {thread}: metadata says {info.overruns} overruns, the overruns column "
                              f"adds up to {state.overruns}")


_STEP_BLOCK = 1 << 16  # rows per block in _min_step: 512 KiB of int64 differences, within a core's L2


def _min_step(values: np.ndarray) -> int:
    """``min(values[1:] - values[:-1])`` of int64 values (n >= 2), a cache-sized block at a time into one buffer:
    the whole difference array is never written and read back from memory (the check runs on the reading thread,
    before any analysis gets the batch)."""
    if values.dtype != np.int64:  # the contract's columns are int64; anything else keeps numpy's own diff
        return int(np.diff(values).min())
    n = values.size - 1
    buffer = np.empty(min(n, _STEP_BLOCK), dtype=np.int64)
    low = None
    for start in range(0, n, _STEP_BLOCK):
        stop = min(start + _STEP_BLOCK, n)
        block = int(np.subtract(values[start + 1:stop + 1], values[start:stop], out=buffer[:stop - start]).min())
        low = block if low is None else min(low, block)
    assert low is not None  # n >= 1
    return low
