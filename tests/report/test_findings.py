"""Page 1 (findings): planted effects appear with the right cause, red flags carry their actions, and the
flags are read from the metadata, not guessed."""

from __future__ import annotations

import subprocess

import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset
from jitterscope.events import find_events
from jitterscope.io import IdleStates, PStates, SharedStalls, SimulationSpec, SMIs, write_simulation
from jitterscope.report import configuration_flags, write_report

ENV = {"no_hz": "idle", "isolated_cpus": "", "nohz_full_cpus": "", "rt_runtime_us": 950000, "rt_period_us": 1000000,
       "preempt_rt": False, "preempt": "dynamic", "cpufreq": {"*": {"governor": "powersave"}}}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    spec = SimulationSpec(threads=2, interval_ns=1_000_000, samples=30_000, environment=ENV, effects=(
        PStates(levels_mhz=(1200, 2400), dwell_ns=(500_000_000, 500_000_000), coupling_probability=1.0,
                coupling_amplitude_ns=40_000),
        SMIs(rate_hz=0.3, duration_ns=1_500_000),
        IdleStates(deep_probability=0.001, exit_latency_ns=60_000),
        SharedStalls(times_ns=(17_300_000_000,), duration_ns=4_200_000)))
    return write_simulation(spec, tmp_path_factory.mktemp("findings") / "planted.parquet", 7)


def _page_one(pdf) -> str:
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    pages = [p for p in text.split("\f") if p.strip().startswith("Findings:")]
    return " ".join(" ".join(pages).split())


def test_planted_effects_are_on_page_one_with_their_causes(planted, tmp_path) -> None:
    write_report(planted, tmp_path / "r.pdf", sections=("findings", "power", "events"))
    text = _page_one(tmp_path / "r.pdf")
    truth = open_dataset(planted).metadata.ground_truth
    smis = truth["smi"]["times_ns"]["count"]
    assert smis >= 5
    assert f"smi {smis} of " in text  # each SMI one event
    assert "frequency transition" in text and "idle exit" in text
    # the 2-CPU stall at 17.3 s: one event on both CPUs, the largest, with its missed periods
    assert "CPUs 0 and 1 stall together at 17.300 s" in text and "8 missed periods" in text
    assert "risk ratio" in text and "Cliff's delta" in text  # correlate's verdicts with effect sizes
    for flag in ("CPUs not isolated", "no nohz_full", "governor", "RT throttling", "NO_HZ idle", "non-RT kernel"):
        assert flag in text, flag
    assert "isolcpus=0,1" in text and "cpupower -c 0,1 frequency-set -g performance" in text
    assert "kernel.sched_rt_runtime_us=-1" in text and "what to run next" in text and "next 1 " in text


def test_flags_are_read_not_guessed() -> None:
    threads = (ThreadInfo(thread=0, cpu=2, interval_ns=1_000_000),)
    good = {"isolated_cpus": "2-3", "nohz_full_cpus": "2-3", "rt_runtime_us": -1, "preempt_rt": True, "no_hz": "full",
            "cpufreq": {"2": {"governor": "performance"}}, "cpuidle": {"driver": "intel_idle", "states": [
                {"name": "C6", "exit_latency_us": 133, "disabled": False}]},
            "available_clocksources": "tsc hpet", "cmdline": "isolcpus=2-3"}
    settings = {"granted": {"latency_us": 0, "policy": "fifo", "writer_shares_measured_cpu": False}}
    check = configuration_flags(Metadata(kind="capture", threads=threads, environment=good, settings=settings))
    assert check.flags == ()
    assert check.not_checked == ("SMT siblings of the measured CPUs (topology not recorded)",)
    bad = {**good, "isolated_cpus": "3", "cpuidle": good["cpuidle"], "available_clocksources": "tsc kvm-clock"}
    loose = {"granted": {"latency_us": -1, "policy": "other", "writer_shares_measured_cpu": True}}
    flags = {f.name: f for f in configuration_flags(Metadata(kind="capture", threads=threads, environment=bad,
                                                             settings=loose)).flags}
    assert set(flags) == {"CPUs not isolated", "deep idle states without cpu_dma_latency", "virtualised",
                          "writer on a measured CPU", "timer slack under SCHED_OTHER"}
    assert "C6: 133 µs" in flags["deep idle states without cpu_dma_latency"].evidence
    assert "--writer-cpu" in flags["writer on a measured CPU"].action
    unknown = configuration_flags(Metadata(kind="import", threads=threads))
    assert unknown.flags == () and len(unknown.not_checked) >= 5  # nothing recorded: nothing claimed


