"""cyclictest ``--json=FILE`` output (rt-tests ``file_version`` 1).

rt-tests spells two keys with a trailing colon: ``"cmdline:"`` and
``"rt_test_version:"``.  Per thread it writes ``histogram`` (only the non-empty
bins, keys in µs or ns as ``resolution_in_ns`` says; values at or above the
``-h`` limit are not in it), ``cycles``, ``min``, ``max``, ``avg`` (``%.2f``),
``cpu`` and ``node``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from ._common import Parsed, SourceSummary, ThreadHistogram, fail, json_histogram, json_int, json_number, read_json

FORMAT = "cyclictest-json"


def sniff(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return '"file_version"' in text and ('"cmdline:": "cyclictest' in text or '"cycles"' in text)


def parse(path: Path) -> Parsed:
    doc = load_rt_tests_json(path, FORMAT)
    threads = doc.get("thread")
    resolution_ns = 1 if doc.get("resolution_in_ns") == 1 else 1000
    parsed = Parsed(format=FORMAT, path=path, role="summary", resolution_ns=resolution_ns)
    cmdline = doc.get("cmdline:", doc.get("cmdline"))
    if isinstance(cmdline, str):
        parsed.settings["cmdline"] = cmdline
        parsed.settings["options"] = parse_cmdline(cmdline)
    parsed.tool = {"name": "cyclictest", "version": str(doc.get("rt_test_version:", "unknown"))}
    parsed.environment.update(sysinfo_environment(doc.get("sysinfo")))
    for key in ("start_time", "end_time", "return_code"):
        if key in doc:
            parsed.settings[key] = doc[key]
    if not isinstance(threads, dict) or not threads:
        raise fail(FORMAT, path, '"thread"', "missing or empty", "the run recorded no thread")
    for key in sorted(threads, key=lambda k: int(k) if str(k).isdigit() else -1):
        where = f'thread "{key}"'
        if not str(key).isdigit() or int(key) > 4095:
            raise fail(FORMAT, path, where, "thread key is not a small integer")
        entry = threads[key]
        if not isinstance(entry, dict):
            raise fail(FORMAT, path, where, "is not an object")
        cycles = json_int(entry, "cycles", FORMAT, path, where, lo=0)
        values, counts = json_histogram(entry.get("histogram", {}), resolution_ns, FORMAT, path, where)
        binned = int(counts.sum())
        if binned > cycles:
            raise fail(FORMAT, path, where, f"histogram holds {binned} wake-ups but cycles is {cycles}")
        cpu = entry.get("cpu")
        summary = SourceSummary(
            thread=int(key), count=cycles,
            min_ns=json_int(entry, "min", FORMAT, path, where) * resolution_ns if cycles else None,
            max_ns=json_int(entry, "max", FORMAT, path, where) * resolution_ns if cycles else None,
            avg_ns=json_number(entry, "avg", FORMAT, path, where) * resolution_ns if cycles else None,
            unit_ns=resolution_ns,
            cpu=cpu if isinstance(cpu, int) and not isinstance(cpu, bool) and 0 <= cpu < 1 << 20 else None,
            overflows=cycles - binned if len(counts) else None,
        )
        parsed.summaries.append(summary)
        if len(counts):
            parsed.role = "histogram"
            parsed.histograms.append(ThreadHistogram(
                thread=int(key), bin_start_ns=values, bin_width_ns=np.full(len(values), resolution_ns, np.int64),
                counts=counts, overflows=cycles - binned, cpu=summary.cpu,
            ))
    if parsed.role == "histogram" and len(parsed.histograms) != len(parsed.summaries):
        parsed.histograms = [
            next((h for h in parsed.histograms if h.thread == s.thread), None)
            or ThreadHistogram(s.thread, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                               overflows=s.count, cpu=s.cpu)
            for s in parsed.summaries
        ]
    return parsed


def load_rt_tests_json(path: Path, fmt: str) -> dict[str, Any]:
    """Load an rt-tests JSON result file (cyclictest, oslat) and check its version."""
    doc = read_json(path, fmt)
    if not isinstance(doc, dict):
        raise fail(fmt, path, "top level", "is not a JSON object")
    version = doc.get("file_version")
    if version != 1:
        raise fail(fmt, path, '"file_version"', f"is {version!r}; only rt-tests file_version 1 is known")
    return doc


def sysinfo_environment(sysinfo: Any) -> dict[str, Any]:
    """Map rt-tests' ``sysinfo`` (uname) onto the dataset's environment keys."""
    if not isinstance(sysinfo, dict):
        return {}
    out: dict[str, Any] = {}
    for src, dst in (("nodename", "hostname"), ("release", "kernel_release"), ("version", "kernel_version"),
                     ("machine", "machine"), ("sysname", "sysname")):
        if isinstance(sysinfo.get(src), str):
            out[dst] = sysinfo[src]
    if "realtime" in sysinfo:
        out["preempt_rt"] = bool(sysinfo["realtime"])
    return out


_VALUE_OPTIONS = {
    "-i": "interval_us", "--interval": "interval_us", "-d": "distance_us", "--distance": "distance_us",
    "-h": "histogram", "--histogram": "histogram", "-H": "histogram", "--histofall": "histogram",
    "-l": "loops", "--loops": "loops", "-p": "priority", "--priority": "priority",
    "-t": "threads", "--threads": "threads", "-o": "oscope", "--oscope": "oscope",
}
_WORD_OPTIONS = {"-y": "policy", "--policy": "policy"}
_AFFINITY = {"-a", "--affinity"}
_CPUSET = re.compile(r"[0-9][0-9,-]*")
_FLAGS = {"-N": "nsecs", "--nsecs": "nsecs", "-r": "relative", "--relative": "relative",
          "-m": "mlockall", "--mlockall": "mlockall", "--smi": "smi", "-v": "verbose", "--verbose": "verbose",
          "-q": "quiet", "--quiet": "quiet"}


def parse_cmdline(cmdline: str) -> dict[str, Any]:
    """The cyclictest options that matter for reconstruction and settings, from its recorded command line.

    ``affinity`` is the CPU set given to ``-a`` (a string such as ``"0-3"``), or
    True for a bare ``-a`` (thread N on CPU N); ``policy`` the ``-y``/``--policy`` name.
    """
    try:
        words = shlex.split(cmdline)
    except ValueError:
        words = cmdline.split()
    options: dict[str, Any] = {}
    index = 1
    while index < len(words):
        word = words[index]
        index += 1
        name, _, attached = word.partition("=") if word.startswith("--") else (word[:2], "", word[2:])
        if name in _FLAGS and not attached:
            options[_FLAGS[name]] = True
            continue
        if name in _WORD_OPTIONS or name in _AFFINITY:
            index = _word_option(name, attached, words, index, options)
            continue
        key = _VALUE_OPTIONS.get(name)
        if key is None:
            # combined short flags such as -mq
            if word.startswith("-") and not word.startswith("--"):
                for letter in word[1:]:
                    if f"-{letter}" in _FLAGS:
                        options[_FLAGS[f"-{letter}"]] = True
            continue
        value = attached
        if not value and index < len(words) and words[index].lstrip("-").isdigit() and not words[index].startswith("-"):
            value = words[index]
            index += 1
        if value.isdigit():
            options[key] = int(value)
        elif key == "threads":
            options[key] = "all"
    return options


def _word_option(name: str, attached: str, words: list[str], index: int, options: dict[str, Any]) -> int:
    """``-y POLICY`` and ``-a [CPUSET]`` (cyclictest also takes a CPU set from the next word); the next index."""
    value = attached
    if name in _AFFINITY:
        if not value and index < len(words) and _CPUSET.fullmatch(words[index]):
            value = words[index]
            index += 1
        options["affinity"] = value if _CPUSET.fullmatch(value) else True
    elif value or index < len(words):
        if not value:
            value = words[index]
            index += 1
        options["policy"] = value.lower()
    return index
