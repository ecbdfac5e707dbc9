"""cpufreq.py: transitions on known step series, time in frequency, the claimed-vs-measured check."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.derive import CounterQuality, CounterSeries
from jitterscope.errors import AnalysisError
from jitterscope.power import analyse_frequency, check_claimed, detect_transitions, time_in_frequency

PERIOD_NS = 16_666_667


def _series(f_mhz: np.ndarray, *, cpu: int = 2) -> CounterSeries:
    n = f_mhz.size
    f = np.asarray(f_mhz, dtype=np.float64) * 1e6
    return CounterSeries(
        thread=0, cpu=cpu, tsc_hz=2.4e9, tsc_hz_source="metadata", seq=np.arange(n, dtype=np.int64),
        expected_ns=10**9 + PERIOD_NS * np.arange(n, dtype=np.int64), latency_ns=np.full(n, 3000, np.int64),
        f_eff_hz=f, c0=np.full(n, 0.05), smi_delta=np.zeros(n),
        quality=CounterQuality(rows=n, valid=n, discarded={}),
    )


def test_steps_with_mid_interval_samples_and_a_blip():
    f = np.array([np.nan] + [2400] * 10 + [2900] + [3400] * 8 + [1200] + [3400] * 6 + [1600] * 5, dtype=float)
    rng = np.random.default_rng(1)
    f[1:] *= 1 + 0.003 * rng.standard_normal(f.size - 1)  # 0.3 % measurement noise
    t = detect_transitions(_series(f), relative_threshold=0.05, min_dwell=3)
    # the 2900 sample is the interval in which the P-state changed; the lone 1200 is a blip, not a level
    assert t.index == (11, 27)
    np.testing.assert_allclose(t.from_hz, [2400e6, 3400e6], rtol=0.01)
    np.testing.assert_allclose(t.to_hz, [3400e6, 1600e6], rtol=0.01)
    assert [lv.start_index for lv in t.levels] == [0, 11, 27]
    assert t.levels[-1].end_index == f.size
    assert t.time_ns == (10**9 + 11 * PERIOD_NS, 10**9 + 27 * PERIOD_NS)


def test_dwell_and_threshold_are_honoured():
    f = np.array([2000.0] * 10 + [2060.0] * 10 + [2400.0] * 2 + [2000.0] * 10)
    # +3 % is under a 5 % threshold; a 2-sample level is shorter than a dwell of 3; at 2 % the
    # 2060 level differs from both 2000 levels (the 2400 blip between them is no level)
    assert detect_transitions(_series(f), relative_threshold=0.05, min_dwell=3).count == 0
    assert detect_transitions(_series(f), relative_threshold=0.02, min_dwell=3).index == (10, 20)
    assert detect_transitions(_series(f), relative_threshold=0.05, min_dwell=2).index == (20, 22)


def test_bad_parameters_raise():
    with pytest.raises(AnalysisError, match="threshold"):
        detect_transitions(_series(np.full(5, 2000.0)), relative_threshold=5)
    with pytest.raises(AnalysisError, match="dwell"):
        detect_transitions(_series(np.full(5, 2000.0)), min_dwell=0)


def test_time_in_frequency_weights_by_interval():
    f = np.array([np.nan] + [1234.0] * 30 + [3456.0] * 10)
    tif = time_in_frequency(_series(f), bin_mhz=100)
    assert tif.lower_mhz == (1150.0, 3450.0)
    np.testing.assert_allclose(tif.seconds, [30 * PERIOD_NS / 1e9, 10 * PERIOD_NS / 1e9])
    np.testing.assert_allclose(tif.fraction, [0.75, 0.25])


def _env(cpu: int, khz: int, governor: str) -> dict:
    return {"cpufreq": {str(cpu): {"driver": "intel_pstate", "governor": governor, "cur_khz": khz,
                                   "min_khz": 800_000, "max_khz": 3_400_000}}}


def test_claim_check_fires_when_frequency_moves():
    f = np.tile(np.repeat([2400.0, 3400.0, 1600.0], 20), 5)
    s = _series(f)
    check = check_claimed(s, detect_transitions(s), _env(2, 2_400_000, "performance"))
    assert check.disagree
    assert check.fraction_within == pytest.approx(1 / 3)
    assert "cpufreq claims 2400 MHz (governor performance)" in check.message and "14 transitions" in check.message


def test_claim_check_agrees_on_a_steady_cpu_and_without_metadata():
    s = _series(np.full(300, 801.0) * (1 + 0.002 * np.random.default_rng(0).standard_normal(300)))
    check = check_claimed(s, detect_transitions(s), _env(2, 800_000, "powersave"))
    assert not check.disagree and check.fraction_within == 1.0
    nothing = check_claimed(s, detect_transitions(s), None)
    assert not nothing.disagree and nothing.claimed_mhz is None and "not recorded" in nothing.message


def test_analyse_frequency_skips_threads_without_frequency():
    with_f = _series(np.full(50, 2000.0))
    without = _series(np.full(50, np.nan), cpu=3)
    result = analyse_frequency([with_f, without], None)
    assert [t.cpu for t in result.transitions] == [2]
    assert result.to_json()["claims"][0]["cpu"] == 2


def test_segment_median_is_numpys_median_for_odd_and_even_sizes():
    from jitterscope.power.cpufreq import _median

    rng = np.random.default_rng(3)
    for size in [1, 2, 3, 4, 5, 10, 11, 1000, 1001]:
        values = rng.choice([1.6e9, 2.4e9, 3.4e9], size) * (1 + 1e-3 * rng.standard_normal(size))
        assert _median(values) == float(np.median(values)), size
