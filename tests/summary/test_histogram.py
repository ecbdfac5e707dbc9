"""HistogramResult holds numpy arrays and works a chunk of buckets at a time (issue 15): the statistics are
those of the whole-array formulas, in any chunking; brute force on expanded values for the MAD."""

from __future__ import annotations

import json

import numpy as np
import pytest
from jitterscope.summary import HistogramResult, LatencyHistogram
from jitterscope.summary import histogram as histogram_module


def _cases() -> dict[str, HistogramResult]:
    rng = np.random.default_rng(11)
    return {
        "lognormal": LatencyHistogram().update(rng.lognormal(9, 1.2, 50_000).astype(np.int64)).result(),
        "mixed sign": LatencyHistogram().update(rng.integers(-3000, 40_000, 20_000)).result(),
        "ties": LatencyHistogram().update(np.repeat([10, 20, 21, 30, 1000, 10**6], [5, 7, 1, 3, 2, 1])).result(),
        "bins": HistogramResult.from_bins(np.arange(5000) * 1000.0, np.full(5000, 1000.0),
                                          rng.integers(0, 4, 5000), min_ns=12.0, max_ns=4.9e6),
    }


def _brute_mad(h: HistogramResult) -> float:
    _, _, counts, middle = h._slice(0, h.bucket_counts.size)
    deviation = np.sort(np.repeat(np.abs(middle - h.percentile(50)), counts))
    return float((deviation[(h.count - 1) // 2] + deviation[h.count // 2]) / 2)


@pytest.mark.parametrize("name", sorted(_cases()))
def test_statistics_do_not_depend_on_the_chunking(monkeypatch, name) -> None:
    whole = _cases()[name]
    expected = {"p": whole.percentiles([0, 1, 50, 99, 99.99, 100]), "mad": whole.mad_ns(), "mode": whole.mode_ns(),
                "mean": whole.mean_ns(), "std": whole.std_ns()}
    assert expected["mad"] == _brute_mad(whole)
    monkeypatch.setattr(histogram_module, "CHUNK_BUCKETS", 7)  # every run of buckets crosses chunks somewhere
    chunked = _cases()[name]
    assert chunked.percentiles([0, 1, 50, 99, 99.99, 100]) == expected["p"]
    assert chunked.mad_ns() == expected["mad"]
    assert chunked.mode_ns() == expected["mode"]
    assert chunked.mean_ns() == pytest.approx(expected["mean"], rel=1e-12)  # sums of chunk sums: rounding only
    assert chunked.std_ns() == pytest.approx(expected["std"], rel=1e-9)


def test_overlapping_bins_take_the_sorting_path_with_the_same_answers() -> None:
    h = HistogramResult.from_bins([0, 10, 20, 5], [100, 5, 5, 200], [3, 4, 5, 6])
    assert not h._in_order
    assert h.mad_ns() == _brute_mad(h)
    _, _, counts, middle = h._slice(0, 4)
    assert h.mean_ns() == pytest.approx(float(np.sum(middle * counts) / counts.sum()))


def test_arrays_are_read_only_and_json_is_lists() -> None:
    h = LatencyHistogram().update(np.array([-5, 3, 3, 9000])).result()
    assert isinstance(h.bucket_lower_ns, np.ndarray) and h.bucket_counts.dtype == np.int64
    with pytest.raises(ValueError, match="read-only"):
        h.bucket_counts[0] = 7
    doc = h.to_json()
    assert json.loads(json.dumps(doc)) == doc and doc["bucket_counts"] == [1, 2, 1]
    again = HistogramResult(**{**doc})  # from the JSON lists back to arrays
    assert again == h and again is not h
    assert HistogramResult(**{**doc, "bucket_counts": [1, 2, 2]}) != h
    huge = LatencyHistogram().update(np.array([2**63 - 1])).result()
    assert huge.bucket_upper_ns.dtype == object and huge.bucket_upper_ns[0] > 2**63 - 1  # exact beyond int64


def test_from_edges_keeps_arrays_in_order_without_a_copy() -> None:
    lower = np.arange(10, dtype=np.float64)
    upper = lower + 1
    counts = np.arange(1, 11, dtype=np.int64)
    h = HistogramResult.from_edges(lower, upper, counts)
    assert np.shares_memory(h.bucket_lower_ns, lower) and np.shares_memory(h.bucket_counts, counts)
    assert h.relative_error == 1.0 and h.count == 55
    shuffled = HistogramResult.from_edges(lower[::-1].copy(), upper[::-1].copy(), counts[::-1].copy())
    assert shuffled == h
    with pytest.raises(Exception, match="widths must be > 0"):
        HistogramResult.from_edges(lower, lower, counts)


def _same_histogram(a: LatencyHistogram, b: LatencyHistogram) -> None:
    ra, rb = a.result(), b.result()
    assert (ra.count, ra.min_ns, ra.max_ns) == (rb.count, rb.min_ns, rb.max_ns)
    for name in ("bucket_lower_ns", "bucket_upper_ns", "bucket_counts"):
        np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name))


@pytest.mark.parametrize("block", [7, 1 << 16])
def test_update_steps_counts_the_differences_as_update_does(monkeypatch, block) -> None:
    # period errors of wake-up times: jitter both ways, a stall beyond the lookup table, 200,003 rows so that the
    # default block size leaves a short last block (a different path in update) and block 7 crosses 28,000 edges
    rng = np.random.default_rng(3)
    steps = 100_000 + rng.integers(-40_000, 40_000, 200_002)
    steps[[6, 7, 65_535, 65_536, 131_071]] = [3_000_000, 10, 100_000, -5, 7 * 10**9]  # values at block edges
    times = np.concatenate([[10**12], 10**12 + np.cumsum(steps)])
    monkeypatch.setattr(histogram_module, "_STEP_BLOCK", block)
    whole = LatencyHistogram().update(np.diff(times) - 100_000)
    blocked = LatencyHistogram().update_steps(times, 100_000)
    _same_histogram(blocked, whole)
    assert blocked.max_ns == 7 * 10**9 - 100_000 and blocked.min_ns == -100_005
    assert LatencyHistogram().update_steps(times[:1], 5).count == 0  # one time: no period


@pytest.mark.parametrize("name", [*sorted(_cases()), "beyond int64", "beyond 2**53"])
def test_a_single_midpoint_is_the_arrays_midpoint(name) -> None:
    # the MAD's bisection reads midpoints one at a time in Python floats: each equal, bit for bit, to the array
    # formula's (clipped to the extremes at both ends, discrete or not, int64 or Python-int or float edges)
    cases = _cases()
    cases["beyond int64"] = LatencyHistogram().update(np.array([-(2**63) + 5, -7, 0, 3, 2**63 - 9])).result()
    cases["beyond 2**53"] = LatencyHistogram().update(np.array([2**53 + 1, 2**60 + 12345, 2**62 - 1])).result()
    h = cases[name]
    index = np.arange(h.bucket_counts.size)
    whole = h._middle_at(index)
    single = np.array([h._middle(int(i)) for i in index])
    np.testing.assert_array_equal(single.view(np.int64), whole.view(np.int64))
    if name in _cases():  # an end clipped in each of these: the clip is tested (not in the wide buckets)
        assert whole[0] == h.min_ns or whole[-1] == h.max_ns
