"""stats: accumulators against numpy/pandas and hand-computed cases; summarize on planted data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.errors import AnalysisError
from jitterscope.io import Drops, SimulationSpec, Stalls, simulate, write_simulation
from jitterscope.summary import (
    PERCENTILES,
    CyclictestStats,
    HistogramResult,
    IntervalStats,
    LatencyHistogram,
    Moments,
    TopSpikes,
    cyclictest_us,
    summarize,
)

QS = [0, 0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 99.999, 100]


def _draw(name: str, rng: np.random.Generator, n: int) -> np.ndarray:
    draws = {
        "lognormal": lambda: rng.lognormal(8, 1, n),
        "gamma": lambda: rng.gamma(2.0, 3000, n),
        "pareto": lambda: (rng.pareto(1.1, n) + 1) * 2000,  # infinite variance
        "student_t": lambda: rng.standard_t(1.5, n) * 10_000,  # heavy tails both sides, negatives
        "normal_signed": lambda: rng.normal(-200, 5000, n),
        "uniform_wide": lambda: rng.uniform(-1e9, 1e9, n),
        "bimodal": lambda: np.where(rng.random(n) < 0.99, rng.normal(3000, 100, n), rng.normal(2e6, 1e4, n)),
        "small_ints": lambda: rng.integers(-40, 40, n).astype(float),
        "huge": lambda: rng.lognormal(36, 1.5, n).clip(max=4e18),
    }
    return np.rint(draws[name]()).astype(np.int64)


@pytest.mark.parametrize("name", ["lognormal", "gamma", "pareto", "student_t", "normal_signed", "uniform_wide",
                                  "bimodal", "small_ints", "huge"])
@pytest.mark.parametrize("seed", range(4))
def test_percentiles_within_a_tenth_of_a_percent_of_numpy(name, seed):
    rng = np.random.default_rng(seed)
    values = _draw(name, rng, int(rng.integers(1, 50_000)))
    result = LatencyHistogram().update(values).result()
    exact = np.percentile(values, QS)
    estimated = np.array([result.percentiles(QS)[float(q)] for q in QS])
    # 0.1 % relative; values within +-1 ns of zero are stored exactly, so the absolute floor is 0
    assert np.all(np.abs(estimated - exact) <= 1e-3 * np.abs(exact)), (name, estimated, exact)
    assert result.count == values.size
    assert result.min_ns == values.min() and result.max_ns == values.max()


def test_percentiles_hand_computed():
    result = LatencyHistogram().update(np.array([5, 1, 4, 2, 3])).result()
    assert result.percentile(50) == 3
    assert result.percentile(25) == 2
    assert result.percentile(10) == pytest.approx(1.4)  # numpy linear: 1 + 0.4 * (2 - 1)
    assert result.percentiles([0, 100]) == {0.0: 1.0, 100.0: 5.0}
    negative = LatencyHistogram().update(np.array([-7, -3, 0, 2])).result()
    assert negative.percentile(50) == pytest.approx(-1.5)
    assert negative.bucket_lower_ns.tolist() == [-7, -3, 0, 2] and negative.bucket_lower_ns.dtype == np.int64
    assert negative.bucket_upper_ns.tolist() == [-6, -2, 1, 3]


def test_buckets_are_at_most_relative_error_wide():
    values = np.unique(np.rint(np.geomspace(1, 1e15, 5000)).astype(np.int64))
    result = LatencyHistogram(relative_error=1e-3).update(values).result()
    lower = np.array(result.bucket_lower_ns, dtype=float)
    upper = np.array(result.bucket_upper_ns, dtype=float)
    assert np.all((upper - lower - 1) <= np.maximum(lower, 1) * 1e-3)
    assert sum(result.bucket_counts) == values.size
    # every value lies in its bucket: re-bucket the bucket bounds and compare
    for v in values[::97]:
        i = np.searchsorted(lower, v, side="right") - 1
        assert lower[i] <= v < upper[i]


@pytest.mark.parametrize("seed", range(3))
def test_merge_equals_all_at_once(seed):
    rng = np.random.default_rng(seed)
    values = _draw("student_t", rng, 30_000)
    cut = int(rng.integers(0, values.size))
    a = LatencyHistogram().update(values[:cut])
    b = LatencyHistogram().update(values[cut:])
    assert a.merge(b).result() == LatencyHistogram().update(values).result()
    m = Moments().update(values[:cut]).merge(Moments().update(values[cut:])).result()
    whole = Moments().update(values).result()
    assert m.n == whole.n and m.min_ns == whole.min_ns and m.max_ns == whole.max_ns
    assert m.mean_ns == pytest.approx(whole.mean_ns, rel=1e-12, abs=1e-9)
    assert m.var_ns2 == pytest.approx(whole.var_ns2, rel=1e-9)


def test_merge_with_empty_and_mismatched():
    values = np.arange(100)
    assert LatencyHistogram().merge(LatencyHistogram().update(values)).result() == \
        LatencyHistogram().update(values).result()
    with pytest.raises(AnalysisError):
        LatencyHistogram(1e-3).merge(LatencyHistogram(1e-2))
    with pytest.raises(AnalysisError, match="empty"):
        LatencyHistogram().result().percentile(50)


def test_moments_equal_numpy():
    rng = np.random.default_rng(1)
    values = rng.integers(1_000_000_000_000, 1_000_000_100_000, 10_000)  # large offset: no cancellation
    result = Moments().update(values[:3000]).update(values[3000:]).result()
    assert result.mean_ns == pytest.approx(values.mean(), rel=1e-15)
    assert result.var_ns2 == pytest.approx(values.var(), rel=1e-9)
    assert result.std_ns == pytest.approx(values.std(), rel=1e-9)


def test_mad_and_mode():
    rng = np.random.default_rng(2)
    values = np.rint(rng.lognormal(np.log(3000), 0.3, 100_000)).astype(np.int64)
    result = LatencyHistogram().update(values).result()
    exact_mad = np.median(np.abs(values - np.median(values)))
    assert result.mad_ns() == pytest.approx(exact_mad, abs=3000 * 1e-3)
    # lognormal mode = exp(mu - sigma^2) = 3000 * e^-0.09 = 2741.8, 9 % below the median; 5 % bins of 1e5
    # samples: ~1 % count noise per bin on a flat top, so within 5 % (and so distinct from the median)
    mode = result.mode_ns()
    assert mode == pytest.approx(3000 * np.exp(-0.09), rel=0.05)
    assert abs(mode - 2741.8) < abs(mode - np.median(values))
    spike = np.concatenate([values, np.full(50_000, 9000)])
    assert LatencyHistogram().update(spike).result().mode_ns() == pytest.approx(9000, rel=0.005)


def test_ccdf():
    result = LatencyHistogram().update(np.array([1, 2, 2, 3, 10])).result()
    x, p = result.ccdf()
    assert list(x) == [1, 2, 3, 10]
    assert list(p) == [0.8, 0.4, 0.2, 0.0]


def test_from_bins_continuous():
    # 1 µs bins as cyclictest -h writes them: 10 in [0,1000), 30 in [1000,2000), 60 in [2000,3000)
    result = HistogramResult.from_bins([2000, 0, 1000], [1000, 1000, 1000], [60, 10, 30], max_ns=2900)
    assert result.count == 100 and not result.discrete
    assert result.bucket_lower_ns.tolist() == [0.0, 1000.0, 2000.0]
    assert result.percentile(50) == 2500  # rank 49.5 falls in the third bin, midpoint 2500
    assert result.max_ns == 2900
    with pytest.raises(AnalysisError):
        HistogramResult.from_bins([0], [0], [1])


def test_top_spikes_with_neighbours_across_batches():
    rng = np.random.default_rng(3)
    latency = rng.integers(0, 1000, 500)
    latency[[0, 99, 100, 250, 499]] = [9000, 8000, 8500, 7000, 9500]
    seq = np.arange(500)
    actual = seq * 1000 + latency
    spikes = TopSpikes(k=4, neighbours=2)
    for lo, hi in [(0, 100), (100, 101), (101, 400), (400, 500)]:  # a spike at every batch edge
        spikes.update(0, 3, seq[lo:hi], actual[lo:hi], latency[lo:hi])
    result = spikes.result().spikes
    assert [s.latency_ns for s in result] == [9500, 9000, 8500, 8000]
    by_seq = {s.seq: s for s in result}
    assert by_seq[499].before_ns == tuple(latency[497:499]) and by_seq[499].after_ns == ()
    assert by_seq[0].before_ns == () and by_seq[0].after_ns == tuple(latency[1:3])
    assert by_seq[99].after_ns == tuple(latency[100:102])
    assert by_seq[100].before_ns == tuple(latency[98:100])
    assert by_seq[100].cpu == 3 and by_seq[100].actual_ns == actual[100]


def _pandas_blocks(seq, actual, interval, block, tolerance):
    df = pd.DataFrame({"seq": seq, "actual": actual})
    df["period"] = df.actual.diff()
    df = df[df.seq.diff() == 1].reset_index(drop=True)
    df["block"] = df.index // block
    out = []
    for _, g in df.groupby("block"):
        if len(g) < block:
            continue
        err = interval - g.period
        big = err[err.abs() > tolerance]
        out.append([g.period.min(), g.period.max(), g.period.mean(), g.period.std(ddof=0),
                    len(big), big.min(), big.max(), big.mean(), big.std(ddof=0)])
    return np.array(out) / np.array([1000] * 4 + [1] + [1000] * 4)


def test_interval_stats_equal_pandas():
    spec = SimulationSpec(threads=2, samples=12_345, effects=(Drops(probability=1e-3), Stalls(probability=1e-3)))
    table, _ = simulate(spec, 8)
    df = table.to_pandas()
    stats = IntervalStats(block=1000, tolerance_ns=1000)
    for thread in (0, 1):
        rows = df[df.thread == thread]
        for lo in range(0, len(rows), 777):  # batches that do not align with blocks
            part = rows.iloc[lo:lo + 777]
            stats.update(thread, 1_000_000, part.seq.to_numpy(), part.actual_ns.to_numpy())
    result = stats.result()
    for thread in (0, 1):
        rows = df[df.thread == thread]
        expected = _pandas_blocks(rows.seq.to_numpy(), rows.actual_ns.to_numpy(), 1_000_000, 1000, 1000)
        got = np.array([[b.min_us, b.max_us, b.mean_us, b.stddev_us, b.errors, b.error_min_us, b.error_max_us,
                         b.error_mean_us, b.error_stddev_us] for b in result.blocks if b.thread == thread])
        assert got.shape == expected.shape and len(got) >= 11
        assert np.allclose(got, expected, rtol=1e-9, atol=1e-9)
        assert result.leftover[thread] == (np.sum(np.diff(rows.seq) == 1)) % 1000


def test_cyclictest_us_truncates_like_c():
    # hand cases: calcdiff = 1e6 * dsec + (dnsec / 1000 truncated toward zero)
    expected = np.array([5_999_999_700, 5_000_000_000, 7_000_000_400])
    actual = np.array([6_000_001_200, 5_000_002_999, 7_000_000_399])
    # 6 s + 1200 ns vs 5 s + 999999700 ns: 1e6 + trunc(-999998500 / 1000) = 1e6 - 999998 = 2 (true 1.5 µs)
    assert cyclictest_us(actual, expected).tolist() == [2, 2, 0]
    acc = CyclictestStats().update(actual[:2], expected[:2]).merge(CyclictestStats().update(actual[2:], expected[2:]))
    result = acc.result()
    assert (result.cycles, result.min_us, result.max_us, result.act_us, result.avg_us) == (3, 0, 2, 0, 1)


def test_summarize_matches_numpy_and_metadata(tmp_path):
    spec = SimulationSpec(threads=3, samples=8000, effects=(Drops(probability=1e-3), Stalls(probability=1e-3)))
    path = write_simulation(spec, tmp_path / "s.parquet", 21)
    summary = summarize(open_dataset(path), top_k=5)
    df = open_dataset(path).read().to_pandas()
    df["latency"] = df.actual_ns - df.expected_ns
    for t in summary.threads:
        rows = df[df.thread == t.thread]
        lat = rows.latency.to_numpy()
        assert t.n == len(rows) and t.min_ns == lat.min() and t.max_ns == lat.max()
        assert t.mean_ns == pytest.approx(lat.mean(), rel=1e-12)
        assert t.std_ns == pytest.approx(lat.std(), rel=1e-9)
        for key in PERCENTILES:
            if len(lat) * (1 - float(key) / 100) < 1:  # not resolved by this many wake-ups: n/a everywhere
                assert t.percentiles[key] is None
                continue
            assert t.percentiles[key] == pytest.approx(np.percentile(lat, float(key)), rel=1e-3)
        assert t.overruns == rows.overruns.sum() and t.drops == np.sum(np.diff(rows.seq) - 1) + rows.seq.iloc[0]
        assert [s.latency_ns for s in t.spikes.spikes] == sorted(lat)[::-1][:5]
        consecutive = np.diff(rows.seq) == 1
        period_error = np.diff(rows.actual_ns)[consecutive] - 1_000_000
        assert t.period_error.count == consecutive.sum()
        assert t.period_error.max_ns == period_error.max()
        assert t.tid == 20_000 + t.thread and t.priority == 99 and t.policy == "fifo"
    all_lat = df.latency.to_numpy()
    assert summary.overall.n == len(df) and summary.overall.thread == -1
    assert summary.overall.percentiles["99.9"] == pytest.approx(np.percentile(all_lat, 99.9), rel=1e-3)
    assert summary.overall.drops == sum(t.drops for t in summary.threads)
    assert [s.latency_ns for s in summary.overall.spikes.spikes] == sorted(all_lat)[::-1][:5]
    text = json.dumps(summary.to_json(histograms=True))
    assert json.loads(text)["overall"]["n"] == len(df)


def test_cyclictest_us_fast_path_equals_c_arithmetic():
    rng = np.random.default_rng(5)
    expected = rng.integers(0, 10**13, 20_000)
    latency = np.concatenate([rng.integers(0, 3000, 10_000), rng.integers(0, 10**9, 10_000)])
    actual = expected + latency
    by_c = [(a // 10**9 - e // 10**9) * 10**6 + int((a % 10**9 - e % 10**9) / 1000)
            for a, e in zip(actual.tolist(), expected.tolist(), strict=True)]
    assert cyclictest_us(actual, expected).tolist() == by_c
    # one thread's rows in order (every 0.1 ms, some right at a second boundary): the boundary search
    expected = 999_000_000 + np.arange(200_000) * 100_000 + np.repeat([0, 1], 100_000)
    latency = rng.integers(0, 2_500_000, expected.size)
    latency[::7] = (latency[::7] // 1000) * 1000  # whole µs never round up
    actual = expected + latency
    by_c = [(a // 10**9 - e // 10**9) * 10**6 + int((a % 10**9 - e % 10**9) / 1000)
            for a, e in zip(actual.tolist(), expected.tolist(), strict=True)]
    assert cyclictest_us(actual, expected, sorted_expected=True).tolist() == by_c
    assert sum(int((a % 10**9) < (e % 10**9)) for a, e in zip(actual.tolist(), expected.tolist(), strict=True)) > 100


def test_histogram_index_fast_path_equals_exact_path():
    rng = np.random.default_rng(6)
    values = np.concatenate([rng.integers(0, 2**53 - 1, 50_000), 2 ** np.arange(10, 53), 2 ** np.arange(10, 53) - 1])
    hist = LatencyHistogram()
    assert np.array_equal(hist._index(values), hist._index(values.astype(np.uint64)))
    small = np.concatenate([rng.integers(0, 1 << 20, 100_000), np.arange(4096)])  # through the lookup table
    assert np.array_equal(hist._index(small), hist._index(small.astype(np.uint64)))


def test_summarize_histogram_dataset(tmp_path):
    # thread 0: 10 wake-ups in [1, 2) µs, 30 in [2, 3), 60 in [3, 4); cyclictest printed min 1.2, avg 3.0, max 3.9 µs
    table = pa.table({"thread": [0, 0, 0, 1], "cpu": [0, 0, 0, 1], "bin_start_ns": [1000, 2000, 3000, 5000],
                      "bin_width_ns": [1000] * 4, "count": [10, 30, 60, 5]})
    threads = (ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000, samples=100,
                          extra={"min_ns": 1200, "avg_ns": 3000, "max_ns": 3900}),
               ThreadInfo(thread=1, cpu=1, interval_ns=1_000_000, samples=5))
    path = write_dataset(table, Metadata(kind="histogram", threads=threads), tmp_path / "h.parquet")
    summary = summarize(open_dataset(path))
    first = summary.thread(0)
    assert (first.n, first.min_ns, first.max_ns, first.mean_ns) == (100, 1200, 3900, 3000)
    assert first.percentiles["50"] == 3500  # rank 49.5: inside the [3000, 4000) bin, reported at its midpoint
    assert first.cyclictest is None and first.spikes.spikes == ()
    assert summary.thread(1).max_ns == 6000 and summary.overall.n == 105
    # rank 102.96 of 105 (p99): between ranks 102 and 103, both in the [5, 6) µs bin (its midpoint)
    assert summary.overall.percentiles["99"] == pytest.approx(5500)
    # p99.999 needs 10^5 wake-ups: n/a in the summary, its JSON and the report alike (n·(1 − q) < 1)
    assert summary.overall.percentiles["99.999"] is None


def test_spikes_and_intervals_merge_equal_all_at_once():
    table, _ = simulate(SimulationSpec(threads=3, samples=4000, effects=(Stalls(probability=2e-3),)), 12)
    df = table.to_pandas()
    df["latency"] = df.actual_ns - df.expected_ns

    def feed(spikes, intervals, threads):
        for thread in threads:
            rows = df[df.thread == thread]
            for lo in range(0, len(rows), 1500):
                part = rows.iloc[lo:lo + 1500]
                spikes.update(thread, thread, part.seq.to_numpy(), part.actual_ns.to_numpy(), part.latency.to_numpy())
                intervals.update(thread, 1_000_000, part.seq.to_numpy(), part.actual_ns.to_numpy())
        return spikes, intervals

    whole = feed(TopSpikes(k=7), IntervalStats(500, 2000), [0, 1, 2])
    a = feed(TopSpikes(k=7), IntervalStats(500, 2000), [0, 2])
    b = feed(TopSpikes(k=7), IntervalStats(500, 2000), [1])
    assert a[0].merge(b[0]).result() == whole[0].result()
    assert a[1].merge(b[1]).result() == whole[1].result()
    with pytest.raises(AnalysisError, match="same thread"):
        a[1].merge(feed(TopSpikes(), IntervalStats(500, 2000), [1])[1])


def test_histogram_signed_table_equals_generic_path():
    # period errors: both signs, within the table's ±2**20 ns; one large batch takes the signed table, batches
    # below the table's minimum size the generic two-sign path, single values the scalar-safe one
    rng = np.random.default_rng(21)
    values = np.concatenate([rng.integers(-(1 << 20) + 1, 1 << 20, 40_000), rng.normal(0, 300, 40_000).astype(int),
                             [-(1 << 20) + 1, (1 << 20) - 1, -1, 0, 1, -1023, -1024, -1025, 1024]])
    table = LatencyHistogram().update(values).result()
    small = LatencyHistogram()
    for start in range(0, values.size, 1000):
        small.update(values[start:start + 1000])
    assert table == small.result()
    single = LatencyHistogram()
    for value in values[-9:].tolist() + values[:500].tolist():
        single.update(np.array([value]))
    assert single.result() == LatencyHistogram().update(np.r_[values[-9:], values[:500]]).result()
    # and against numpy on the order statistics: every percentile within the bucket width
    result = LatencyHistogram().update(values).result()
    exact = np.percentile(values, QS)
    got = np.array([result.percentile(q) for q in QS])
    assert np.all(np.abs(got - exact) <= np.maximum(np.abs(exact) * result.relative_error, 1.0))


def test_top_spikes_tail_survives_a_reused_buffer():
    # summarize may hand TopSpikes a buffer it reuses for the next batch: the neighbours kept must be copies
    rng = np.random.default_rng(4)
    latency = rng.integers(0, 1000, 300)
    latency[[149, 150, 151]] = [5000, 6000, 7000]
    seq = np.arange(300)
    actual = seq * 1000 + latency
    buffer = np.empty(150, dtype=np.int64)
    reused = TopSpikes(k=3, neighbours=3)
    for lo in (0, 150):
        buffer[:] = latency[lo:lo + 150]
        reused.update(0, 0, seq[lo:lo + 150], actual[lo:lo + 150], buffer)
        buffer[:] = -1  # what the next batch would overwrite
    whole = TopSpikes(k=3, neighbours=3).update(0, 0, seq, actual, latency)
    assert reused.result() == whole.result()
    by_seq = {s.seq: s for s in reused.result().spikes}
    assert by_seq[150].before_ns == tuple(latency[147:150]) and by_seq[149].after_ns == tuple(latency[150:153])


def test_summarize_in_parallel_equals_one_worker(tmp_path, monkeypatch):
    # threads interleaved within row groups, with drops and stalls: each thread's batches stay in order on its
    # worker, so every statistic equals the one-worker run's
    from jitterscope.summary import stats

    spec = SimulationSpec(threads=3, samples=20_000, effects=(Stalls(probability=1e-3), Drops(probability=1e-3)))
    path = write_simulation(spec, tmp_path / "p.parquet", seed=8)
    parallel = summarize(open_dataset(path), interval_block=1000).to_json(histograms=True)
    monkeypatch.setattr(stats.os, "cpu_count", lambda: 1)
    serial = summarize(open_dataset(path), interval_block=1000).to_json(histograms=True)
    assert parallel == serial
