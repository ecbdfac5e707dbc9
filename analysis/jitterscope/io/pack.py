"""``pack``: one sorted, compressed, checksummed Parquet file for sharing a dataset.

Rows are sorted by (``thread``, ``seq``) (histograms: ``thread``,
``bin_start_ns``).  Each column gets the encoding that makes it smallest after
zstd, tried on its first rows: DELTA_BINARY_PACKED (sorted indices and
timestamps become small, regular deltas), BYTE_STREAM_SPLIT (noisy
timestamps: their high bytes repeat), or a dictionary (int32 columns with few
distinct values).  The choice depends only on the data, so a given dataset
always packs to the same bytes.  The
metadata gets ``jitterscope.pack``: the row count, what ``--anonymize``
changed, and a SHA-256 of the canonical column data (see
:func:`content_sha256`) so a receiver can check the rows are the ones packed;
for a poll dataset also its per-second table (``poll_windows``: the one file
has no ``_poll/`` folder).
"""

from __future__ import annotations

import fnmatch
import hashlib
import ipaddress
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..dataset import (
    Dataset,
    Metadata,
    ThreadInfo,
    check_output,
    content_sha256,
    open_dataset,
    pack_poll_windows,
    read_poll_table,
    write_atomically,
)
from ..errors import DatasetError

ZSTD_LEVEL = 15
ROW_GROUP_ROWS = 1 << 20
TRIAL_ROWS = 1 << 18  # rows each candidate encoding is tried on
ENCODINGS = ("DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT")


@dataclass(frozen=True)
class PackResult:
    """What ``pack`` wrote."""

    path: str
    rows: int
    bytes: int
    wakeups: int
    bytes_per_wakeup: float
    column_bytes: dict[str, int]
    encodings: dict[str, str]
    sha256: str
    anonymized: tuple[str, ...] = field(default_factory=tuple)

    def column_bytes_per_wakeup(self) -> dict[str, float]:
        return {name: size / max(self.wakeups, 1) for name, size in self.column_bytes.items()}

    def to_json(self) -> dict[str, Any]:
        out = dict(vars(self))
        out["anonymized"] = list(self.anonymized)
        out["column_bytes_per_wakeup"] = self.column_bytes_per_wakeup()
        return out


def sort_keys(kind: str) -> list[tuple[str, str]]:
    """The pack order of a dataset kind."""
    second = "bin_start_ns" if kind == "histogram" else "seq"
    return [("thread", "ascending"), (second, "ascending")]


def pack_dataset(
    source: str | os.PathLike[str], output: str | os.PathLike[str], *, anonymize: bool = False,
    overwrite: bool = False,
) -> PackResult:
    """Write ``source`` as one sorted, zstd+delta-encoded Parquet file with a content checksum.

    Parameters
    ----------
    source
        A dataset (file or directory of parts).
    output
        The ``.parquet`` file to write.
    anonymize
        Apply the allowlist (:func:`anonymize_metadata`): listed strings kept, listed identifying ones
        transformed (hashes ``anon-<12 hex>``), the rest dropped; record which places changed.
    overwrite
        Replace ``output`` if it exists.

    Returns
    -------
    PackResult
        Sizes (total and per column, per wake-up), checksum, anonymised fields.

    Raises
    ------
    DatasetError
        The source cannot be read or the output cannot be written.
    """
    out = check_output(output, inputs=[source], overwrite=overwrite)
    dataset = open_dataset(source)
    table = dataset.read().sort_by(sort_keys(dataset.metadata.kind))
    metadata = dataset.metadata
    changed: list[str] = []
    if anonymize:
        metadata, changed = anonymize_metadata(metadata)
    checksum = content_sha256(table)
    pack = {"sha256": checksum, "anonymized": changed, "rows": table.num_rows}
    if dataset.metadata.kind == "poll":
        pack["poll_windows"] = _poll_windows(dataset)
    metadata = metadata.with_changes(pack=pack)
    table = table.replace_schema_metadata(metadata.to_kv())
    with write_atomically(out) as tmp:
        encodings = choose_encodings(table)
        dictionary = [name for name, encoding in encodings.items() if encoding == "DICTIONARY"]
        pq.write_table(
            table, tmp, compression="zstd", compression_level=ZSTD_LEVEL, use_dictionary=dictionary or False,
            column_encoding={name: e for name, e in encodings.items() if e != "DICTIONARY"},
            row_group_size=ROW_GROUP_ROWS, write_statistics=True,
        )
    return _result(out, table, metadata, checksum, changed, encodings)


