"""Turn parsed files (a primary and its companions from the same run) into a dataset table.

Sample sources become kind ``import`` (one row per wake-up), histogram sources
kind ``histogram`` (one row per non-empty bin), and summary-only sources a
``histogram`` dataset without bins whose wake-ups are all counted as
overflows.  Companion summaries are checked against the samples: a count
larger than the samples is reported as missing samples, a disagreement when
nothing is missing means the files are not from the same run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ... import __version__
from ...dataset import Metadata, ThreadInfo
from ...errors import ImportFormatError
from ._common import Parsed, SourceSummary, ThreadSamples
from .cyclictest_quiet import scale as scale_summaries
from .cyclictest_verbose import reconstruct, resolve_intervals


def build_cyclictest_verbose(primary: Parsed, companions: list[Parsed]) -> tuple[pa.Table, Metadata]:
    if primary.summaries:  # "-v -q": the summary lines are in the same file
        embedded = Parsed(format="cyclictest-quiet", path=primary.path, role="summary", summaries=primary.summaries)
        companions = [*companions, embedded]
    options: dict[str, Any] = {}
    resolution = None
    for comp in companions:
        options.update(comp.settings.get("options", {}))
        if comp.format == "cyclictest-json":
            resolution = comp.resolution_ns
    if options.get("nsecs"):
        resolution = 1
    notes = list(primary.notes)
    if resolution is None:
        resolution = 1000
        notes.append("latencies taken as µs: cyclictest -v output does not say its unit (-N prints ns); "
                     "give the --json file to know")
    headers = primary.settings["interval_headers_us"]
    intervals_us, how_interval = resolve_intervals(headers, options)
    for comp in companions:
        if comp.format == "cyclictest-quiet" and comp.resolution_ns is None:
            scale_summaries(comp, resolution)
    quiet = next((c for c in companions if c.format == "cyclictest-quiet"), None)
    if quiet is not None and len(quiet.summaries) == len(headers):
        intervals_us = [s.interval_ns // 1000 for s in quiet.summaries]
        how_interval = "from the I: field of cyclictest's summary lines"
    reconstructed = {
        "expected_ns": ("seq * interval (plus skipped periods) from 0 at each thread's first wake-up: cyclictest -v "
                        f"prints no absolute times; interval {how_interval}"),
        "actual_ns": "expected_ns + the printed latency "
                     f"({'ns' if resolution == 1 else 'µs, truncated by cyclictest'})",
        "overruns": ("periods cyclictest skipped silently after a late wake-up: a wake-up L ns late (a printed "
                     "µs value taken as its upper end) skips (L - 1) // interval periods"),
        "cpu": "from the --json file's per-thread cpu, else -1 (unknown)",
    }
    if options.get("relative"):
        notes.append("cyclictest ran with -r (relative timer): wake-up targets were not on a fixed grid, so "
                     "expected_ns is only approximate")
    if options.get("oscope", 1) > 1:
        notes.append(f"cyclictest ran with -o {options['oscope']}: each line is the maximum of "
                     f"{options['oscope']} wake-ups")
    summaries = _merged_summaries(companions)
    known = {s.thread for s in primary.samples}
    if summaries and set(summaries) != known:
        raise ImportFormatError(f"{primary.path}: threads {sorted(known)} but {other_path(companions)} describe "
                                f"threads {sorted(summaries)}; the files are not from the same run")
    columns: dict[str, list[np.ndarray]] = {k: [] for k in ("cpu", "thread", "seq", "expected_ns", "actual_ns",
                                                             "overruns", "smi")}
    threads = []
    has_smi = primary.samples[0].smi_delta is not None
    if has_smi:
        reconstructed["smi"] = "running sum of the per-wake-up SMI counts of --smi, from 0"
    for samples, interval_us in zip(primary.samples, intervals_us, strict=True):
        interval_ns = interval_us * 1000
        latency = samples.latency_ns * resolution
        try:
            expected, overruns = reconstruct(latency, samples.seq, interval_ns, resolution)
        except ValueError as exc:
            raise ImportFormatError(f"{primary.path}: not valid cyclictest-verbose output: thread "
                                    f"{samples.thread}: {exc}; the file is damaged") from None
        summary = summaries.get(samples.thread)
        cpu = summary.cpu if summary is not None and summary.cpu is not None else -1
        n = len(samples.seq)
        columns["cpu"].append(np.full(n, cpu, np.int32))
        columns["thread"].append(np.full(n, samples.thread, np.int32))
        columns["seq"].append(samples.seq)
        columns["expected_ns"].append(expected)
        columns["actual_ns"].append(expected + latency)
        columns["overruns"].append(overruns.astype(np.int32))
        if has_smi:
            columns["smi"].append(np.cumsum(samples.smi_delta))
        extra = _check_against(samples.thread, latency, samples.seq, summary, "cyclictest", notes, primary)
        threads.append(ThreadInfo(
            thread=samples.thread, cpu=cpu, tid=summary.tid if summary is not None else None,
            interval_ns=interval_ns, samples=n, drops=_gaps(samples.seq), overruns=int(overruns.sum()), extra=extra,
        ))
    if not has_smi:
        del columns["smi"]
    table = pa.table({k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in columns.items()})
    return table, _metadata("import", threads, primary, companions, reconstructed, notes)


def build_jitterdebugger(primary: Parsed, companions: list[Parsed]) -> tuple[pa.Table, Metadata]:
    notes = list(primary.notes)
    summaries = _merged_summaries(companions)
    stdout = next((c for c in companions if c.format == "jitterdebugger-stdout"), None)
    results = next((c for c in companions if c.format == "jitterdebugger-results"), None)
    if results is not None and results.resolution_ns != primary.resolution_ns:
        raise ImportFormatError(f"{primary.path}: samples were read in µs but {results.path} says "
                                f"resolution_in_ns={results.resolution_ns}; re-run the import (internal order error)")
    reconstructed = {
        "expected_ns": ("first target + seq * interval: jitterdebugger's targets lie on a grid of its interval; "
                        "the first target is the one consistent with every record (each says the target lies "
                        "in (actual - (latency + 1 unit), actual - latency]), so actual_ns - expected_ns "
                        "truncated to the recorded unit gives back each recorded latency exactly, and finer"),
        "interval_ns": "median step of (actual_ns - recorded latency), rounded to the recorded unit: "
                       "samples.raw and results.json do not record the interval",
        "seq": "grid index of each target from the first record's: wake-ups missing from samples.raw "
               "(jitterdebugger's ring drops silently) appear as seq gaps",
        "overruns": ("threads[].overruns, not a column (jitterdebugger fires every target, late ones at once): "
                     "the catch-up wake-ups, whose target had passed when the previous wake-up happened, are the "
                     "periods jitterscope-capture would have counted as overruns and skipped; "
                     "threads[].late_wakeups counts the wake-ups later than one interval"),
        "cpu": ("the A: (affinity) field of jitterdebugger's stdout" if stdout else
                "ASSUMED: thread i on CPU i (jitterdebugger's default, all online CPUs in order); "
                "give its stdout to know"),
    }
    columns: dict[str, list[np.ndarray]] = {k: [] for k in ("cpu", "thread", "seq", "expected_ns", "actual_ns")}
    threads = []
    expected_threads = sorted(summaries) if summaries else [s.thread for s in primary.samples]
    by_thread = {s.thread: s for s in primary.samples}
    unknown = sorted(set(by_thread) - set(expected_threads))
    if unknown:
        raise ImportFormatError(f"{primary.path}: holds samples of thread(s) {unknown} that the results/stdout files "
                                "do not know; the files are not from the same run")
    for thread in expected_threads:
        samples = by_thread.get(thread) or ThreadSamples(thread, np.zeros(0, np.int64), np.zeros(0, np.int64),
                                                         np.zeros(0, np.int64))
        summary = summaries.get(thread)
        cpu = summary.cpu if summary is not None and summary.cpu is not None and stdout else thread
        assert samples.actual_ns is not None
        n = len(samples.seq)
        interval_ns, seq, expected = _grid_targets(samples.actual_ns, samples.latency_ns, primary.resolution_ns or 1000,
                                                   thread, primary, notes)
        columns["cpu"].append(np.full(n, cpu, np.int32))
        columns["thread"].append(np.full(n, thread, np.int32))
        columns["seq"].append(seq)
        columns["expected_ns"].append(expected)
        columns["actual_ns"].append(samples.actual_ns)
        extra = _check_against(thread, samples.latency_ns, seq, summary, "jitterdebugger", notes, primary)
        overruns, late = _catch_up_overruns(expected, samples.actual_ns, interval_ns)
        extra["late_wakeups"] = late
        if overruns or late:
            notes.append(f"thread {thread}: {late} wake-ups later than one interval; {overruns} catch-up wake-ups "
                         "(targets already passed) counted as overruns, as the capture counts skipped periods")
        threads.append(ThreadInfo(thread=thread, cpu=cpu, interval_ns=interval_ns, samples=n, drops=_gaps(seq),
                                  overruns=overruns, tid=summary.tid if summary else None, extra=extra))
    table = pa.table({k: np.concatenate(v) for k, v in columns.items()})
    return table, _metadata("import", threads, primary, companions, reconstructed, notes)


def _catch_up_overruns(expected_ns: np.ndarray, actual_ns: np.ndarray, interval_ns: int) -> tuple[int, int]:
    """(periods the capture would have skipped, wake-ups later than one interval) of one thread's rows.

    A loop that fires every target (jitterdebugger) wakes at once for each target that passed during a
    stall; the capture skips those targets and counts them as overruns.  So the capture's count is the
    number of wake-ups whose target was not after the previous wake-up.
    """
    expected = np.asarray(expected_ns, dtype=np.int64)
    actual = np.asarray(actual_ns, dtype=np.int64)
    catch_up = int(np.sum(expected[1:] <= actual[:-1])) if expected.size > 1 else 0
    late = int(np.sum(actual - expected > interval_ns)) if interval_ns > 0 else 0
    return catch_up, late


def build_histogram(primary: Parsed, companions: list[Parsed]) -> tuple[pa.Table, Metadata]:
    notes = list(primary.notes)
    summaries = {s.thread: s for s in primary.summaries}
    others = _merged_summaries(companions)
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
        if best is not None:
            extra.update(min_ns=best.min_ns, avg_ns=best.avg_ns, max_ns=best.max_ns,
                         avg_precision_ns=best.avg_precision_ns, avg_truncated=best.avg_truncated)
        threads.append(ThreadInfo(thread=hist.thread, cpu=cpu, interval_ns=thread_interval, samples=count,
                                  extra=extra))
        if hist.overflows:
            notes.append(f"thread {hist.thread}: {hist.overflows} of {count} wake-ups were above the histogram's "
                         "range (overflows): counted in threads[].overflows, in no bin")
    if not interval_ns and not any(t.interval_ns for t in threads) and not primary.format.startswith("oslat"):
        notes.append("interval unknown: the histogram does not record it (interval_ns = 0)")
    table = pa.table({k: np.concatenate(v) for k, v in rows.items()})
    reconstructed = {"bin_start_ns": f"value * {primary.resolution_ns or 1000} ns (bins of one printed unit)"}
    return table, _metadata("histogram", threads, primary, companions, reconstructed, notes)


def build_summary_only(primary: Parsed, companions: list[Parsed]) -> tuple[pa.Table, Metadata]:
    threads = []
    notes = list(primary.notes)
    if primary.format != "periodic-timer":
        notes.append("no samples and no histogram: the source printed only count/min/avg/max per thread; every "
                     "wake-up is counted as an overflow (in no bin), so only those four numbers are known")
    merged = _merged_summaries([primary, *companions])
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
    return pa.table(empty), _metadata("histogram", threads, primary, companions, {}, notes)


def other_path(companions: list[Parsed]) -> str:
    return ", ".join(str(c.path) for c in companions) or "the companion file"


def _merged_summaries(companions: list[Parsed]) -> dict[int, SourceSummary]:
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


def _check_against(thread: int, latency_ns: np.ndarray, seq: np.ndarray, summary: SourceSummary | None,
                   tool: str, notes: list[str], primary: Parsed) -> dict[str, Any]:
    """Compare one thread's samples with what the tool reported; note missing samples."""
    n = len(seq)
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
        gaps = _gaps(seq)
        where = "after the last sample" if not gaps else f"{gaps} as seq gaps, {missing - gaps} after the last sample"
        notes.append(f"{tool} printed {n} samples for thread {thread} but counted {summary.count} wake-ups: "
                     f"{missing} missing ({where}); its own min/avg/max cover them")
        return extra
    if n == 0:
        return extra
    mismatch = _stats_mismatch(latency_ns, summary)
    if mismatch:
        raise ImportFormatError(f"{primary.path}: thread {thread}'s samples give {mismatch}; the files are not "
                                "from the same run")
    return extra


