"""stream.py: every streaming accumulator against the in-memory computation, merge == all at once, stated bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from jitterscope.dataset import open_dataset, write_dataset
from jitterscope.derive import (
    CounterQuality,
    CounterSeries,
    iter_counter_batches,
    iter_counter_chunks,
    read_counters,
    scan_counters,
)
from jitterscope.errors import AnalysisError
from jitterscope.io import simulate_story
from jitterscope.power import (
    correlate,
    correlate_dataset,
    cpufreq,
    detect_transitions,
    event_average,
    lagged_correlation,
)
from jitterscope.power.association import rank_test, rank_test_binned
from jitterscope.power.cpufreq import TransitionDetector
from jitterscope.power.stream import (
    RELATIVE_ERROR,
    ConditionCounts,
    DisplayRows,
    EventBlocks,
    LaggedRanks,
    SmiCounts,
    run_per_thread,
)
from jitterscope.summary import KeyedLatencyHistograms, LatencyHistogram
from scipy import stats

from .conftest import near_rows as _near


def _series(f: np.ndarray, latency: np.ndarray | None = None) -> CounterSeries:
    n = f.size
    latency = np.zeros(n, dtype=np.int64) if latency is None else latency
    nan = np.full(n, np.nan)
    return CounterSeries(0, 0, 2.4e9, "metadata", np.arange(n) + 7, np.arange(n) * 1000, latency, f, nan, nan,
                         CounterQuality(n, n, {}))


def _chunks(n: int, rng: np.random.Generator, pieces: int = 6) -> list[slice]:
    cuts = np.sort(rng.integers(0, n, size=pieces))
    edges = [0, *cuts.tolist(), n]
    return [slice(a, b) for a, b in itertools.pairwise(edges)]


def _cut(s: CounterSeries, part: slice) -> CounterSeries:
    from dataclasses import replace

    return replace(s, seq=s.seq[part], expected_ns=s.expected_ns[part], latency_ns=s.latency_ns[part],
                   f_eff_hz=s.f_eff_hz[part], c0=s.c0[part], smi_delta=s.smi_delta[part])


def _histogram(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = LatencyHistogram(1e-3).update(values).result()
    return np.asarray(r.bucket_lower_ns, dtype=np.float64), np.asarray(r.bucket_counts)


def test_mid_ranks_equal_scipy_average_ranks_where_buckets_are_single_values():
    rng = np.random.default_rng(1)
    values = rng.integers(-900, 1000, 5000)  # |v| < 1024: one value per bucket
    hist = LatencyHistogram(1e-3).update(values[:2000]).merge(LatencyHistogram(1e-3).update(values[2000:]))
    assert np.array_equal(hist.mid_ranks(values), stats.rankdata(values))


def test_binned_rank_test_is_exact_on_single_value_buckets_and_within_its_bound_otherwise():
    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 1000, 700), rng.integers(20, 1000, 900)
    exact, binned = rank_test(x, y), rank_test_binned(*_histogram(x), *_histogram(y))
    assert binned.u == exact.u and binned.cliffs_delta == pytest.approx(exact.cliffs_delta, abs=1e-12)
    assert binned.p_value == pytest.approx(exact.p_value, rel=1e-9) and binned.method == "histogram"
    # wide values: buckets of 0.1 % hold several values; the exact U lies within ±u_bound
    x, y = rng.lognormal(10, 1, 3000).astype(np.int64), rng.lognormal(10.05, 1, 4000).astype(np.int64)
    exact, binned = rank_test(x, y), rank_test_binned(*_histogram(x), *_histogram(y))
    assert abs(binned.u - exact.u) <= binned.u_bound and binned.u_bound < 1e-3 * x.size * y.size
    assert binned.p_value == pytest.approx(exact.p_value, abs=0.02)


def test_transition_detector_in_any_chunks_equals_detect_transitions():
    rng = np.random.default_rng(3)
    for _ in range(40):
        levels = rng.choice([1.6e9, 2.4e9, 3.0e9, 2.45e9], size=rng.integers(1, 30))
        f = np.repeat(levels, rng.integers(1, 150, size=levels.size)) * (1 + rng.normal(0, 0.01, 1))
        f[rng.random(f.size) < 0.1] = np.nan
        s = _series(f)
        whole = detect_transitions(s, relative_threshold=0.05, min_dwell=3)
        detector = TransitionDetector(0, 0, relative_threshold=0.05, min_dwell=3)
        for part in _chunks(f.size, rng):
            detector.update(_cut(s, part))
        assert detector.result() == whole


def test_long_segments_take_their_level_from_log_bins_within_the_stated_bound(monkeypatch):
    rng = np.random.default_rng(4)
    f = np.concatenate([rng.normal(2.0e9, 2e6, 5000), rng.normal(3.0e9, 3e6, 7000)])
    exact = detect_transitions(_series(f))
    monkeypatch.setattr(cpufreq, "SEGMENT_EXACT", 1000)
    binned = detect_transitions(_series(f))
    assert binned.index == exact.index == (5000,)
    for a, b in zip(exact.levels, binned.levels, strict=True):
        assert abs(a.level_hz - b.level_hz) <= 2 * cpufreq.SEGMENT_BIN * a.level_hz


def test_event_blocks_observed_means_are_exact_and_one_block_is_event_average():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, 6000)
    events = np.sort(rng.choice(np.arange(6000), 80, replace=False))
    x[events] += 3
    seed = np.random.SeedSequence(9)
    # blocks of 500: the observed mean still sees each event's true neighbours across block edges
    blocks = EventBlocks([("e", events)], max_lag=4, n_surrogates=50, seeds=[seed], block_rows=500)
    for part in _chunks(x.size, rng, 10):
        blocks.update(x[part], np.zeros(0, dtype=np.int64))
    (_name, average), = blocks.result(peak_halfwidth=1)
    lags = np.arange(-4, 5)
    expected = [np.mean([x[e + lag] for e in events if 0 <= e + lag < x.size]) for lag in lags]
    assert np.allclose(average.mean, expected, rtol=1e-12) and average.n_events == 80
    assert average.p_value < 0.05
    # one block (series shorter than two blocks): the whole-series method with the same random shifts
    one = EventBlocks([("e", events)], max_lag=4, n_surrogates=50, seeds=[seed])
    one.update(x, np.zeros(0, dtype=np.int64))
    (_, streamed), = one.result(peak_halfwidth=1)
    assert streamed == event_average(x, events, max_lag=4, peak_halfwidth=1, n_surrogates=50,
                                     rng=np.random.default_rng(seed))


def test_lagged_ranks_in_chunks_equal_lagged_correlation_on_single_value_buckets():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 1000, 4000)
    y = np.roll(x, 3) // 2 + rng.integers(0, 50, 4000)
    y_float = y.astype(np.float64)
    y_float[rng.random(4000) < 0.05] = np.nan
    exact = lagged_correlation(x.astype(np.float64), y_float, max_lag=5)
    hx = LatencyHistogram(1e-3).update(x)
    hy = LatencyHistogram(1e-3).update(y_float[np.isfinite(y_float)].astype(np.int64))
    ranks = LaggedRanks(hx, hy, max_lag=5)
    for part in _chunks(x.size, rng, 8):
        ranks.update(x[part], y_float[part])
    streamed = ranks.result()
    assert streamed.n == exact.n and np.allclose(streamed.r, exact.r, atol=1e-10)
    assert int(np.argmax(streamed.r)) == 5 + 3
    # missing values in x too (the general path): the same
    x_float = x.astype(np.float64)
    x_float[rng.random(4000) < 0.05] = np.nan
    exact = lagged_correlation(x_float, y_float, max_lag=5)
    ranks = LaggedRanks(LatencyHistogram(1e-3).update(x[np.isfinite(x_float)]), hy, max_lag=5)
    for part in _chunks(x.size, rng, 8):
        ranks.update(x_float[part], y_float[part])
    assert ranks.result().n == exact.n and np.allclose(ranks.result().r, exact.r, atol=1e-10)


def test_condition_and_smi_counts_merge_equals_all_at_once():
    rng = np.random.default_rng(7)
    latency = rng.integers(1000, 50_000, 3000)
    inside = rng.random(3000) < 0.2
    smi = np.where(rng.random(3000) < 0.1, 1.0, 0.0)
    smi[rng.random(3000) < 0.05] = np.nan
    whole = ConditionCounts((5000.0, 20000.0)).update(latency[inside], latency[~inside])
    a = ConditionCounts((5000.0, 20000.0)).update(latency[:1000][inside[:1000]], latency[:1000][~inside[:1000]])
    b = ConditionCounts((5000.0, 20000.0)).update(latency[1000:][inside[1000:]], latency[1000:][~inside[1000:]])
    a.merge(b)
    assert np.array_equal(a.exceed_in, whole.exceed_in) and np.array_equal(a.exceed_out, whole.exceed_out)
    assert a.inside.result() == whole.inside.result() and a.outside.result() == whole.outside.result()
    assert whole.exceed_in[0] == np.sum(latency[inside] > 5000)
    s_whole = SmiCounts().update(latency, smi, 20000.0)
    s_parts = SmiCounts().update(latency[:1500], smi[:1500], 20000.0).merge(
        SmiCounts().update(latency[1500:], smi[1500:], 20000.0))
    assert s_whole == s_parts and s_whole.spikes_with_smi == np.sum((latency > 20000) & (smi > 0))


def test_display_rows_keep_every_row_or_the_largest_latency_of_each_run():
    rng = np.random.default_rng(8)
    latency = rng.integers(0, 10_000, 1003)
    s = _series(np.full(1003, 2e9), latency)
    rows = DisplayRows(1003, limit=100)  # k = 11
    for part in _chunks(1003, rng, 7):
        rows.update(_cut(s, part))
    kept = rows.result()
    assert np.array_equal(kept.latency_ns, [latency[i:i + 11].max() for i in range(0, 1003, 11)])
    assert np.all(np.diff(kept.seq) > 0)
    # ties (a few distinct values) and chunks shorter than a run: the first row of each run's largest latency
    tied = rng.integers(0, 4, 1003)
    t = _series(np.full(1003, 2e9), tied)
    for sizes in ([1] * 1003, [5, 6, 11, 3, 978], [1003]):
        rows, at = DisplayRows(1003, limit=100), 0
        for size in sizes:
            rows.update(_cut(t, np.arange(at, at + size)))
            at += size
        first = [i + int(np.argmax(tied[i:i + 11])) for i in range(0, 1003, 11)]
        assert np.array_equal(rows.result().seq, t.seq[first]), sizes
    everything = DisplayRows(1003, limit=2000).update(s).result()
    assert np.array_equal(everything.latency_ns, latency)


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    """The SMI story in small row groups, so that every accumulator sees many chunks per thread."""
    smis = {"rate_hz": 2.0, "duration_ns": 3_000_000, "at_transitions": 0.6}
    table, metadata = simulate_story("performance", 3, seconds=120, threads=2, smis=smis)
    return open_dataset(write_dataset(table, metadata, tmp_path_factory.mktemp("stream") / "smi.parquet",
                                      row_group_size=2001))


@pytest.mark.parametrize("sub_chunk_rows, least", [(None, 3), (300, 20)])
def test_chunked_counter_derivation_equals_read_counters(story, monkeypatch, sub_chunk_rows, least):
    """Row groups of 2001 rows; with 300-row sub-chunks too, which after a batch's first start with the row
    before them (a view, not a copy): the same series either way."""
    import jitterscope.derive.counters as counters_module

    if sub_chunk_rows:
        monkeypatch.setattr(counters_module, "CHUNK_ROWS", sub_chunk_rows)
    whole = read_counters(story)
    parts: dict[int, list[CounterSeries]] = {}
    for chunk in iter_counter_chunks(story, scan_counters(story)):
        parts.setdefault(chunk.thread, []).append(chunk)
    for s in whole.series:
        assert len(parts[s.thread]) > least
        for name in ("seq", "expected_ns", "latency_ns", "f_eff_hz", "c0", "smi_delta"):
            joined = np.concatenate([getattr(c, name) for c in parts[s.thread]])
            assert np.array_equal(getattr(s, name), joined, equal_nan=True), name
        assert sum(c.quality.valid for c in parts[s.thread]) == s.quality.valid
        assert sum(c.quality.rows for c in parts[s.thread]) == s.quality.rows


def test_threads_derived_in_parallel_equal_the_chunks_in_order(story):
    """run_per_thread over iter_counter_batches: each thread's chunks in order, equal to iter_counter_chunks,
    though the threads' workers run concurrently (and one of them slowly, so they fall out of step)."""
    import threading
    import time

    expected: dict[int, list[CounterSeries]] = {}
    for chunk in iter_counter_chunks(story, scan_counters(story)):
        expected.setdefault(chunk.thread, []).append(chunk)
    seen: dict[int, list[CounterSeries]] = {}
    workers: dict[int, set[str]] = {}

    def handle(chunk: CounterSeries) -> None:
        if chunk.thread == 0:
            time.sleep(0.002)
        seen.setdefault(chunk.thread, []).append(chunk)
        workers.setdefault(chunk.thread, set()).add(threading.current_thread().name)

    run_per_thread(iter_counter_batches(story, scan_counters(story)), handle)
    assert sorted(seen) == sorted(expected) == [0, 1]
    for thread, chunks in expected.items():
        assert len(seen[thread]) == len(chunks) > 3
        for a, b in zip(seen[thread], chunks, strict=True):
            for name in ("seq", "latency_ns", "f_eff_hz", "c0", "smi_delta"):
                assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert len(workers[0]) == len(workers[1]) == 1 and workers[0] != workers[1]  # one worker per thread