def test_busy_smt_siblings_and_steal_are_flags_read_from_the_load() -> None:
    threads = (ThreadInfo(thread=0, cpu=1, interval_ns=1_000_000), ThreadInfo(thread=1, cpu=2, interval_ns=1_000_000))
    env = {"isolated_cpus": "1-2", "cpu_siblings": {"1": "1,5", "2": "2,6", "5": "1,5", "6": "2,6"}, "smt_active": 1}
    load = {"since": "capture start", "cpus": {"1": {"ticks": 1000, "busy": 0.02, "steal": 0.0},
                                                "2": {"ticks": 1000, "busy": 0.02, "steal": 0.004},
                                                "5": {"ticks": 1000, "busy": 0.63, "steal": 0.0},
                                                "6": {"ticks": 1000, "busy": 0.05, "steal": 0.0}}}

    def check(environment, status):
        return configuration_flags(Metadata(kind="capture", threads=threads, environment=environment, status=status))

    found = check(env, {"state": "complete", "cpu_load": load})
    flags = {f.name: f for f in found.flags}
    assert flags["SMT siblings of measured CPUs busy"].evidence.startswith("CPU 5 (sibling of measured CPU 1) busy 63%")
    assert "CPU 6" not in flags["SMT siblings of measured CPUs busy"].evidence  # 5 % is below SIBLING_BUSY
    assert "cpu5" not in flags["SMT siblings of measured CPUs busy"].action and "nosmt" in flags[
        "SMT siblings of measured CPUs busy"].action
    assert flags["virtualised"].evidence == "the hypervisor stole 0.4% of CPU 2 during the run"
    assert not any("SMT" in n for n in found.not_checked)
    quiet = {**load, "cpus": {**load["cpus"], "5": {"ticks": 1000, "busy": 0.01, "steal": 0.0}}}
    assert "SMT siblings of measured CPUs busy" not in {f.name for f in check(env, {"cpu_load": quiet}).flags}
    # SMT off, or every measured CPU alone on its core: nothing to flag and nothing left unchecked
    for alone in ({**env, "smt_active": 0}, {"cpu_siblings": {"1": "1", "2": "2"}, "smt_active": None}):
        result = check(alone, None)
        assert not any("SMT" in f.name for f in result.flags) and not any("SMT" in n for n in result.not_checked)
    # siblings exist but their load was not recorded (an older capture): said, not guessed
    assert "SMT siblings of the measured CPUs (their load is not recorded)" in check(env, None).not_checked


def test_a_load_change_is_a_red_flag(tmp_path) -> None:
    from jitterscope.io import PeriodicDisturbance
    spec = SimulationSpec(threads=1, samples=20_000, effects=(
        PeriodicDisturbance(frequency_hz=5, amplitude_ns=80_000, width_ns=1_000_000, stop_ns=10_000_000_000),))
    ds = open_dataset(write_simulation(spec, tmp_path / "load.parquet", 1))
    flags = {f.name: f for f in configuration_flags(ds.metadata, find_events(ds)).flags}
    assert "50 events in the first half, 0 in the second" in flags["load changing during the run"].evidence