def _stats_mismatch(latency_ns: np.ndarray, summary: SourceSummary) -> str:
    low, high = int(latency_ns.min()), int(latency_ns.max())
    if summary.min_ns is not None and low != summary.min_ns:
        return f"min {low} ns where the summary says {summary.min_ns} ns"
    if summary.max_ns is not None and high != summary.max_ns:
        return f"max {high} ns where the summary says {summary.max_ns} ns"
    if summary.avg_ns is None:
        return ""
    total, n, unit = int(latency_ns.sum()), len(latency_ns), summary.unit_ns
    if summary.avg_truncated:
        # C's (long)(sum / n) in the printed unit: truncation toward zero
        same = int(total / unit / n) == round(summary.avg_ns / unit)
    else:
        places = summary.avg_decimals
        same = f"{total / unit / n:.{places}f}" == f"{summary.avg_ns / unit:.{places}f}"
    if not same:
        return f"avg {total / n:.2f} ns where the summary says {summary.avg_ns} ns"
    return ""


def _grid_targets(actual: np.ndarray, recorded: np.ndarray, unit: int, thread: int, primary: Parsed,
                  notes: list[str]) -> tuple[int, np.ndarray, np.ndarray]:
    """(interval, seq, expected_ns) of wake-ups whose targets lie on a grid, from their truncated latencies."""
    rough = actual - recorded  # each true target is in (rough - unit, rough]
    if len(rough) < 2:
        return 0, np.arange(len(rough), dtype=np.int64), rough
    interval = round(float(np.median(np.diff(rough))) / unit) * unit
    seq = np.rint((rough - rough[0]) / interval).astype(np.int64) if interval > 0 else np.zeros(0, np.int64)
    if interval <= 0 or np.any(np.diff(seq) <= 0):
        raise ImportFormatError(f"{primary.path}: thread {thread}'s wake-up targets are not on a grid of one "
                                "interval; not jitterdebugger samples.raw as known (or damaged)")
    base = rough - seq * interval  # each record's bound on the first target: first <= base, first > base - unit
    upper, lower = int(base.min()), int((base - unit + 1).max())
    if lower <= upper:
        first = (lower + upper) // 2
        notes.append(f"thread {thread}: the grid of targets is pinned down to {upper - lower + 1} ns by the "
                     f"{len(seq)} records (latencies are exact to that, not just to the recorded unit)")
    else:
        first = int(np.median(base))
        expected = first + seq * interval
        off = int(np.count_nonzero((actual - expected) // unit * unit != recorded))
        notes.append(f"thread {thread}: the targets are not exactly on one grid ({off} of {len(seq)} records "
                     f"disagree by up to {(upper - lower) / 1000:.3f} µs); grid from the median")
    return interval, seq, first + seq * interval


def _gaps(seq: np.ndarray) -> int:
    return int(np.sum(np.diff(seq) - 1)) if len(seq) > 1 else 0


def _metadata(kind: str, threads: list[ThreadInfo], primary: Parsed, companions: list[Parsed],
              reconstructed: dict[str, str], notes: list[str]) -> Metadata:
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
