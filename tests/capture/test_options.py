"""Bad input: each refusal is exactly one line on stderr and a non-zero exit; --help and --version work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MALFORMED = [
    (["-i", "0"], "interval"),
    (["-i", "10x"], "interval"),
    (["-i", "-5"], "interval"),
    (["-a", "7-3"], "CPU set"),
    (["-a", "0,,1"], "CPU set"),
    (["-D", "1x"], "duration"),
    (["-D", "0"], "duration"),
    (["-f", "abc"], "frequency"),
    (["-p", "100"], "priority"),
    (["--policy", "batch"], "policy"),
    (["--timer", "hpet"], "timer"),
    (["--counters", "magic"], "counter source"),
    (["--flush-interval", "0"], "flush-interval"),
    (["--bogus"], "unknown option"),
    (["-i"], "needs a value"),
    (["extra-argument"], "unexpected argument"),
    (["-a", "5000"], "CPU set"),
    (["-a", "999"], "not online"),
    (["--policy", "other", "-p", "50"], "policy other"),
    (["--writer-cpu", "x"], "--writer-cpu"),
    (["--writer-cpu", "-1"], "--writer-cpu"),
    (["--writer-cpu", "1x"], "--writer-cpu"),
    (["--writer-cpu", "5000"], "--writer-cpu"),
    (["--writer-cpu", "999"], "not online"),
    (["--sync", "full"], "--sync mode"),
    (["--group-seconds", "0"], "--group-seconds"),
    (["--part-seconds", "1h"], "--part-seconds"),
    (["--group-rows", "0"], "--group-rows"),
    # cyclictest's letters: one line saying what jitterscope does instead (issue 15)
    (["-m"], "cyclictest's -m is not an option here: memory is always locked"),
    (["-t", "4"], "cyclictest's -t is not an option here: one thread per CPU of -a CPUSET"),
    (["-S"], "cyclictest's -S is not an option here: one pinned thread per CPU is the default"),
    (["-n"], "cyclictest's -n is not an option here: clock_nanosleep(TIMER_ABSTIME) is the default"),
    (["-d", "0"], "cyclictest's -d is not an option here: every thread uses the same interval"),
    (["-v"], "cyclictest's -v is not an option here: every wake-up is recorded"),
    # contradictory or repeated options, which cyclictest lets the last one win silently (issue 15)
    (["-i", "100", "-f", "10"], "-i sets the interval in microseconds and -f the same interval"),
    (["-f", "10", "--interval", "100"], "-i sets the interval in microseconds and -f the same interval"),
    (["-a", "0", "-a", "1"], "option -a/--affinity is given twice; give it once (one CPU set names several"),
    (["-a", "0", "--affinity=0"], "option -a/--affinity is given twice"),
    (["-D", "1", "--duration", "2"], "option -D/--duration is given twice"),
    (["-l", "2"], "option -l/--loops is given twice"),
    (["--policy", "other", "--policy", "fifo"], "option --policy is given twice"),
    (["--latency", "5", "--no-latency"], "--latency holds /dev/cpu_dma_latency and --no-latency leaves it alone"),
]


@pytest.mark.parametrize(("args", "needle"), MALFORMED, ids=[" ".join(a) for a, _ in MALFORMED])
def test_malformed_option_is_one_line_and_usage_exit(run_capture, args: list[str], needle: str) -> None:
    run = run_capture("-l", "1", *args, output=None)
    assert run.returncode == 2
    assert len(run.stderr_lines) == 1, run.stderr
    assert run.stderr_lines[0].startswith("jitterscope-capture: ")
    assert needle in run.stderr_lines[0]
    assert run.stdout == ""


def test_existing_output_is_refused_without_force(run_capture, tmp_path: Path) -> None:
    target = tmp_path / "exists"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    run = run_capture("-l", "5", "-q", output=target)
    assert run.returncode == 1
    assert len(run.stderr_lines) == 1, run.stderr
    assert "already exists" in run.stderr and "--force" in run.stderr
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_force_replaces_previous_parts(run_capture, tmp_path: Path) -> None:
    target = tmp_path / "again"
    first = run_capture("-l", "20", "-q", output=target)
    assert first.returncode == 0, first.stderr
    second = run_capture("-l", "7", "-q", "--force", output=target)
    assert second.returncode == 0, second.stderr
    from jitterscope.dataset import open_dataset

    assert open_dataset(target).num_rows == 7 * len(open_dataset(target).metadata.threads)


def test_symlink_output_is_refused(run_capture, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink(real, link)
    for extra in ([], ["--force"]):
        run = run_capture("-l", "5", "-q", *extra, output=link)
        assert run.returncode == 1
        assert len(run.stderr_lines) == 1, run.stderr
        assert "symbolic link" in run.stderr
        assert list(real.iterdir()) == []
        assert link.is_symlink()


def test_help_has_examples_and_exits_zero(run_capture) -> None:
    run = run_capture("--help", output=None)
    assert run.returncode == 0
    assert "Examples:" in run.stdout and "--affinity" in run.stdout and "--msr-dir" in run.stdout
    assert run.stderr == ""


def test_version(run_capture) -> None:
    run = run_capture("--version", output=None)
    assert run.returncode == 0
    assert run.stdout.startswith("jitterscope-capture ")


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files back (chown) needs root")
def test_under_sudo_the_output_is_handed_back(run_capture, tmp_path: Path) -> None:
    env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65533")
    run = run_capture("-l", "5", "-q", env=env)
    assert run.returncode == 0, run.stderr
    owners = {(p.stat().st_uid, p.stat().st_gid) for p in [run.output, *run.output.iterdir()]}
    assert owners == {(65534, 65533)}


def test_jitterscope_capture_passes_options_through(tmp_path: Path) -> None:
    from jitterscope.cli import main

    extra = [] if os.geteuid() == 0 else ["--policy", "other"]
    assert main(["capture", "-l", "5", "-q", "-o", str(tmp_path / "via-cli"), *extra]) == 0
    from jitterscope.dataset import open_dataset

    assert all(t.samples == 5 for t in open_dataset(tmp_path / "via-cli").metadata.threads)
    assert main(["capture", "-i", "0"]) == 2  # the binary's usage error comes back as the exit status


@pytest.mark.parametrize(("args", "needle"), [
    (["-i", "100", "-f", "10"], "jitterscope-capture: -i sets the interval in microseconds and -f"),
    (["-a", "0", "-a", "1"], "jitterscope-capture: option -a/--affinity is given twice"),
    (["-D", "1s", "-D", "500ms"], "jitterscope-capture: option -D/--duration is given twice"),
    (["-D", "nan"], "jitterscope capture: error: argument -D/--duration: 'nan' is not a duration"),
    (["--duration=2w"], "jitterscope capture: error: argument -D/--duration: '2w' is not a duration"),
    (["-D", "0ms"], "jitterscope capture: error: argument -D/--duration: '0ms' is out of range"),
])
def test_jitterscope_capture_refuses_in_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    import subprocess
    import sys

    done = subprocess.run([str(Path(sys.executable).parent / "jitterscope"), "capture", "-l", "1", *args,
                           "-o", str(tmp_path / "never")], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(needle), done.stderr
    assert not (tmp_path / "never").exists()


def test_jitterscope_capture_takes_every_spelling_of_a_duration(tmp_path: Path) -> None:
    """-D 300ms reaches the binary (whose own -D knows s, m, h, d) as 0.3 s: 300 wake-ups at 1 kHz."""
    from jitterscope.cli import main
    from jitterscope.dataset import open_dataset

    extra = [] if os.geteuid() == 0 else ["--policy", "other"]
    assert main(["capture", "-qD300ms", "-o", str(tmp_path / "short"), *extra]) == 0
    meta = open_dataset(tmp_path / "short").metadata
    assert meta.settings["asked"]["duration_ns"] == 300_000_000
    assert all(t.samples + t.overruns <= 300 for t in meta.threads)


def test_the_wrappers_table_of_the_binarys_options_mirrors_config_c() -> None:
    """jitterscope capture finds -D among the options as getopt_long does: its tables are config.c's."""
    import re

    from jitterscope.cli.capture import BINARY_LONG_OPTIONS, BINARY_SHORT_WITH_VALUE

    source = (Path(__file__).parents[2] / "capture" / "config.c").read_text()
    table = source[source.index("config_options[] = {"):source.index("{NULL, 0, NULL, 0}")]
    kinds = {"required_argument": "required", "optional_argument": "optional", "no_argument": "none"}
    entries = re.findall(r'\{"([a-z-]+)", (\w+), NULL', table)
    assert len(entries) > 20 and {name: kinds[kind] for name, kind in entries} == BINARY_LONG_OPTIONS
    shorts = re.search(r'getopt_long\(argc, argv, "([^"]+)"', source).group(1)
    assert "".join(re.findall(r"(\w):", shorts)) == BINARY_SHORT_WITH_VALUE
