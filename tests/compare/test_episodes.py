"""One run per side (issue 21): blocks from episodes and drift, tail verdicts by episodes, drift widens p50/p99.

Each test here fails when its rule is removed (named in the docstring).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from jitterscope.compare import (
    CompareStream,
    compare_runs,
    compare_samples,
    episode_test,
    exceedances_of,
    optimal_block_length,
    pair_headline,
    structured_block_length,
)
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.io import SharedStalls, SimulationSpec, simulate

DATA = Path(__file__).parent.parent / "data" / "compare-null"
CHANGES = ("regressed", "improved")
META = Metadata(kind="simulation", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000),))


def _stall_runs(tmp: Path) -> tuple[Path, Path]:
    """Five 40 ms stalls of both CPUs in a 5 s run at 1 kHz, and a run without them (different seed)."""
    stalls = SimulationSpec(threads=2, samples=5_000, effects=(
        SharedStalls(times_ns=tuple(int(t * 1e9) for t in (0.5, 1.5, 2.5, 3.5, 4.5)), duration_ns=40_000_000),))
    a, b = simulate(stalls, 1), simulate(SimulationSpec(threads=2, samples=5_000), 2)
    return (write_dataset(a.table, a.metadata, tmp / "stalls.parquet"),
            write_dataset(b.table, b.metadata, tmp / "clean.parquet"))


def test_a_tail_decided_by_a_few_episodes_is_inconclusive_and_says_how_many(tmp_path: Path) -> None:
    """Rule: episode_rule (streamed path).  Without it p99.9 is "improved" (the GPD makes 16 ms implausible for
    the clean run), although only the five stalls put the baseline's p99.9 there."""
    a, b = _stall_runs(tmp_path)
    cmp = compare_runs([open_dataset(a), open_dataset(b)], n_boot=200)
    pair = cmp.pairs[0]
    p999 = next(m for m in pair.metrics if m.metric == "p99.9")
    assert p999.baseline_ns > 10_000_000 and p999.candidate_ns < 20_000  # a 2,000-fold drop on paper
    assert p999.verdict == "inconclusive"
    assert p999.episodes is not None and not p999.episodes.shown
    assert p999.episodes.baseline < 20 and p999.episodes.candidate < 20
    assert "independent episodes above" in p999.sentence
    assert f"{p999.episodes.baseline} vs {p999.episodes.candidate} independent episodes" in pair_headline(cmp, 1)
    # the max: five stalls of 40 ms against a run that never passed 10 µs are enough episodes to show it
    assert pair.verdict("max") == "improved"
    episodes = json.loads(json.dumps(cmp.to_json(), allow_nan=False))["pairs"][0]["metrics"][2]["episodes"]
    assert episodes["baseline"] == p999.episodes.baseline and episodes["shown"] is False


def test_a_dual_cpu_stall_is_one_episode_and_a_few_episodes_never_show_a_change() -> None:
    """Rule: episodes in time over every CPU; the binomial test on episodes (episode_test)."""
    times = np.arange(10_000) * 500_000  # two threads interleaved at 1 kHz each
    values = np.full(10_000, 5_000.0)
    values[[100, 101, 102, 103]] = 40e6  # one stall seen by both CPUs, twice each
    values[[5_000, 5_001]] = 30e6
    ex = exceedances_of(times, values, interval_ns=1_000_000)
    assert ex.episodes_above(1e6) == 2
    clean = exceedances_of(times, np.full(10_000, 5_000.0), interval_ns=1_000_000)
    check = episode_test(ex, 10_000, clean, 10_000, 10_000.0, alpha=0.05)
    assert check is not None and (check.baseline, check.candidate) == (2, 0) and not check.shown
    many = values.copy()
    many[np.arange(300, 9_000, 800)] = 20e6  # 11 more, isolated
    check = episode_test(exceedances_of(times, many, 1_000_000), 10_000, clean, 10_000, 10_000.0, alpha=0.05)
    assert check is not None and check.baseline == 13 and check.shown


def test_blocks_keep_episodes_whole_where_the_autocorrelation_sees_nothing() -> None:
    """Rule: the episode length in structured_block_length.  Politis-White says 1 on this series."""
    rng = np.random.default_rng(3)
    x = 5_000 * np.exp(0.2 * rng.standard_normal(10_000))
    for start in (1_000, 4_000, 8_000):  # three stall episodes: late wake-ups ten periods apart
        x[start + np.array([0, 10, 20])] = 50_000
    assert optimal_block_length(x).length == 1
    block = structured_block_length([x])
    assert block.length >= 42  # twice the episode's 21 wake-ups
    assert "set by episodes" in block.reason


def test_a_drifting_run_is_resampled_by_segments() -> None:
    """Rule: the drift length in structured_block_length (Kruskal-Wallis across 20 segments)."""
    rng = np.random.default_rng(4)
    x = 5_000 * np.exp(0.2 * rng.standard_normal(20_000))
    x[10_000:] *= 1.15  # the host got slower half-way
    block = structured_block_length([x])
    assert block.length == 1_000
    assert "segments (drift)" in block.reason
    steady = structured_block_length([5_000 * np.exp(0.2 * rng.standard_normal(20_000))])
    assert steady.length < 100