def test_run_per_thread_raises_a_workers_error():
    chunk = _series(np.full(5, 2.4e9))

    def handle(c: CounterSeries) -> None:
        raise ValueError("broken accumulator")

    with pytest.raises(ValueError, match="broken accumulator"):
        run_per_thread(((0, lambda: iter([chunk])) for _ in range(10)), handle)


def test_streamed_dataset_equals_in_memory_correlation(story):
    counters = read_counters(story)
    threshold = float(np.percentile(np.concatenate([s.latency_ns for s in counters.series]), 99))
    streamed, _ = correlate_dataset(story, thresholds_ns=[threshold], n_surrogates=30)
    in_memory = correlate(counters, story.metadata.environment, thresholds_ns=[threshold], n_surrogates=30)
    assert streamed.verdicts == in_memory.verdicts and streamed.attributed == in_memory.attributed
    a, b = streamed.to_json(), in_memory.to_json()  # JSON: NaN (an undefined detectable ratio) as null
    for key in ("tests", "smi_shares", "event_averages", "counter_quality", "notes"):
        assert a[key] == b[key], key
    assert streamed.frequency.transitions == in_memory.frequency.transitions
    assert streamed.frequency.claims == in_memory.frequency.claims
    for x, y in zip(streamed.frequency.time_in_frequency, in_memory.frequency.time_in_frequency, strict=True):
        assert x.lower_mhz == y.lower_mhz and np.allclose(x.seconds, y.seconds, rtol=1e-12)  # sums in another order
    assert len(streamed.event_averages) == 4 and len(streamed.tests) > 6
    for a, b in zip(streamed.cross_correlations, in_memory.cross_correlations, strict=True):
        assert a.correlation.n == b.correlation.n and np.allclose(a.correlation.r, b.correlation.r, atol=1e-9,
                                                                              equal_nan=True)
    # the default threshold: the same rule on the HDR histogram, within its bucket width
    default, _ = correlate_dataset(story, n_surrogates=0)
    exact = correlate(counters, story.metadata.environment, n_surrogates=0)
    assert default.thresholds_ns[0] == pytest.approx(exact.thresholds_ns[0], rel=2e-3)
    assert default.params["methods"]["default_threshold"].startswith("HDR")
    assert exact.params["methods"]["default_threshold"] == "exact"
    assert default.attributed == exact.attributed


