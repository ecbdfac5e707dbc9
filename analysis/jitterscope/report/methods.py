"""A methods paragraph a paper can cite as written: what was measured, how, on what, and how it was analysed.

Every fact comes from a field of the dataset's metadata (``docs/dataset-format.md``) or from the dataset's hash;
a fact the dataset does not record is said to be "not recorded", never guessed.  :func:`methods_sentences` keeps
each sentence with the fields it used, so a test can change a field and see its sentence change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dataset import Dataset, Metadata, open_dataset
from ..format import visible
from ..render import latex_breakable

NOT_RECORDED = "not recorded"

_TIMERS = {
    "abs": "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to absolute deadlines",
    "timerfd": "a CLOCK_MONOTONIC timerfd with absolute expiries",
    "posix": "a POSIX CLOCK_MONOTONIC timer (timer_create, absolute expiries) waited for with sigwaitinfo",
}
_POLICIES = {"fifo": "SCHED_FIFO", "rr": "SCHED_RR", "other": "SCHED_OTHER"}


@dataclass(frozen=True)
class Sentence:
    """One sentence of the paragraph and the metadata fields it states."""

    text: str
    fields: tuple[str, ...]


def methods_sentences(meta: Metadata, *, dataset_sha256: str) -> list[Sentence]:
    """The methods paragraph of a dataset, sentence by sentence (see the module's docstring)."""
    env: Mapping[str, Any] = meta.environment or {}
    asked, granted = meta.asked, meta.granted
    out = [_what(meta)]
    if meta.kind == "capture" or env:
        out.append(_system(env))
        out.append(_tuning(env, meta))
    if meta.kind == "capture":
        out.append(_measurement(meta, asked, granted))
    out.append(_amount(meta, asked))
    if meta.kind == "capture":
        out.append(_counters(meta, env))
    out.append(_latency(meta))
    out.append(Sentence(
        "Percentiles were read from an HDR histogram of all wake-ups (relative error at most 0.1 %) and are "
        "reported only where the sample resolves them (n(1 - q) >= 1); means and standard deviations are exact. "
        "Tails were fitted per thread with a generalized Pareto distribution by maximum likelihood above a "
        "threshold chosen by a parameter-stability rule (Wadsworth 2016), checked by Anderson-Darling with a "
        "parametric-bootstrap p-value; return levels, with profile-likelihood intervals, are given only where "
        "the model checks hold.", ()))
    out.append(Sentence(f"The dataset (schema version {meta.schema_version}) has SHA-256 {dataset_sha256}.",
                        ("schema_version", "sha256")))
    return out


def dataset_methods(dataset: str | Path | Dataset) -> str:
    """The methods paragraph of a dataset (plain text): its metadata and the hash of its files."""
    from .build import hash_files

    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)
    _, sha256 = hash_files(dataset)
    if dataset.metadata.kind == "poll":
        from .poll import poll_methods
        return visible(poll_methods(dataset.metadata, dataset_sha256=sha256))
    return methods_text(dataset.metadata, dataset_sha256=sha256)


def methods_text(meta: Metadata, *, dataset_sha256: str) -> str:
    """The paragraph as plain text (Markdown); metadata text is data: controls and lone surrogates as escapes."""
    return visible(" ".join(s.text for s in methods_sentences(meta, dataset_sha256=dataset_sha256)))


def methods_latex(meta: Metadata, *, dataset_sha256: str) -> str:
    """The paragraph as LaTeX text (ASCII, every special escaped), for ``\\input`` in a methods section."""
    # break points inside the hash and other long tokens: a 64-digit word runs past a column's edge
    return latex_breakable(methods_text(meta, dataset_sha256=dataset_sha256)) + "\n"


def _what(meta: Metadata) -> Sentence:
    tool = f"{meta.tool.get('name', NOT_RECORDED)} {meta.tool.get('version', '')}".strip()
    if meta.kind == "capture":
        return Sentence(f"Timer wake-up latency was measured with {tool}.", ("tool",))
    if meta.kind == "simulation":
        seed = (meta.ground_truth or {}).get("seed", NOT_RECORDED)
        return Sentence(f"The wake-ups are synthetic: made by {tool} (seed {seed}), not measured.",
                        ("tool", "ground_truth.seed"))
    source = meta.source or {}
    files = ", ".join(str(f).rsplit("/", 1)[-1] for f in source.get("files", ())) or NOT_RECORDED
    return Sentence(f"Timer wake-up latencies were imported by {tool} from {source.get('format', NOT_RECORDED)} "
                    f"output ({files}); the measurement itself was not made by jitterscope.",
                    ("tool", "source.format", "source.files"))


def _system(env: Mapping[str, Any]) -> Sentence:
    online = env.get("cpus_online")
    count = _count_cpus(online)
    smt = {0: "SMT off", 1: "SMT on"}.get(env.get("smt_active"), f"SMT {NOT_RECORDED}")
    preempt = env.get("preempt") or NOT_RECORDED
    rt = " with PREEMPT_RT" if env.get("preempt_rt") is True else ""
    return Sentence(
        f"System: {env.get('cpu_model') or f'CPU model {NOT_RECORDED}'}, {count} CPUs online "
        f"({online if online else NOT_RECORDED}; {smt}), Linux {env.get('kernel_release') or NOT_RECORDED} "
        f"(preemption model {preempt}{rt}, clocksource {env.get('clocksource') or NOT_RECORDED}).",
        ("environment.cpu_model", "environment.cpus_online", "environment.smt_active",
         "environment.kernel_release", "environment.preempt", "environment.preempt_rt", "environment.clocksource"))


