"""What the power tests share: the reference computation the streamed nearness is checked against."""

from __future__ import annotations

import numpy as np


def near_rows(series, transitions, window: int) -> np.ndarray:
    """Rows within ±window wake-ups (by seq) of a transition: the direct, whole-series computation."""
    if transitions is None or transitions.count == 0:
        return np.zeros(series.seq.size, dtype=bool)
    marks = np.sort(np.asarray(transitions.seq, dtype=np.int64))
    right = np.clip(np.searchsorted(marks, series.seq), 0, marks.size - 1)
    left = np.clip(right - 1, 0, marks.size - 1)
    distance = np.minimum(np.abs(series.seq - marks[right]), np.abs(series.seq - marks[left]))
    return distance <= window
