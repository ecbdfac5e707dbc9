"""timeline_join: every wake-up lands in the turbostat interval that contains it (hand-checked boundaries)."""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.dataset import Metadata, ThreadInfo
from jitterscope.errors import AnalysisError, SchemaError
from jitterscope.io import SimulationSpec, simulate
from jitterscope.power import decode_timeline, join_timeline, overlap_note, wall_clock_ns

REALTIME_NS = 1_700_000_000_000_000_000
MONOTONIC_NS = 5_000_000_000


def _timeline(start_s: float, ends: list[float], bzy: dict[str, list], smi: dict[str, list]) -> dict:
    return {"source": "turbostat", "file": "t.txt", "interval_s": 1.0, "clock": "realtime",
            "time_from": "Time_Of_Day_Seconds", "columns": ["Bzy_MHz", "Busy%", "SMI"], "cpus": [0, 1],
            "start_s": [start_s, *ends[:-1]], "end_s": ends,
            "values": {cpu: {"Bzy_MHz": bzy[cpu], "Busy%": [50.0] * len(ends), "SMI": smi[cpu]} for cpu in bzy},
            "package": {"SMI": [sum(s[k] for s in smi.values()) for k in range(len(ends))]}}


def _metadata(timeline: dict | None) -> Metadata:
    return Metadata(kind="capture", threads=(ThreadInfo(0, 0, 1_000_000),),
                    clock={"realtime_ns": REALTIME_NS, "monotonic_ns": MONOTONIC_NS}, timeline=timeline)


