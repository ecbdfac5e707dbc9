"""simulate: deterministic, contract-valid, and every planted effect is where the ground truth says."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, validate_dataset
from jitterscope.io import (
    BaseLatency,
    Drops,
    IdleStates,
    PeriodicDisturbance,
    PStates,
    SimulationSpec,
    SMIs,
    SpecError,
    Stalls,
    load_spec,
    simulate,
    write_simulation,
)
from jitterscope.io.simulate import simulation as sim

CONSTANT = BaseLatency(distribution="constant", median_ns=2_000)
ALL_EFFECTS = (
    PeriodicDisturbance(frequency_hz=7, amplitude_ns=5_000, width_ns=1e6),
    PStates(coupling_probability=0.5, coupling_amplitude_ns=30_000, coupling_window=1),
    SMIs(rate_hz=2),
    Stalls(probability=2e-3),
    Drops(probability=2e-3),
    IdleStates(deep_probability=0.05),
)


def _thread(table, thread):
    df = table.to_pandas()
    return df[df.thread == thread].reset_index(drop=True)


def test_same_seed_same_rows_other_seed_other_rows():
    spec = SimulationSpec(threads=2, samples=3000, effects=ALL_EFFECTS)
    a, meta_a = simulate(spec, 5)
    b, meta_b = simulate(spec, 5)
    c, _ = simulate(spec, 6)
    assert a.equals(b) and meta_a == meta_b
    assert not a.equals(c)


def test_chunked_file_equals_in_memory_and_is_valid(tmp_path, monkeypatch):
    # small chunks so stalls, drops and P-state coupling cross chunk boundaries
    monkeypatch.setattr(sim, "CHUNK_SLOTS", 997)
    spec = SimulationSpec(threads=3, samples=6000, effects=ALL_EFFECTS)
    table, meta = simulate(spec, 11)
    path = write_simulation(spec, tmp_path / "s.parquet", 11)
    assert pq.ParquetFile(path).num_row_groups > 1
    dataset = open_dataset(path)
    assert dataset.read().equals(table)
    assert dataset.metadata == meta
    verdict = validate_dataset(path)
    assert verdict.valid, verdict.problems
    assert sum(t.overruns for t in meta.threads) > 0 and sum(t.drops for t in meta.threads) > 0


def test_metadata_marks_simulation_and_carries_spec():
    spec = SimulationSpec(threads=2, samples=100, governor="powersave")
    _, meta = simulate(spec, 1)
    assert meta.kind == "simulation"
    assert meta.environment["simulated"] is True
    assert {c["governor"] for c in meta.environment["cpufreq"].values()} == {"powersave"}
    assert meta.ground_truth["seed"] == 1
    assert SimulationSpec.from_json(meta.ground_truth["spec"]) == spec
    assert meta.tsc_hz == spec.tsc_hz


def test_realtime_start_is_claimed_and_rows_are_unchanged():
    default = SimulationSpec(threads=1, samples=50)
    claimed = SimulationSpec(threads=1, samples=50, realtime_ns=1_793_581_200_000_000_000)
    table, meta = simulate(claimed, 3)
    assert meta.clock["realtime_ns"] == 1_793_581_200_000_000_000
    assert simulate(default, 3).metadata.clock["realtime_ns"] == sim._REALTIME_AT_START_NS
    assert table.equals(simulate(default, 3).table)
    assert SimulationSpec.from_json(meta.ground_truth["spec"]) == claimed


def test_spec_json_round_trip_and_file(tmp_path):
    spec = SimulationSpec(threads=2, duration_ns=2_000_000_000, interval_ns=500_000, effects=ALL_EFFECTS,
                          base=BaseLatency(distribution="gamma", median_ns=4000, spread=0.5))
    text = json.dumps(spec.to_json())
    assert SimulationSpec.from_json(json.loads(text)) == spec
    path = tmp_path / "spec.json"
    path.write_text(text)
    assert load_spec(path) == spec
    assert spec.slots_per_thread == 4000


@pytest.mark.parametrize("bad, words", [
    ({"threads": 0}, "threads"),
    ({"samples": 10, "duration_ns": 10}, "not both"),
    ({"nonsense": 1}, "unknown field"),
    ({"effects": [{"type": "warp-drive"}]}, "unknown"),
    ({"effects": [{"type": "smi", "rate_hz": -1}]}, "rate_hz"),
    ({"effects": [{"type": "periodic", "bogus": 1}]}, "bogus"),
    ({"base": {"distribution": "cauchy"}}, "distribution"),
    ({"counters": ["tsc2"]}, "counters"),
    ({"realtime_ns": -1}, "realtime_ns"),
    ({"realtime_ns": "2026-11-02"}, "realtime_ns"),
])
def test_bad_spec_is_one_line_error(bad, words):
    with pytest.raises(SpecError) as info:
        SimulationSpec.from_json(bad)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_bad_spec_file(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text("{not json")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_spec(path)
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.json")


@pytest.mark.parametrize("distribution, spread", [("lognormal", 0.4), ("gamma", 0.5), ("exponential", 1.0)])
def test_base_distribution_has_the_asked_median(distribution, spread):
    spec = SimulationSpec(threads=1, samples=40_000,
                          base=BaseLatency(distribution=distribution, median_ns=5_000, spread=spread))
    table, _ = simulate(spec, 3)
    latency = table.column("actual_ns").to_numpy() - table.column("expected_ns").to_numpy()
    # standard error of a sample median is ~1.25 sigma / sqrt(n): well under 2 % here
    assert np.median(latency) == pytest.approx(5_000, rel=0.02)
    if distribution == "lognormal":
        assert np.std(np.log(latency)) == pytest.approx(spread, rel=0.03)


def test_periodic_spikes_hit_exactly_the_planted_windows():
    effect = PeriodicDisturbance(frequency_hz=10, amplitude_ns=50_000, width_ns=2_500_000, phase=0.25)
    spec = SimulationSpec(threads=2, samples=5000, base=CONSTANT, effects=(effect,))
    table, meta = simulate(spec, 0)
    truth = meta.ground_truth["periodic[0]"]
    first = truth["first_event_ns"]
    for thread in (0, 1):
        df = _thread(table, thread)
        latency = (df.actual_ns - df.expected_ns).to_numpy()
        into = (df.expected_ns.to_numpy() - first) % 100_000_000  # period of 10 Hz in ns
        planted = into < 2_500_000
        assert np.array_equal(latency == 52_000, planted)
        assert np.all(latency[~planted] == 2_000)
        # 2.5 ms windows every 100 ms at 1 kHz: 3 wake-ups per window (offsets 0, 1, 2 ms)
        assert planted.sum() == 3 * 50


def test_intermittent_sine_disturbance_only_inside_its_window():
    effect = PeriodicDisturbance(frequency_hz=50, amplitude_ns=10_000, shape="sine",
                                 start_ns=1_000_000_000, stop_ns=2_000_000_000, threads=(1,))
    spec = SimulationSpec(threads=2, samples=3000, base=CONSTANT, effects=(effect,))
    table, _ = simulate(spec, 0)
    for thread in (0, 1):
        df = _thread(table, thread)
        extra = (df.actual_ns - df.expected_ns - 2_000).to_numpy()
        rel = df.expected_ns.to_numpy() - spec.start_ns
        inside = (rel >= 1e9) & (rel < 2e9)
        assert np.all(extra[~inside] == 0)
        if thread == 0:
            assert np.all(extra == 0)
        else:
            expected = 5_000 * (1 + np.sin(2 * np.pi * 50 * rel[inside] / 1e9))
            assert np.allclose(extra[inside], expected, atol=0.5)


def test_pstates_give_planted_frequency_and_c0_and_coupled_spikes():
    effect = PStates(levels_mhz=(800, 3000), dwell_ns=(300_000_000, 200_000_000), c0_fraction=0.1,
                     coupling_probability=1.0, coupling_amplitude_ns=40_000, coupling_window=1)
    spec = SimulationSpec(threads=2, samples=4000, base=CONSTANT, effects=(effect,))
    table, meta = simulate(spec, 0)
    truth = meta.ground_truth["pstates"]["cpus"]
    for thread in (0, 1):
        df = _thread(table, thread)
        d_aperf = np.diff(df.aperf.to_numpy())
        d_mperf = np.diff(df.mperf.to_numpy())
        d_tsc = np.diff(df.tsc.to_numpy())
        mhz = spec.tsc_hz * d_aperf / d_mperf / 1e6
        c0 = d_mperf / d_tsc
        transitions = np.asarray(truth[str(thread)]["transition_ns"]["values"])
        levels = np.asarray(truth[str(thread)]["level_mhz"]["values"])
        # intervals that contain no transition run at one level: within counter rounding
        actual = df.actual_ns.to_numpy()
        crossing = np.searchsorted(transitions, actual[:-1]) != np.searchsorted(transitions, actual[1:])
        level_at = levels[np.searchsorted(transitions, actual[1:] + 1, side="right")]
        assert np.allclose(mhz[~crossing], level_at[~crossing], rtol=2e-3)
        assert np.allclose(c0, 0.1, rtol=2e-3)
        assert set(np.round(mhz[~crossing])) == {800.0, 3000.0}
        # coupling: exactly the wake-ups listed in the ground truth got the extra latency
        coupled = set(truth[str(thread)]["coupled_expected_ns"]["values"])
        latency = (df.actual_ns - df.expected_ns).to_numpy()
        hit = df.expected_ns.isin(coupled).to_numpy()
        assert hit.sum() == len(coupled) > 0
        assert np.all(latency[hit] == 42_000) and np.all(latency[~hit] == 2_000)


def test_random_pstates_never_repeat_a_level():
    effect = PStates(levels_mhz=(800, 1600, 2400), process="random", mean_dwell_ns=50_000_000)
    _, meta = simulate(SimulationSpec(threads=1, samples=5000, effects=(effect,)), 2)
    levels = np.asarray(meta.ground_truth["pstates"]["cpus"]["0"]["level_mhz"]["values"])
    assert levels.size > 50 and np.all(np.diff(levels) != 0)
    assert set(levels) == {800.0, 1600.0, 2400.0}


def test_smis_delay_wakeups_and_count_on_every_cpu():
    spec = SimulationSpec(threads=2, samples=5000, base=CONSTANT, effects=(SMIs(rate_hz=5, duration_ns=300_000),))
    table, meta = simulate(spec, 4)
    times = np.asarray(meta.ground_truth["smi"]["times_ns"]["values"])
    assert times.size == meta.ground_truth["smi"]["times_ns"]["count"] > 5
    for thread in (0, 1):
        df = _thread(table, thread)
        expected = df.expected_ns.to_numpy()
        last = np.searchsorted(times, expected, side="right") - 1
        inside = (last >= 0) & (expected < times[np.maximum(last, 0)] + 300_000)
        latency = (df.actual_ns - df.expected_ns).to_numpy()
        remaining = times[np.maximum(last, 0)] + 300_000 - expected
        assert np.array_equal(latency[inside], 2_000 + remaining[inside])
        assert np.all(latency[~inside] == 2_000)
        smi = df.smi.to_numpy()
        assert smi[-1] - smi[0] == np.sum((times > df.actual_ns.iloc[0]) & (times <= df.actual_ns.iloc[-1]))


def test_stalls_become_overruns_like_an_absolute_sleep_loop():
    spec = SimulationSpec(threads=1, samples=20_000, base=CONSTANT, effects=(Stalls(probability=5e-3, periods=2.5),))
    table, meta = simulate(spec, 9)
    df = _thread(table, 0)
    over = df.overruns.to_numpy()
    step = np.diff(df.expected_ns.to_numpy()) // spec.interval_ns
    assert np.array_equal(step, 1 + over[1:])
    assert set(over) == {0, 2}  # a 2.5-period stall skips two targets
    late = (df.actual_ns - df.expected_ns).to_numpy() >= spec.interval_ns
    assert np.array_equal(np.flatnonzero(late) + 1, np.flatnonzero(over))
    assert meta.threads[0].overruns == over.sum()
    assert np.array_equal(df.seq.to_numpy(), np.arange(len(df)))
    assert np.all(df.actual_ns.to_numpy()[:-1] < df.expected_ns.to_numpy()[1:])


def test_drops_are_seq_gaps_counted_in_metadata():
    spec = SimulationSpec(threads=2, samples=20_000, effects=(Drops(probability=1e-3, mean_burst=5),))
    table, meta = simulate(spec, 2)
    for thread in (0, 1):
        seq = _thread(table, thread).seq.to_numpy()
        gaps = int(np.sum(np.diff(seq) - 1)) + int(seq[0])
        assert gaps == meta.threads[thread].drops > 0
        assert seq[-1] == 19_999  # the last row is never dropped, so every drop leaves a visible gap
        assert len(seq) == meta.threads[thread].samples


def test_no_counters_when_not_asked():
    table, meta = simulate(SimulationSpec(threads=1, samples=10, counters=()), 0)
    assert not {"aperf", "mperf", "smi"} & set(table.column_names)
    assert set(meta.counters["missing"]) == {"aperf", "mperf", "smi", "perf_status"}


def test_deep_idle_lowers_c0_keeps_frequency_and_adds_exit_latency(monkeypatch):
    monkeypatch.setattr(sim, "CHUNK_SLOTS", 1009)  # the counter adjustment must carry across chunks
    effects = (PStates(levels_mhz=(2000,), dwell_ns=(10**15,), c0_fraction=0.2),
               IdleStates(deep_probability=0.2, exit_latency_ns=30_000, deep_c0_fraction=0.01))
    spec = SimulationSpec(threads=2, samples=5000, base=CONSTANT, effects=effects)
    table, meta = simulate(spec, 3)
    for thread in (0, 1):
        df = _thread(table, thread)
        deep = df.expected_ns.isin(meta.ground_truth["idle"]["deep_expected_ns"][str(thread)]["values"]).to_numpy()
        assert meta.ground_truth["idle"]["deep_expected_ns"][str(thread)]["count"] == deep.sum()
        assert 0.15 < deep.mean() < 0.25
        latency = (df.actual_ns - df.expected_ns).to_numpy()
        assert np.all(latency[deep] == 32_000) and np.all(latency[~deep] == 2_000)
        c0 = np.diff(df.mperf.to_numpy()) / np.diff(df.tsc.to_numpy())
        mhz = spec.tsc_hz * np.diff(df.aperf.to_numpy()) / np.diff(df.mperf.to_numpy()) / 1e6
        assert np.allclose(c0[deep[1:]], 0.01, rtol=0.01) and np.allclose(c0[~deep[1:]], 0.2, rtol=1e-3)
        assert np.allclose(mhz, 2000, rtol=0.01)
