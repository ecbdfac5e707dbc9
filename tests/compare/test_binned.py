"""compare on histogram datasets (jitterscope.compare_binned): planted shifts, same data, hand-computed quantiles."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.compare import compare_histograms, compare_runs
from jitterscope.compare.binned import _bin_quantiles
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.derive import pooled_latency, read_thread_series
from jitterscope.errors import AnalysisError
from jitterscope.io import spec_from_options, write_simulation
from jitterscope.summary import HistogramResult

WIDTH = 1000


def _hist_dataset(path: Path, latency_ns: np.ndarray, *, overflow_above: float | None = None) -> Path:
    """A histogram dataset of ``latency_ns`` on 1 µs bins (one thread), overflows above ``overflow_above``."""
    values = np.asarray(latency_ns)
    extra: dict[str, object] = {"min_ns": int(values.min()), "max_ns": int(values.max()), "overflows": 0}
    if overflow_above is not None:
        extra["overflows"] = int(np.count_nonzero(values >= overflow_above))
        values = values[values < overflow_above]
    lower, count = np.unique((values // WIDTH) * WIDTH, return_counts=True)
    table = pa.table({"thread": np.zeros(lower.size, np.int32), "cpu": np.zeros(lower.size, np.int32),
                      "bin_start_ns": lower.astype(np.int64), "bin_width_ns": np.full(lower.size, WIDTH, np.int64),
                      "count": count.astype(np.int64)})
    meta = Metadata(kind="histogram", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000, extra=extra),))
    return write_dataset(table, meta, path)


def _lognormal(seed: int, n: int, scale: float = 1.0) -> np.ndarray:
    return (scale * 20_000 * np.exp(0.4 * np.random.default_rng(seed).standard_normal(n))).astype(np.int64)


def test_bin_quantiles_match_the_histogram_percentiles_by_hand() -> None:
    # bins [0,10) x2, [10,20) x1, [20,30) x3, [30,40) x4: midpoints 5, 15, 25, 35; n = 10
    hist = HistogramResult.from_bins([0, 10, 20, 30], [10] * 4, [2, 1, 3, 4], min_ns=5, max_ns=35)
    middle = hist._arrays[3]
    qs = np.array([0.25, 0.5, 0.9])
    got = _bin_quantiles(np.cumsum([[2, 1, 3, 4]], axis=1), middle, 10, qs)[0]
    # order statistics 5 5 15 25 25 25 35 35 35 35; numpy's linear rule on them
    expanded = np.repeat([5.0, 15.0, 25.0, 35.0], [2, 1, 3, 4])
    np.testing.assert_allclose(got, np.quantile(expanded, qs))
    np.testing.assert_allclose(got, list(hist.percentiles(qs * 100).values()))


def test_planted_regression_and_no_change(tmp_path: Path) -> None:
    base = open_dataset(_hist_dataset(tmp_path / "a.parquet", _lognormal(1, 50_000)))
    same = open_dataset(_hist_dataset(tmp_path / "b.parquet", _lognormal(2, 50_000)))
    slow = open_dataset(_hist_dataset(tmp_path / "c.parquet", _lognormal(3, 50_000, scale=1.3)))
    cmp = compare_runs([base, same, slow], n_boot=300)
    same_pair, slow_pair = cmp.pairs
    # not a change; the widest reading of the bins may leave the interval beyond ±5 %: inconclusive, never a change
    assert same_pair.verdict("p50") in ("within noise", "inconclusive")
    assert same_pair.verdict("p99") in ("within noise", "inconclusive")
    for metric in ("p50", "p99"):
        assert slow_pair.verdict(metric) == "regressed"
        change = next(m for m in slow_pair.metrics if m.metric == metric)
        assert change.relative_low < 0.3 < change.relative_high  # the planted +30 % inside the interval
    assert slow_pair.verdict("max") == "not judged"
    assert not np.isfinite(slow_pair.tests[0].p_value) and "not available" in slow_pair.tests[0].sentence
    assert any("multinomial bootstrap" in note and "optimistic" in note for note in cmp.notes)
    p99 = next(r for r in slow_pair.exceedance_ratios if r.level == "baseline p99")
    assert p99.ratio_low > 3  # x1.3 puts far more than 1 % above the baseline's p99
    same_p99 = next(r for r in same_pair.exceedance_ratios if r.level == "baseline p99")
    assert same_p99.ratio_low < 1 < same_p99.ratio_high
    json.dumps(cmp.to_json())


def test_interval_covers_no_change_for_identical_distributions(tmp_path: Path) -> None:
    """Reduced coverage check: 12 pairs of independent draws from one distribution; p99 interval covers 0."""
    covered = 0
    for trial in range(12):
        a = open_dataset(_hist_dataset(tmp_path / f"a{trial}.parquet", _lognormal(100 + trial, 20_000)))
        b = open_dataset(_hist_dataset(tmp_path / f"b{trial}.parquet", _lognormal(200 + trial, 20_000)))
        change = next(m for m in compare_runs([a, b], n_boot=200, seed=trial).pairs[0].metrics if m.metric == "p99")
        covered += change.ci_low_ns <= 0 <= change.ci_high_ns
    assert covered >= 10


def test_a_sample_run_against_its_own_histogram_is_identical(tmp_path: Path) -> None:
    sim = open_dataset(write_simulation(spec_from_options(threads=1, samples=5000), tmp_path / "s.parquet", seed=4))
    latency = pooled_latency(read_thread_series(sim))
    hist = open_dataset(_hist_dataset(tmp_path / "h.parquet", latency))
    cmp = compare_runs([hist, sim], n_boot=100)
    pair = cmp.pairs[0]
    assert all(m.difference_ns == 0 for m in pair.metrics)
    assert all(m.verdict in ("within noise", "inconclusive", "not judged") for m in pair.metrics)
    assert any("binned on 1 µs bins" in note for note in cmp.notes)
    assert "different kinds of data (histogram vs simulation)" in pair.notes


def test_overflows_go_in_a_bin_up_to_the_max_and_summary_only_is_refused(tmp_path: Path) -> None:
    values = _lognormal(5, 10_000)
    cut = float(np.quantile(values, 0.999))
    over = open_dataset(_hist_dataset(tmp_path / "o.parquet", values, overflow_above=cut))
    full = open_dataset(_hist_dataset(tmp_path / "f.parquet", values))
    cmp = compare_runs([full, over], n_boot=50)
    assert cmp.runs[1].n == values.size and cmp.runs[1].max_ns == values.max()
    assert any("overflow wake-ups put in one bin" in note for note in cmp.notes)
    p99 = next(m for m in cmp.pairs[0].metrics if m.metric == "p99")
    assert p99.difference_ns == 0  # below the cut, the bins are the same
    empty = pa.table({"thread": pa.array([], pa.int32()), "cpu": pa.array([], pa.int32()),
                      "bin_start_ns": pa.array([], pa.int64()), "bin_width_ns": pa.array([], pa.int64()),
                      "count": pa.array([], pa.int64())})
    meta = Metadata(kind="histogram", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1000, samples=10, extra={
        "summary_only": True, "overflows": 10, "min_ns": 1000, "avg_ns": 2000, "max_ns": 3000}),))
    summary_only = open_dataset(write_dataset(empty, meta, tmp_path / "q.parquet"))
    with pytest.raises(AnalysisError, match="no bin counts"):
        compare_histograms([full, summary_only], ["a", "b"])


def test_an_interval_is_never_narrower_than_the_bins(tmp_path: Path) -> None:
    """All of one run in the 14 µs bin, all of the other in the 13 µs bin: the medians may differ by 0-2 µs."""
    rng = np.random.default_rng(6)
    a = open_dataset(_hist_dataset(tmp_path / "a.parquet", rng.integers(14_000, 15_000, 100_000)))
    b = open_dataset(_hist_dataset(tmp_path / "b.parquet", rng.integers(13_000, 14_000, 100_000)))
    p50 = next(m for m in compare_runs([a, b], n_boot=100).pairs[0].metrics if m.metric == "p50")
    assert p50.ci_low_ns <= -1500 and p50.ci_high_ns >= -500
    assert p50.verdict == "inconclusive"  # -13 % ... 0 %: the bins cannot tell (it was "within noise")


def test_compare_binned_on_bins_already_held_gives_compare_histograms_verdicts(tmp_path) -> None:
    """compare_binned is compare_histograms' verdict logic for callers holding bins (the fleet's histograms)."""
    from jitterscope.compare import BinnedRun, compare_binned
    base = _hist_dataset(tmp_path / "base.parquet", _lognormal(1, 20_000))
    slow = _hist_dataset(tmp_path / "slow.parquet", _lognormal(2, 20_000, scale=1.3))
    datasets = [open_dataset(base), open_dataset(slow)]
    expected = compare_histograms(datasets, ["base", "slow"], n_boot=200)
    runs = []
    for d, label in zip(datasets, ["base", "slow"], strict=True):
        table = d.read(["bin_start_ns", "bin_width_ns", "count"])
        extra = d.metadata.threads[0].extra
        histogram = HistogramResult.from_bins(table.column(0).to_numpy(), table.column(1).to_numpy(),
                                              table.column(2).to_numpy(), min_ns=extra["min_ns"],
                                              max_ns=extra["max_ns"])
        runs.append(BinnedRun(label, str(d.path), d.metadata, histogram, 1000.0))
    got = compare_binned(runs, n_boot=200)
    assert [m.verdict for m in got.pairs[0].metrics] == [m.verdict for m in expected.pairs[0].metrics]
    assert [m.verdict for m in got.pairs[0].metrics][:3] == ["regressed"] * 3  # +30 % planted
    assert got.pairs[0].metrics == expected.pairs[0].metrics
    with pytest.raises(AnalysisError, match="at least two runs"):
        compare_binned(runs[:1])


def test_bins_are_held_as_arrays_and_read_the_same_as_from_bins(tmp_path: Path) -> None:
    """No Python lists of millions of bins (issue 15): the run's bins are numpy arrays, its quantiles those of
    HistogramResult.from_bins on the same bins, and a sample run binned in batches equals binning it at once."""
    from jitterscope.compare.binned import bin_samples, read_bins
    values = _lognormal(8, 30_000)
    run = read_bins(open_dataset(_hist_dataset(tmp_path / "h.parquet", values)), "h")
    h = run.histogram
    assert all(isinstance(a, np.ndarray) for a in (h.bucket_lower_ns, h.bucket_upper_ns, h.bucket_counts))
    lower, count = np.unique((values // WIDTH) * WIDTH, return_counts=True)
    reference = HistogramResult.from_bins(lower, np.full(lower.size, WIDTH), count, min_ns=int(values.min()),
                                          max_ns=int(values.max()))
    levels = np.array([0.0, 0.1, 0.5, 0.99, 0.9999, 1.0])
    np.testing.assert_array_equal(run.percentiles(levels), list(reference.percentiles(levels * 100).values()))
    sim = open_dataset(write_simulation(spec_from_options(threads=2, samples=40_000), tmp_path / "s.parquet", seed=9))
    binned = bin_samples(sim, "s", 700.0)
    latency = pooled_latency(read_thread_series(sim))
    at_once, at_once_count = np.unique(np.floor(latency / 700.0) * 700.0, return_counts=True)
    np.testing.assert_array_equal(binned.histogram.bucket_lower_ns, at_once)
    np.testing.assert_array_equal(binned.counts, at_once_count)
    assert (binned.histogram.min_ns, binned.histogram.max_ns) == (latency.min(), latency.max())
