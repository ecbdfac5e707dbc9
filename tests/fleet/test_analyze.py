"""The fleet's statistics on a fleet with planted answers, computed in-process (``scheduler="serial"``).

The planted fleet: 10 machines x 4 nights, 2 threads x 5000 wake-ups each; governor ``powersave`` on
machines 2, 5, 8 (0.5 % of wake-ups +60 µs: p99.9 and up move) and a 25 Hz +40 µs disturbance on
machine 1's third night (2.5 % of wake-ups: p99 and up move).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import open_dataset, write_dataset
from jitterscope.fleet import (
    GroupKey,
    SkippedDataset,
    compare_consecutive,
    merge_group,
    quantile_intervals,
    run_fleet,
    summarize_run,
    write_simulated_fleet,
)
from jitterscope.fleet.analyze import coarsen
from jitterscope.io import import_files
from jitterscope.summary import LatencyHistogram

FORMATS = __import__("pathlib").Path(__file__).parents[1] / "data" / "formats"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return write_simulated_fleet(tmp_path_factory.mktemp("fleet"), hosts=10, nights=4, samples=5_000, bad_every=3)


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("bad")
    corrupt = folder / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not really parquet PAR1")
    foreign = folder / "foreign.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), foreign)
    table, meta = import_files([FORMATS / "ct-hist.txt"])
    histogram = folder / "histogram.parquet"
    write_dataset(table, meta, histogram)
    return [str(corrupt), str(foreign), str(histogram), str(folder / "missing.parquet")]


@pytest.fixture(scope="module")
def by_governor(planted, bad_inputs):
    return run_fleet([*planted.paths, *bad_inputs], by=GroupKey("governor"), scheduler="serial")


def test_the_bad_configuration_is_ranked_worst_and_named_by_the_key_table(planted, by_governor) -> None:
    fleet = by_governor
    assert fleet.groups[0].value == planted.bad_value == "powersave"
    assert fleet.groups[0].runs == 12 and fleet.groups[0].hosts == 3
    # p99.99 well above the good governors' (the planted +60 µs)
    assert fleet.groups[0].quantile("p99.99").value_ns > 55_000
    assert fleet.groups[-1].quantile("p99.99").value_ns < 15_000
    top = fleet.keys[0]
    assert top.key == planted.bad_key and top.significant and top.values[0].value == "powersave"
    # every other key (kernel, hz, idle=poll, isolcpus, nohz_full) is orthogonal to the bad machines
    assert [k.key for k in fleet.keys if k.significant] == ["governor"]
    assert {k.key for k in fleet.keys} == {"governor", "kernel", "env hz", "cmdline idle", "cmdline isolcpus",
                                           "cmdline nohz_full"}
    assert fleet.tail_metric == "p99.9"  # 10000 wake-ups per run: 10 above p99.9


def test_that_machines_history_flags_the_planted_night_and_no_other(planted, by_governor) -> None:
    flagged = [(host, point.path) for host, point in by_governor.flagged]
    assert flagged == [(planted.regressed_host, planted.regressed_path)]
    history = next(h for h in by_governor.histories if h.host == planted.regressed_host)
    assert history.ordered_by == "start time"
    assert [p.path.endswith(f"night-{i:02d}.parquet") for i, p in enumerate(history.points)] == [True] * 4
    change = history.points[planted.regressed_night].change
    assert {"p99", "p99.9"} <= set(change.regressed)
    # the night after is better than the regressed one: improved, not a regression
    after = dict((m[0], m[1]) for m in history.points[planted.regressed_night + 1].change.metrics)
    assert after["p99"] == "improved"


def test_by_host_ranks_the_bad_machines_first(planted) -> None:
    fleet = run_fleet(list(planted.paths), scheduler="serial")
    assert fleet.by == "host"
    assert {g.value for g in fleet.groups[:3]} == set(planted.bad_hosts)
    assert len(fleet.histories) == 10 and all(len(h.points) == 4 for h in fleet.histories)


def test_unreadable_and_foreign_datasets_are_listed_with_their_reason(by_governor, bad_inputs) -> None:
    reasons = {s.path: s.reason for s in by_governor.skipped}
    assert list(reasons) == bad_inputs
    # the dataset gate refuses a damaged file before reading it (its footer claims a size no dataset needs)
    assert "not a readable Parquet file" in reasons[bad_inputs[0]] or "damaged" in reasons[bad_inputs[0]]
    assert "jitterscope" in reasons[bad_inputs[1]]  # no jitterscope metadata
    assert "histogram-kind" in reasons[bad_inputs[2]]
    assert "no such file" in reasons[bad_inputs[3]]
    assert all("\n" not in r and not r.startswith("/") for r in reasons.values())
    assert by_governor.runs == 40


def test_merged_groups_are_exact_where_exact_and_within_hdr_error_for_quantiles(planted) -> None:
    paths = [p for p in planted.paths if "/rt-00/" in p or "/rt-02/" in p]
    records = [summarize_run(p) for p in paths]
    group = merge_group("two machines", records)
    values = np.concatenate([(t.column("actual_ns").to_numpy() - t.column("expected_ns").to_numpy())
                             for t in (open_dataset(p).read(["expected_ns", "actual_ns"]) for p in paths)])
    assert group.n == values.size and group.min_ns == values.min() and group.max_ns == values.max()
    assert group.mean_ns == pytest.approx(values.mean(), rel=1e-12)
    for level, q in (("p50", 50), ("p99", 99), ("p99.9", 99.9), ("p99.99", 99.99)):
        estimate = group.quantile(level)
        exact = np.percentile(values, q)
        assert estimate.value_ns == pytest.approx(exact, rel=1e-3, abs=1)
        assert estimate.low_ns <= exact * (1 + 1e-3) and estimate.high_ns >= exact * (1 - 1e-3)


def test_quantile_intervals_on_a_hand_made_case() -> None:
    histogram = LatencyHistogram().update(np.arange(1, 1001, dtype=np.int64)).result()  # 1 .. 1000 ns, exact
    estimates = {q.level: q for q in quantile_intervals(histogram)}
    p50 = estimates["p50"]
    assert p50.value_ns == pytest.approx(500.5)
    # Binomial(1000, 0.5): 2.5 % point 469, 97.5 % point 531, so [X(469), X(532)] (1-based) = [469, 532] ns
    assert p50.low_ns == pytest.approx(469, abs=1e-6) and p50.high_ns == pytest.approx(532, abs=1e-6)
    assert not p50.open_above
    # Binomial(1000, 0.99): 2.5 % point 983, 97.5 % point 996: [X(983), X(997)]
    assert estimates["p99"].low_ns == pytest.approx(983, abs=1e-6)
    assert estimates["p99"].high_ns == pytest.approx(997, abs=1e-6)
    assert estimates["p99.99"].open_above and estimates["p99.99"].high_ns == 1000


def test_coarsen_keeps_count_and_extremes_and_moves_quantiles_less_than_its_width(planted) -> None:
    result = summarize_run(planted.paths[0]).histogram.result()
    coarse = coarsen(result, 0.01)
    assert len(coarse.bucket_counts) < len(result.bucket_counts) / 5
    assert (coarse.count, coarse.min_ns, coarse.max_ns) == (result.count, result.min_ns, result.max_ns)
    assert sum(coarse.bucket_counts) == result.count
    assert np.all(np.asarray(coarse.bucket_upper_ns)[:-1] <= np.asarray(coarse.bucket_lower_ns)[1:])
    for q in (50, 99, 99.9):
        assert coarse.percentile(q) == pytest.approx(result.percentile(q), rel=0.011)


def test_compare_consecutive_sees_no_change_against_itself_and_the_planted_regression(planted) -> None:
    host = f"/{planted.regressed_host}/"
    runs = [summarize_run(p) for p in planted.paths if host in p]
    same = compare_consecutive(runs[0], runs[0])
    # against itself nothing changed; a wide tail interval may be "inconclusive", never a change
    assert not same.flagged and all(m[1] in ("within noise", "inconclusive", "not judged") for m in same.metrics)
    assert compare_consecutive(runs[0], runs[1]).regressed == ()
    assert "p99" in compare_consecutive(runs[1], runs[planted.regressed_night]).regressed


def test_no_usable_dataset_is_one_error(bad_inputs) -> None:
    from jitterscope.errors import AnalysisError
    with pytest.raises(AnalysisError, match=r"no usable dataset.*4 skipped"):
        run_fleet(bad_inputs, scheduler="serial")
    assert isinstance(summarize_run(bad_inputs[0]), SkippedDataset)


def test_json_is_strict(by_governor) -> None:
    import json
    text = json.dumps(by_governor.to_json(), allow_nan=False)
    data = json.loads(text)
    assert data["groups"][0]["value"] == "powersave" and len(data["skipped"]) == 4