def _tuning(env: Mapping[str, Any], meta: Metadata) -> Sentence:
    isolated = env.get("isolated_cpus")
    nohz = env.get("nohz_full_cpus")
    governors = sorted({g for g in meta.governors.values() if g})
    idle = env.get("cpuidle") if isinstance(env.get("cpuidle"), Mapping) else {}
    governor = ", ".join(governors) if governors else (
        "none (no cpufreq)" if env.get("cpufreq") == {} else NOT_RECORDED)
    return Sentence(
        f"Isolated CPUs: {_cpu_list(isolated)}; nohz_full CPUs: {_cpu_list(nohz)}; cpufreq governor: {governor}; "
        f"cpuidle driver {idle.get('driver') or NOT_RECORDED} with governor {idle.get('governor') or NOT_RECORDED}.",
        ("environment.isolated_cpus", "environment.nohz_full_cpus", "environment.cpufreq", "environment.cpuidle"))


def _measurement(meta: Metadata, asked: Mapping[str, Any], granted: Mapping[str, Any]) -> Sentence:
    cpus = ", ".join(str(t.cpu) for t in meta.threads)
    intervals = sorted({t.interval_ns for t in meta.threads})
    interval = " / ".join(_duration(ns) for ns in intervals)
    timer = granted.get("timer", asked.get("timer"))
    policy = granted.get("policy", asked.get("policy"))
    priority = granted.get("priority", asked.get("priority"))
    dma = granted.get("latency_us", asked.get("latency_us"))
    held = (f"/dev/cpu_dma_latency was held at {dma} us" if isinstance(dma, int) and dma >= 0 else
            "/dev/cpu_dma_latency was left alone")
    lock = "; memory was locked (mlockall)" if granted.get("mlockall") is True else ""
    return Sentence(
        f"One thread per measured CPU ({cpus}) woke every {interval} using "
        f"{_TIMERS.get(str(timer), f'timer {timer or NOT_RECORDED}')}, under "
        f"{_POLICIES.get(str(policy), str(policy or NOT_RECORDED))} at priority "
        f"{priority if priority is not None else NOT_RECORDED}; {held}{lock}.",
        ("threads.cpu", "threads.interval_ns", "settings.granted.timer", "settings.granted.policy",
         "settings.granted.priority", "settings.granted.latency_us", "settings.granted.mlockall"))


def _amount(meta: Metadata, asked: Mapping[str, Any]) -> Sentence:
    wakeups = sum(t.samples for t in meta.threads)
    per = ", ".join(f"{t.samples:,}" for t in meta.threads)
    asked_ns = asked.get("duration_ns")
    duration = f"the run was asked to last {_duration(asked_ns)}; " if isinstance(asked_ns, int) and asked_ns else ""
    return Sentence(
        f"{duration.capitalize()}{wakeups:,} wake-ups were recorded in all ({len(meta.threads)} threads: {per}), "
        f"with {meta.drops:,} lost and {meta.overruns:,} periods overrun.",
        ("settings.asked.duration_ns", "threads.samples", "threads.drops", "threads.overruns"))


def _counters(meta: Metadata, env: Mapping[str, Any]) -> Sentence:
    counters = meta.counters or {}
    columns = ", ".join(counters.get("columns", ())) or "none"
    tracing = env.get("tracing") if isinstance(env.get("tracing"), Mapping) else {}
    if tracing.get("enabled"):
        events = ", ".join(tracing.get("events", ())) or NOT_RECORDED
        traced = (f"kernel events were traced on the measured CPUs in an own tracefs instance ({events}; "
                  f"{tracing.get('buffer_size_kb', NOT_RECORDED)} KiB per CPU)")
    else:
        traced = "no kernel tracing was in force"
    source = counters.get("source") or NOT_RECORDED
    if source == "none" or not counters.get("columns"):
        # not "counters read through none: none": a paper's sentence says what was not read, and why if known
        read = f"No per-wake-up hardware counters were read (counter source {source})"
    else:
        read = f"Per-wake-up counters read through {source}: {columns}"
    return Sentence(f"{read}; {traced}.", ("counters.source", "counters.columns", "environment.tracing"))


def _latency(meta: Metadata) -> Sentence:
    if meta.kind == "simulation":
        return Sentence("Latency is each wake-up's simulated actual_ns minus its expected_ns, drawn from the "
                        "simulation's spec (in the dataset's metadata).", ("kind",))
    if meta.kind == "import":
        return Sentence(
            f"Latency is as the source tool defined and printed it ({(meta.source or {}).get('format', NOT_RECORDED)}"
            "), the wake-up time minus the programmed expiry.", ("source.format",))
    return Sentence(
        "Latency is the time from each programmed expiry (expected_ns) to the thread's reading of CLOCK_MONOTONIC "
        "after it woke (actual_ns); expiries advance by whole intervals from the first, so a late wake-up does not "
        "shift the next one (periods missed entirely are skipped and counted as overruns).", ())


def _count_cpus(online: Any) -> str:
    if not isinstance(online, str) or not online.strip():
        return NOT_RECORDED
    total = 0
    for part in online.split(","):
        low, _, high = part.strip().partition("-")
        try:
            total += int(high or low) - int(low) + 1
        except ValueError:
            return NOT_RECORDED
    return str(total)


def _cpu_list(value: Any) -> str:
    if value is None:
        return NOT_RECORDED
    return str(value).strip() or "none"


def _duration(ns: Any) -> str:
    if not isinstance(ns, int | float):
        return NOT_RECORDED
    for unit, size in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= size:
            return f"{ns / size:g} {unit}"
    return f"{ns:g} ns"


__all__: Sequence[str] = ("Sentence", "dataset_methods", "methods_latex", "methods_sentences", "methods_text")
