"""Grouping keys read from a run's metadata: host, kernel, governor, env KEY, cmdline PARAM."""

from __future__ import annotations

import pytest
from jitterscope.dataset import Metadata, ThreadInfo
from jitterscope.errors import AnalysisError
from jitterscope.fleet import GroupKey, cmdline_parameters, configuration_keys, governor_of, parse_group_key


def _metadata(**environment) -> Metadata:
    return Metadata(kind="simulation", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000),),
                    environment=environment)


def test_each_key_reads_its_entry() -> None:
    meta = _metadata(hostname="rt-07", kernel_release="6.6.30-rt30", no_hz="full",
                     cmdline="BOOT_IMAGE=/vmlinuz ro isolcpus=2,3 quiet nohz_full=2-3",
                     cpufreq={"0": {"governor": "performance"}, "1": {"governor": "performance"}},
                     cpuidle={"driver": "intel_idle"})
    assert GroupKey("host").value(meta) == "rt-07"
    assert GroupKey("kernel").value(meta) == "6.6.30-rt30"
    assert GroupKey("governor").value(meta) == "performance"
    assert GroupKey("env", "no_hz").value(meta) == "full"
    assert GroupKey("env", "cpuidle.driver").value(meta) == "intel_idle"
    assert GroupKey("cmdline", "isolcpus").value(meta) == "2,3"
    assert GroupKey("cmdline", "quiet").value(meta) == "present"
    assert GroupKey("cmdline", "idle").value(meta) == "absent"
    assert GroupKey("env", "hz").value(meta) == "unknown"


def test_mixed_and_missing_governors() -> None:
    mixed = _metadata(cpufreq={"0": {"governor": "performance"}, "1": {"governor": "powersave"}})
    assert governor_of(mixed) == "mixed: performance/powersave"
    assert governor_of(_metadata()) == "unknown"
    assert GroupKey("cmdline", "isolcpus").value(_metadata()) == "unknown"  # no cmdline recorded at all


def test_cmdline_parsing_keeps_the_last_value_and_survives_bad_quotes() -> None:
    assert cmdline_parameters('a=1 b "c=x y" a=2') == {"a": "2", "b": "present", "c": "x y"}
    assert cmdline_parameters('a=1 "b') == {"a": "1", '"b': "present"}
    assert cmdline_parameters(None) == {}


def test_configuration_keys_leave_out_the_machine_identity() -> None:
    meta = _metadata(hostname="rt-01", kernel_release="6.1", hz=1000, cmdline="BOOT_IMAGE=/k ro idle=poll",
                     cpufreq={"0": {"governor": "schedutil"}}, kernel_version="#1 SMP")
    keys = configuration_keys(meta)
    assert keys == {"kernel": "6.1", "governor": "schedutil", "env hz": "1000", "cmdline ro": "present",
                    "cmdline idle": "poll"}


@pytest.mark.parametrize("words", [[], ["bogus"], ["env"], ["cmdline"], ["host", "x"], ["env", "a", "b"]])
def test_bad_keys_are_refused(words) -> None:
    with pytest.raises(AnalysisError):
        parse_group_key(words)


def test_parse_round_trip() -> None:
    assert parse_group_key("env no_hz") == GroupKey("env", "no_hz")
    assert parse_group_key(["governor"]).label == "governor"
    assert GroupKey("cmdline", "isolcpus").label == "cmdline isolcpus"
