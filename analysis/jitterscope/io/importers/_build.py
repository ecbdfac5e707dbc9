"""Turn parsed files (a primary and its companions from the same run) into a dataset table.

Sample sources become kind ``import`` (one row per wake-up), histogram sources
kind ``histogram`` (one row per non-empty bin), and summary-only sources a
``histogram`` dataset without bins whose wake-ups are all counted as
overflows.  Companion summaries are checked against the samples: a count
larger than the samples is reported as missing samples, a disagreement when
nothing is missing means the files are not from the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ... import __version__
from ...dataset import Metadata, ThreadInfo
from ...errors import ImportFormatError
from ._common import Parsed, SourceSummary


def build_histogram(primary: Parsed, companions: list[Parsed]) -> tuple[pa.Table, Metadata]:
    notes = list(primary.notes)
    summaries = {s.thread: s for s in primary.summaries}
    others = merged_summaries(companions)
    options: dict[str, Any] = dict(primary.settings.get("options", {}))
    for comp in companions:
        options.update(comp.settings.get("options", {}))
    interval_ns = int(options["interval_us"]) * 1000 if options.get("interval_us") else 0
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("thread", "cpu", "bin_start_ns", "bin_width_ns", "count")}
    threads = []
    for hist in primary.histograms:
        own = summaries.get(hist.thread)
        other = others.get(hist.thread)
        cpu = next((s.cpu for s in (own, other) if s is not None and s.cpu is not None), hist.cpu)
        cpu = -1 if cpu is None else cpu
        count = int(hist.counts.sum()) + hist.overflows
        if other is not None and other.count != count:
            raise ImportFormatError(
                f"{primary.path}: thread {hist.thread} has {count} wake-ups (bins + overflows) but "
                f"{other_path(companions)} says {other.count}; the files are not from the same run")
        thread_interval = interval_ns or (other.interval_ns if other and other.interval_ns else 0)
        n = len(hist.counts)
        rows["thread"].append(np.full(n, hist.thread, np.int32))
        rows["cpu"].append(np.full(n, cpu, np.int32))
        rows["bin_start_ns"].append(hist.bin_start_ns)
        rows["bin_width_ns"].append(hist.bin_width_ns)
        rows["count"].append(hist.counts)
        best = own or other
        extra: dict[str, Any] = {"overflows": hist.overflows}
        if hist.range_ns is not None:
            extra["overflow_above_ns"] = hist.range_ns
        if best is not None:
            extra.update(min_ns=best.min_ns, avg_ns=best.avg_ns, max_ns=best.max_ns,
                         avg_precision_ns=best.avg_precision_ns, avg_truncated=best.avg_truncated)
        threads.append(ThreadInfo(thread=hist.thread, cpu=cpu, interval_ns=thread_interval, samples=count,
                                  extra=extra))
        if hist.overflows:
            limit = f" of {hist.range_ns / 1000:g} µs" if hist.range_ns is not None else ""
            notes.append(f"thread {hist.thread}: {hist.overflows} of {count} wake-ups were above the histogram's "
                         f"range{limit} (overflows): counted in n and in threads[].overflows, in no bin; a "
                         "percentile among them is known only to be above the range")
    if not interval_ns and not any(t.interval_ns for t in threads) and not primary.format.startswith("oslat"):
        notes.append("interval unknown: the histogram does not record it (interval_ns = 0)")
    table = pa.table({k: np.concatenate(v) for k, v in rows.items()})
    reconstructed = {"bin_start_ns": f"value * {primary.resolution_ns or 1000} ns (bins of one printed unit)"}
    return table, metadata_for("histogram", threads, primary, companions, reconstructed, notes)


def build_summary_only(primary: Parsed, companions: list[Parsed]) -> tuple[pa.Table, Metadata]:
    threads = []
    notes = list(primary.notes)
    if primary.format != "periodic-timer":
        notes.append("no samples and no histogram: the source printed only count/min/avg/max per thread; every "
                     "wake-up is counted as an overflow (in no bin), so only those four numbers are known")
    merged = merged_summaries([primary, *companions])
    for s in primary.summaries:
        other = merged[s.thread]
        cpu = s.cpu if s.cpu is not None else other.cpu
        threads.append(ThreadInfo(
            thread=s.thread, cpu=-1 if cpu is None else cpu, interval_ns=s.interval_ns or other.interval_ns or 0,
            samples=s.count, tid=s.tid or other.tid,
            extra={"overflows": s.count, "min_ns": s.min_ns, "avg_ns": s.avg_ns, "max_ns": s.max_ns,
                   "avg_precision_ns": s.avg_precision_ns, "avg_truncated": s.avg_truncated, "summary_only": True,
                   **s.extra},
        ))
    empty = {k: np.zeros(0, np.int64) for k in ("thread", "cpu", "bin_start_ns", "bin_width_ns", "count")}
    return pa.table(empty), metadata_for("histogram", threads, primary, companions, {}, notes)


def other_path(companions: list[Parsed]) -> str:
    return ", ".join(str(c.path) for c in companions) or "the companion file"


def merged_summaries(companions: list[Parsed]) -> dict[int, SourceSummary]:
    """Per-thread summaries from companions; JSON files first, then text (later ones fill gaps)."""
    merged: dict[int, SourceSummary] = {}
    ordered = sorted(companions, key=lambda c: 0 if c.format.endswith(("json", "results")) else 1)
    for comp in ordered:
        for s in comp.summaries:
            if s.thread not in merged:
                merged[s.thread] = SourceSummary(**vars(s))
            else:
                kept = merged[s.thread]
                if kept.count != s.count:
                    raise ImportFormatError(
                        f"{comp.path}: thread {s.thread} counted {s.count} wake-ups but another file of the run "
                        f"says {kept.count}; the files are not from the same run")
                kept.cpu = kept.cpu if kept.cpu is not None else s.cpu
                kept.tid = kept.tid if kept.tid is not None else s.tid
                kept.priority = kept.priority if kept.priority is not None else s.priority
                kept.interval_ns = kept.interval_ns or s.interval_ns
    return merged


@dataclass
class LatencyTally:
    """One thread's samples as far as its summary check needs them: count, extremes, sum, seq span."""

    n: int = 0
    low: int = 0
    high: int = 0
    total: int = 0  # exact (Python int)
    first_seq: int = 0
    last_seq: int = 0

    def update(self, latency_ns: np.ndarray, seq: np.ndarray) -> None:
        """Add the thread's next samples (``seq`` increasing, after the ones before)."""
        if seq.size == 0:
            return
        low, high = int(latency_ns.min()), int(latency_ns.max())
        if self.n == 0:
            self.low, self.high, self.first_seq = low, high, int(seq[0])
        else:
            self.low, self.high = min(self.low, low), max(self.high, high)
        self.n += int(seq.size)
        self.total += int(latency_ns.sum())
        self.last_seq = int(seq[-1])

    @property
    def gaps(self) -> int:
        """Wake-ups missing between the first and the last sample (seq gaps)."""
        return self.last_seq - self.first_seq - (self.n - 1) if self.n > 1 else 0