def _poll_windows(dataset: Dataset) -> dict[str, Any]:
    """A poll dataset's per-second table for the one file (it has no folder); carried whole, its columns are
    counts of the source's own table, with nothing of the metadata (so --anonymize leaves nothing in it)."""
    return pack_poll_windows(read_poll_table(dataset), where=str(dataset.path))


def choose_encodings(table: pa.Table) -> dict[str, str]:
    """For each column, the encoding with the fewest bytes after zstd on its first :data:`TRIAL_ROWS` rows."""
    chosen = {}
    for name in table.column_names:
        trial = table.select([name]).slice(0, TRIAL_ROWS)
        candidates = [*ENCODINGS, *(("DICTIONARY",) if table.schema.field(name).type == pa.int32() else ())]
        sizes = {encoding: _encoded_size(trial, encoding) for encoding in candidates}
        chosen[name] = min(candidates, key=lambda e: (sizes[e], candidates.index(e)))
    return chosen


def _encoded_size(trial: pa.Table, encoding: str) -> float:
    sink = pa.BufferOutputStream()
    try:
        if encoding == "DICTIONARY":
            pq.write_table(trial, sink, compression="zstd", compression_level=ZSTD_LEVEL, use_dictionary=True)
        else:
            pq.write_table(trial, sink, compression="zstd", compression_level=ZSTD_LEVEL, use_dictionary=False,
                           column_encoding={trial.column_names[0]: encoding})
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return float("inf")  # an older pyarrow without this encoding for this type: not a candidate
    meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
    return sum(meta.row_group(i).column(0).total_compressed_size for i in range(meta.num_row_groups))


def verify_pack(path: str | os.PathLike[str]) -> str:
    """Recompute a packed file's checksum; returns it, or raises :class:`DatasetError` on a mismatch."""
    dataset = open_dataset(path)
    recorded = (dataset.metadata.pack or {}).get("sha256")
    if not recorded:
        raise DatasetError(f"{path}: has no jitterscope.pack checksum; it was not written by 'jitterscope pack'")
    actual = content_sha256(dataset.read())
    if actual != recorded:
        raise DatasetError(f"{path}: content checksum {actual[:12]}… does not match the recorded {recorded[:12]}…; "
                           "the rows were changed after packing")
    if dataset.metadata.kind == "poll" and "poll_windows" in dataset.metadata.pack:
        read_poll_table(dataset)  # checks the per-second table's own checksum
    return actual


def _result(out: Path, table: pa.Table, metadata: Metadata, checksum: str, changed: list[str],
            encodings: dict[str, str]) -> PackResult:
    parquet = pq.ParquetFile(out).metadata
    sizes = {name: 0 for name in table.column_names}
    for group in range(parquet.num_row_groups):
        row_group = parquet.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            sizes[chunk.path_in_schema] += chunk.total_compressed_size
    if metadata.kind == "histogram":
        wakeups = int(np.asarray(table.column("count")).sum()) + sum(
            int(t.extra.get("overflows", 0) or 0) for t in metadata.threads)
    else:
        wakeups = table.num_rows
    size = out.stat().st_size
    return PackResult(
        path=str(out), rows=table.num_rows, bytes=size, wakeups=wakeups,
        bytes_per_wakeup=size / max(wakeups, 1), column_bytes=sizes, encodings=encodings, sha256=checksum,
        anonymized=tuple(changed),
    )


# ---- anonymisation -----------------------------------------------------------------------------------

_HOST_KEYS = {"hostname", "nodename", "host", "fqdn", "domainname", "hostid"}
_USER_KEYS = {"user", "username", "login", "logname", "sudo_user", "owner", "invoking_user", "uid_name"}
_SERIAL_HINTS = ("serial", "uuid", "machine_id", "machine-id", "board_id", "product_id", "asset_tag")
_MAC = re.compile(r"\b[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}\b")
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f:]*:[0-9A-Fa-f]*:[0-9A-Fa-f:.]*(?![\w:])")  # checked by ipaddress
_HOME = re.compile(r"(/home/|/Users/|/var/home/|/export/home/)([^/\s\"':]+)")
# user names that strings give away: user=alice, USER=alice, SUDO_USER=alice, login: alice
_USER_ASSIGNMENT = re.compile(r"(?i)\b(?:user|username|sudo_user|logname|login|owner)\s*[=:]\s*([A-Za-z0-9._-]+)")
SUBSTRING_MIN = 3
"""A secret this long or longer is replaced wherever it occurs, inside words too (every occurrence, as promised);
shorter ones only as a whole word, so a 2-letter user name does not eat every 'al' of the metadata."""


