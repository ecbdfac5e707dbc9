"""``report --methods``: the methods paragraph, every fact in it from a metadata field of the dataset."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset
from jitterscope.report import methods_latex, methods_text

TRACED = Path(__file__).resolve().parents[1] / "data" / "capture" / "traced-2s"


@pytest.fixture(scope="module")
def meta():
    return open_dataset(TRACED).metadata


def _with(meta, **changes):
    """``meta`` with some fields of its environment, settings.granted or settings.asked changed."""
    env = dict(meta.environment or {})
    env.update(changes.pop("environment", {}))
    settings = {"asked": {**meta.asked, **changes.pop("asked", {})},
                "granted": {**meta.granted, **changes.pop("granted", {})}}
    return dataclasses.replace(meta, environment=env, settings=settings, **changes)


def test_the_paragraph_of_a_real_capture_states_its_facts(meta) -> None:
    text = methods_text(meta, dataset_sha256="ab" * 32)
    for fact in ("jitterscope-capture 0.1.0", "Intel(R) Xeon(R) Processor", "2 CPUs online (0-1",
                 f"Linux {meta.environment['kernel_release']}", "preemption model dynamic", "Isolated CPUs: none",
                 "cpuidle driver none with governor menu", "every 1 ms", "TIMER_ABSTIME", "SCHED_FIFO at priority 99",
                 "asked to last 2 s", f"{sum(t.samples for t in meta.threads):,} wake-ups", "perf: smi",
                 "sched:sched_switch", "expected_ns", "HDR histogram", "generalized Pareto", "ab" * 32):
        assert fact in text, fact


@pytest.mark.parametrize(("change", "before", "after"), [
    ({"tool": {"name": "jitterscope-capture", "version": "9.9.9"}}, "0.1.0", "9.9.9"),
    ({"environment": {"kernel_release": "6.1.0-rt-test"}}, None, "Linux 6.1.0-rt-test"),
    ({"environment": {"preempt": "full", "preempt_rt": True}}, "preemption model dynamic",
     "preemption model full with PREEMPT_RT"),
    ({"environment": {"cpu_model": "AMD EPYC 9654"}}, "Intel(R) Xeon(R) Processor", "AMD EPYC 9654"),
    ({"environment": {"cpus_online": "0-7"}}, "2 CPUs online", "8 CPUs online (0-7"),
    ({"environment": {"isolated_cpus": "2-3"}}, "Isolated CPUs: none", "Isolated CPUs: 2-3"),
    ({"environment": {"nohz_full_cpus": "2-3"}}, "nohz_full CPUs: not recorded", "nohz_full CPUs: 2-3"),
    ({"environment": {"cpufreq": {"0": {"governor": "performance"}}}}, "none (no cpufreq)",
     "cpufreq governor: performance"),
    ({"environment": {"cpuidle": {"driver": "intel_idle", "governor": "ladder"}}}, "driver none with governor menu",
     "driver intel_idle with governor ladder"),
    ({"environment": {"tracing": {"enabled": False}}}, "traced", "no kernel tracing was in force"),
    ({"granted": {"timer": "timerfd"}}, "TIMER_ABSTIME", "timerfd"),
    ({"granted": {"policy": "rr", "priority": 42}}, "SCHED_FIFO at priority 99", "SCHED_RR at priority 42"),
    ({"granted": {"latency_us": -1}}, "held at 0 us", "left alone"),
    ({"asked": {"duration_ns": 3_600_000_000_000}}, "asked to last 2 s", "asked to last 3600 s"),
    ({"counters": {"source": "msr", "columns": ["aperf", "mperf", "smi"]}}, "perf: smi", "msr: aperf, mperf, smi"),
    ({"counters": {"source": "none", "columns": []}}, "perf: smi",
     "No per-wake-up hardware counters were read (counter source none)"),
])
def test_changing_a_field_changes_its_sentence(meta, change, before, after) -> None:
    old = methods_text(meta, dataset_sha256="0" * 64)
    new = methods_text(_with(meta, **change), dataset_sha256="0" * 64)
    assert after not in old and after in new
    if before is not None:
        assert before in old and before not in new


def test_threads_interval_counts_and_hash_come_from_the_dataset(meta) -> None:
    threads = tuple(dataclasses.replace(t, interval_ns=250_000, samples=7, drops=3) for t in meta.threads)
    text = methods_text(dataclasses.replace(meta, threads=threads), dataset_sha256="f" * 64)
    assert "every 250 us" in text and "14 wake-ups" in text and "6 lost" in text and "f" * 64 in text


def test_an_import_and_a_simulation_say_what_they_are(meta) -> None:
    imported = dataclasses.replace(meta, kind="import", environment=None, settings=None, counters=None,
                                   source={"format": "cyclictest-verbose", "files": ["/x/ct-verbose.txt"]})
    text = methods_text(imported, dataset_sha256="0" * 64)
    assert "imported" in text and "cyclictest-verbose output (ct-verbose.txt)" in text and "SCHED_FIFO" not in text
    simulated = dataclasses.replace(meta, kind="simulation", ground_truth={"seed": 17})
    assert "synthetic" in methods_text(simulated, dataset_sha256="0" * 64) and "seed 17" in methods_text(
        simulated, dataset_sha256="0" * 64)


def test_latex_is_ascii_and_escaped(meta) -> None:
    tex = methods_latex(dataclasses.replace(meta, environment={**meta.environment, "cpu_model": "A&B 100% µ"}),
                        dataset_sha256="0" * 64)
    assert tex.isascii() and r"A\&B 100\% \textmu{}" in tex and "SCHED\\_FIFO" in tex


def test_report_methods_prints_the_paragraph_and_writes_nothing(tmp_path, capsys) -> None:
    assert main(["report", str(TRACED), "--methods", "-o", str(tmp_path / "r.pdf")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Timer wake-up latency was measured with jitterscope-capture") and "SHA-256" in out
    assert not (tmp_path / "r.pdf").exists()