def test_streamed_quantiles_and_ranks_are_within_their_stated_bounds(story):
    counters = read_counters(story)
    result = correlate(counters, story.metadata.environment, n_surrogates=0)
    test = next(t for t in result.tests if t.scope == "cpu 0" and t.condition == "smi")
    series = counters.series[0]
    near = _near(series, result.frequency.transitions[0], result.window)
    smi = np.nan_to_num(series.smi_delta) > 0
    known = np.isfinite(series.smi_delta)
    inside, outside = series.latency_ns[smi & ~near], series.latency_ns[known & ~smi & ~near]
    assert (test.n_in, test.n_out) == (inside.size, outside.size)
    for (name, q), value in zip((("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)),
                                (test.quantiles_in_ns[k] for k in ("p50", "p90", "p99", "max")), strict=True):
        assert value == pytest.approx(np.percentile(inside, q), rel=1e-3), name
    exact = rank_test(inside, outside)
    assert abs(test.rank.u - exact.u) <= test.rank.u_bound


def test_c0_bins_outside_is_the_other_bins_and_the_unbinned_rest(story):
    """The C0 bins' outside is merged from the other bins' inside (condition_masks partitions the eligible rows):
    the same counts as the direct masks, including C0 values outside every bin (above 1 here)."""
    counters = read_counters(story)
    result = correlate(counters, story.metadata.environment, n_surrogates=0)
    series = counters.series[0]
    near = _near(series, result.frequency.transitions[0], result.window)
    smi = np.nan_to_num(series.smi_delta) > 0
    eligible = np.isfinite(series.c0) & ~smi & ~near
    edges = result.params["c0_edges"]
    seen = 0
    for low, high in itertools.pairwise(edges):
        test = next((t for t in result.tests if t.scope == "cpu 0" and t.condition == f"c0 {low:g}-{high:g}"), None)
        if test is None:
            continue
        upper = series.c0 <= high if high == edges[-1] else series.c0 < high
        inside = eligible & (series.c0 >= low) & upper
        assert (test.n_in, test.n_out) == (int(inside.sum()), int((eligible & ~inside).sum()))
        assert test.quantiles_out_ns["max"] == series.latency_ns[eligible & ~inside].max()
        seen += 1
    assert seen >= 2


@pytest.mark.parametrize("turbostat", [False, True])
def test_condition_classes_unions_equal_each_conditions_direct_masks(turbostat):
    """Every condition's inside and outside, as unions of classes, equal the masks the condition is defined by,
    with C0 on the bin edges, below and above every bin and missing, SMI counts missing, and (from a turbostat
    timeline) f_eff missing."""
    from jitterscope.power.stream import ConditionClasses

    rng = np.random.default_rng(11)
    n = 20_000
    edges = (0.0, 0.05, 0.5, 1.0)
    c0 = rng.random(n) * 1.3 - 0.1  # some below 0 and above 1: in no bin
    c0[rng.random(n) < 0.05] = np.nan
    c0[rng.choice(n, 400, replace=False)] = rng.choice(edges, 400)  # on the edges: the last bin holds 1.0
    smi = np.where(rng.random(n) < 0.05, 1.0, 0.0)
    smi[rng.random(n) < 0.05] = np.nan
    f = np.full(n, 2e9)
    f[rng.random(n) < 0.1] = np.nan
    latency = rng.integers(0, 10**6, n)
    s = CounterSeries(0, 0, 2.4e9, "metadata", np.arange(n), np.arange(n) * 1000, latency, f, c0, smi,
                      CounterQuality(n, n, {}))
    near = rng.random(n) < 0.05
    c0_names = [f"c0 {a:g}-{b:g}" for a, b in itertools.pairwise(edges)]
    classes = ConditionClasses(edges, transition="transition", smi="smi", c0_bins=c0_names)
    keys = classes.classes(s, near, turbostat=turbostat)
    by_class = KeyedLatencyHistograms(classes.size).update(latency, keys)
    with_smi, smi_known = np.nan_to_num(smi) > 0, np.isfinite(smi)
    away = ~near & ~with_smi
    f_known = np.isfinite(f) if turbostat else np.ones(n, dtype=bool)
    eligible = np.isfinite(c0) & away
    bins = [eligible & (c0 >= lo) & ((c0 <= hi) if hi == edges[-1] else (c0 < hi))
            for lo, hi in itertools.pairwise(edges)]
    direct = {"transition": (near & ~with_smi, away & f_known), "smi": (with_smi & ~near, away & smi_known),
              **{name: (inside, eligible & ~inside) for name, inside in zip(c0_names, bins, strict=True)}}
    assert int((eligible & (c0 > 1.0)).sum()) > 1000 and int((eligible & (c0 < 0)).sum()) > 1000
    for condition, (inside, outside) in direct.items():
        for got_keys, mask in ((classes.inside(condition), inside), (classes.outside(condition), outside)):
            got = by_class.merged(got_keys)
            assert got.count == int(mask.sum()) > 100, condition
            assert got.result() == LatencyHistogram(RELATIVE_ERROR).update(latency[mask]).result(), condition


def test_keyed_histograms_equal_one_histogram_per_key_and_merge_equals_all_at_once():
    rng = np.random.default_rng(13)
    n = 50_000
    values = np.concatenate([rng.integers(0, 2_000_000, n), rng.integers(10**9, 10**12, 100)])
    keys = rng.integers(0, 7, values.size)
    keys[values > 10**9] = 6  # one key holds the far tail
    whole = KeyedLatencyHistograms(8).update(values, keys)
    for k in range(8):
        expected = LatencyHistogram(1e-3).update(values[keys == k])
        assert whole.histograms[k].count == expected.count
        if expected.count:
            assert whole.histograms[k].result() == expected.result()
    assert whole.histograms[7].count == 0
    cut = 20_000
    parts = KeyedLatencyHistograms(8).update(values[:cut], keys[:cut])
    parts.merge(KeyedLatencyHistograms(8).update(values[cut:], keys[cut:]))
    assert all(a.result() == b.result() for a, b in zip(parts.histograms, whole.histograms, strict=True))
    assert whole.merged([0, 6]).result() == LatencyHistogram(1e-3).update(values[(keys == 0) | (keys == 6)]).result()
    # negative values (clock steps): each key's own subset, the same answer
    signed = values[:1000] - 500_000
    got = KeyedLatencyHistograms(8).update(signed, keys[:1000])
    assert all(got.histograms[k].result() == LatencyHistogram(1e-3).update(signed[keys[:1000] == k]).result()
               for k in range(7) if np.any(keys[:1000] == k))
    with pytest.raises(AnalysisError, match="keys must lie"):
        KeyedLatencyHistograms(2).update(values[:3], np.array([0, 1, 2]))


def _feed_runs(ranks: LaggedRanks, x: np.ndarray, y: np.ndarray, pieces: list[tuple[int, int]]) -> LaggedRanks:
    """``update`` on each piece ``[lo, hi)``, with a ``reset`` where a piece does not follow the one before."""
    fed = None
    for lo, hi in pieces:
        if lo != fed:
            ranks.reset()
        ranks.update(x[lo:hi], y[lo:hi])
        fed = hi
    return ranks


def test_lagged_ranks_reset_pairs_only_within_runs():
    """A RankSample's runs: pairs never span a gap, and the ranks stay those of the whole series."""
    rng = np.random.default_rng(12)
    x = rng.integers(0, 500, 6000)
    y = (np.roll(x, 2) + rng.integers(0, 200, 6000)).astype(np.float64)
    runs = [(100, 1500), (1500, 2000), (3000, 4700)]  # the first two touch: one run
    ranks = LaggedRanks(LatencyHistogram(1e-3).update(x), LatencyHistogram(1e-3).update(y.astype(np.int64)),
                        max_lag=4)
    got = _feed_runs(ranks, x, y, runs).result()
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    for k, lag in enumerate(range(-4, 5)):
        pairs = [(i, i + lag) for lo, hi in ((100, 2000), (3000, 4700)) for i in range(lo, hi) if lo <= i + lag < hi]
        a, b = rx[[p[0] for p in pairs]], ry[[p[1] for p in pairs]]
        assert got.n[k] == len(pairs)
        assert got.r[k] == pytest.approx(float(np.corrcoef(a, b)[0, 1]), abs=1e-10)
    assert int(np.argmax(got.r)) == 4 + 2
    # all runs at once (the rank sample's way): the same sums, with y missing in places too
    y[rng.random(6000) < 0.05] = np.nan
    for max_lag in (0, 1, 4, 40):
        hx, hy = ranks.x_ranks, ranks.y_ranks
        one_by_one, at_once = LaggedRanks(hx, hy, max_lag=max_lag), LaggedRanks(hx, hy, max_lag=max_lag)
        pieces = [(100, 1500), (1500, 1530), (1530, 2000), (3000, 3010), (3010, 4700)]
        _feed_runs(one_by_one, x, y, pieces)
        offsets = np.cumsum([0] + [hi - lo for lo, hi in pieces])
        breaks = [int(offsets[k]) for k in range(1, len(pieces)) if pieces[k][0] != pieces[k - 1][1]]
        rows = np.concatenate([np.arange(lo, hi) for lo, hi in pieces])
        at_once.update_runs(at_once.x_ranks_of(x[rows]), y[rows], np.array(breaks))
        assert one_by_one.result().n == at_once.result().n
        assert np.allclose(one_by_one.sums, at_once.sums, rtol=1e-10, atol=1e-3)


def test_rank_sample_chooses_whole_blocks_and_every_row_when_small():
    from jitterscope.power.stream import RankSample

    everything = RankSample(5000, np.random.SeedSequence(1), sample_rows=5000, block_rows=100)
    assert everything.note is None and everything.segments(1234, 300) == [(0, 300)]
    sample = RankSample(100_050, np.random.SeedSequence(1), sample_rows=10_000, block_rows=1000)
    assert int(sample.chosen.sum()) == 10 and sample.chosen.size == 101
    rng = np.random.default_rng(2)
    used = np.zeros(100_050, dtype=bool)
    start = 0
    for part in _chunks(100_050, rng, 30):
        n = part.stop - part.start
        for lo, hi in sample.segments(start, n):
            assert 0 <= lo < hi <= n and not used[start + lo:start + hi].any()
            used[start + lo:start + hi] = True
        start += n
    expected = np.repeat(sample.chosen, 1000)[:100_050]
    assert np.array_equal(used, expected)
    assert "10 blocks of 1,000" in sample.note and "of 100,050" in sample.note
    again = RankSample(100_050, np.random.SeedSequence(1), sample_rows=10_000, block_rows=1000)
    assert np.array_equal(again.chosen, sample.chosen)  # seeded: the same blocks every run


def test_event_sums_gather_equals_the_circular_formula():
    from jitterscope.power.association import event_sums

    rng = np.random.default_rng(13)
    for length, lag in ((1000, 10), (60, 3), (5000, 1)):
        x = rng.normal(size=length + 2 * lag)
        events = rng.integers(0, length, 17)
        shifts = rng.integers(2 * lag + 1, length - 2 * lag - 1, 30)
        lags = np.arange(-lag, lag + 1)
        where = (events[None, :, None] + shifts[:, None, None] + lags[None, None, :]) % length
        for hole in (False, True):
            if hole:
                x[lag + 5] = np.nan
            block = x[lag:lag + length]
            _, _, total, count = event_sums(x, lag, length, events, max_lag=lag, shifts=shifts)
            assert np.allclose(total, np.nansum(block[where], axis=1))
            assert np.array_equal(count, np.isfinite(block[where]).sum(axis=1))


def test_scan_from_row_group_statistics_equals_reading_the_columns(tmp_path, monkeypatch):
    """Counter widths and all-zero checks from the statistics when each row group holds one thread, else read."""
    from jitterscope.dataset import Dataset

    table, metadata = simulate_story("performance", 3, seconds=20, threads=1)
    single = open_dataset(write_dataset(table, metadata, tmp_path / "one.parquet", row_group_size=3000))
    maxima = single.thread_maxima(["aperf", "mperf", "smi"])
    assert maxima == {0: {name: int(table.column(name).to_numpy().max()) for name in ("aperf", "mperf", "smi")}}
    with_stats = scan_counters(single)
    monkeypatch.setattr(Dataset, "thread_maxima", lambda self, columns: None)
    assert scan_counters(single) == with_stats
    monkeypatch.undo()
    two, metadata = simulate_story("performance", 3, seconds=20, threads=2)
    threads = two.column("thread").to_numpy()
    assert threads[0] != threads[-1] and threads.size < 3000  # one row group holds both threads: read them
    mixed = open_dataset(write_dataset(two, metadata, tmp_path / "two.parquet", row_group_size=3000))
    assert mixed.thread_maxima(["aperf"]) is None
    by_thread = open_dataset(write_dataset(two, metadata, tmp_path / "split.parquet",
                                           row_group_size=int(np.count_nonzero(threads == threads[0]))))
    assert sorted(by_thread.thread_maxima(["aperf"])) == [0, 1]


def test_streamed_lagged_correlation_beyond_the_sample_size_uses_the_stated_blocks(story, monkeypatch):
    from jitterscope.power import stream
    from jitterscope.power.stream import RankSample

    counters = read_counters(story)
    full, _ = correlate_dataset(story, n_surrogates=0)
    assert all(link.correlation.sample is None for link in full.cross_correlations)
    monkeypatch.setattr(stream, "RANK_SAMPLE_ROWS", 3000)
    monkeypatch.setattr(stream, "RANK_BLOCK_ROWS", 500)
    sampled, _ = correlate_dataset(story, n_surrogates=0)
    assert sampled.verdicts == full.verdicts and sampled.tests == full.tests  # only the lagged ranks are sampled
    rows = {q["thread"]: q["rows"] for q in sampled.counter_quality}
    by_cpu = {q["cpu"]: q["thread"] for q in sampled.counter_quality}
    for link, whole in zip(sampled.cross_correlations, full.cross_correlations, strict=True):
        c = link.correlation
        thread = by_cpu[link.cpu]
        chosen = RankSample(rows[thread], np.random.SeedSequence([0, thread, 2])).chosen
        assert chosen is not None and c.sample and "6 blocks of 500" in c.sample
        blocks = np.flatnonzero(chosen)
        runs = np.split(blocks, np.flatnonzero(np.diff(blocks) > 1) + 1)
        spans = [(r[0] * 500, min((r[-1] + 1) * 500, rows[thread])) for r in runs]
        series = next(s for s in counters.series if s.thread == thread)
        other = (series.c0 if link.other == "C0 residency"
                 else np.abs(np.diff(np.concatenate(([np.nan], series.f_eff_hz)))))
        for lag, n in zip(c.lags, c.n, strict=True):  # pairs (latency[t], other[t + lag]) inside one run
            assert n == sum(int(np.isfinite(other[max(lo, lo + lag):min(hi, hi + lag)]).sum()) for lo, hi in spans)
        finite = np.isfinite(c.r) & np.isfinite(whole.correlation.r)
        assert np.all(np.abs(np.asarray(c.r)[finite] - np.asarray(whole.correlation.r)[finite])
                      <= 5 / np.sqrt(min(c.n)))


@pytest.mark.parametrize("pieces", [[1, 499], [2, 498], [5, 495], [3, 4, 493], [250, 250]])
def test_lagged_ranks_with_pieces_shorter_than_the_lag_equal_one_piece(pieces):
    """A thread's row group can hold fewer wake-ups than the lag (found: the spans went negative, pairs were
    lost, and a piece of 5 raised a broadcast error)."""
    rng = np.random.default_rng(14)
    x, y = rng.integers(0, 500, 500), rng.integers(0, 500, 500).astype(np.float64)
    hx, hy = LatencyHistogram(1e-3).update(x), LatencyHistogram(1e-3).update(y.astype(np.int64))
    whole = LaggedRanks(hx, hy, max_lag=10).update(x, y).result()
    ranks, at = LaggedRanks(hx, hy, max_lag=10), 0
    for size in pieces:
        ranks.update(x[at:at + size], y[at:at + size])
        at += size
    assert ranks.result().n == whole.n and np.allclose(ranks.result().r, whole.r, atol=1e-12)


def test_near_seqs_marks_the_rows_within_the_window_of_any_mark():
    from jitterscope.power.correlate import _near_seqs

    rng = np.random.default_rng(15)
    for _ in range(100):
        seq = np.sort(rng.choice(10_000, int(rng.integers(1, 3000)), replace=False)).astype(np.int64)
        marks = np.sort(rng.choice(12_000, int(rng.integers(0, 30)), replace=False)).astype(np.int64) - 1000
        window = int(rng.integers(0, 5))
        expected = (np.abs(seq[:, None] - marks[None, :]) <= window).any(axis=1) if marks.size else seq < 0
        assert np.array_equal(_near_seqs(seq, marks, window), expected)


def _levels_series(rng: np.random.Generator) -> CounterSeries:
    """Frequency levels with blips, one level lasting ~20 chunks of 997 rows: its transition stays pending
    (the level's first long segment is still open) across many chunks before the detector can decide it."""
    pieces = [(2.0e9, 3000), (3.0e9, 1), (2.0e9, 120), (2.4e9, 20_000), (2.41e9, 2), (3.0e9, 2), (2.4e9, 500),
              (1.6e9, 4000), (1.6e9 * 1.2, 1), (1.6e9, 3000)]
    f = np.concatenate([np.full(n, level) for level, n in pieces]) * (1 + rng.normal(0, 0.002, sum(n for _, n in
                                                                                                  pieces)))
    n = f.size
    latency = rng.gamma(4.0, 5_000.0, n).astype(np.int64)
    c0 = rng.random(n)
    smi = np.where(rng.random(n) < 0.01, 1.0, 0.0)
    seq = np.arange(n) + 3
    seq[10_000:] += 7  # a gap in seq (dropped wake-ups): nearness is by seq, not by row
    return CounterSeries(0, 0, 2.4e9, "metadata", seq, seq * 100_000, latency, f, c0, smi, CounterQuality(n, n, {}))


def test_one_pass_in_small_chunks_equals_one_chunk_and_the_direct_masks(monkeypatch):
    """Rows near a jump wait until the detector decides whether it is a transition: counted in chunks of 997
    the conditions equal one chunk's and the masks computed directly from the final transitions."""
    from jitterscope.derive import CounterSet

    module = __import__("jitterscope.power.correlate", fromlist=["CHUNK_ROWS"])
    series = _levels_series(np.random.default_rng(16))
    counters = CounterSet(series=(series,), available=True, reason="")
    whole = correlate(counters, None, thresholds_ns=[40_000.0], n_surrogates=20)
    monkeypatch.setattr(module, "CHUNK_ROWS", 997)
    chunked = correlate(counters, None, thresholds_ns=[40_000.0], n_surrogates=20)
    assert chunked.tests == whole.tests and chunked.event_averages == whole.event_averages
    transitions = whole.frequency.transitions[0]
    # hand-placed: after the 2.0 GHz level's last long segment (3000 + 1 + 120), and after the 2.4 GHz one's
    # (+ 20,000 + 2 + 2 + 500); the blips and the 20 % blip on 1.6 GHz are no transitions
    assert transitions.index == (3121, 23625)
    near = _near(series, transitions, whole.window)
    smi = series.smi_delta > 0
    test = next(t for t in whole.tests if t.condition == "transition")
    assert (test.n_in, test.n_out) == (int((near & ~smi).sum()), int((~near & ~smi).sum()))
    assert test.exceedance[0].risk.exceed_in == int((series.latency_ns[near & ~smi] > 40_000).sum())


@pytest.mark.parametrize("given", [True, False])
def test_smi_spikes_given_or_from_the_histograms_equal_direct_counts(story, given):
    """With a given threshold SMI spikes are counted as the rows pass; without, from histograms at the pooled
    threshold (the top of its bucket): either way the counts of the rows themselves."""
    counters = read_counters(story)
    latency = np.concatenate([s.latency_ns for s in counters.series])
    threshold = [float(np.percentile(latency, 99))] if given else None
    result, _ = correlate_dataset(story, thresholds_ns=threshold, n_surrogates=0)
    t = result.thresholds_ns[0]
    share = next(s for s in result.smi_shares if s.scope == "all")
    known = np.concatenate([np.isfinite(s.smi_delta) for s in counters.series])
    smi = np.concatenate([np.nan_to_num(s.smi_delta) > 0 for s in counters.series])
    assert share.spikes == int((known & (latency > t)).sum()) > 10
    assert share.spikes_with_smi == int((smi & (latency > t)).sum()) > 0
    for test in result.tests:
        if test.scope == "cpu 0" and test.condition == "smi":
            series = counters.series[0]
            near = _near(series, result.frequency.transitions[0], result.window)
            s0 = np.nan_to_num(series.smi_delta) > 0
            assert test.exceedance[0].risk.exceed_in == int((series.latency_ns[s0 & ~near] > t).sum())


def test_rank_sample_shares_its_budget_among_threads():
    from jitterscope.power.stream import RANK_BLOCK_ROWS, RANK_SAMPLE_ROWS, RANK_SAMPLE_TOTAL, RankSample

    two = RankSample(10**8, np.random.SeedSequence(3), threads=2)
    sixteen = RankSample(10**8, np.random.SeedSequence(3), threads=16)
    assert int(two.chosen.sum()) * RANK_BLOCK_ROWS == RANK_SAMPLE_ROWS
    assert int(sixteen.chosen.sum()) * RANK_BLOCK_ROWS == RANK_SAMPLE_TOTAL // 16
    assert RankSample(RANK_SAMPLE_TOTAL // 16, np.random.SeedSequence(3), threads=16).chosen is None