# The allowlist (README "Sharing a dataset"): every string of the metadata is kept only when its place is listed
# as not identifying, transformed when its place is listed with a rule, and dropped otherwise; numbers, booleans
# and nulls are kept but for process and thread ids. Places are dotted paths, list items as [], * any one key.
ANONYMIZE_KEEP: tuple[str, ...] = (
    "tool.name", "tool.version", "kind",
    "settings.*.policy", "settings.*.timer", "settings.*.counters", "settings.*.sync", "settings.*.clock",
    "settings.*.mode", "settings.*.distribution", "settings.*.governor", "settings.*.unit",
    "environment.kernel_release", "environment.kernel_version", "environment.machine", "environment.sysname",
    "environment.preempt", "environment.no_hz", "environment.cpu_model", "environment.cpu_vendor",
    "environment.microcode", "environment.clocksource", "environment.available_clocksources",
    "environment.cpus_online", "environment.isolated_cpus", "environment.nohz_full_cpus",
    "environment.intel_pstate_status", "environment.cpu_siblings.*", "environment.cpufreq.*.driver",
    "environment.cpufreq.*.governor", "environment.cpuidle.driver", "environment.cpuidle.governor",
    "environment.cpuidle.states[].name", "environment.cpuidle.states[].desc", "environment.tracing.events[]",
    "environment.tracing.clock",
    "counters.source", "counters.columns[]", "counters.cpu_vendor",
    "status.state", "status.cpu_load.since", "source.format", "source.reconstructed.*", "ground_truth.*",
    "source.companion_formats[]", "source.tool.*", "source.settings.start_time", "source.settings.end_time",
    "pack.*", "experiment.run", "experiment.label", "experiment.order", "experiment.levels.*",
    "experiment.settings[].knob", "experiment.settings[].value", "experiment.settings[].before",
)
"""Places whose strings say nothing about the machine's or the user's identity: kept as they are."""
ANONYMIZE_TRANSFORM: dict[str, str] = {
    "environment.hostname": "hash", "environment.nodename": "hash", "environment.domainname": "hash",
    "environment.cmdline": "cmdline",
    "environment.kernel_config_source": "text", "environment.kernel_config_error": "text",
    "environment.tracing.instance": "instance", "counters.missing.*": "text", "clock.tsc_hz_source": "text",
    "status.reason": "text", "settings.granted.degraded[]": "text", "settings.asked.output": "text",
    "settings.asked.msr_dir": "text", "source.files[]": "text",
    "source.settings.cmdline": "text", "source.notes[]": "text", "timeline.*": "text",
    "steal.source": "text", "steal.error": "text", "experiment.sweep": "text", "experiment.settings[].path": "text",
    "experiment.load.command[]": "text", "experiment.load.log": "text",
}
"""Places transformed: ``hash`` (the value becomes ``anon-`` + 12 hex digits of its SHA-256), ``cmdline``
(only the :data:`CMDLINE_KEEP` parameters and flags, a value kept when it is CPU lists, numbers and
:data:`CMDLINE_WORDS`, hashed otherwise; every other parameter and the init's arguments after ``--`` dropped),
``text`` (free text: absolute paths, addresses, MACs, process and thread ids, hostnames and user names in it
replaced; kept strings get the same treatment), ``instance`` (text, and the pid at the end of a trace instance's
name)."""
ANONYMIZE_IDS = frozenset({"tid", "pid", "ppid", "tgid"})
"""Numeric keys that identify a process or thread of the capture machine: nulled."""
CMDLINE_KEEP = frozenset({
    "isolcpus", "nohz_full", "nohz", "rcu_nocbs", "rcu_nocb_poll", "irqaffinity", "kthread_cpus", "housekeeping",
    "idle", "intel_idle.max_cstate", "processor.max_cstate", "cpuidle.off", "cpufreq.off", "intel_pstate",
    "amd_pstate", "mitigations", "preempt", "skew_tick", "tsc", "clocksource", "nosmt", "nmi_watchdog",
    "nowatchdog", "nosoftlockup", "threadirqs", "transparent_hugepage", "hugepages", "default_hugepagesz",
    "numa_balancing", "intel_iommu", "iommu", "pcie_aspm", "hpet", "console", "quiet",
    "workqueue.power_efficient", "rcupdate.rcu_expedited",
})
"""Kernel parameters (and flags) that matter for wake-up latency: the only names of the command line kept (every
other parameter, name and value, is dropped: a name such as ``nvproxy.enable`` or an init's ``--addr`` tells the
platform). A value is kept only when every comma-separated item of it is a CPU list, a number or one of
:data:`CMDLINE_WORDS`; otherwise it becomes ``anon-`` + 12 hex digits of its SHA-256."""
CMDLINE_WORDS = frozenset({
    "on", "off", "auto", "force", "nosmt", "pt", "poll", "halt", "nomwait", "none", "voluntary", "full", "lazy",
    "dynamic", "enable", "disable", "passive", "active", "guided", "reliable", "unstable", "noirqtime",
    "nowatchdog", "tsc", "hpet", "acpi_pm", "jiffies", "kvm-clock", "never", "always", "madvise", "nohz",
    "domain", "managed_irq", "no_user_kernel", "no_user_user", "no_guest_host", "no_guest_guest",
    "no_cross_thread", "performance", "powersave", "strict",
})
"""The documented keywords of the kept parameters (the kernel's own vocabulary, the same on every machine)."""
_CMDLINE_ITEM = re.compile(r"\d+(?:-\d+(?::\d+/\d+)?)?[KMG]?")
"""A CPU list item (3, 2-7, 0-15:2/4) or a number (64, 1G)."""
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~-])/[^\s'\"(),;]+")
_SERIAL_TEXT = re.compile(r"(?i)\b(serial(?:\s*(?:number|no\.?))?|uuid|machine[-_ ]id|asset[-_ ]tag)(\s*[=:]?\s*)"
                          r"([A-Za-z0-9][\w.-]{3,})")
_PID_TEXT = re.compile(r"(?i)\b(pid|tid)(\s*[=:]?\s*)\d+")
_TRAILING_ID = re.compile(r"(?<=[-_])\d{2,}\b")


def anonymize_metadata(metadata: Metadata) -> tuple[Metadata, list[str]]:
    """Apply the allowlist (:data:`ANONYMIZE_KEEP`, :data:`ANONYMIZE_TRANSFORM`, :data:`ANONYMIZE_IDS`) to the
    metadata; return the new metadata and the changed places (``PATH`` transformed, ``PATH (dropped)``).

    Kept strings still go through the replacement of every identifying value found anywhere (hostnames, user
    names, serials, MAC and IP addresses), so a hostname inside a kept string does not survive either; the same
    value always maps to the same token (``anon-`` + 12 hex digits of its SHA-256) across files.
    """
    changed: list[str] = []
    fields = {name: getattr(metadata, name) for name in ("settings", "environment", "counters", "clock", "status",
                                                          "source", "ground_truth", "tool", "timeline", "steal",
                                                          "experiment")}
    secrets: set[str] = set()
    for value in fields.values():
        _collect(value, secrets)
    for info in metadata.threads:
        _collect(dict(info.extra), secrets)
    for host in [s for s in secrets if "." in s]:  # alice-laptop.lan also appears as alice-laptop
        short = host.split(".", 1)[0]
        if len(short) >= SUBSTRING_MIN and not short.isdigit():
            secrets.add(short)
    ids = {str(t.tid) for t in metadata.threads if t.tid is not None}
    rules = _Rules(_replacer(secrets), ids)
    new = {name: _allow(value, name, rules, changed) for name, value in fields.items()}
    threads = tuple(
        ThreadInfo(thread=t.thread, cpu=t.cpu, interval_ns=t.interval_ns, samples=t.samples, drops=t.drops,
                   overruns=t.overruns, tid=None,
                   extra=_allow(dict(t.extra), "threads[]", rules, changed) or {})
        for t in metadata.threads
    )
    if any(t.tid is not None for t in metadata.threads):
        changed.append("threads[].tid")
    return metadata.with_changes(threads=threads, **new), list(dict.fromkeys(changed))


@dataclass(frozen=True)
class _Rules:
    replace: Callable[[str], str]
    ids: set[str]

    def text(self, value: str) -> str:
        value = self.replace(value)
        value = _ABSOLUTE_PATH.sub(lambda m: m.group(0) if m.group(0).startswith("/anon-") else _token(m.group(0)),
                                   value)
        value = _PID_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}N", value)
        value = _SERIAL_TEXT.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) if m.group(3).startswith("anon-")
                                                                      else _token(m.group(3))), value)
        for number in sorted(self.ids, key=len, reverse=True):
            value = re.sub(rf"\b{number}\b", "N", value)
        return value

    def cmdline(self, value: str) -> str:
        words, _, _init = value.partition(" -- ")  # the init's own arguments: dropped
        out = []
        for word in words.split():
            name, has_value, argument = word.partition("=")
            if name.lower() not in CMDLINE_KEEP:
                continue  # not about latency: dropped, name and all
            items = argument.split(",")
            if not has_value or all(_CMDLINE_ITEM.fullmatch(i) or i.lower() in CMDLINE_WORDS for i in items):
                out.append(word)
            else:
                out.append(f"{name}={_token(argument)}")
        return " ".join(out)


