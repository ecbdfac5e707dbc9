"""find_events on planted simulations: each SMI one event on every CPU, a shared stall one event listing both CPUs
with its missed periods, causes from counters, counts with Poisson intervals, and a rate change between halves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from jitterscope.dataset import open_dataset
from jitterscope.events import (
    IDLE_EXIT,
    SMI,
    TRANSITION,
    UNEXPLAINED,
    event_rates_table,
    find_events,
    poisson_interval,
)
from jitterscope.io import (
    BaseLatency,
    IdleStates,
    PeriodicDisturbance,
    PStates,
    SharedStalls,
    SimulationSpec,
    SMIs,
    write_simulation,
)
from jitterscope.tails import clustered_interval, decluster
from scipy import stats as scipy_stats

INTERVAL = 1_000_000
STALLS_S = (3.3, 12.7)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    spec = SimulationSpec(threads=2, interval_ns=INTERVAL, samples=20_000, effects=(
        SMIs(rate_hz=0.5, duration_ns=1_500_000),
        SharedStalls(times_ns=tuple(int(s * 1e9) for s in STALLS_S), duration_ns=4_200_000)))
    path = write_simulation(spec, tmp_path_factory.mktemp("events") / "planted.parquet", 3)
    return open_dataset(path)


def test_every_smi_is_one_event_on_both_cpus(planted) -> None:
    events = find_events(planted)
    smi_times = planted.metadata.ground_truth["smi"]["times_ns"]["values"]
    assert len(smi_times) >= 5
    smi_events = [e for e in events.events if SMI in e.cause_kinds]
    assert len(smi_events) == len(smi_times)
    for event, planted_ns in zip(smi_events, smi_times, strict=True):
        assert event.cpus == (0, 1)
        assert event.start_ns - INTERVAL <= planted_ns <= event.start_ns  # the first target inside the SMI
        assert event.peak_latency_ns <= 1_500_000


def test_a_stall_of_two_cpus_is_one_event_with_its_missed_periods(planted) -> None:
    events = find_events(planted)
    stalls = [e for e in events.events if e.cause_kinds == (UNEXPLAINED,)]
    assert [round(e.start_s, 3) for e in stalls] == list(STALLS_S)
    for event in stalls:
        assert event.cpus == (0, 1) and event.threads == (0, 1)
        assert 4_200_000 <= event.peak_latency_ns <= 4_220_000  # the stall plus the base latency (~3 µs)
        assert event.missed_periods == 2 * 4  # each CPU skips the 4 targets that passed during the stall
        assert event.late_wakeups == 2
        assert event.start_utc is not None and event.start_utc.startswith("2025-11-30T00:00:")
    assert len(events.events) == len(stalls) + len(planted.metadata.ground_truth["smi"]["times_ns"]["values"])


def test_counts_and_rates_have_cluster_aware_poisson_intervals(planted) -> None:
    events = find_events(planted)
    # at a 1 ms interval "above 1 ms" and "above one interval" are the same level: one rate, both names
    (above_1ms,) = [r for r in events.rates if r.level_ns == 1_000_000]
    assert above_1ms.label == "above 1 ms = one interval"
    assert len({r.level_ns for r in events.rates}) == len(events.rates)
    assert above_1ms.count == sum(1 for e in events.events if e.peak_latency_ns > 1_000_000)
    starts = [e.start_ns for e in events.events if e.peak_latency_ns > 1_000_000]
    found = decluster(np.array(starts, dtype=float))
    assert above_1ms.clusters == found.clusters
    low, high = clustered_interval(above_1ms.count, found.clusters, 0.95)
    assert above_1ms.ci_low_per_s == pytest.approx(low / events.observed_s)
    assert above_1ms.ci_high_per_s == pytest.approx(high / events.observed_s)
    assert events.observed_s == pytest.approx(20.0, abs=0.01)
    assert above_1ms.extrapolated  # 20 s: a rate per hour reaches beyond the run
    table = event_rates_table(events)
    assert len(table.rows) == len(events.rates)
    assert "extrapolated from 20.0 s" in table.notes[0] and "exact" not in table.notes[0].replace(
        "exact Poisson only if", "")


def test_poisson_interval_matches_tabulated_values() -> None:
    # Garwood intervals (e.g. Ulm 1990): 0 -> [0, 3.689], 10 -> [4.795, 18.39]
    assert poisson_interval(0) == pytest.approx((0.0, 3.68888), abs=1e-4)
    assert poisson_interval(10) == pytest.approx((4.79539, 18.39036), abs=1e-4)
    # the chi2 quantiles scipy.stats gives, computed without it (to the last bit or two)
    for count in (*range(50), 137, 1_000, 123_456):
        expected = (0.0 if count == 0 else scipy_stats.chi2.ppf(0.025, 2 * count) / 2,
                    scipy_stats.chi2.ppf(0.975, 2 * count + 2) / 2)
        assert poisson_interval(count) == pytest.approx(expected, rel=1e-14, abs=0.0), count
    assert poisson_interval(3, 0.9) == pytest.approx((scipy_stats.chi2.ppf(0.05, 6) / 2,
                                                      scipy_stats.chi2.ppf(0.95, 8) / 2), rel=1e-14)


def test_a_given_threshold_is_used_and_a_bad_one_refused(planted) -> None:
    from jitterscope.errors import AnalysisError
    events = find_events(planted, threshold_ns=2_000_000.0)
    assert [round(e.start_s, 3) for e in events.events] == list(STALLS_S)  # only the 4.2 ms stalls pass 2 ms
    assert any("above 100 µs are not counted" in note for note in events.notes)
    with pytest.raises(AnalysisError, match="positive"):
        find_events(planted, threshold_ns=-1.0)


def _dataset(tmp_path, effects, samples=30_000, seed=5):
    spec = SimulationSpec(threads=2, interval_ns=INTERVAL, samples=samples, effects=effects,
                          base=BaseLatency(median_ns=3_000, spread=0.2))
    return open_dataset(write_simulation(spec, tmp_path / "d.parquet", seed))


def test_coupled_frequency_transitions_are_named(tmp_path) -> None:
    ds = _dataset(tmp_path, (PStates(levels_mhz=(1200, 2400), dwell_ns=(200_000_000, 200_000_000),
                                     coupling_probability=1.0, coupling_amplitude_ns=60_000),))
    events = find_events(ds)
    # the two CPUs' step timelines are shifted by half a cycle, i.e. both switch every 200 ms at the same time:
    # each coupled transition time is one event
    cpus = ds.metadata.ground_truth["pstates"]["cpus"].values()
    coupled = {t for c in cpus for t, hit in zip(c["transition_ns"]["values"], c["coupled"]["values"], strict=True)
               if hit}
    assert len(coupled) > 100
    named = [e for e in events.events if TRANSITION in e.cause_kinds]
    assert len(named) >= 0.95 * len(coupled)
    assert len(events.events) - len(named) <= 0.05 * len(events.events)


def test_idle_exits_are_named_and_plain_spikes_are_not(tmp_path) -> None:
    ds = _dataset(tmp_path, (IdleStates(deep_probability=0.005, exit_latency_ns=60_000),
                             PeriodicDisturbance(frequency_hz=7, amplitude_ns=60_000, width_ns=1_000_000)))
    events = find_events(ds)
    deep = {int(x) for v in ds.metadata.ground_truth["idle"]["deep_expected_ns"].values() for x in v["values"]}
    idle = [e for e in events.events if IDLE_EXIT in e.cause_kinds]
    assert len(idle) >= 0.95 * len(deep) - 5  # a deep wake-up inside a periodic spike is one event with it
    # the periodic spikes (one wake-up per CPU each, both CPUs at once; no counter moves) stay unexplained
    periodic = [e for e in events.events if e.cause_kinds == (UNEXPLAINED,)]
    assert len(periodic) >= 0.9 * 7 * 30
    assert all(e.start_ns in deep or IDLE_EXIT not in e.cause_kinds for e in events.events)


def test_a_rate_that_changes_between_halves_is_detected(tmp_path) -> None:
    ds = _dataset(tmp_path, (PeriodicDisturbance(frequency_hz=5, amplitude_ns=80_000, width_ns=500_000,
                                                 stop_ns=15_000_000_000),), samples=30_000)
    events = find_events(ds)
    assert events.halves.first > 50 and events.halves.second == 0
    assert events.halves.p_value < 1e-12
    (tmp_path / "steady").mkdir()
    steady = find_events(_dataset(tmp_path / "steady",
                                  (PeriodicDisturbance(frequency_hz=5, amplitude_ns=80_000, width_ns=1_000_000),)))
    assert steady.halves.p_value > 0.05
    assert math.isclose(steady.halves.first, steady.halves.second, abs_tol=2)  # 75 bursts in each half


def test_histogram_data_is_refused_with_a_message(tmp_path) -> None:
    from jitterscope.cli import main
    from jitterscope.errors import AnalysisError
    out = tmp_path / "h.parquet"
    assert main(["import", "tests/data/formats/ct-hist.txt", "-o", str(out)]) == 0
    with pytest.raises(AnalysisError, match="histogram-only"):
        find_events(open_dataset(out))


def test_a_body_mode_too_common_to_be_spikes_raises_the_default_threshold(tmp_path) -> None:
    # one wake-up in ten exits deep idle (+30 µs) and a 7 Hz disturbance adds 200 µs: with a budget of 500 late
    # wake-ups the robust rule's threshold (crossed by ~6,000 idle exits) rises above the idle mode, and the 7 Hz
    # spikes are still every event; the rule says what happened
    from jitterscope.events import default_threshold_ns
    from jitterscope.summary import summarize
    ds = _dataset(tmp_path, (IdleStates(deep_probability=0.1, exit_latency_ns=30_000),
                             PeriodicDisturbance(frequency_hz=7, amplitude_ns=200_000, width_ns=1_000_000)))
    summary = summarize(ds)
    plain, _ = default_threshold_ns(summary, max_late=10**9)
    assert plain < 30_000
    threshold, rule = default_threshold_ns(summary, max_late=500)
    assert 30_000 < threshold < 200_000
    assert "too common to be spikes" in rule and "raised to" in rule and "give --threshold" in rule
    events = find_events(ds, threshold_ns=threshold)
    assert sum(e.wakeups for e in events.events) <= 500 + 20  # the budget, within the histogram's bucket
    assert sum(e.peak_latency_ns > 150_000 for e in events.events) >= 0.95 * 7 * 30  # every 7 Hz spike kept
    assert len(events.events) < 0.1 * 6_000  # not the idle exits
    # under the budget the rule is the robust one, unchanged
    assert default_threshold_ns(summary, max_late=10**9)[1].startswith("median")


def test_threads_on_their_own_clocks_are_never_joined(planted, tmp_path) -> None:
    """cyclictest -v rebuilds each thread's times from its own first wake-up: the planted two-CPU stalls, one
    event on both CPUs when the clocks agree, are per-thread events when the source says they do not."""
    from dataclasses import replace

    from jitterscope.dataset import write_dataset

    joined = find_events(planted)
    assert any(len(e.threads) == 2 for e in joined.events)
    meta = replace(planted.metadata, source={"format": "cyclictest-verbose", "files": [], "reconstructed": {},
                                             "notes": [], "absolute_times": False})
    apart = find_events(open_dataset(write_dataset(planted.read(), meta, tmp_path / "own-clocks.parquet")))
    assert all(len(e.threads) == 1 for e in apart.events)
    assert len(apart.events) == sum(len(e.threads) for e in joined.events)
    assert any("not on one clock" in note for note in apart.notes)


def test_storms_of_stalls_are_clusters_and_widen_the_rate_interval(tmp_path) -> None:
    """Six storms of four 2 ms stalls 50 ms apart, storms seconds apart: 24 events above 1 ms in far fewer
    clusters, and a 95 % interval that is the clusters' Poisson interval times the mean storm size, wider than
    Garwood's on 24 independent events (the rule it replaces)."""
    storms_s = (2.1, 5.9, 9.4, 13.2, 16.8, 19.5)
    times = tuple(int((s + 0.05 * k) * 1e9) for s in storms_s for k in range(4))
    spec = SimulationSpec(threads=1, interval_ns=INTERVAL, samples=22_000,
                          effects=(SharedStalls(times_ns=times, duration_ns=2_000_000),))
    events = find_events(open_dataset(write_simulation(spec, tmp_path / "storms.parquet", 4)))
    (above_1ms,) = [r for r in events.rates if r.level_ns == 1_000_000]
    assert above_1ms.count == 24 and 4 <= above_1ms.clusters <= 12  # θ is estimated from 23 gaps
    low, high = clustered_interval(24, above_1ms.clusters, 0.95)
    assert above_1ms.ci_low_per_s * events.observed_s == pytest.approx(low)
    assert above_1ms.ci_high_per_s * events.observed_s == pytest.approx(high)
    g_low, g_high = poisson_interval(24)
    assert high - low > 1.3 * (g_high - g_low)


def test_a_rate_change_between_halves_is_tested_on_clusters(tmp_path) -> None:
    """Five storms of six 2 ms stalls in the first half, two in the second: 30 against 12 events rejects a
    constant rate (p ≈ 0.008) as if every stall were independent; 5 against 2 storms does not."""
    storms_s = (1.3, 3.4, 5.2, 7.7, 9.1, 14.6, 18.2)
    times = tuple(int((s + 0.05 * k) * 1e9) for s in storms_s for k in range(6))
    spec = SimulationSpec(threads=1, interval_ns=INTERVAL, samples=20_000,
                          effects=(SharedStalls(times_ns=times, duration_ns=2_000_000),))
    events = find_events(open_dataset(write_simulation(spec, tmp_path / "halves.parquet", 4)),
                         threshold_ns=1_000_000.0)
    h = events.halves
    assert (h.first, h.second) == (30, 12)
    assert scipy_stats.binomtest(30, 42, 0.5).pvalue < 0.01
    assert 0 < h.clusters < 42 and "clusters of events" in h.test
    assert h.p_value > 0.05
