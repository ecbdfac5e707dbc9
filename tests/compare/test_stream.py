"""Streamed compare (jitterscope.compare.stream / .streamed): the grid, merge == all at once, streamed == in memory
within the stated bounds, planted shifts and same-distribution pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from jitterscope.compare import (
    CompareStream,
    compare_runs,
    compare_samples,
    compare_streams,
    grid_keys,
    histogram_tests,
    key_bounds,
)
from jitterscope.compare.stream import RELATIVE_ERROR, TOP_VALUES
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.errors import AnalysisError
from jitterscope.io import BaseLatency, SimulationSpec, Stalls, simulate
from scipy import stats

META = Metadata(kind="simulation", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000),))
METRICS = ("p50", "p99", "p99.9", "p99.99", "max")


def _stream(values: np.ndarray, *, run: int, n_boot: int = 200, seed: int = 0, block: int = 1,
            fraction: float = 1.0, batch: int = 4096):
    stream = CompareStream(n_boot=n_boot, block_length=block, resample_fraction=fraction, seed=seed, run=run)
    for start in range(0, values.size, batch):
        stream.update(0, np.arange(start, min(start + batch, values.size)), values[start:start + batch])
    return stream.result()


def _lognormal(seed: int, n: int, scale: float = 1.0) -> np.ndarray:
    return (scale * 20_000 * np.exp(0.3 * np.random.default_rng(seed).standard_normal(n))).astype(np.int64)


def test_grid_keys_and_bounds_by_hand() -> None:
    values = np.array([-3000, -1, 0, 1, 1023, 1024, 1025, 1026, 2047, 2048, 2049, 10**9, 2**52], dtype=np.int64)
    keys = grid_keys(values)
    # one value per bucket below 1024; 3000 = 2^11 + 952: octave block 2, sub-bucket 952 // 2 = 476; -1 - index(|v|)
    assert keys[:5].tolist() == [-1 - (2 * 1024 + 476), -2, 0, 1, 1023]
    assert keys[5] == 1024 and keys[6] == 1025 and keys[7] == 1026 and keys[8] == 2047
    assert keys[9] == keys[10] == 2048  # 2048 and 2049 share the bucket [2048, 2050)
    lower, upper = key_bounds(keys)
    assert np.all((lower <= values) & (values < upper))
    assert (lower[9], upper[9]) == (2048, 2050)
    assert (lower[0], upper[0]) == (-3001, -2999)  # |v| in [3000, 3002): -3001 … -3000
    rng = np.random.default_rng(1)
    many = np.concatenate([rng.integers(-10**7, 10**7, 100_000), rng.integers(0, 2**50, 1000)])
    k = grid_keys(many)
    lo, hi = key_bounds(k)
    assert np.all((lo <= many) & (many < hi))
    assert np.all(np.diff(k[np.argsort(many)]) >= 0)  # keys increase with the value
    assert np.all((hi - lo) <= np.maximum(1, RELATIVE_ERROR * np.abs(np.where(many < 0, hi - 1, lo))))
    with pytest.raises(AnalysisError, match="2\\^53"):
        grid_keys(np.array([2**53]))


def _on_keys(counts: np.ndarray, first: int, low: int, high: int) -> np.ndarray:
    """``counts`` (last axis over keys ``first …``) on the key range ``low … high - 1``."""
    out = np.zeros((*counts.shape[:-1], high - low), dtype=counts.dtype)
    out[..., first - low:first - low + counts.shape[-1]] = counts
    return out


def test_merge_of_two_halves_and_any_batching_equal_all_at_once() -> None:
    """Cut inside a thread (mid-group) and across threads, merged in either order: the same arrays, exactly."""
    rng = np.random.default_rng(2)
    series = {0: _lognormal(3, 150_000), 1: _lognormal(4, 90_000)}
    seqs = {t: np.cumsum(rng.integers(1, 3, v.size)) for t, v in series.items()}  # gaps: dropped wake-ups
    kwargs = {"n_boot": 40, "block_length": 7, "resample_fraction": 0.3, "seed": 5, "run": 1, "late_ns": 30_000}

    def fed(pieces: list[tuple[int, slice]], batch: int) -> CompareStream:
        stream = CompareStream(**kwargs)
        for thread, part in pieces:
            seq, values = seqs[thread][part], series[thread][part]
            for start in range(0, seq.size, batch):
                stream.update(thread, seq[start:start + batch], values[start:start + batch])
        return stream

    whole = fed([(0, slice(None)), (1, slice(None))], 65_536).result()
    cut = 70_001  # inside a group of thread 0
    first = fed([(0, slice(0, cut))], 10_000)
    second = fed([(0, slice(cut, None)), (1, slice(None))], 33_333)
    for merged in (first.merge(second).result(), fed([(0, slice(cut, None)), (1, slice(None))], 33_333).merge(
            fed([(0, slice(0, cut))], 10_000)).result()):
        assert (merged.count, merged.min_ns, merged.max_ns, merged.late_wakeups) == (
            whole.count, whole.min_ns, whole.max_ns, whole.late_wakeups)
        low = min(merged.low_key, whole.low_key)
        high = max(merged.low_key + merged.counts.size, whole.low_key + whole.counts.size)
        np.testing.assert_array_equal(_on_keys(merged.counts, merged.low_key, low, high),
                                      _on_keys(whole.counts, whole.low_key, low, high))
        np.testing.assert_array_equal(_on_keys(merged.replicates, merged.low_key, low, high),
                                      _on_keys(whole.replicates, whole.low_key, low, high))
        np.testing.assert_array_equal(merged.top_ns, whole.top_ns)
    everything = np.concatenate(list(series.values()))
    assert whole.count == everything.size and whole.late_wakeups == np.count_nonzero(everything > 30_000)
    np.testing.assert_array_equal(whole.top_ns, np.sort(everything)[-TOP_VALUES:])
    # each replicate is about 0.3 of the run (Poisson block weights with mean 0.3)
    assert whole.replicates.sum(axis=1).mean() == pytest.approx(0.3 * whole.count, rel=0.05)


def test_streams_refuse_out_of_order_rows_and_mismatched_merges() -> None:
    stream = CompareStream(n_boot=20, block_length=1, resample_fraction=1.0, seed=0)
    stream.update(0, np.array([5, 6]), np.array([10, 11]))
    with pytest.raises(AnalysisError, match="seq order"):
        stream.update(0, np.array([6, 7]), np.array([10, 11]))
    with pytest.raises(AnalysisError, match="different settings"):
        stream.merge(CompareStream(n_boot=20, block_length=2, resample_fraction=1.0, seed=0))
    stream.result()
    with pytest.raises(AnalysisError, match="already ended"):
        stream.update(1, np.array([1]), np.array([1]))


def test_tests_from_histograms_are_exact_when_every_bucket_is_one_value() -> None:
    """Below 1024 ns each bucket holds one value: Mann-Whitney, KS and AD equal scipy's on the values."""
    rng = np.random.default_rng(6)
    a = rng.integers(100, 900, 3000)
    b = rng.integers(120, 920, 2500)
    mw, ks, ad = histogram_tests(_stream(a, run=0, n_boot=20), _stream(b, run=1, n_boot=20))
    exact = stats.mannwhitneyu(b, a, alternative="two-sided")
    assert mw.statistic == pytest.approx(exact.statistic / (a.size * b.size), abs=1e-12)
    assert mw.p_value == pytest.approx(exact.pvalue, rel=1e-6)
    assert ks.statistic == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-12)
    reference = stats.anderson_ksamp([a, b], variant="midrank")
    assert ad.statistic == pytest.approx(reference.statistic, rel=1e-9)


