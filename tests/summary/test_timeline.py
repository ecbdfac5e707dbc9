"""LatencyTimeline accumulator: exact max per bin, p99 per bin within its stated error, merge == all-at-once."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.errors import AnalysisError
from jitterscope.summary import N_BUCKETS, SUB_BUCKETS, LatencyTimeline, bucket_centre_ns, bucket_of, compute_timeline

P99_ERROR = 2 ** (1 / (2 * SUB_BUCKETS)) - 1  # 2.19 %: half a bucket, geometric


def _reference(actual: np.ndarray, latency: np.ndarray, width: int) -> dict[int, tuple[int, int, float]]:
    """Per bin start: (count, max, exact p99 by the inverted-CDF rule) computed directly."""
    out = {}
    index = actual // width
    for b in np.unique(index):
        values = latency[index == b]
        out[int(b) * width] = (values.size, int(values.max()), float(np.percentile(values, 99, method="inverted_cdf")))
    return out


def _check_against_reference(result, actual, latency):
    ref = _reference(actual, latency, result.bin_width_ns)
    assert [int(s) for s in result.bin_start_ns] == sorted(ref)
    for start, count, mx, p99 in zip(result.bin_start_ns, result.count, result.max_ns, result.p99_ns, strict=True):
        n_ref, max_ref, p99_ref = ref[int(start)]
        assert count == n_ref
        assert mx == max_ref
        assert abs(p99 - p99_ref) <= P99_ERROR * p99_ref + 1e-9, (start, p99, p99_ref)


def test_buckets_cover_their_values():
    values = np.array([-5, 0, 1, 2, 3, 1000, 123_456, 10**9, 10**12], dtype=np.int64)
    buckets = bucket_of(values)
    assert list(buckets[:3]) == [0, 0, 0]
    centres = bucket_centre_ns(buckets)
    for value, centre in zip(values[3:], centres[3:], strict=True):
        assert abs(centre - value) <= P99_ERROR * value + 1e-9
    assert bucket_of(np.array([2**62])) == N_BUCKETS - 1


def test_hand_computed_bins():
    # three 1 ms bins; latencies chosen by hand
    actual = np.array([0, 100, 999_999, 1_000_000, 1_500_000, 2_000_001], dtype=np.int64) + 5_000_000
    latency = np.array([10, 30, 20, 7, 9000, 500], dtype=np.int64)
    result = LatencyTimeline(bins=8).update(0, 3, actual, latency).result()
    (thread,) = result.threads
    assert thread.cpu == 3 and thread.bin_width_ns == 1_000_000
    assert thread.bin_start_ns.tolist() == [5_000_000, 6_000_000, 7_000_000]
    assert thread.count.tolist() == [3, 2, 1]
    assert thread.max_ns.tolist() == [30, 9000, 500]
    # p99 of 3 values is the largest; reported at the bucket centre, clipped to the exact max
    assert thread.p99_ns[0] == pytest.approx(30, rel=P99_ERROR)
    assert thread.p99_ns[1] <= 9000 and thread.p99_ns[1] == pytest.approx(9000, rel=P99_ERROR)
    assert result.origin_ns == 5_000_000 and thread.first_ns == 5_000_000 and thread.last_ns == 7_000_001


def test_span_doubles_bin_width_and_memory_stays_fixed():
    rng = np.random.default_rng(1)
    actual = np.sort(rng.integers(0, 10_000_000_000, 200_000))  # 10 s at 1 ms bins: must coarsen
    latency = rng.integers(1000, 50_000, actual.size)
    timeline = LatencyTimeline(bins=64)
    for chunk in np.array_split(np.arange(actual.size), 7):
        timeline.update(0, 0, actual[chunk], latency[chunk])
    state = timeline._threads[0]
    assert state.count.size == 64 and state.hist.shape == (64, N_BUCKETS)
    result = timeline.result().threads[0]
    width = result.bin_width_ns
    assert width % 1_000_000 == 0 and (width // 1_000_000) & (width // 1_000_000 - 1) == 0  # power of two
    assert 10_000_000_000 / width <= 64 < 2 * 10_000_000_000 / width + 2
    _check_against_reference(result, actual, latency)


def test_p99_per_bin_matches_numpy_on_random_data():
    rng = np.random.default_rng(7)
    actual = np.sort(rng.integers(0, 2_000_000_000, 400_000))
    latency = rng.lognormal(np.log(5000), 0.8, actual.size).astype(np.int64)
    result = LatencyTimeline(bins=32).update(2, 2, actual, latency).result().threads[0]
    _check_against_reference(result, actual, latency)


@pytest.mark.parametrize("split", ["halves", "interleaved", "disjoint-spans"])
def test_merge_equals_all_at_once(split):
    rng = np.random.default_rng(3)
    actual = np.sort(rng.integers(10**12, 10**12 + 3 * 10**9, 50_000))
    latency = rng.integers(-200, 80_000, actual.size)  # negative latencies (imports) go to the lowest bucket
    if split == "halves":
        parts = [np.arange(actual.size) < actual.size // 2]
    elif split == "interleaved":
        parts = [np.arange(actual.size) % 3 == 0]
    else:  # the second accumulator alone spans little, the first a lot: widths differ before the merge
        parts = [actual > actual[-50]]
    mask = parts[0]
    whole = LatencyTimeline(bins=16).update(0, 0, actual, latency).result()
    a = LatencyTimeline(bins=16).update(0, 0, actual[mask], latency[mask])
    b = LatencyTimeline(bins=16).update(0, 0, actual[~mask], latency[~mask])
    for merged in (a.merge(b).result(),
                   LatencyTimeline(bins=16).update(0, 0, actual[~mask], latency[~mask]).merge(
                       LatencyTimeline(bins=16).update(0, 0, actual[mask], latency[mask])).result()):
        ours, theirs = merged.threads[0], whole.threads[0]
        assert ours.bin_width_ns == theirs.bin_width_ns
        for name in ("bin_start_ns", "count", "max_ns", "p99_ns"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))


def test_threads_are_kept_apart_and_merge_by_thread():
    t = np.arange(0, 5_000_000, 1000, dtype=np.int64)
    one = LatencyTimeline(bins=8).update(0, 0, t, np.full(t.size, 100))
    two = LatencyTimeline(bins=8).update(1, 4, t, np.full(t.size, 7000))
    result = one.merge(two).result()
    assert [(th.thread, th.cpu, int(th.max_ns.max())) for th in result.threads] == [(0, 0, 100), (1, 4, 7000)]
    assert result.to_json()["threads"][1]["cpu"] == 4


def _write(tmp_path, actual_by_thread, latency_by_thread, kind="capture"):
    cols = {"cpu": [], "thread": [], "seq": [], "expected_ns": [], "actual_ns": []}
    threads = []
    for thread, (actual, latency) in enumerate(zip(actual_by_thread, latency_by_thread, strict=True)):
        n = actual.size
        cols["cpu"].append(np.full(n, thread * 2, np.int32))
        cols["thread"].append(np.full(n, thread, np.int32))
        cols["seq"].append(np.arange(n, dtype=np.int64))
        cols["expected_ns"].append(actual - latency)
        cols["actual_ns"].append(actual)
        threads.append(ThreadInfo(thread=thread, cpu=thread * 2, interval_ns=1_000_000, samples=n))
    table = pa.table({k: np.concatenate(v) for k, v in cols.items()})
    return write_dataset(table, Metadata(kind=kind, threads=tuple(threads)), tmp_path / "d.parquet",
                         row_group_size=777)


def test_compute_timeline_on_a_dataset_finds_the_planted_spike(tmp_path):
    n = 20_000
    expected = 10**12 + np.arange(n, dtype=np.int64) * 1_000_000  # 1 kHz for 20 s
    rng = np.random.default_rng(5)
    latencies = [rng.integers(2000, 6000, n), rng.integers(2000, 6000, n)]
    latencies[1][12_345] = 750_000  # planted spike on thread 1 at t = 12.345 s
    actuals = [expected + lat for lat in latencies]
    path = _write(tmp_path, actuals, latencies)
    result = compute_timeline(open_dataset(path), bins=128)
    assert result.origin_ns == min(int(actuals[0][0]), int(actuals[1][0]))
    spiked = result.thread(1)
    assert spiked.cpu == 2
    peak = int(np.argmax(spiked.max_ns))
    assert spiked.max_ns[peak] == 750_000
    assert spiked.bin_start_ns[peak] <= actuals[1][12_345] < spiked.bin_start_ns[peak] + spiked.bin_width_ns
    assert result.thread(0).max_ns.max() < 6000
    _check_against_reference(spiked, actuals[1], latencies[1])


def test_histogram_dataset_and_empty_input_are_refused(tmp_path):
    table = pa.table({"thread": np.array([0], np.int32), "cpu": np.array([0], np.int32),
                      "bin_start_ns": np.array([0]), "bin_width_ns": np.array([1000]), "count": np.array([5])})
    meta = Metadata(kind="histogram", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1000),))
    path = write_dataset(table, meta, tmp_path / "h.parquet")
    with pytest.raises(AnalysisError, match="histogram-only"):
        compute_timeline(open_dataset(path))
    with pytest.raises(AnalysisError, match="no wake-ups"):
        LatencyTimeline().result()
    with pytest.raises(ValueError):
        LatencyTimeline(bins=1)
