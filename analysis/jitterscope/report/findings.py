"""What page 1 says: configuration red flags read from the metadata, each with the action that removes it,
and what to run next.  Pure functions of the metadata and the events (no drawing), so a notebook can call them.

Every flag is a fact of the recorded environment or settings (or, for a load that changed, of the events);
a check the dataset cannot answer (a value not recorded) is listed as not checked, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dataset import Metadata
from ..format import format_p

VIRTUAL_CLOCKSOURCES = ("kvm-clock", "hyperv_clocksource", "xen", "vmware")
VIRTUAL_IDLE_DRIVERS = ("haltpoll",)
VIRTUAL_CMDLINE = ("firecracker", "xen", "hypervisor")
DEEP_IDLE_US = 10
"""An enabled idle state with an exit latency of at least this (µs) is deep enough to show in latency."""
LOAD_P = 0.01
LOAD_RATIO = 2.0
SIBLING_BUSY = 0.10
"""An SMT sibling of a measured CPU busy at least this share of the run shares its core's pipeline enough to show."""
STEAL_SHARE = 0.001
"""A hypervisor stealing at least this share of a measured CPU's time is evidence of virtualisation and of its cost."""


@dataclass(frozen=True)
class RedFlag:
    """A configuration that adds latency, the evidence for it, and the action that removes it."""

    name: str
    evidence: str
    action: str


@dataclass(frozen=True)
class FlagCheck:
    """The flags that hold and the checks the recorded metadata could not answer."""

    flags: tuple[RedFlag, ...]
    not_checked: tuple[str, ...]


def parse_cpu_list(text: str | None) -> set[int] | None:
    """``"0-3,8"`` as a set of CPUs; ``""`` is the empty set, None (not recorded) stays None."""
    if text is None:
        return None
    cpus: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            cpus.update(range(int(low), int(high or low) + 1))
        except ValueError:
            return None
    return cpus