def check_against(thread: int, tally: LatencyTally, summary: SourceSummary | None,
                  tool: str, notes: list[str], primary: Parsed) -> dict[str, Any]:
    """Compare one thread's samples with what the tool reported; note missing samples."""
    n = tally.n
    if summary is None:
        return {}
    extra: dict[str, Any] = {"source_count": summary.count, "source_min_ns": summary.min_ns,
                             "source_avg_ns": summary.avg_ns, "source_max_ns": summary.max_ns}
    if n > summary.count:
        raise ImportFormatError(
            f"{primary.path}: thread {thread} has {n} samples but {tool}'s summary counted only {summary.count}; "
            "the files are not from the same run")
    missing = summary.count - n
    extra["missing"] = missing
    if missing:
        gaps = tally.gaps
        where = "after the last sample" if not gaps else f"{gaps} as seq gaps, {missing - gaps} after the last sample"
        notes.append(f"{tool} printed {n} samples for thread {thread} but counted {summary.count} wake-ups: "
                     f"{missing} missing ({where}); its own min/avg/max cover them")
        return extra
    if n == 0:
        return extra
    mismatch = _stats_mismatch(tally, summary)
    if mismatch:
        raise ImportFormatError(f"{primary.path}: thread {thread}'s samples give {mismatch}; the files are not "
                                "from the same run")
    return extra


