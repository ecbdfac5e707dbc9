"""A Lomb-Scargle candidate's local false-alarm probability (spectrum/lombscargle.py ``_local_fap``), computed for
all candidates at once (issue 25: one median per candidate was 40% of a real capture's periodogram), is the
definition's value bit for bit: the median power 2 .. LOCAL_REACH resolution elements either side, over ln 2,
Šidák over the band, what there is of the neighbourhood near the band's ends, 1 where too little is there."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.spectrum.lombscargle import LOCAL_REACH, _local_fap


def _definition(power: np.ndarray, candidates: np.ndarray, per_peak: int) -> np.ndarray:
    tested = max(power.size / per_peak, 1.0)
    out = np.ones(candidates.size)
    for k, idx in enumerate(candidates):
        near = [i for i in range(idx - LOCAL_REACH * per_peak, idx + LOCAL_REACH * per_peak + 1)
                if 0 <= i < power.size and abs(i - idx) > 2 * per_peak]
        if len(near) < 4 * per_peak:
            continue
        level = float(np.median(power[near])) / np.log(2.0)
        p = np.exp(-power[idx] / level) if level > 0 else 1.0
        out[k] = -np.expm1(tested * np.log1p(-min(p, 1.0 - 1e-16)))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_all_candidates_at_once_are_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size, per_peak = int(rng.integers(20, 1500)), int(rng.integers(1, 6))
    power = rng.exponential(1.0, size) * (1e-3 if seed % 3 == 0 else 1.0)
    if seed % 4 == 1:
        power[rng.integers(0, size, size // 2)] = 0.0  # zero levels: probability 1
    candidates = np.sort(rng.choice(size, size=int(rng.integers(1, size)), replace=False))
    assert np.array_equal(_local_fap(power, candidates, per_peak), _definition(power, candidates, per_peak))


def test_a_line_above_its_neighbourhood_is_significant_and_the_floor_is_not() -> None:
    power = np.full(2000, 0.01)
    power[1000] = 1.0  # a hundred times its neighbourhood's level
    fap = _local_fap(power, np.array([500, 1000, 1990]), 5)
    assert fap[1] < 1e-20 and fap[0] == 1.0 and fap[2] == 1.0  # exp(-69.3) x 400 elements; the floor: 1
    short = np.full(20, 0.01)
    short[10] = 1.0
    assert _local_fap(short, np.array([10]), 5)[0] == 1.0  # 10 of the 20 neighbours needed: not tested
