"""counters.py: f_eff, C0 and ΔSMI from raw counters, with every guard on known small cases."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.derive import (
    REASON_FIRST,
    REASON_IMPLAUSIBLE,
    REASON_MIGRATION,
    REASON_NOT_COUNTING,
    REASON_RESET,
    REASON_SLOW_READ,
    derive_counters,
    read_counters,
    thread_rows,
)
from jitterscope.errors import AnalysisError

TSC_HZ = 2.0e9
PERIOD_NS = 1_000_000


def _rows(freq_hz: np.ndarray, c0: np.ndarray, *, origin: int = 10**12, smi_at: tuple[int, ...] = ()) -> dict:
    """Counters of a thread whose interval i (before wake-up i) ran at freq_hz[i] with C0 fraction c0[i]."""
    n = freq_hz.size
    expected = 5_000_000_000 + PERIOD_NS * np.arange(n, dtype=np.int64)
    actual = expected + 2_000
    tsc_step = TSC_HZ * PERIOD_NS / 1e9
    d_mperf = np.rint(tsc_step * c0).astype(np.int64)
    d_aperf = np.rint(tsc_step * c0 * freq_hz / TSC_HZ).astype(np.int64)
    d_mperf[0] = d_aperf[0] = 0
    smi = np.zeros(n, dtype=np.int64)
    for i in smi_at:
        smi[i:] += 1
    return {
        "seq": np.arange(n, dtype=np.int64), "expected_ns": expected, "actual_ns": actual,
        "tsc": origin + np.arange(n, dtype=np.int64) * int(tsc_step),
        "aperf": origin + np.cumsum(d_aperf), "mperf": origin + np.cumsum(d_mperf), "smi": 7 + smi,
        "run_cpu": np.full(n, 3, np.int32), "read_cycles": np.full(n, 300, np.int32),
    }


def test_hand_computed_frequency_c0_and_smi():
    freq = np.array([0, 2.0e9, 3.0e9, 1.0e9, 3.0e9])
    c0 = np.array([0, 0.5, 0.1, 1.0, 0.02])
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **_rows(freq, c0, smi_at=(2, 4)))
    assert np.isnan(s.f_eff_hz[0]) and np.isnan(s.c0[0]) and np.isnan(s.smi_delta[0])
    np.testing.assert_allclose(s.f_eff_hz[1:], freq[1:], rtol=1e-6)
    np.testing.assert_allclose(s.c0[1:], c0[1:], rtol=1e-6)
    np.testing.assert_array_equal(s.smi_delta[1:], [0, 1, 0, 1])
    np.testing.assert_array_equal(s.latency_ns, np.full(5, 2_000))
    assert s.quality.valid == 4 and s.quality.discarded == {REASON_FIRST: 1}
    assert s.tsc_hz_source == "metadata"


def test_tsc_frequency_estimated_when_metadata_lacks_it():
    rows = _rows(np.full(50, 2.4e9), np.full(50, 0.2))
    s = derive_counters(cpu=3, tsc_hz=None, **rows)
    assert s.tsc_hz == pytest.approx(TSC_HZ, rel=1e-9)
    assert s.tsc_hz_source.startswith("estimated")
    np.testing.assert_allclose(s.f_eff_hz[1:], 2.4e9, rtol=1e-5)


def test_narrow_counter_wrap_is_corrected_not_discarded():
    # a 48-bit perf counter: APERF and MPERF wrap at 2**48 half way through
    n = 20
    rows = _rows(np.full(n, 3.0e9), np.full(n, 0.5), origin=2**48 - 5 * 1_000_000)
    for name in ("aperf", "mperf"):
        rows[name] = rows[name] % 2**48
    assert np.any(np.diff(rows["aperf"]) < 0) and np.any(np.diff(rows["mperf"]) < 0)
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    np.testing.assert_allclose(s.f_eff_hz[1:], 3.0e9, rtol=1e-6)
    np.testing.assert_allclose(s.c0[1:], 0.5, rtol=1e-6)
    assert s.quality.wraps_corrected == {"aperf": 1, "mperf": 1}
    assert s.quality.counter_bits["aperf"] == 48
    assert s.quality.discarded == {REASON_FIRST: 1}


def test_64_bit_wrap_through_int64_storage():
    # uint64 counters stored as int64 cross 2**63 (the int64 sign flip) and 2**64 (back to 0)
    n = 10
    for origin in (2**63 - 3 * 1_000_000, 2**64 - 3 * 1_000_000):
        rows = _rows(np.full(n, 2.0e9), np.full(n, 1.0), origin=0)
        for name in ("aperf", "mperf", "tsc"):
            rows[name] = ((rows[name].astype(object) + origin) % 2**64).astype(np.uint64).view(np.int64)
        s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
        np.testing.assert_allclose(s.f_eff_hz[1:], 2.0e9, rtol=1e-6)
        assert s.quality.valid == n - 1


def test_smi_counter_wraps_at_32_bits():
    rows = _rows(np.full(6, 2e9), np.full(6, 0.5))
    rows["smi"] = np.array([2**32 - 2, 2**32 - 1, 0, 1, 1, 1], dtype=np.int64)
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    np.testing.assert_array_equal(s.smi_delta[1:], [1, 1, 1, 0, 0])
    assert s.quality.wraps_corrected["smi"] == 1


def test_reset_is_discarded_and_counted():
    rows = _rows(np.full(10, 2e9), np.full(10, 0.5))
    rows["aperf"][6:] -= rows["aperf"][6] - 5  # counter written back to ~0 before row 6
    rows["mperf"][6:] -= rows["mperf"][6] - 3
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    assert np.isnan(s.f_eff_hz[6]) and np.isnan(s.c0[6])
    assert s.quality.discarded[REASON_RESET] == 1
    np.testing.assert_allclose(s.f_eff_hz[7:], 2e9, rtol=1e-6)


def test_migration_discards_both_deltas_touching_the_row():
    rows = _rows(np.full(10, 2e9), np.full(10, 0.5))
    rows["run_cpu"][4] = 5
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    assert np.isnan(s.f_eff_hz[4]) and np.isnan(s.f_eff_hz[5]) and np.isfinite(s.f_eff_hz[6])
    assert s.quality.discarded[REASON_MIGRATION] == 2
    assert np.isnan(s.smi_delta[4]) and np.isnan(s.smi_delta[5])


def test_slow_read_outlier_is_discarded():
    rows = _rows(np.full(40, 2e9), np.full(40, 0.5))
    rows["read_cycles"] = 300 + (np.arange(40) % 7).astype(np.int32)
    rows["read_cycles"][10] = 40_000
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    assert s.quality.discarded[REASON_SLOW_READ] == 2
    assert np.isnan(s.f_eff_hz[10]) and np.isnan(s.f_eff_hz[11])
    assert 306 < s.quality.read_cycles_limit < 40_000


def test_all_zero_counters_are_reported():
    rows = _rows(np.full(10, 2e9), np.full(10, 0.5))
    rows["aperf"][:] = 0
    rows["mperf"][:] = 0
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    assert not s.has_frequency and not s.has_c0
    assert s.quality.all_zero == ("aperf", "mperf")
    assert s.quality.discarded[REASON_NOT_COUNTING] == 9


def test_implausible_ratio_is_discarded():
    rows = _rows(np.full(10, 2e9), np.full(10, 0.5))
    rows["aperf"][5:] += 10**9  # APERF jumps by half a second of cycles in one millisecond
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    assert s.quality.discarded[REASON_IMPLAUSIBLE] == 1 and np.isnan(s.f_eff_hz[5])


def test_length_mismatch_is_an_analysis_error():
    rows = _rows(np.full(10, 2e9), np.full(10, 0.5))
    rows["aperf"] = rows["aperf"][:5]
    with pytest.raises(AnalysisError, match="aperf"):
        derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)


def _write(tmp_path, rows: dict, counters_meta: dict | None, name: str = "d.parquet"):
    n = rows["seq"].size
    columns = {"cpu": np.full(n, 3, np.int32), "thread": np.zeros(n, np.int32), **rows}
    meta = Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=3, interval_ns=PERIOD_NS, samples=n),),
                    counters=counters_meta, clock={"tsc_hz": TSC_HZ})
    return open_dataset(write_dataset(pa.table(columns), meta, tmp_path / name))


def test_read_counters_from_a_dataset_shuffled_rows(tmp_path):
    rows = _rows(np.full(30, 2.5e9), np.full(30, 0.25))
    order = np.random.default_rng(0).permutation(30)
    ds = _write(tmp_path, {k: v[order] for k, v in rows.items()}, {"source": "msr", "columns": ["aperf"]})
    found = read_counters(ds)
    assert found.available and len(found.series) == 1
    np.testing.assert_allclose(found.series[0].f_eff_hz[1:], 2.5e9, rtol=1e-6)


def test_missing_columns_give_the_reason_from_metadata(tmp_path):
    rows = _rows(np.full(30, 2.5e9), np.full(30, 0.25))
    for name in ("aperf", "mperf", "smi"):
        del rows[name]
    reason = "cannot open /dev/cpu/3/msr: No such file or directory"
    ds = _write(tmp_path, rows, {"source": "none", "columns": [], "missing": {"aperf": reason, "mperf": reason}})
    found = read_counters(ds)
    assert not found.available
    assert found.reason.startswith("counters not recorded (") and reason in found.reason
    assert "\n" not in found.reason


def test_all_zero_dataset_is_unavailable_with_reason(tmp_path):
    rows = _rows(np.full(30, 2.5e9), np.full(30, 0.25))
    rows["aperf"][:] = 0
    rows["mperf"][:] = 0
    rows["smi"][:] = 0
    found = read_counters(_write(tmp_path, rows, None))
    assert not found.available and "zero on every wake-up" in found.reason


def test_without_tsc_column_intervals_come_from_the_monotonic_clock():
    rows = _rows(np.full(20, 2.4e9), np.full(20, 0.25))
    del rows["tsc"]
    s = derive_counters(cpu=3, tsc_hz=TSC_HZ, **rows)
    np.testing.assert_allclose(s.f_eff_hz[1:], 2.4e9, rtol=1e-6)
    np.testing.assert_allclose(s.c0[1:], 0.25, rtol=1e-6)
    assert "no tsc column" in s.tsc_hz_source


def test_thread_rows_gives_each_chosen_thread_its_rows_in_seq_order():
    thread = np.array([2, 1, 2, 1, 2, 3])
    seq = np.array([5, 1, 3, 0, 4, 0])
    got = [(t, rows.tolist()) for t, rows in thread_rows(thread, seq)]
    assert got == [(1, [3, 1]), (2, [2, 4, 0]), (3, [5])]
    assert [(t, rows.tolist()) for t, rows in thread_rows(thread, seq, threads=[3, 2])] == [(2, [2, 4, 0]), (3, [5])]
    assert all(type(t) is int for t, _ in thread_rows(thread, seq))