def _pooled(spec: SimulationSpec, seed: int) -> tuple[np.ndarray, Metadata]:
    sim = simulate(spec, seed)
    order = np.lexsort((sim.table["seq"].to_numpy(), sim.table["thread"].to_numpy()))
    return (sim.table["actual_ns"].to_numpy() - sim.table["expected_ns"].to_numpy())[order], sim.metadata


@pytest.fixture(scope="module")
def no_hz_pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stream")
    paths = []
    for i, effects in enumerate(((), (Stalls(probability=5e-4, periods=12.0),))):
        sim = simulate(SimulationSpec(threads=2, samples=10_000, base=BaseLatency(median_ns=20_000, spread=0.25),
                                      effects=effects), i + 1)
        paths.append(write_dataset(sim.table, sim.metadata, folder / f"r{i}.parquet"))
    datasets = [open_dataset(p) for p in paths]
    series = []
    for d in datasets:
        table = d.read(["thread", "seq", "expected_ns", "actual_ns"])
        order = np.lexsort((table["seq"].to_numpy(), table["thread"].to_numpy()))
        series.append((table["actual_ns"].to_numpy() - table["expected_ns"].to_numpy())[order])
    streamed = compare_runs(datasets, n_boot=300)
    exact = compare_samples(series, [d.metadata for d in datasets], ["r0.parquet", "r1.parquet"], n_boot=300)
    return streamed, exact, series


