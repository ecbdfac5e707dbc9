"""``jitterscope correlate``: text and JSON output, counter edge cases, bad input as one line and exit 1."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from jitterscope.cli import main
from jitterscope.dataset import write_dataset
from jitterscope.io import simulate_story


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    out = tmp_path_factory.mktemp("story")
    paths = {}
    for kind in ("performance", "powersave"):
        table, metadata = simulate_story(kind, 4, seconds=120)
        paths[kind] = write_dataset(table, metadata, out / f"{kind}.parquet")
    return paths


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["correlate", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_output_says_what_caused_the_spikes(story, capsys):
    code, out, err = _run(capsys, story["performance"], "--threshold-us", "50", "--threshold-us", "20")
    assert code == 0 and err == ""
    verdict = out.splitlines()[1]
    assert "of wake-ups later than 50.0 µs fall within 2 periods of a frequency transition" in verdict
    assert "cpufreq claims 2400 MHz (governor performance) but f_eff" in out
    for title in ("Latency inside vs outside each condition", "Time in frequency", "Event-triggered average"):
        assert title in out


def test_json_output(story, capsys):
    code, out, _ = _run(capsys, story["powersave"], "--json", "--surrogates", "10")
    assert code == 0
    result = json.loads(out)
    assert result["available"] and not any(result["attributed"].values())
    assert result["frequency"]["claims"][0]["disagree"] is False
    assert result["params"]["n_surrogates"] == 10


def _edge_case_dataset(tmp_path, story) -> str:
    import pyarrow.parquet as pq
    from jitterscope.dataset import open_dataset

    ds = open_dataset(story["performance"])
    table = pq.read_table(story["performance"])
    cols = {name: table.column(name).to_numpy().copy() for name in table.column_names}
    cols["aperf"] = (cols["aperf"] + 2**40 - cols["aperf"][3500]) % 2**40  # a 40-bit counter wraps at row 3500
    cols["mperf"][3000:] -= cols["mperf"][3000] - 17  # MPERF reset mid-run
    cols["run_cpu"][100] = 5  # one migration
    cols["read_cycles"][200] = 1_000_000  # one slow read
    return str(write_dataset(pa.table(cols), ds.metadata, tmp_path / "edges.parquet"))


def test_counter_edge_cases_are_reported_not_fatal(tmp_path, story, capsys):
    path = _edge_case_dataset(tmp_path, story)
    code, out, err = _run(capsys, path)
    assert code == 0 and err == ""
    quality = next(line for line in out.splitlines() if "counter deltas usable" in line)
    assert "migration" in quality and "slow counter read" in quality and "counter reset" in quality
    assert "aperf wrap" in quality
    code, out, _ = _run(capsys, path, "--json", "--surrogates", "0")
    q = json.loads(out)["counter_quality"][0]["quality"]
    assert q["wraps_corrected"]["aperf"] >= 1 and q["counter_bits"]["aperf"] == 40
    assert q["discarded"]["migration (run_cpu differs from the pinned cpu)"] == 2


def test_missing_and_all_zero_counters_give_one_line(tmp_path, story, capsys):
    table, metadata = simulate_story("powersave", 2, seconds=5)
    plain = write_dataset(table.drop_columns(["aperf", "mperf", "smi"]), metadata.with_changes(
        counters={"source": "none", "columns": [], "missing": {"aperf": "no msr device", "mperf": "no msr device",
                                                               "smi": "no msr device"}}), tmp_path / "plain.parquet")
    code, out, err = _run(capsys, plain)
    assert code == 0 and err == "" and out.count("\n") == 1
    assert out.startswith("counters not recorded (counter source none; aperf: no msr device")
    zeros = table.set_column(table.schema.get_field_index("aperf"), "aperf",
                             pa.array(np.zeros(table.num_rows, np.int64)))
    zeros = zeros.set_column(zeros.schema.get_field_index("mperf"), "mperf",
                             pa.array(np.zeros(table.num_rows, np.int64)))
    zeros = zeros.set_column(zeros.schema.get_field_index("smi"), "smi", pa.array(np.zeros(table.num_rows, np.int64)))
    code, out, _ = _run(capsys, write_dataset(zeros, metadata, tmp_path / "zeros.parquet"))
    assert code == 0 and out.count("\n") == 1 and "read as zero on every wake-up" in out


def test_thread_selection(tmp_path, capsys):
    table, metadata = simulate_story("powersave", 1, seconds=10, threads=2)
    path = write_dataset(table, metadata, tmp_path / "two.parquet")
    code, out, _ = _run(capsys, path, "--thread", "1", "--json", "--surrogates", "0")
    assert code == 0 and [q["thread"] for q in json.loads(out)["counter_quality"]] == [1]
    code, _, err = _run(capsys, path, "--thread", "7")
    assert code == 1 and "no thread 7" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message, status", [
    (["/no/such/dataset"], "no such file or directory", 1),
    (["{story}", "--c0-edges", "0,x"], "--c0-edges", 1),
    (["{story}", "--alpha", "3"], "argument --alpha: '3' is out of range", 2),  # usage errors: the parser's
    (["{story}", "--rel-threshold", "0"], "argument --rel-threshold: '0' is out of range", 2),
])
def test_bad_input_is_one_line_and_exit_1(story, capsys, argv, message, status):
    code, out, err = _run(capsys, *[a.format(story=story["powersave"]) for a in argv])
    assert code == status and out == ""
    # the parser names the command by its name (power), the runner by what was typed (the alias)
    prefix = "jitterscope correlate: error:" if status == 1 else "jitterscope power: error:"
    assert err.count("\n") == 1 and err.startswith(prefix) and message in err


def test_not_a_parquet_file(tmp_path, capsys):
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"not parquet at all")
    code, _, err = _run(capsys, bad)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err


def test_frozen_frequency_counters_with_a_working_smi_counter(tmp_path, capsys):
    # what a capture with --msr-dir on static MSR files gives: APERF/MPERF never move, SMI is readable
    table, metadata = simulate_story("powersave", 3, seconds=10)
    for name in ("aperf", "mperf"):
        table = table.set_column(table.schema.get_field_index(name), name,
                                 pa.array(np.full(table.num_rows, 12345, np.int64)))
    code, out, err = _run(capsys, write_dataset(table, metadata, tmp_path / "frozen.parquet"))
    assert code == 0 and err == ""
    assert "no effective frequency measured (APERF/MPERF deltas discarded, mostly for MPERF did not advance" in out
    assert "SMIs: none counted" in out
    assert "Time in frequency" not in out and "cpufreq's claim" not in out  # no empty tables
