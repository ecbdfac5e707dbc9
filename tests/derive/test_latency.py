"""derive: hand-computed small cases and simulated data with a known TSC."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.derive import (
    latency_ns,
    overruns_from_expected,
    period_error_ns,
    period_ns,
    seq_gaps,
    tsc_latency_ns,
    tsc_period_ns,
)
from jitterscope.errors import AnalysisError
from jitterscope.io import Drops, SimulationSpec, Stalls, simulate


def test_latency_period_and_error_by_hand():
    batch = pa.record_batch({"expected_ns": [1000, 2000, 3000], "actual_ns": [1010, 2500, 3001]})
    assert latency_ns(batch).tolist() == [10, 500, 1]
    assert period_ns(np.array([1010, 2500, 3001])).tolist() == [1490, 501]
    assert period_error_ns(np.array([1010, 2500, 3001]), 1000).tolist() == [490, -499]
    with pytest.raises(AnalysisError):
        latency_ns(pa.record_batch({"actual_ns": [1]}))
    with pytest.raises(AnalysisError):
        period_error_ns(np.array([1, 2]), 0)


def test_seq_gaps_by_hand():
    positions, counts = seq_gaps(np.array([2, 3, 4, 8, 9, 11]))
    assert positions.tolist() == [0, 3, 5] and counts.tolist() == [2, 3, 1]
    positions, counts = seq_gaps(np.array([0, 1, 2]))
    assert positions.size == counts.size == 0
    with pytest.raises(AnalysisError, match="strictly increasing"):
        seq_gaps(np.array([0, 2, 2]))


def test_tsc_clock_agrees_with_monotonic_on_simulated_data():
    spec = SimulationSpec(threads=1, samples=5000, tsc_hz=2_100_000_000.0)
    table, meta = simulate(spec, 1)
    latency = latency_ns(table)
    tsc = table.column("tsc").to_numpy()
    via_tsc = tsc_latency_ns(tsc, table.column("expected_ns").to_numpy(), meta.tsc_hz)
    # TSC ticks every 0.48 ns and is floored: the two clocks agree to a nanosecond
    assert np.max(np.abs(via_tsc - (latency - latency.min()))) < 1.0
    periods = tsc_period_ns(tsc, meta.tsc_hz)
    assert np.max(np.abs(periods - period_ns(table.column("actual_ns").to_numpy()))) < 1.0
    # a 0.1 % wrong TSC frequency shows as a linear drift of 1 µs per ms of run time
    wrong = tsc_latency_ns(tsc, table.column("expected_ns").to_numpy(), meta.tsc_hz * 1.001)
    assert np.ptp(wrong) > 4_000_000
    with pytest.raises(AnalysisError, match="TSC frequency"):
        tsc_latency_ns(tsc, tsc, 0)


def test_overruns_from_expected_match_the_column():
    spec = SimulationSpec(threads=1, samples=20_000, effects=(Stalls(probability=3e-3),))
    table, _ = simulate(spec, 2)
    derived = overruns_from_expected(table.column("seq").to_numpy(), table.column("expected_ns").to_numpy(),
                                     spec.interval_ns)
    assert np.array_equal(derived, table.column("overruns").to_numpy()) and derived.sum() > 10
    assert overruns_from_expected(np.array([0, 1, 4]), np.array([0, 2000, 9000]), 1000).tolist() == [0, 1, 4]
    with pytest.raises(AnalysisError, match="whole intervals"):
        overruns_from_expected(np.array([0, 1]), np.array([0, 1500]), 1000)
    with_drops = SimulationSpec(threads=1, samples=5000, effects=(Drops(probability=1e-2),))
    table, _ = simulate(with_drops, 2)
    assert overruns_from_expected(table.column("seq").to_numpy(), table.column("expected_ns").to_numpy(),
                                  1_000_000).sum() == 0