def test_streamed_equals_in_memory_within_the_stated_bounds(no_hz_pair) -> None:
    streamed, exact, series = no_hz_pair
    for s, e in zip(streamed.pairs[0].metrics, exact.pairs[0].metrics, strict=True):
        assert s.verdict == e.verdict, s.metric
        for got, want in ((s.baseline_ns, e.baseline_ns), (s.candidate_ns, e.candidate_ns)):
            assert abs(got - want) <= RELATIVE_ERROR / 2 * want + 0.5, s.metric
        if s.relative_low is not None:  # both intervals from 300 resamples: equal up to bootstrap noise
            assert s.relative_low == pytest.approx(e.relative_low, abs=0.01)
    tests = {t.name: t for t in streamed.pairs[0].tests}
    base, cand = series
    u = stats.mannwhitneyu(cand, base, alternative="two-sided").statistic / (base.size * cand.size)
    assert abs(tests["Mann-Whitney"].statistic - u) <= tests["Mann-Whitney"].bound
    d = stats.ks_2samp(base, cand).statistic
    assert tests["Kolmogorov-Smirnov"].statistic <= d + 1e-12 <= tests["Kolmogorov-Smirnov"].statistic + \
        tests["Kolmogorov-Smirnov"].bound + 1e-12
    for s, e in zip(streamed.pairs[0].exceedance_ratios, exact.pairs[0].exceedance_ratios, strict=True):
        # the threshold is the top of the grid bucket holding the baseline's quantile, and the counts above it exact
        assert e.threshold_ns - 1 <= s.threshold_ns <= e.threshold_ns * (1 + RELATIVE_ERROR) + 1
        assert s.baseline_rate == np.count_nonzero(base > s.threshold_ns) / base.size
        assert s.candidate_rate == np.count_nonzero(cand > s.threshold_ns) / cand.size
    for s, e in zip(streamed.runs, exact.runs, strict=True):
        assert (s.n, s.max_ns, s.late_wakeups, s.block_length) == (e.n, e.max_ns, e.late_wakeups, e.block_length)
    out = streamed.to_json()
    json.dumps(out, allow_nan=False)
    methods = dict(map(tuple, out["methods"]))
    assert "±0.05%" in methods["quantiles"] and "u_bound" in methods["Mann-Whitney"]
    assert out["pairs"][0]["tests"][0]["bound"] == tests["Mann-Whitney"].bound > 0
    assert "no change" not in out["headlines"][0] and "regressed" in out["headlines"][0]
    assert out["warnings"] and "cannot see a change" in out["warnings"][0]


def test_same_distribution_is_no_change_and_a_20_percent_p99_shift_regresses_streamed() -> None:
    """The planted-truth check of test_samples, on the streamed path: 10 seeds, 10^4 wake-ups per run."""
    spec = SimulationSpec(threads=2, samples=5_000)
    quiet, shifted = 0, 0
    for seed in range(10):
        a, meta_a = _pooled(spec, 100 + seed)
        b, meta_b = _pooled(spec, 200 + seed)
        runs = [_stream(a, run=0, seed=seed), _stream(b, run=1, seed=seed),
                _stream((b * 1.2).astype(np.int64), run=1, seed=seed)]
        same = compare_streams(runs[:2], [meta_a, meta_b], ["a", "b"]).pairs[0]
        quiet += not any(same.verdict(m) in ("regressed", "improved") for m in METRICS)
        moved = compare_streams([runs[0], runs[2]], [meta_a, meta_b], ["a", "b"]).pairs[0]
        shifted += moved.verdict("p99") == "regressed"
    assert quiet >= 9
    assert shifted >= 9


def test_m_out_of_n_streams_keep_the_spread_of_the_full_bootstrap() -> None:
    x = _lognormal(7, 100_000)
    full = _stream(x, run=0, n_boot=200, fraction=1.0, batch=50_000)
    sub = _stream(x, run=0, n_boot=200, fraction=0.1, batch=50_000)
    cmp_full = compare_streams([full, _stream(x, run=1, n_boot=200, batch=50_000)], [META, META], ["a", "b"])
    cmp_sub = compare_streams([sub, _stream(x, run=1, n_boot=200, fraction=0.1, batch=50_000)], [META, META],
                              ["a", "b"])
    for name in ("p50", "p99"):
        wide = [next(m for m in c.pairs[0].metrics if m.metric == name) for c in (cmp_full, cmp_sub)]
        widths = [m.relative_high - m.relative_low for m in wide]
        assert widths[1] == pytest.approx(widths[0], rel=0.3), name
    assert cmp_sub.runs[0].resample_length == 10_000
    assert any("m-out-of-n with m = 10000" in n for n in cmp_sub.notes)


def test_a_dataset_against_itself_streamed(tmp_path: Path) -> None:
    path = write_dataset(*simulate(SimulationSpec(threads=2, samples=5_000), 5)[:2], tmp_path / "run.parquet")
    cmp = compare_runs([open_dataset(path), open_dataset(path)], n_boot=100)
    pair = cmp.pairs[0]
    assert all(m.difference_ns == 0 and m.verdict in ("within noise", "inconclusive") for m in pair.metrics)
    assert all(r.ratio == pytest.approx(1.0) for r in pair.exceedance_ratios)
    assert {t.name: t.statistic for t in pair.tests}["Mann-Whitney"] == pytest.approx(0.5)
