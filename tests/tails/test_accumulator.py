"""Streaming tail summary (tails.accumulator): the same answer as the whole series in memory, in any batching."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.derive import read_thread_series
from jitterscope.errors import AnalysisError
from jitterscope.tails import (
    TOP_K,
    TailAccumulator,
    analyze_tails,
    block_size_for,
    fit_summary,
    fit_tail,
    spread,
    summarize_series,
)
from scipy import stats

XI, SCALE_NS, OFFSET_NS = 0.2, 1000.0, 5000.0


def _gpd_series(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (OFFSET_NS + stats.genpareto.rvs(XI, scale=SCALE_NS, size=n, random_state=rng)).astype(np.int64)


def _stream(x: np.ndarray, cuts: list[int], *, levels: tuple[float, ...] = ()) -> TailAccumulator:
    acc = TailAccumulator(block_size_for(x.size), levels)
    for chunk in np.split(x, cuts):
        acc.update(chunk)
    return acc


def _same(a: object, b: object) -> None:
    for field in ("n", "resolution", "observed_max_ns", "block_size", "levels_ns", "above_levels"):
        assert getattr(a, field) == getattr(b, field), field
    for field in ("top_ns", "top_index", "maxima_ns"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_summary_matches_the_series_computed_directly() -> None:
    """Independent numpy on the whole series: the top values, their positions, block maxima, level counts."""
    x = _gpd_series(1, 60_000)
    level = float(np.quantile(x, 0.5))
    s = summarize_series(x, levels_ns=(level,))
    desc = np.argsort(x, kind="stable")[::-1]
    np.testing.assert_array_equal(s.top_ns, x[desc][:TOP_K])
    assert s.top_ns.size == TOP_K and s.n == x.size and s.resolution == 1.0
    # distinct values above the (TOP_K)-th: the kept indices are those of the largest values
    assert set(s.top_index[s.top_ns > s.top_ns[-1]].tolist()) == set(np.flatnonzero(x > s.top_ns[-1]).tolist())
    block = block_size_for(x.size)
    np.testing.assert_array_equal(s.maxima_ns, x[: (x.size // block) * block].reshape(-1, block).max(axis=1))
    assert s.above_levels == (int(np.count_nonzero(x > level)),)
    assert s.observed_max_ns == x.max()


@pytest.mark.parametrize("cuts", [[1], [7_000, 7_001, 20_000], list(range(997, 60_000, 997))])
def test_batches_and_merges_give_the_same_summary(cuts: list[int]) -> None:
    x = _gpd_series(2, 60_000)
    whole = summarize_series(x, levels_ns=(6000.0,))
    _same(_stream(x, cuts, levels=(6000.0,)).result(), whole)
    # two accumulators over the two halves (second one told where it starts), merged
    half = 31_234
    first = TailAccumulator(block_size_for(x.size), (6000.0,)).update(x[:half])
    second = TailAccumulator(block_size_for(x.size), (6000.0,)).update(x[half:], start=half)
    _same(second.merge(first).result(), whole)


def test_rounded_values_with_ties_at_the_kth_value() -> None:
    """Whole µs with thousands of ties around the TOP_K-th value: the kept values are the top of the spread series."""
    x = (np.round(_gpd_series(3, 80_000) / 1000) * 1000).astype(np.int64)
    s = _stream(x, list(range(5000, 80_000, 5000))).result()
    assert s.resolution == 1000.0
    spread_all = x + 1000.0 * spread(np.arange(x.size), 0)
    order = np.argsort(spread_all)[::-1][:TOP_K]
    np.testing.assert_array_equal(s.top_index, order)
    np.testing.assert_allclose(s.top_ns, spread_all[order], rtol=0, atol=1e-9)
    assert np.count_nonzero(x == x[order[-1]]) > 1000  # the boundary value really is heavily tied
    _same(s, summarize_series(x))


def test_spread_is_uniform_and_order_free() -> None:
    u = spread(np.arange(200_000), 5)
    assert -0.5 <= u.min() and u.max() < 0.5
    assert stats.kstest(u + 0.5, "uniform").pvalue > 0.001
    np.testing.assert_array_equal(spread(np.arange(10, 20), 5), u[10:20])
    assert not np.array_equal(spread(np.arange(10), 6), u[:10])


def test_streamed_fit_equals_the_in_memory_fit_and_finds_the_planted_tail(tmp_path: Path) -> None:
    """Two threads interleaved in small row groups: analyze_tails (streaming) == fit_tail on each whole series."""
    n = 30_000
    xs = [_gpd_series(10, n), _gpd_series(11, n) + 1000]
    interval = 1_000_000
    rows = []
    for t, x in enumerate(xs):
        seq = np.arange(n)
        rows.append(pa.table({"thread": np.full(n, t), "cpu": np.full(n, t), "seq": seq,
                              "expected_ns": seq * interval, "actual_ns": seq * interval + x}))
    table = pa.concat_tables(rows)
    order = np.lexsort((table.column("seq").to_numpy(), table.column("seq").to_numpy() // 3000))
    table = table.take(pa.array(order))  # blocks of 3000 wake-ups of each thread alternate
    meta = Metadata(kind="simulation", threads=tuple(ThreadInfo(thread=t, cpu=t, interval_ns=interval, samples=n)
                                                          for t in (0, 1)))  # samples: the gate checks them
    ds = open_dataset(write_dataset(table, meta, tmp_path / "two.parquet", row_group_size=4096))
    streamed = analyze_tails(ds, levels_ns=(6500.0, 40_000.0))
    for fit, series in zip(streamed.threads, read_thread_series(ds), strict=True):
        memory = fit_tail(series.latency_ns, interval_ns=interval, thread=fit.thread, cpu=fit.cpu,
                          levels_ns=(6500.0, 40_000.0))
        assert json.dumps(fit.to_json()) == json.dumps(memory.to_json())
        assert abs(fit.xi - XI) < 3 * fit.xi_se
        assert fit.block_maxima is not None and len(fit.block_maxima.maxima_ns) == 100
        below = dict(fit.exceedance_probabilities)[6500.0]
        assert below.estimate == np.mean(series.latency_ns > 6500.0)
    # the threshold's exceedances are the values above it, at their positions
    x = xs[0]
    fit = streamed.threads[0]
    assert fit.exceedances == np.count_nonzero(x > fit.threshold_ns)


def test_summary_fit_needs_enough_values_and_sane_parameters() -> None:
    with pytest.raises(AnalysisError, match="too few for a tail fit"):
        fit_summary(summarize_series(np.arange(400)), interval_ns=1000)
    with pytest.raises(AnalysisError, match="confidence"):
        fit_summary(summarize_series(np.arange(4000)), interval_ns=1000, confidence=0.0)
    with pytest.raises(AnalysisError, match="cannot be merged"):
        TailAccumulator(10).merge(TailAccumulator(20))
