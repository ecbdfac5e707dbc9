"""What a run says about its machine and configuration: grouping keys read from the metadata.

A fleet is grouped by one key (``--by``): ``host`` (``environment.hostname``),
``kernel`` (``environment.kernel_release``), ``governor`` (the cpufreq governor
of the measured CPUs; ``mixed: a/b`` when they differ), ``env KEY`` (any
environment entry, dotted for nested ones: ``cpuidle.driver``) or ``cmdline
PARAM`` (the value of ``PARAM=...`` on the kernel command line, ``present`` for
a bare flag, ``absent`` when not given).  A value the metadata does not hold is
``unknown``: such runs form their own group rather than being dropped.
"""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..dataset import Metadata
from ..errors import AnalysisError

UNKNOWN = "unknown"
ABSENT = "absent"
PRESENT = "present"
SIMPLE_KEYS = ("host", "kernel", "governor")
"""Keys named by themselves; ``env`` and ``cmdline`` take a name."""

# environment entries that identify a machine or a moment rather than a configuration: the
# environment-key table leaves them out (the hostname is the machine, ranked in its own table)
_NOT_CONFIGURATION = frozenset({"hostname", "cpufreq", "cpuidle", "cmdline", "simulated", "cpus_online",
                                "kernel_version", "microcode"})


@dataclass(frozen=True)
class GroupKey:
    """One grouping key: ``kind`` is host, kernel, governor, env or cmdline; ``name`` the env key or parameter."""

    kind: str
    name: str | None = None

    def __post_init__(self) -> None:
        if self.kind in SIMPLE_KEYS:
            if self.name is not None:
                raise AnalysisError(f"--by {self.kind} takes no name")
        elif self.kind in ("env", "cmdline"):
            if not self.name:
                raise AnalysisError(f"--by {self.kind} needs a name, e.g. --by env no_hz or --by cmdline isolcpus")
        else:
            raise AnalysisError(f"unknown grouping key {self.kind!r}: use host, kernel, governor, env KEY or "
                                "cmdline PARAM")

    @property
    def label(self) -> str:
        """How the key is printed: ``governor``, ``env no_hz``, ``cmdline isolcpus``."""
        return self.kind if self.name is None else f"{self.kind} {self.name}"

    def value(self, metadata: Metadata) -> str:
        """This key's value in a run's metadata (``unknown`` when not recorded)."""
        environment = metadata.environment or {}
        if self.kind == "host":
            return _text(environment.get("hostname"))
        if self.kind == "kernel":
            return _text(environment.get("kernel_release"))
        if self.kind == "governor":
            return governor_of(metadata)
        if self.kind == "cmdline":
            return cmdline_parameters(environment.get("cmdline")).get(str(self.name), ABSENT) \
                if isinstance(environment.get("cmdline"), str) else UNKNOWN
        value: Any = environment
        for part in str(self.name).split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return _text(value)


def parse_group_key(words: list[str] | tuple[str, ...] | str) -> GroupKey:
    """``["env", "no_hz"]`` (or ``"env no_hz"``) -> ``GroupKey("env", "no_hz")``; raises AnalysisError if bad."""
    parts = words.split() if isinstance(words, str) else list(words)
    if not parts or len(parts) > 2:
        raise AnalysisError("--by takes host, kernel, governor, env KEY or cmdline PARAM")
    return GroupKey(parts[0], parts[1] if len(parts) == 2 else None)


def governor_of(metadata: Metadata) -> str:
    """The governor of the run's CPUs: one name, ``mixed: a/b`` when they differ, ``unknown`` when unrecorded."""
    names = sorted({_text(g) for g in metadata.governors.values()})
    if not names:
        return UNKNOWN
    return names[0] if len(names) == 1 else "mixed: " + "/".join(names)


def cmdline_parameters(cmdline: Any) -> dict[str, str]:
    """Kernel command line -> ``{param: value}`` (``present`` for a bare flag; the last one given wins)."""
    if not isinstance(cmdline, str):
        return {}
    try:
        words = shlex.split(cmdline)
    except ValueError:  # an unbalanced quote: split on blanks as the kernel would
        words = cmdline.split()
    out: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if name:
            out[name] = value if sep else PRESENT
    return out


def configuration_keys(metadata: Metadata) -> dict[str, str]:
    """Every configuration key of a run, for the environment-key table: ``{label: value}``.

    kernel, governor, each scalar environment entry (``env KEY``) and each kernel
    command-line parameter (``cmdline PARAM``); not the hostname, timestamps or
    per-CPU maps (see ``_NOT_CONFIGURATION``).
    """
    environment = metadata.environment or {}
    out = {"kernel": GroupKey("kernel").value(metadata), "governor": governor_of(metadata)}
    for name, value in environment.items():
        if name in _NOT_CONFIGURATION or name == "kernel_release" or isinstance(value, Mapping | list):
            continue
        out[f"env {name}"] = _text(value)
    for name, value in cmdline_parameters(environment.get("cmdline")).items():
        if name == "BOOT_IMAGE":  # the image path names the kernel, already a key
            continue
        out[f"cmdline {name}"] = value
    return out


def start_time_ns(metadata: Metadata) -> int | None:
    """Wall-clock start of the capture (``clock.realtime_ns``), None when not recorded."""
    value = (metadata.clock or {}).get("realtime_ns")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


class HostRun(Protocol):
    """What ordering a machine's runs needs of a run record (timer and poll fleets alike)."""

    @property
    def host(self) -> str: ...
    @property
    def start_ns(self) -> int | None: ...
    @property
    def path(self) -> str: ...


RunT = TypeVar("RunT", bound=HostRun)


def runs_by_host(records: Iterable[RunT]) -> dict[str, list[RunT]]:
    """Each machine's runs in order: by start time where every run has one; a run without one puts the machine
    in path order."""
    hosts: dict[str, list[RunT]] = defaultdict(list)
    for record in records:
        hosts[record.host].append(record)
    for runs in hosts.values():
        if all(r.start_ns is not None for r in runs):
            runs.sort(key=lambda r: (r.start_ns, r.path))
        else:
            runs.sort(key=lambda r: r.path)
    return dict(hosts)


def _text(value: Any) -> str:
    if value is None or value == "":
        return UNKNOWN
    if isinstance(value, str):
        return value
    return json.dumps(value)
