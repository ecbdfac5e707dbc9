"""Plans: reading, the design, and the check that refuses what cannot run (one line each, exit 2, nothing
changed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.cli.capture import BINARY_LONG_OPTIONS
from jitterscope.sweep import CAPTURE_OPTIONS, Machine, check_plan, read_plan

from .conftest import JITTERSCOPE, REAL_GOVERNOR, snapshot


def _plan(tmp_path: Path, body: str, root: Path | None = None) -> Path:
    path = tmp_path / "plan.toml"
    machine = f'[machine]\nroot = "{root}"\n' if root else ""
    path.write_text(body + machine)
    return path


GOOD = """
[capture]
duration = "2s"
interval_us = 500
[factors]
"cpuidle.governor" = ["ladder", "menu"]
"cpuidle.deepest_state" = [0, 2]
"cpufreq.governor" = ["performance"]
"cpufreq.max_khz" = [2000000]
sched_rt_runtime_us = [-1]
cpu_dma_latency = [0, "none"]
load = ["none", "stress-ng --cpu 1 --quiet"]
[design]
replicates = 2
seed = 7
warmup = "500ms"
"""


def test_a_good_plan_lists_every_change_from_what_to_what(tmp_path: Path, fake_machine: Path) -> None:
    plan = read_plan(_plan(tmp_path, GOOD, fake_machine))
    check = check_plan(plan)
    assert check.ok, check.problems
    changes = {(knob, Path(path).relative_to(fake_machine).as_posix(), old, new)
               for knob, path, old, new in check.changes}
    assert ("cpuidle.governor", "sys/devices/system/cpu/cpuidle/current_governor", "menu", "ladder") in changes
    # deepest state 0: states 1 and 2 disabled on both measured CPUs, state 0 left enabled
    for cpu in (0, 1):
        for state, value in ((0, "0"), (1, "1"), (2, "1")):
            assert ("cpuidle.deepest_state", f"sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}/disable", "0",
                    value) in changes
    assert ("cpufreq.governor", "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "schedutil",
            "performance") in changes
    assert ("cpufreq.max_khz", "sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3600000",
            "2000000") in changes
    assert ("sched_rt_runtime_us", "proc/sys/kernel/sched_rt_runtime_us", "950000", "-1") in changes
    assert check.loads == ("stress-ng --cpu 1 --quiet",)


def test_the_design_is_randomised_complete_blocks_reproducible_by_seed(tmp_path: Path, fake_machine: Path) -> None:
    plan = read_plan(_plan(tmp_path, GOOD, fake_machine))
    runs = plan.design()
    conditions = len(plan.conditions)
    assert conditions == 2 * 2 * 1 * 1 * 1 * 2 * 2 and len(runs) == 2 * conditions
    for block in range(2):  # every condition once per block
        assert sorted(r.condition.index for r in runs if r.block == block) == list(range(conditions))
    assert [r.condition.index for r in runs] == [r.condition.index for r in plan.design()]  # same seed, same order
    assert [r.condition.index for r in runs[:conditions]] != list(range(conditions))  # shuffled
    other = read_plan(_plan(tmp_path, GOOD.replace("seed = 7", "seed = 8"), fake_machine)).design()
    assert [r.condition.index for r in other] != [r.condition.index for r in runs]
    sequential = read_plan(_plan(tmp_path, GOOD + "", fake_machine))
    sequential = type(sequential)(**{**sequential.__dict__, "order": "sequential"})
    assert [r.condition.index for r in sequential.design()] == list(range(conditions)) * 2


def test_capture_options_and_cpu_dma_latency_reach_the_binary(tmp_path: Path, fake_machine: Path) -> None:
    plan = read_plan(_plan(tmp_path, GOOD, fake_machine))
    by_dma = {c.level("cpu_dma_latency"): plan.capture_options(c) for c in plan.conditions}
    assert "--latency=0" in by_dma[0] and "--no-latency" not in by_dma[0]
    assert "--no-latency" in by_dma["none"] and not any(o.startswith("--latency") for o in by_dma["none"])
    assert "--interval=500" in by_dma[0]


def test_quoted_and_dotted_factor_names_are_the_same(tmp_path: Path, fake_machine: Path) -> None:
    quoted = read_plan(_plan(tmp_path, GOOD, fake_machine)).factors
    dotted = read_plan(_plan(tmp_path, GOOD.replace('"cpuidle.governor"', "cpuidle.governor"), fake_machine)).factors
    assert dotted == quoted


def test_the_plan_knows_only_options_the_binary_has() -> None:
    assert set(CAPTURE_OPTIONS) <= set(BINARY_LONG_OPTIONS)


def test_loads_run_on_the_cpus_not_measured_else_all(tmp_path: Path, fake_machine: Path) -> None:
    plan = read_plan(_plan(tmp_path, GOOD.replace('interval_us = 500', 'interval_us = 500\naffinity = "1"'),
                           fake_machine))
    machine = Machine(fake_machine)
    assert plan.load_cpus_for(plan.conditions[0], machine) == [0]
    assert plan.measured_cpus(plan.conditions[0], machine) == [1]
    everywhere = read_plan(_plan(tmp_path, GOOD, fake_machine))
    assert everywhere.load_cpus_for(everywhere.conditions[0], machine) == [0, 1]


BAD = {
    "unknown factor": ('"cpuidle.governer" = ["menu"]', "cpuidle.governer: unknown factor"),
    "impossible governor": ('"cpuidle.governor" = ["teo"]', "'teo' is not one of this machine's governors"),
    "impossible idle state": ('"cpuidle.deepest_state" = [7]', "has states 0-2, not 7"),
    "frequency out of range": ('"cpufreq.min_khz" = [100]', "outside CPU 0's range"),
    "missing load program": ('load = ["no-such-load-program --cpu 1"]', "program 'no-such-load-program' not found"),
    "rt runtime over the period": ("sched_rt_runtime_us = [2000000]", "is not -1 (no throttling) or 0-1000000"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_plan_that_cannot_run_is_refused_in_one_line_exit_2_nothing_changed(
        tmp_path: Path, fake_machine: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    factor, message = BAD[case]
    path = _plan(tmp_path, f'[capture]\nduration = "1s"\n[factors]\n{factor}\n', fake_machine)
    before = snapshot(fake_machine)
    assert main(["sweep", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert main(["sweep", "run", str(path), "-o", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()
    assert snapshot(fake_machine) == before


def test_every_problem_of_a_plan_is_one_line(tmp_path: Path, fake_machine: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    body = ('[capture]\nduration = "0s"\n[factors]\nfrobnicate = [1]\n"cpuidle.governor" = ["teo"]\n'
            'load = ["no-such-load-program"]\n')
    before = snapshot(fake_machine)
    assert main(["sweep", "check", str(_plan(tmp_path, body, fake_machine))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4, err
    assert "duration: must be longer than 0" in err[0]
    assert all(line.startswith("jitterscope sweep: error: ") for line in err)
    assert snapshot(fake_machine) == before


def test_a_bad_plan_on_the_real_machine_changes_nothing(tmp_path: Path, real_knobs: dict[str, str]) -> None:
    path = _plan(tmp_path, '[capture]\nduration = "0"\n[factors]\n"cpuidle.governor" = ["ladder"]\n'
                           'load = ["no-such-load-program"]\n')
    done = subprocess.run([*JITTERSCOPE, "sweep", "run", str(path), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert REAL_GOVERNOR.read_text().strip() == real_knobs["governor"]


def test_a_plan_that_is_not_toml_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plan.toml"
    path.write_text("[capture\nduration = 1\n")
    assert main(["sweep", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a TOML file" in err[0]
