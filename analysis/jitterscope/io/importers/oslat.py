"""oslat output (rt-tests): a per-core histogram of busy-loop latencies.

oslat does not sleep on a timer: it spins reading the TSC and histograms the
time between two reads.  Text output, per core in one column each::

            Core:	 1 3
    Counter Freq:	 2597 2597 (Mhz)
        001 (us):	 156749466 1234
        ...
        032 (us):	 35 0 (including overflows)
         Minimum:	 1 1 (us)
         Average:	 1.000 1.000 (us)
         Maximum:	 247 12 (us)
         Max-Min:	 246 11 (us)
        Duration:	 2.998 2.998 (sec)

A bucket labelled ``N (us)`` holds loops that took ``[N-1, N)`` µs (oslat
prints the truncated µs plus one; so are Minimum/Maximum), and the last bucket
also holds every longer loop.  ``--json`` writes the same numbers in the
rt-tests ``file_version`` 1 shape with per-thread ``cpu``, ``freq``, ``min``,
``avg``, ``max``, ``duration`` and ``histogram``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ._common import (
    Parsed,
    SourceSummary,
    ThreadHistogram,
    fail,
    iter_lines,
    json_histogram,
    json_int,
    json_number,
    show,
)
from .cyclictest_json import load_rt_tests_json, sysinfo_environment

FORMAT = "oslat"
_VERSION = re.compile(r"oslat V (\S+)")
JSON_FORMAT = "oslat-json"

_BUCKET = re.compile(r"\s*(\d{1,9}) \(us\):\s+(\d{1,15}(?:\s+\d{1,15})*)\s*(\(including overflows\))?\s*")
_FIELD = re.compile(
    r"\s*(Core|Counter Freq|Minimum|Average|Maximum|Max-Min|Duration):\s+(.*?)\s*(\((?:us|sec|Mhz)\))?\s*"
)


def sniff(head: bytes) -> bool:
    return bool(re.search(rb"^\s*Core:\s+\d", head, re.M)) and b"(us):" in head


def sniff_json(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return '"file_version"' in text and '"cmdline:": "oslat' in text


def parse(path: Path) -> Parsed:
    lines = iter_lines(path, FORMAT)  # a few MiB at a time, not the whole file
    fields: dict[str, list[str]] = {}
    labels: list[int] = []
    rows: list[list[int]] = []
    overflow_label = None
    in_results = False
    version = None
    for number, line in lines:
        if version is None:
            version = _VERSION.search(line)
        match = _FIELD.fullmatch(line)
        if match:
            if match[1] == "Core":
                if in_results:
                    raise fail(FORMAT, path, f"line {number}", "a second 'Core:' line", "import one run at a time")
                in_results = True
            elif not in_results:
                raise fail(FORMAT, path, f"line {number}", f"{show(line)} before the 'Core:' line")
            fields[match[1]] = match[2].split()
            continue
        match = _BUCKET.fullmatch(line)
        if match and in_results:
            label = int(match[1])
            if labels and label <= labels[-1]:
                raise fail(FORMAT, path, f"line {number}", f"bucket {label} after bucket {labels[-1]}")
            labels.append(label)
            rows.append([int(v) for v in match[2].split()])
            if match[3]:
                overflow_label = label
            continue
        if not in_results:
            continue  # the settings preamble ("Total runtime:", "Pre-heat ...")
        if line.strip():
            raise fail(FORMAT, path, f"line {number}", f"{show(line)} is not part of oslat's result table")
    if "Core" not in fields or not rows:
        raise fail(FORMAT, path, "whole file", "no 'Core:' line with bucket rows after it",
                   "the run did not finish or this is not oslat output")
    cores = [_int(c, path, "Core:") for c in fields["Core"]]
    if any(c >= 1 << 20 for c in cores):
        raise fail(FORMAT, path, "'Core:' line", "a core number is implausible")
    if any(len(r) != len(cores) for r in rows):
        raise fail(FORMAT, path, "buckets", f"a bucket row does not have one count per core ({len(cores)})")
    for key in ("Minimum", "Average", "Maximum"):
        if len(fields.get(key, [])) != len(cores):
            raise fail(FORMAT, path, f"'{key}:' line", f"missing or not one value per core ({len(cores)})",
                       "the file is truncated")
    parsed = Parsed(format=FORMAT, path=path, role="histogram", resolution_ns=1000)
    table = np.asarray(rows, dtype=np.int64)
    parsed.tool = {"name": "oslat", "version": version[1] if version else "unknown"}
    if len(fields.get("Duration", [])) == len(cores):  # the run's length per core, for a poll import
        parsed.settings["duration_s"] = [_float(d, path) for d in fields["Duration"]]
    for index, cpu in enumerate(cores):
        maximum = _int(fields["Maximum"][index], path, "Maximum:")
        _add_thread(parsed, index, cpu, np.asarray(labels, np.int64), table[:, index], overflow_label,
                    _int(fields["Minimum"][index], path, "Minimum:"), _float(fields["Average"][index], path),
                    maximum)
    return parsed


def parse_json(path: Path) -> Parsed:
    doc = load_rt_tests_json(path, JSON_FORMAT)
    threads = doc.get("thread")
    if not isinstance(threads, dict) or not threads:
        raise fail(JSON_FORMAT, path, '"thread"', "missing or empty")
    cmdline = doc.get("cmdline:")
    if isinstance(cmdline, str) and cmdline.split()[:1] and not cmdline.split()[0].endswith("oslat"):
        raise fail(JSON_FORMAT, path, '"cmdline:"', f"the run was {cmdline.split()[0]!r}, not oslat")
    parsed = Parsed(format=JSON_FORMAT, path=path, role="histogram", resolution_ns=1000)
    parsed.tool = {"name": "oslat", "version": str(doc.get("rt_test_version:", "unknown"))}
    parsed.environment.update(sysinfo_environment(doc.get("sysinfo")))
    if isinstance(doc.get("cmdline:"), str):
        parsed.settings["cmdline"] = doc["cmdline:"]
    for index, key in enumerate(sorted(threads, key=lambda k: int(k) if str(k).isdigit() else -1)):
        where = f'thread "{key}"'
        entry = threads[key]
        if not str(key).isdigit() or not isinstance(entry, dict):
            raise fail(JSON_FORMAT, path, where, "is not a thread entry")
        labels, counts = json_histogram(entry.get("histogram", {}), 1, JSON_FORMAT, path, where)
        parsed.settings.setdefault("duration_s", []).append(
            json_number(entry, "duration", JSON_FORMAT, path, where) if "duration" in entry else None)
        if not len(counts):
            raise fail(JSON_FORMAT, path, where, "histogram is empty")
        _add_thread(parsed, index, json_int(entry, "cpu", JSON_FORMAT, path, where, lo=0, hi=1 << 20),
                    labels, counts, int(labels[-1]),
                    json_int(entry, "min", JSON_FORMAT, path, where),
                    json_number(entry, "avg", JSON_FORMAT, path, where),
                    json_int(entry, "max", JSON_FORMAT, path, where))
    parsed.notes.append("oslat's JSON does not mark the overflow bucket: the last listed bucket is taken as open-ended")
    return parsed


def _add_thread(parsed: Parsed, index: int, cpu: int, labels: np.ndarray, counts: np.ndarray,
                overflow_label: int | None, minimum: int, average: float, maximum: int) -> None:
    nonzero = counts > 0
    starts = (labels - 1) * 1000
    widths = np.full(len(labels), 1000, np.int64)
    if overflow_label is not None and labels[-1] == overflow_label and maximum > overflow_label:
        widths[-1] = (maximum - overflow_label + 1) * 1000  # the last bucket runs up to the maximum
    parsed.histograms.append(ThreadHistogram(
        thread=index, bin_start_ns=starts[nonzero], bin_width_ns=widths[nonzero], counts=counts[nonzero],
        overflows=0, cpu=cpu,
    ))
    parsed.summaries.append(SourceSummary(
        thread=index, count=int(counts.sum()), min_ns=minimum * 1000, avg_ns=average * 1000, max_ns=maximum * 1000,
        cpu=cpu, avg_decimals=3, interval_ns=0,
    ))
    if index == 0:
        parsed.notes.append("oslat times busy loops, not timer wake-ups: each count is one loop; a bucket "
                            "'N (us)' holds loops of [N-1, N) µs and min/avg/max are printed the same way "
                            "(upper bounds); the last bucket also holds every longer loop (its width runs to "
                            "the maximum); interval_ns = 0 (no timer)")


def _int(text: str, path: Path, where: str) -> int:
    if not re.fullmatch(r"\d{1,15}", text):
        raise fail(FORMAT, path, where, f"{show(text)} is not a count")
    return int(text)


def _float(text: str, path: Path) -> float:
    if not re.fullmatch(r"\d{1,12}(\.\d+)?", text):
        raise fail(FORMAT, path, "Average:", f"{show(text)} is not a number")
    return float(text)