def _cpu_text(cpus: Sequence[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def configuration_flags(metadata: Metadata, events: Any | None = None) -> FlagCheck:
    """The red flags of a dataset's environment and settings (and of its events' rate over time).

    Parameters
    ----------
    metadata
        The dataset's metadata.
    events
        :class:`jitterscope.events.Events`, for the "load changed during the run" check (None skips it).
    """
    env: Mapping[str, Any] = metadata.environment or {}
    granted: Mapping[str, Any] = metadata.granted or {}
    measured = sorted({t.cpu for t in metadata.threads if t.cpu >= 0})
    cpus = _cpu_text(measured) or "<measured CPUs>"
    flags: list[RedFlag] = []
    unknown: list[str] = []

    def check(name: str, value: Any) -> bool:
        if value is None:
            unknown.append(name)
            return False
        return True

    isolated = parse_cpu_list(env.get("isolated_cpus")) if env else None
    if check("CPU isolation (isolated_cpus not recorded)", isolated) and measured and not set(measured) <= isolated:
        flags.append(RedFlag("CPUs not isolated",
                             f"measured CPUs {cpus}; isolated: {env.get('isolated_cpus') or 'none'}",
                             f"boot with isolcpus={cpus} (or move other tasks off them with cpusets)"))
    nohz_full = parse_cpu_list(env.get("nohz_full_cpus")) if env else None
    if env and env.get("nohz_full_cpus") is None and "nohz_full_cpus" in env:
        nohz_full = set()  # recorded as absent: the kernel has no nohz_full CPUs
    if check("nohz_full (not recorded)", nohz_full) and measured and not set(measured) <= nohz_full:
        flags.append(RedFlag("no nohz_full", f"nohz_full CPUs: {env.get('nohz_full_cpus') or 'none'}",
                             f"boot with nohz_full={cpus} rcu_nocbs={cpus} (the tick keeps interrupting them)"))
    cpufreq = env.get("cpufreq") if env else None
    if cpufreq:
        slow = sorted({str(info.get("governor")) for info in cpufreq.values()
                       if isinstance(info, Mapping) and info.get("governor") not in (None, "performance")})
        if slow:
            flags.append(RedFlag("governor", f"cpufreq governor {', '.join(slow)}",
                                 f"cpupower -c {cpus} frequency-set -g performance (frequency changes stall the CPU)"))
    else:
        unknown.append("cpufreq governor (no cpufreq recorded, typical of a virtual machine)")
    idle = env.get("cpuidle") if env else None
    held = granted.get("latency_us") if granted else None
    if isinstance(idle, Mapping) and idle.get("states") is not None:
        deep = [s for s in idle["states"] if not s.get("disabled") and (s.get("exit_latency_us") or 0) >= DEEP_IDLE_US]
        if deep and (held is None or held < 0):
            worst = max(deep, key=lambda s: s.get("exit_latency_us") or 0)
            flags.append(RedFlag(
                "deep idle states without cpu_dma_latency",
                f"{len(deep)} idle state(s) with exit latency ≥ {DEEP_IDLE_US} µs enabled (worst {worst.get('name')}: "
                f"{worst.get('exit_latency_us')} µs); /dev/cpu_dma_latency "
                f"{'not held' if held is not None else 'not recorded'}",
                "hold /dev/cpu_dma_latency at 0 during the run (the capture does unless --no-latency-trick), "
                "or disable the deep states"))
    else:
        unknown.append("idle states (cpuidle not recorded)")
    runtime = env.get("rt_runtime_us") if env else None
    if check("RT throttling (rt_runtime_us not recorded)", runtime) and runtime != -1:
        period = env.get("rt_period_us")
        flags.append(RedFlag("RT throttling", f"sched_rt_runtime_us = {runtime}"
                             + (f" of sched_rt_period_us = {period}" if period is not None else ""),
                             "sysctl kernel.sched_rt_runtime_us=-1 (a busy RT thread is otherwise stopped for the rest "
                             "of each period)"))
    sibling_flag, sibling_unknown = _busy_siblings(env, metadata.status, measured)
    flags += [sibling_flag] if sibling_flag else []
    unknown += [sibling_unknown] if sibling_unknown else []
    virtual = "; ".join(x for x in (_virtualised(env), _steal(metadata.status, measured)) if x)
    if virtual:
        flags.append(RedFlag("virtualised", virtual,
                             "measure on bare metal, or pin the vCPUs to dedicated host cores (host scheduling and "
                             "VM exits show up as latency)"))
    if granted:
        shares = granted.get("writer_shares_measured_cpu")
        degraded = " ".join(str(x) for x in granted.get("degraded") or [])
        if shares or "writer thread shares" in degraded:
            flags.append(RedFlag("writer on a measured CPU", "the capture's writer thread ran on the measured CPUs",
                                 "leave one CPU unmeasured and pin the writer there with --writer-cpu N"))
    no_hz = env.get("no_hz") if env else None
    if check("NO_HZ mode (kernel config not readable)", no_hz) and no_hz == "idle":
        flags.append(RedFlag("NO_HZ idle", "the tick stops on idle CPUs (CONFIG_NO_HZ_IDLE) and restarts on wake-up",
                             f"nohz_full={cpus} for the measured CPUs, or nohz=off to keep the tick running"))
    preempt_rt = env.get("preempt_rt") if env else None
    if check("PREEMPT_RT (not recorded)", preempt_rt) and preempt_rt is False:
        flags.append(RedFlag("non-RT kernel", f"preemption model {env.get('preempt') or 'unknown'}, not PREEMPT_RT",
                             "use a PREEMPT_RT kernel (long non-preemptible sections stay otherwise)"))
    policy = (granted.get("policy") if granted else None) or (metadata.asked or {}).get("policy")
    if policy == "other":
        slack = sorted({int(t.extra.get("timer_slack_ns")) for t in metadata.threads
                        if isinstance(t.extra.get("timer_slack_ns"), int)})
        flags.append(RedFlag("timer slack under SCHED_OTHER",
                             "SCHED_OTHER measuring threads" + (f", timer slack {slack} ns" if slack else
                                                                ": the kernel adds its timer slack to every sleep"),
                             "run with SCHED_FIFO (root, CAP_SYS_NICE, or a cgroup with an RT budget)"))
    if events is not None and events.halves is not None:
        h = events.halves
        if h.first + h.second >= 10 and h.p_value < LOAD_P and not 1 / LOAD_RATIO <= h.ratio <= LOAD_RATIO:
            flags.append(RedFlag("load changing during the run",
                                 f"{h.first} events in the first half, {h.second} in the second ({format_p(h.p_value)},"
                                 f" {h.test})",
                                 "keep the load constant while measuring, or capture each load on its own and "
                                 "compare them (jitterscope compare)"))
    return FlagCheck(flags=tuple(flags), not_checked=tuple(unknown))


def _cpu_load(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The status's per-CPU load since the capture started ({cpu: {"busy", "steal", "ticks"}}), or None."""
    load = (status or {}).get("cpu_load")
    cpus = load.get("cpus") if isinstance(load, Mapping) else None
    return cpus if isinstance(cpus, Mapping) and cpus else None


def _busy_siblings(env: Mapping[str, Any], status: Mapping[str, Any] | None,
                   measured: Sequence[int]) -> tuple[RedFlag | None, str | None]:
    """The "SMT siblings busy" flag, or what could not be checked (topology or load not recorded)."""
    topology = env.get("cpu_siblings") if env else None
    if not isinstance(topology, Mapping) or not measured:
        return None, "SMT siblings of the measured CPUs (topology not recorded)"
    siblings = {cpu: sorted((parse_cpu_list(topology.get(str(cpu))) or set()) - set(measured)) for cpu in measured}
    if env.get("smt_active") == 0 or not any(siblings.values()):
        return None, None  # no core is shared with an unmeasured CPU: nothing to flag
    load = _cpu_load(status)
    if load is None:
        return None, "SMT siblings of the measured CPUs (their load is not recorded)"
    busy = []
    for cpu, twins in siblings.items():
        for twin in twins:
            share = (load.get(str(twin)) or {}).get("busy")
            if isinstance(share, (int, float)) and share >= SIBLING_BUSY:
                busy.append((twin, cpu, float(share)))
    if not busy:
        return None, None
    evidence = ", ".join(f"CPU {twin} (sibling of measured CPU {cpu}) busy {share:.0%}" for twin, cpu, share in busy)
    twins = sorted({twin for twin, _, _ in busy})
    which = f"CPU{'s' if len(twins) > 1 else ''} {_cpu_text(twins)}"
    return RedFlag("SMT siblings of measured CPUs busy", evidence + " of the run (/proc/stat)",
                   f"keep the siblings idle: take {which} offline (echo 0 > /sys/devices/system/cpu/cpuN/online), "
                   "boot with nosmt, or isolate them together with the measured CPUs"), None


def _steal(status: Mapping[str, Any] | None, measured: Sequence[int]) -> str | None:
    """Evidence of a hypervisor taking the measured CPUs' time (steal ticks in /proc/stat), or None."""
    load = _cpu_load(status)
    if load is None:
        return None
    stolen = [(cpu, float(share)) for cpu in measured
              if isinstance(share := (load.get(str(cpu)) or {}).get("steal"), (int, float)) and share >= STEAL_SHARE]
    if not stolen:
        return None
    return "the hypervisor stole " + ", ".join(f"{share:.1%} of CPU {cpu}" for cpu, share in stolen) + " during the run"


def _virtualised(env: Mapping[str, Any]) -> str | None:
    """Evidence that the machine is a virtual machine, or None."""
    if not env:
        return None
    found = []
    clocks = str(env.get("available_clocksources") or "")
    found += [f"clock source {c} available" for c in VIRTUAL_CLOCKSOURCES if c in clocks]
    idle = env.get("cpuidle")
    if isinstance(idle, Mapping) and idle.get("driver") in VIRTUAL_IDLE_DRIVERS:
        found.append(f"cpuidle driver {idle.get('driver')} (a guest driver)")
    cmdline = str(env.get("cmdline") or "").lower()
    found += [f"'{word}' on the kernel command line" for word in VIRTUAL_CMDLINE if word in cmdline]
    return "; ".join(found) or None


def next_steps(metadata: Metadata, events: Any | None, flags: FlagCheck, *, has_counters: bool,
               has_trace: bool = False) -> tuple[str, ...]:
    """What to run next, from what the run left unexplained and what it lacked."""
    steps = []
    unexplained = [e for e in (events.events if events is not None else ()) if not e.causes]
    if flags.flags:
        steps.append("Remove the red flags above, capture again and check: jitterscope compare BEFORE AFTER "
                     "--fail-if regressed")
    if unexplained and not has_counters:
        steps.append(f"{len(unexplained)} events have no cause in the data: capture on bare metal with counters "
                     "(modprobe msr; jitterscope capture --counters msr), or attach turbostat "
                     "(jitterscope import turbostat.txt --onto DATASET)")
    elif unexplained and not has_trace:
        steps.append(f"{len(unexplained)} events show no SMI, frequency or idle signature: capture with kernel "
                     "tracing (IRQs, softirqs, threads on the measured CPUs) to name them")
    if events is not None and events.events:
        worst = events.worst(1)[0]
        steps.append(f"Look at the worst event in context: jitterscope events DATASET --top 20 (largest peak "
                     f"{worst.peak_latency_ns / 1000:,.0f} µs at {worst.start_s:.3f} s)")
    if metadata.kind == "import":
        absolute = (metadata.source or {}).get("absolute_times") is True  # jitterdebugger's samples.raw has them
        steps.append("Capture with jitterscope capture: imported runs lack counters"
                     + ("" if absolute else " and absolute times"))
    steps.append("Gate CI on the result: jitterscope summary DATASET --fail-if 'max>100us' --fail-if "
                 "'events>1ms:0' --junit gates.xml")
    return tuple(steps)
