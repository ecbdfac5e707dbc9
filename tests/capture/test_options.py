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
