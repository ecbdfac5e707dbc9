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
:func:`content_sha256`) so a receiver can check the rows are the ones packed.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..dataset import Metadata, ThreadInfo, check_output, open_dataset, write_atomically
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


def content_sha256(table: pa.Table) -> str:
    """SHA-256 of the canonical column data: for each column in table order, its name, type and
    values as little-endian fixed-width integers, in row order.  Metadata is not included."""
    digest = hashlib.sha256()
    for name in table.column_names:
        column = table.column(name)
        digest.update(f"{name}:{column.type}\n".encode())
        values = column.to_numpy(zero_copy_only=False)
        digest.update(np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).tobytes())
    return digest.hexdigest()


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
        Replace hostnames, serial numbers, MAC/IP addresses and user names in the
        metadata by unsalted hashes (``anon-<12 hex>``) and record which fields changed.
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
    metadata = metadata.with_changes(pack={"sha256": checksum, "anonymized": changed, "rows": table.num_rows})
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


def anonymize_metadata(metadata: Metadata) -> tuple[Metadata, list[str]]:
    """Hash identifying values in the metadata; returns the new metadata and the changed JSON paths.

    Hostnames (``hostname``/``nodename`` keys, and that name wherever else it
    appears), user names (user keys, ``/home/<name>`` paths), serial numbers and
    machine ids (keys containing ``serial``, ``uuid``, ``machine_id`` ...), MAC
    addresses and IPv4/IPv6 addresses anywhere in a string are replaced by
    ``anon-`` plus the first 12 hex digits of their SHA-256, so the same value
    maps to the same token across files.
    """
    changed: list[str] = []
    fields = {name: getattr(metadata, name) for name in ("settings", "environment", "counters", "clock", "status",
                                                          "source", "ground_truth", "tool")}
    secrets: set[str] = set()
    for value in fields.values():
        _collect(value, secrets)
    for info in metadata.threads:
        _collect(dict(info.extra), secrets)
    for host in [s for s in secrets if "." in s]:  # alice-laptop.lan also appears as alice-laptop
        short = host.split(".", 1)[0]
        if len(short) >= SUBSTRING_MIN and not short.isdigit():
            secrets.add(short)
    replace = _replacer(secrets)
    new = {name: _walk(value, name, replace, changed) for name, value in fields.items()}
    threads = tuple(
        ThreadInfo(thread=t.thread, cpu=t.cpu, interval_ns=t.interval_ns, samples=t.samples, drops=t.drops,
                   overruns=t.overruns, tid=t.tid,
                   extra=_walk(dict(t.extra), f"threads[{t.thread}]", replace, changed))
        for t in metadata.threads
    )
    return metadata.with_changes(threads=threads, **new), changed


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


def _walk(value: Any, path: str, replace: Callable[[str], str], changed: list[str]) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            new_key = replace(key) if isinstance(key, str) else key  # a key can hold a name too
            if new_key != key:
                changed.append(f"{path}.{new_key} (key)")
            out[new_key] = _walk(item, f"{path}.{new_key}", replace, changed)
        return out
    if isinstance(value, list | tuple):
        return [_walk(item, f"{path}[{i}]", replace, changed) for i, item in enumerate(value)]
    if isinstance(value, str):
        new = replace(value)
        if new != value:
            changed.append(path)
        return new
    return value