def test_a_cyclictest_import_with_unknown_cpus_gets_a_report(tmp_path) -> None:
    # issue 12: two threads with CPU -1 made the spectrum pages both 'spectrum-cpu-1'
    from pathlib import Path

    from jitterscope.dataset import write_dataset
    from jitterscope.io import import_files
    table, meta = import_files([Path(__file__).resolve().parents[1] / "data" / "formats" / "ct-verbose.txt"])
    assert [t.cpu for t in meta.threads] == [-1, -1]
    path = write_dataset(table, meta, tmp_path / "ct.parquet")
    info = write_report(path, tmp_path / "r.pdf", figures_dir=tmp_path / "f", sections=("findings", "spectrum"))
    names = {Path(f).stem for f in info.figure_files}
    assert {"spectrum-thread0", "spectrum-thread1", "spikes-thread0", "spikes-thread1"} <= names
    assert "thread 0 (CPU unknown)" in _page_one(tmp_path / "r.pdf")


def _import_page_one(files: list[str], tmp_path) -> str:
    from pathlib import Path

    from jitterscope.dataset import write_dataset
    from jitterscope.io import import_files
    table, meta = import_files([Path(__file__).resolve().parents[1] / "data" / "formats" / f for f in files])
    path = write_dataset(table, meta, tmp_path / "imported.parquet")
    write_report(path, tmp_path / "r.pdf", sections=("findings",))
    return _page_one(tmp_path / "r.pdf")


def test_page_one_states_what_a_cyclictest_verbose_import_assumed(tmp_path) -> None:
    # cyclictest -v alone: no CPUs, no unit, the interval from the headers, each thread's clock its own
    text = _import_page_one(["ct-verbose.txt"], tmp_path)
    assert "import assumed cyclictest-verbose;" in text
    assert "clocks: each thread's times rebuilt from its own first wake-up" in text
    assert "cpus: not recorded (give cyclictest's --json file)" in text
    assert "interval: from the" in text and "unit: µs" in text
    assert "whether any hit several CPUs at once is unknown" in text
    assert "imported runs lack counters and absolute times" in text


def test_page_one_of_jitterdebugger_samples_does_not_claim_they_lack_absolute_times(tmp_path) -> None:
    text = _import_page_one(["jd-shared/samples.raw"], tmp_path)
    assert "imported runs lack counters" in text and "absolute times" not in text
    assert "cpus: thread i on CPU i (jitterdebugger's default; give its stdout to know)" in text
    assert "hit several CPUs at once" in text and "is unknown" not in text


def test_page_one_of_a_histogram_with_overflows_says_what_lies_above_its_range(tmp_path) -> None:
    # the real cyclictest -h 200 output: 13 and 6 of 2,000 wake-ups per thread above 200 µs
    text = _import_page_one(["shared/cyclictest-histogram.txt"], tmp_path)
    assert "above the histogram's range 19 of 4,000 wake-ups" in text
    assert "thread 0 (CPU unknown): 13, thread 1 (CPU unknown): 6" in text and "p99.9 > 200 µs" in text
    assert "cpus: not recorded by the source" in text


def test_the_spectra_run_before_correlate(planted) -> None:
    # issue 25: each shared analysis's peak stacks on what the ones before it left; correlate leaves the most
    # and Lomb-Scargle peaks highest, so page 1 and the planted section ask for the spectra first
    from jitterscope.report.build import build_context
    from jitterscope.report.sections.findings import SHARED_ORDER, findings_section
    from jitterscope.report.sections.planted import shared_recovery

    dataset = open_dataset(planted)
    # page 1 of a simulation asks the planted section first (its tally), so each is checked on its own
    for ask, sections in ((findings_section, ("findings", "power", "spectrum", "events")),
                          (shared_recovery, ("planted", "power", "spectrum", "events"))):
        ctx = build_context(dataset)
        ctx.sections = sections
        ask(ctx)
        computed = [key for key, _ in ctx.shared_seconds if key in SHARED_ORDER]
        assert computed == ["events", "spectrum", "correlation"] == list(SHARED_ORDER), ask.__name__
