"""The tail of interruption lengths: the timer tails' extreme-value machinery on a poll loop's gaps.

Per polled CPU, its interruptions (every gap at or above the threshold) in time order are the series: the
same peaks-over-threshold fit (:func:`jitterscope.tails.fit_summary`: threshold by parameter stability,
GPD, goodness of fit, block maxima, independence and stationarity checks, no extrapolation from a model
that fails them) with the interruption as the unit: P(gap > x) per interruption, and the gap exceeded about
once per hour or day at the CPU's rate of interruptions (their count over the time polled).  The events
above 100 µs, 1 ms and 10 ms are counted per hour whether or not the fit extrapolates.

A poll CPU's gaps are usually a mixture (the tick's few µs, IRQs, a thread's bursts, RT throttling's
50 ms): one generalised Pareto law rarely describes them above a threshold low enough to have data, and
then the checks withhold the return levels (the tail text says why) and only the counted events remain.
Imports without per-interruption rows (oslat's histogram) are refused: a fit needs each gap, in order.
"""

from __future__ import annotations

import numpy as np

from ..dataset import Dataset
from ..errors import AnalysisError
from ..tails import EVT_PROMISE, TailsReport, fit_summary, summarize_series
from .read import PollData, read_poll

POLL_PROMISE = EVT_PROMISE.replace("if wake-ups are independent", "if interruptions are independent").replace(
    "A latency bound for a real-time system", "A bound on the interruptions of a real-time CPU")


def analyze_poll_tails(dataset: Dataset | PollData | str, *, levels_ns: tuple[float, ...] = (),
                       confidence: float = 0.90) -> TailsReport:
    """Tail fit of every polled CPU's interruption lengths; CPUs with too few are in ``skipped`` with why.

    Raises
    ------
    AnalysisError
        Not a poll dataset, no per-interruption rows (a histogram import), or no CPU with enough
        interruptions for a fit.
    """
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must be in (0, 1), not {confidence}")
    data = dataset if isinstance(dataset, PollData) else read_poll(dataset)
    path = data.dataset.path
    if not data.has_rows:
        raise AnalysisError(f"{path}: a poll dataset without per-interruption rows (imported from a histogram): "
                            "a tail fit needs every interruption's length in order; capture with "
                            "'jitterscope capture --mode poll'")
    fits, skipped = [], []
    for thread in data.threads:
        order = np.argsort(thread.start_ns, kind="stable")
        lengths = thread.duration_ns[order]
        seconds = thread.runtime_ns / 1e9
        if not lengths.size or seconds <= 0:
            skipped.append((thread.thread, f"CPU {thread.cpu} has no interruptions to fit"))
            continue
        try:
            summary = summarize_series(lengths, levels_ns=levels_ns)
            fits.append(fit_summary(summary, interval_ns=1, rate_hz=lengths.size / seconds, thread=thread.thread,
                                    cpu=thread.cpu, confidence=confidence, unit="interruption"))
        except AnalysisError as exc:
            skipped.append((thread.thread, str(exc)))
    if not fits:
        reason = skipped[0][1] if skipped else "no polled CPU"
        raise AnalysisError(f"{path}: no polled CPU can be tail-fitted ({reason}); poll for longer or lower "
                            "--poll-threshold")
    return TailsReport(str(path), tuple(fits), tuple(skipped), promise=POLL_PROMISE,
                       levels_ns=tuple(float(x) for x in levels_ns), unit="interruption")