def test_hand_checked_boundaries():
    # intervals (wall s): (1700000000.0, 1700000001.0], (…01.0, …02.5], (…02.5, …03.0]
    t0 = REALTIME_NS / 1e9
    doc = _timeline(t0, [t0 + 1.0, t0 + 2.5, t0 + 3.0],
                    {"0": [2400, 1200, 3000], "1": [2400, None, 800]}, {"0": [0, 1, 0], "1": [0, 1, 0]})
    meta = _metadata(doc)
    # wall = actual - MONOTONIC_NS + REALTIME_NS: offsets from t0 in ns
    offsets = np.array([0, 1, 1_000_000_000, 1_000_000_001, 2_500_000_000, 2_500_000_001, 3_000_000_000,
                        3_000_000_001, -5, 1_700_000_000])
    cpu = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 1])
    join = join_timeline(offsets + MONOTONIC_NS, cpu, meta)
    assert join.wall_ns.tolist() == (offsets + REALTIME_NS).tolist()
    assert join.interval.tolist() == [-1, 0, 0, 1, 1, 2, 2, -1, -1, 1]
    np.testing.assert_array_equal(join.bzy_mhz, [np.nan, 2400, 2400, 1200, 1200, 800, 800, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(join.smi, [np.nan, 0, 0, 1, 1, 0, 0, np.nan, np.nan, 1])
    np.testing.assert_array_equal(join.busy_pct[join.inside], 50.0)
    assert join.to_json() == {"rows": 10, "inside": 7, "interval_s": 1.0, "intervals_hit": 3}
    assert "covers 7 of 10 wake-ups (70.0%)" in overlap_note(join, decode_timeline(meta))
    assert decode_timeline(meta).to_json() == {"source": "turbostat", "file": "t.txt", "interval_s": 1.0,
                                               "intervals": 3, "start_ns": REALTIME_NS,
                                               "end_ns": REALTIME_NS + 3_000_000_000, "cpus": [0, 1]}


def test_cpu_absent_from_timeline_gets_nan():
    t0 = REALTIME_NS / 1e9
    meta = _metadata(_timeline(t0, [t0 + 1.0], {"0": [2400]}, {"0": [3]}))
    join = join_timeline(np.array([MONOTONIC_NS + 10, MONOTONIC_NS + 10]), np.array([0, 7]), meta)
    assert join.interval.tolist() == [0, 0]
    np.testing.assert_array_equal(join.bzy_mhz, [2400, np.nan])
    np.testing.assert_array_equal(join.smi, [3, np.nan])


def test_simulated_capture_with_a_planted_frequency_step():
    # 2 threads on CPUs 0 and 1, 1 kHz for 10 s; turbostat at 1 s with a step 2400 -> 1200 MHz from block 6
    spec = SimulationSpec(threads=2, interval_ns=1_000_000, duration_ns=10_000_000_000)
    table, meta = simulate(spec, seed=7)
    realtime, monotonic = meta.clock["realtime_ns"], meta.clock["monotonic_ns"]
    first_wall_s = (realtime + spec.start_ns - monotonic) / 1e9
    t0 = first_wall_s - 0.25  # turbostat started 250 ms before the capture; block k ends at t0 + k + 1 (+ 0.3 ms)
    ends = [round(t0 + k + 1 + 0.0003, 6) for k in range(12)]
    bzy = [2400.0] * 6 + [1200.0] * 6
    doc = _timeline(round(t0 + 0.0003, 6), ends, {"0": bzy, "1": [b + 1 for b in bzy]},
                    {"0": [0] * 12, "1": [0] * 12})
    meta = meta.with_changes(timeline=doc)
    actual = table.column("actual_ns").to_numpy()
    cpu = table.column("cpu").to_numpy()
    join = join_timeline(actual, cpu, meta)
    # independent answer: whole microsecond-rounded ns edges, (start, end]
    wall = actual.astype(np.int64) + (realtime - monotonic)
    end_ns = np.array([round(e * 1e6) * 1000 for e in ends], dtype=np.int64)
    expected = np.array([int(np.argmax(w <= end_ns)) for w in wall])
    assert join.inside.all() and overlap_note(join, decode_timeline(meta)) is None
    np.testing.assert_array_equal(join.interval, expected)
    step_ns = end_ns[5]
    assert (join.bzy_mhz[(wall <= step_ns) & (cpu == 0)] == 2400).all()
    assert (join.bzy_mhz[(wall > step_ns) & (cpu == 0)] == 1200).all()
    assert (join.bzy_mhz[(wall > step_ns) & (cpu == 1)] == 1201).all()
    assert ((wall > step_ns).sum(), (wall <= step_ns).sum()) == (np.sum(join.interval >= 6), np.sum(join.interval < 6))


def test_no_overlap_is_refused_in_one_line():
    t0 = REALTIME_NS / 1e9 + 3600.0  # an hour after the capture
    meta = _metadata(_timeline(t0, [t0 + 1.0], {"0": [2400]}, {"0": [0]}))
    join = join_timeline(np.array([MONOTONIC_NS + 10]), np.array([0]), meta)
    with pytest.raises(AnalysisError, match="do not overlap") as info:
        overlap_note(join, decode_timeline(meta))
    assert "\n" not in str(info.value)


def test_missing_clock_or_timeline_or_malformed_timeline():
    with pytest.raises(AnalysisError, match="no turbostat timeline"):
        join_timeline(np.array([1]), np.array([0]), _metadata(None))
    no_clock = Metadata(kind="import", threads=(ThreadInfo(0, 0, 1_000_000),))
    with pytest.raises(AnalysisError, match="no clock realtime_ns/monotonic_ns pair"):
        wall_clock_ns(np.array([1]), no_clock)
    t0 = REALTIME_NS / 1e9
    bad = _timeline(t0, [t0 + 1.0, t0 + 2.0], {"0": [2400]}, {"0": [0, 0]})  # one Bzy_MHz for two intervals
    with pytest.raises(SchemaError, match="one value per interval"):
        decode_timeline(_metadata(bad))
    backwards = _timeline(t0, [t0 + 1.0, t0 + 0.5], {"0": [1, 2]}, {"0": [0, 0]})
    with pytest.raises(SchemaError, match="overlap or are empty"):
        decode_timeline(_metadata(backwards))