def test_every_thread_s_block_gets_the_same_weights() -> None:
    """Rule: the bootstrap weights do not depend on the thread (a stall of all CPUs is drawn as one)."""
    rng = np.random.default_rng(5)
    values = rng.integers(1_000, 50_000, 4_000)
    seq = np.arange(values.size)

    def stream() -> CompareStream:
        return CompareStream(n_boot=50, block_length=40, resample_fraction=1.0, seed=7)

    one = stream().update(0, seq, values).result()
    two = stream().update(0, seq, values).update(1, seq, values).result()
    assert np.array_equal(two.replicates[:, :one.replicates.shape[1]] if two.low_key == one.low_key else
                          two.replicates, 2 * one.replicates)


def test_a_drifting_pair_is_not_a_change_that_its_segments_could_make() -> None:
    """Rule: drift_rule.  Segments whose medians wander by ~10 % (log sd): a 15 % shift of a whole run is within
    what one more run could show, although the segment bootstrap alone calls it regressed."""
    rng = np.random.default_rng(6)

    def run(scale: float) -> np.ndarray:
        levels = np.exp(0.1 * rng.standard_normal(20))
        return (scale * 5_000 * np.repeat(levels, 1_000) * np.exp(0.2 * rng.standard_normal(20_000))).astype(
            np.int64)

    a, b = run(1.0), run(1.15)
    pair = compare_samples([a, b], [META, META], ["a", "b"], n_boot=100).pairs[0]
    p50 = next(m for m in pair.metrics if m.metric == "p50")
    assert p50.verdict == "inconclusive"
    assert "widened by the runs' drift" in p50.sentence
    # a change far beyond the drift still shows
    far = compare_samples([a, (b * 2).astype(np.int64)], [META, META], ["a", "b"], n_boot=100).pairs[0]
    assert far.verdict("p50") == "regressed"


@pytest.mark.parametrize(("first", "second"), [("run03", "run04"), ("run05", "run06")])
def test_real_captures_with_identical_settings_claim_no_change(first: str, second: str) -> None:
    """Rules: drift_rule and episode_rule on real data (tests/data/compare-null/README.md).  Without the drift
    rule 03 vs 04 says "p99 improved" and 05 vs 06 "p50 regressed"."""
    cmp = compare_runs([open_dataset(DATA / first), open_dataset(DATA / second)], n_boot=300)
    claims = [m for m in cmp.pairs[0].metrics if m.verdict in CHANGES]
    assert claims == [], [m.sentence for m in claims]


def test_the_in_memory_reference_applies_the_episode_rule_with_times(tmp_path: Path) -> None:
    """Rule: episode_rule in compare_samples (the in-memory reference), episodes counted in time over both CPUs."""
    a, b = _stall_runs(tmp_path)
    series, metas, times = [], [], []
    for path in (a, b):
        ds = open_dataset(path)
        table = ds.read(["thread", "seq", "expected_ns", "actual_ns"])
        order = np.lexsort((table["seq"].to_numpy(), table["thread"].to_numpy()))
        expected = table["expected_ns"].to_numpy()[order]
        series.append((table["actual_ns"].to_numpy()[order] - expected).astype(np.int64))
        times.append(expected)
        metas.append(ds.metadata)
    pair = compare_samples(series, metas, ["stalls", "clean"], n_boot=100, times_ns=times).pairs[0]
    p999 = next(m for m in pair.metrics if m.metric == "p99.9")
    assert p999.verdict == "inconclusive" and p999.episodes is not None and not p999.episodes.shown


def test_a_long_drifting_run_draws_enough_segments_per_replicate(tmp_path: Path) -> None:
    """Rule: MIN_BLOCKS_DRAWN in stream_run.  m-out-of-n with m = 10,000 of 100,000 wake-ups would draw about two
    5,000-wake-up segments per replicate; the run is resampled whole instead."""
    import pyarrow as pa

    sim = simulate(SimulationSpec(threads=1, samples=100_000), 8)
    table = sim.table
    actual = table["actual_ns"].to_numpy().copy()
    expected = table["expected_ns"].to_numpy()
    latency = actual - expected
    latency[50_000:] = (latency[50_000:] * 1.15).astype(np.int64)  # the host got slower half-way
    table = table.set_column(table.schema.get_field_index("actual_ns"), "actual_ns",
                             pa.array(expected + latency, type=pa.int64()))
    path = write_dataset(table, sim.metadata, tmp_path / "drift.parquet")
    cmp = compare_runs([open_dataset(path), open_dataset(path)], n_boot=20, max_resample=10_000)
    run = cmp.runs[0]
    assert run.block_length == 5_000 and "segments (drift)" in run.block_reason
    assert run.resample_length == run.n
