"""--fail-if and --junit on summary, tails, compare and events: each condition true and false, exit 0/3/2, and the
JUnit file read by a real consumer (junitparser)."""

from __future__ import annotations

import pytest
from jitterscope.cli import main
from jitterscope.io import BaseLatency, SharedStalls, SimulationSpec, write_simulation
from junitparser import Error, Failure, JUnitXml

# 5,000 wake-ups per CPU at 1 ms: base ~3 µs (max well under 20 µs), one 2.5 ms stall of both CPUs at 2 s
SPEC = SimulationSpec(threads=2, samples=5_000, base=BaseLatency(median_ns=3_000, spread=0.1),
                      effects=(SharedStalls(times_ns=(2_000_000_000,), duration_ns=2_500_000),))
CALM = SimulationSpec(threads=2, samples=5_000, base=BaseLatency(median_ns=3_000, spread=0.1))
SLOWER = SimulationSpec(threads=2, samples=5_000, base=BaseLatency(median_ns=6_000, spread=0.1))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gates")
    return {name: str(write_simulation(spec, root / f"{name}.parquet", 1))
            for name, spec in (("stall", SPEC), ("calm", CALM), ("slower", SLOWER))}


def _gate(args: list[str], capsys) -> tuple[int, list[str]]:
    code = main(args)
    lines = [line for line in capsys.readouterr().err.splitlines() if "fail-if" in line]
    return code, lines


@pytest.mark.parametrize(("condition", "run", "holds"), [
    ("max>1ms", "stall", True), ("max>1ms", "calm", False),
    ("max>=2.5ms", "stall", True), ("max<1ms", "calm", True), ("max<1ms", "stall", False),
    ("p50>10us", "slower", False), ("p50>4us", "slower", True), ("p50<=4us", "calm", True),
    ("p99.99>1000us", "stall", True), ("p99.99>1000us", "calm", False),
    ("mean>5us", "slower", True), ("mean>5us", "calm", False),
    ("overruns>0", "stall", True), ("overruns>0", "calm", False),
    ("drops>0", "calm", False),
    ("events>1ms:0", "stall", True), ("events>1ms:1", "stall", False), ("events>1ms", "calm", False),
    ("events>3ms:0", "stall", False),
])
def test_summary_conditions_true_and_false(runs, capsys, condition, run, holds) -> None:
    code, lines = _gate(["summary", runs[run], "--fail-if", condition], capsys)
    assert code == (3 if holds else 0)
    assert len(lines) == 1 and lines[0].split(": ", 1)[1].startswith("FAILED" if holds else "passed"), lines


def test_events_and_tails_gates(runs, capsys) -> None:
    code, lines = _gate(["events", runs["stall"], "--fail-if", "events>1ms:0", "--fail-if", "max>5ms"], capsys)
    assert code == 3 and [line.split(": ")[1].split()[0] for line in lines] == ["FAILED", "passed"]
    assert "1 events with a peak above 1,000 µs" in lines[0]
    code, lines = _gate(["events", runs["calm"], "--fail-if", "events>1ms:0", "--json"], capsys)
    assert code == 0 and len(lines) == 1
    code, lines = _gate(["tails", runs["stall"], "--fail-if", "max>1ms"], capsys)
    assert code == 3 and "FAILED" in lines[0]
    code, lines = _gate(["tails", runs["calm"], "--fail-if", "max>1ms", "--fail-if", "events>1ms:0"], capsys)
    assert code == 0 and len(lines) == 2


def test_compare_verdict_gates(runs, capsys) -> None:
    code, lines = _gate(["compare", runs["calm"], runs["slower"], "--fail-if", "regressed", "--resamples", "100"],
                        capsys)
    assert code == 3 and "p50 regressed" in lines[0]
    code, lines = _gate(["compare", runs["slower"], runs["calm"], "--fail-if", "regressed", "--resamples", "100"],
                        capsys)
    assert code == 0 and lines[0].split(": ", 1)[1].startswith("passed")
    code, lines = _gate(["compare", runs["slower"], runs["calm"], "--fail-if", "improved", "--fail-if", "changed",
                         "--fail-if", "inconclusive", "--resamples", "100"], capsys)
    assert code == 3 and [line.split(": ", 1)[1].split()[0] for line in lines][:2] == ["FAILED", "FAILED"]
    code, lines = _gate(["compare", runs["calm"], runs["calm"], "--fail-if", "changed", "--fail-if", "improved",
                         "--resamples", "100"], capsys)
    assert code == 0 and all(line.split(": ", 1)[1].startswith("passed") for line in lines)


@pytest.mark.parametrize(("command", "condition"), [
    ("summary", "max>>1ms"), ("summary", "max>1parsec"), ("summary", "p99.9>-1us"), ("summary", "regressed"),
    ("summary", "fastest>1us"), ("events", "p99>1us"), ("events", "events<1ms"), ("summary", "overruns>1ms"),
    ("summary", "max>1ms:3"), ("compare", "overruns>0"),
])
def test_malformed_or_unknown_conditions_are_usage_errors(runs, capsys, command, condition) -> None:
    args = [command, runs["calm"]] + ([runs["calm"]] if command == "compare" else []) + ["--fail-if", condition]
    assert main(args) == 2  # a usage error: one line, exit 2 (main turns argparse's SystemExit into the status)
    err = capsys.readouterr().err
    assert "--fail-if" in err and "Traceback" not in err


def test_junit_file_is_read_by_junitparser(runs, capsys, tmp_path) -> None:
    junit = tmp_path / "gates.xml"
    code = main(["summary", runs["stall"], "--fail-if", "max>1ms", "--fail-if", "p50>1ms",
                 "--fail-if", "p99.999>1us", "--junit", str(junit)])
    capsys.readouterr()
    assert code == 3
    xml = JUnitXml.fromfile(str(junit))
    suites = list(xml)
    assert len(suites) == 1
    cases = {case.name: case for case in suites[0]}
    assert set(cases) == {"max>1ms", "p50>1ms", "p99.999>1us"}
    assert isinstance(cases["max>1ms"].result[0], Failure)
    assert "max = 2,5" in cases["max>1ms"].result[0].message
    assert cases["p50>1ms"].is_passed
    # 10,000 wake-ups cannot resolve p99.999: the gate fails as undecided (an error, not a pass)
    assert isinstance(cases["p99.999>1us"].result[0], Error)
    assert suites[0].tests == 3 and suites[0].failures == 1 and suites[0].errors == 1


def test_unwritable_junit_file_is_one_line(runs, capsys, tmp_path) -> None:
    (tmp_path / "dir.xml").mkdir()  # a directory where the file should go (a missing folder is a usage error)
    code = main(["summary", runs["calm"], "--fail-if", "max>1ms", "--junit", str(tmp_path / "dir.xml")])
    err = capsys.readouterr().err
    assert code == 1 and "cannot write the JUnit file" in err and "Traceback" not in err
