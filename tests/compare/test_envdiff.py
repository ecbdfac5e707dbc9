"""Environment diff (jitterscope.envdiff): every differing key, readable, folded per CPU."""

from __future__ import annotations

from jitterscope.compare import diff_environments, flatten_metadata
from jitterscope.dataset import Metadata, ThreadInfo


def _meta(governor: str = "performance", interval_ns: int = 1_000_000, **env: object) -> Metadata:
    environment = {
        "kernel_release": "6.1.0", "cmdline": "quiet", "no_hz": "idle", "hz": 250, "preempt": "full",
        "cpu_model": "Xeon", "cpufreq": {str(c): {"governor": governor, "cur_khz": 2_000_000 + c} for c in range(4)},
        "cpuidle": {"driver": "intel_idle", "governor": "menu",
                    "states": [{"name": "POLL", "exit_latency_us": 0, "disabled": False},
                               {"name": "C6", "exit_latency_us": 133, "disabled": True}]},
        **env,
    }
    return Metadata(
        kind="capture", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=interval_ns),),
        environment=environment,
        settings={"asked": {"policy": "fifo", "priority": 99, "output": "/tmp/x"},
                  "granted": {"latency_us": 0, "degraded": []}},
        ground_truth={"spec": {"events": list(range(100))}})


def test_flatten_folds_cpus_and_idle_states() -> None:
    flat = flatten_metadata(_meta())
    assert flat["environment.cpufreq.governor"] == "performance"
    assert flat["environment.cpufreq.cur_khz"] == "2000000,2000001,2000002,2000003"
    assert flat["environment.cpuidle.states"] == "POLL (0 µs); C6 (133 µs, disabled)"
    assert flat["settings.asked.priority"] == "99"
    assert "settings.asked.output" not in flat
    assert flat["ground_truth.spec.events"] == "<100 values>"


def test_same_metadata_has_no_difference() -> None:
    assert diff_environments([_meta(), _meta()]) == ()


def test_every_difference_is_named_with_values_in_run_order() -> None:
    diff = diff_environments([_meta(), _meta("powersave", 500_000, no_hz="off", hz=1000, loadavg="3.2"),
                              _meta()])
    got = {d.key: d.values for d in diff}
    assert got["environment.cpufreq.governor"] == ("performance", "powersave", "performance")
    assert got["environment.no_hz"] == ("idle", "off", "idle")
    assert got["environment.hz"] == ("250", "1000", "250")
    assert got["threads.interval_ns"] == ("1000000", "500000", "1000000")
    assert got["environment.loadavg"] == (None, "3.2", None)
    assert set(got) == {"environment.cpufreq.governor", "environment.no_hz", "environment.hz",
                        "threads.interval_ns", "environment.loadavg"}


def test_an_empty_list_differs_from_a_list_of_entries_by_name_not_as_absent() -> None:
    from jitterscope.compare import diff_environments
    from jitterscope.dataset import Metadata, ThreadInfo

    threads = (ThreadInfo(thread=0, cpu=0, interval_ns=1000),)
    none = Metadata(kind="simulation", threads=threads, ground_truth={"spec": {"effects": []}})
    some = Metadata(kind="simulation", threads=threads,
                    ground_truth={"spec": {"effects": [{"kind": "periodic", "frequency_hz": 1.0}]}})
    diff = {d.key: d.values for d in diff_environments([none, some])}
    assert diff["ground_truth.spec.effects"] == ("none", "1 entry")
    assert diff["ground_truth.spec.effects[0].kind"] == (None, "periodic")