def _stats_mismatch(tally: LatencyTally, summary: SourceSummary) -> str:
    low, high = tally.low, tally.high
    if summary.min_ns is not None and low != summary.min_ns:
        return f"min {low} ns where the summary says {summary.min_ns} ns"
    if summary.max_ns is not None and high != summary.max_ns:
        return f"max {high} ns where the summary says {summary.max_ns} ns"
    if summary.avg_ns is None:
        return ""
    total, n, unit = tally.total, tally.n, summary.unit_ns
    if summary.avg_truncated:
        # C's (long)(sum / n) in the printed unit: truncation toward zero
        same = int(total / unit / n) == round(summary.avg_ns / unit)
    else:
        places = summary.avg_decimals
        same = f"{total / unit / n:.{places}f}" == f"{summary.avg_ns / unit:.{places}f}"
    if not same:
        return f"avg {total / n:.2f} ns where the summary says {summary.avg_ns} ns"
    return ""


def metadata_for(kind: str, threads: list[ThreadInfo], primary: Parsed, companions: list[Parsed],
              reconstructed: dict[str, str], notes: list[str], *, absolute_times: bool | None = None,
              assumptions: dict[str, str] | None = None) -> Metadata:
    """The dataset's metadata; ``absolute_times`` (sample imports): whether every thread's times are on one
    clock (False: each thread's rebuilt from its own first wake-up, so no event joins threads);
    ``assumptions``: what the import took for given that the files do not say (CPUs, interval, unit)."""
    environment: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    tool = primary.tool
    for parsed in [*companions, primary]:
        environment.update(parsed.environment)
        settings.update({k: v for k, v in parsed.settings.items() if k != "interval_headers_us"})
        tool = tool or parsed.tool
    run_settings = cyclictest_settings([*companions, primary], notes) if primary.format.startswith("cyclictest") \
        else None
    source = {
        "format": primary.format,
        "files": [str(primary.path), *(str(c.path) for c in companions)],
        "companion_formats": [c.format for c in companions],
        "reconstructed": reconstructed,
        "notes": notes,
        "tool": dict(tool) if tool else None,
        "settings": settings,
    }
    if absolute_times is not None:
        source["absolute_times"] = absolute_times
    if assumptions:
        source["assumptions"] = dict(assumptions)
    return Metadata(
        kind=kind, threads=tuple(threads),
        tool={"name": "jitterscope import", "version": __version__},
        environment=environment or None, source=source, settings=run_settings,
    )


_POLICIES = {"normal": "other", "other": "other", "fifo": "fifo", "rr": "rr", "batch": "batch", "idle": "idle"}


def cyclictest_settings(parsed: list[Parsed], notes: list[str]) -> dict[str, Any] | None:
    """``settings`` (asked/granted) of a cyclictest run from its ``"cmdline:"`` and summary lines; None if unknown.

    Only what the files say: ``-p`` gives the priority and, without ``-y``, SCHED_FIFO (cyclictest's own
    rule); cyclictest exits when it cannot set them, so a finished run was granted them.  Without a
    command line, the summary lines' ``P:`` gives the priority (policy unknown).  Nothing is guessed:
    a key left out is unknown.
    """
    options: dict[str, Any] = {}
    for p in parsed:
        options.update(p.settings.get("options", {}))
    asked: dict[str, Any] = {}
    for key, name in (("interval_us", "interval_ns"), ("distance_us", "distance_ns")):
        if isinstance(options.get(key), int):
            asked[name] = options[key] * 1000
    if isinstance(options.get("loops"), int):
        asked["loops"] = options["loops"]
    if isinstance(options.get("priority"), int):
        asked["priority"] = options["priority"]
    policy = options.get("policy")
    if isinstance(policy, str):
        asked["policy"] = _POLICIES.get(policy, policy)
    elif "priority" in asked:
        asked["policy"] = "fifo"
    affinity = options.get("affinity")
    if affinity is True:
        asked["affinity"] = "each thread on the CPU of its number (-a without a CPU set)"
    elif isinstance(affinity, str):
        asked["affinity"] = affinity
    if "mlockall" in options:
        asked["mlockall"] = True
    granted = {k: asked[k] for k in ("policy", "priority") if k in asked}
    printed = {s.priority for p in parsed for s in p.summaries if s.priority is not None}
    if "priority" not in granted and len(printed) == 1:
        granted["priority"] = printed.pop()
        notes.append("priority from the P: field of cyclictest's summary lines; policy unknown (no command line: "
                     "give the --json file)")
    elif granted:
        notes.append("policy and priority from cyclictest's recorded command line (it exits when it cannot "
                     "set them, so a finished run had them)")
    if not asked and not granted:
        return None
    return {"asked": asked, "granted": granted}