def _place(path: str, patterns: Iterable[str]) -> str | None:
    return next((p for p in patterns if fnmatch.fnmatchcase(path, p)), None)


def _allow(value: Any, path: str, rules: _Rules, changed: list[str]) -> Any:
    """``value`` at ``path`` after the allowlist; strings in no listed place are dropped (None is returned and
    the caller leaves the key out)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            new_key = rules.replace(key) if isinstance(key, str) else key  # a key can hold a name too
            if new_key != key:
                changed.append(f"{path}.{new_key} (key)")
            if str(key).lower() in ANONYMIZE_IDS and isinstance(item, int | float) and not isinstance(item, bool):
                changed.append(f"{path}.{key}")
                out[new_key] = None
                continue
            kept = _allow(item, f"{path}.{key}", rules, changed)
            if kept is not None or item is None:
                out[new_key] = kept
        return out
    if isinstance(value, list | tuple):
        items = [_allow(item, f"{path}[]", rules, changed) for item in value]
        return [item for item, old in zip(items, value, strict=True) if item is not None or old is None]
    if not isinstance(value, str):
        return value
    rule = ANONYMIZE_TRANSFORM.get(_place(path, ANONYMIZE_TRANSFORM) or "")
    if rule is None and _place(path, ANONYMIZE_KEEP) is None:
        changed.append(f"{path} (dropped)")
        return None
    # kept strings are scrubbed as free text too: a listed place holding a path or an id (a hostile or damaged
    # file) does not carry it out
    new = (_token(value) if rule == "hash" and not value.startswith("anon-") else value if rule == "hash"
           else rules.cmdline(value) if rule == "cmdline"
           else _TRAILING_ID.sub("N", rules.text(value)) if rule == "instance" else rules.text(value))
    if new != value:
        changed.append(path)
    return new


def _token(value: str) -> str:
    # surrogatepass: a hostile hostname may hold a lone surrogate; it still gets its token
    return "anon-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _collect(value: Any, secrets: set[str]) -> None:
    """Find identifying scalar values by key (hostnames, users, serials)."""
    if isinstance(value, dict):
        for key, item in value.items():
            lowered = str(key).lower()
            if isinstance(item, str) and item and (lowered in _HOST_KEYS or lowered in _USER_KEYS
                                                   or any(h in lowered for h in _SERIAL_HINTS)):
                secrets.add(item)
            _collect(str(key), secrets)
            _collect(item, secrets)
    elif isinstance(value, list):
        for item in value:
            _collect(item, secrets)
    elif isinstance(value, str):  # user names inside any string: home paths, user=NAME
        secrets.update(m.group(2) for m in _HOME.finditer(value) if not m.group(2).startswith("anon-"))
        secrets.update(m.group(1) for m in _USER_ASSIGNMENT.finditer(value) if not m.group(1).startswith("anon-"))


def _replacer(secrets: set[str]) -> Callable[[str], str]:
    ordered = sorted((s for s in secrets if len(s) >= 2 and not s.startswith("anon-")), key=len, reverse=True)
    # one pass over each string (a token is never searched again), longest first, case-insensitive (hostnames
    # are); short secrets only as whole words
    tokens = {secret.lower(): _token(secret) for secret in reversed(ordered)}
    alternatives = [re.escape(s) if len(s) >= SUBSTRING_MIN else rf"(?<![\w.-]){re.escape(s)}(?![\w-])"
                    for s in ordered]
    combined = re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None

    def replace(text: str) -> str:
        if combined is not None:
            text = combined.sub(lambda m: tokens.get(m.group(0).lower(), _token(m.group(0))), text)
        text = _MAC.sub(lambda m: _token(m.group(0).lower()), text)
        text = _IPV4.sub(lambda m: _token(m.group(0)) if _is_ip(m.group(0)) else m.group(0), text)
        text = _IPV6.sub(lambda m: _token(m.group(0)) if _is_ip(m.group(0)) else m.group(0), text)
        return _HOME.sub(lambda m: m.group(1) + (m.group(2) if m.group(2).startswith("anon-") else _token(m.group(2))),
                         text)

    return replace


def _is_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not address.is_unspecified
