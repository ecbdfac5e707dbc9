"""``pack --anonymize`` is an allowlist (issue 26): identifiers planted in every string of the contract are gone
from the packed bytes, and a real capture of this machine keeps no token of its /proc/cmdline, no hostname, no
pid or tid and no absolute path.

Before the fix the command line was kept whole (this VM's holds addresses and ports), and paths in
``kernel_config_error`` and the counter errors, and the thread ids, went out as they were.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import ThreadInfo, open_dataset, write_dataset
from jitterscope.dataset.contract import METADATA_SCHEMA
from jitterscope.io import SimulationSpec, capture_binary, pack_dataset, simulate
from jitterscope.io.pack import CMDLINE_KEEP, CMDLINE_WORDS

PLANTED = {"host": "alice-laptop.example.org", "user": "alice", "mac": "00:1a:2b:3c:4d:5e",
           "ip": "192.168.77.23", "path": "/srv/secret-project/run7", "serial": "SN-0042-XYZ", "tid": "31337",
           "pid": "pid 4242"}
CARRIER = ("alice on alice-laptop.example.org ip=192.168.77.23 ether 00:1a:2b:3c:4d:5e in /srv/secret-project/run7 "
           "serial SN-0042-XYZ tid 31337 pid 4242 user=alice")


def _string_places(schema: dict, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every place of the contract (METADATA_SCHEMA) whose type allows a string."""
    places = []
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    if "string" in types and path:
        places.append(path)
    for name, sub in (schema.get("properties") or {}).items():
        places += _string_places(sub, (*path, name))
    if isinstance(schema.get("additionalProperties"), dict):
        places += _string_places(schema["additionalProperties"], (*path, "0"))
    if isinstance(schema.get("items"), dict):
        places += _string_places(schema["items"], (*path, "[]"))
    return places


def _set(node: dict | list, place: tuple[str, ...], value: str) -> None:
    """Put ``value`` at ``place`` (``[]``: every item of a list, a new one if it is empty)."""
    key, rest = place[0], place[1:]
    if key == "[]":
        assert isinstance(node, list)
        if not rest:
            node.append(value)
            return
        if not any(isinstance(item, dict) for item in node):
            node.append({})
        for item in node:
            if isinstance(item, dict):
                _set(item, rest, value)
        return
    assert isinstance(node, dict)
    if not rest:
        node[key] = value
        return
    want = list if rest[0] == "[]" else dict
    if not isinstance(node.get(key), want):
        node[key] = want()
    _set(node[key], rest, value)


def _texts(path: Path) -> bytes:
    """The packed file's bytes plus its metadata decoded (the ARROW:schema copy is base64)."""
    data = path.read_bytes()
    kv = pq.ParquetFile(path).metadata.metadata or {}
    decoded = b"".join(base64.b64decode(v) for k, v in kv.items() if k == b"ARROW:schema")
    return data + b"\n" + decoded + b"\n" + b"\n".join(kv.values())


def test_planted_identifiers_in_every_string_of_the_contract_are_gone(tmp_path) -> None:
    table, meta = simulate(SimulationSpec(threads=2, samples=300), seed=5)
    document = {key: json.loads(value) for key, value in
                ((k.decode().removeprefix("jitterscope."), v) for k, v in meta.to_kv().items())}
    places = [p for p in _string_places(METADATA_SCHEMA) if p[0] not in ("kind", "threads", "pack", "tool")]
    assert len(places) > 30  # every string field the contract knows
    for place in places:  # each string its own (one shared value would be hashed whole as the hostname)
        _set(document, place, f"{'.'.join(place)}: {CARRIER}")
    for key in ("environment", "settings", "source", "status", "counters"):  # and places it does not know
        document.setdefault(key, {})["unknown_field"] = f"{key}.unknown_field: {CARRIER}"
    document["environment"]["hostname"] = PLANTED["host"]
    threads = tuple(ThreadInfo(thread=t.thread, cpu=t.cpu, interval_ns=t.interval_ns, samples=t.samples,
                               drops=t.drops, overruns=t.overruns, tid=31337 + t.thread,
                               extra={"note": f"note: {CARRIER}"})
                    for t in meta.threads)
    planted = meta.with_changes(threads=threads, **{k: document[k] for k in (
        "environment", "settings", "source", "status", "counters", "clock", "ground_truth") if k in document})
    source = write_dataset(table, planted, tmp_path / "planted.parquet")
    assert all(v.encode() in source.read_bytes() for v in PLANTED.values())  # the plant took
    out = tmp_path / "shared.parquet"
    pack_dataset(source, out, anonymize=True)
    shared = _texts(out)
    for what, value in PLANTED.items():
        for form in {value, value.upper(), value.replace(":", "-")}:
            assert form.encode() not in shared, (what, form)
    assert not re.search(rb"\b3133[78]\b", shared)  # the tids, as numbers too
    assert open_dataset(out).metadata.environment["hostname"].startswith("anon-")


CMDLINE_TOKEN = re.compile(r"[^\s=,:]+")
"""A token of the kernel command line: the words and everything between ``=``, ``,`` and ``:`` (an address and its
port are two tokens, ``0.0.0.0:2024`` also one word)."""


def cmdline_tokens(cmdline: str) -> set[str]:
    """Every token of ``cmdline`` that must not be found in a packed file, and why the others may be.

    The rule: every whitespace-separated word and every piece between ``=``, ``,`` and ``:``, 3 characters or
    longer, init's arguments after ``--`` included. Exempt are only the words the allowlist keeps on purpose: the
    kernel parameter names of ``CMDLINE_KEEP`` and the keywords of ``CMDLINE_WORDS`` (``mitigations``, ``auto``,
    ``quiet``, ``nowatchdog``): the kernel's own vocabulary, the same on every machine, listed in the README, so
    finding one says that a setting was on, not whose machine it was. Shorter tokens (``k``, ``1``, ``11``) would
    match everywhere in any file (a 2-byte string is in every compressed column). No other exemption: a number
    such as a port must be absent too (searched as a whole number: not inside a longer one, such as a timestamp).
    """
    def exempt(token: str) -> bool:
        return len(token) < 3 or token.lower() in CMDLINE_KEEP | CMDLINE_WORDS

    # a word is exempt when all its pieces are ('mitigations=auto,nosmt' is kept whole, on purpose)
    words = {w for w in cmdline.split() if not all(exempt(p) for p in CMDLINE_TOKEN.findall(w))}
    return {t for t in words | set(CMDLINE_TOKEN.findall(cmdline)) if not exempt(t)}


def _found(token: str, haystack: bytes) -> bool:
    if re.fullmatch(r"[\d.]+", token):  # a number: as a whole number only
        return re.search(rb"(?<![\d.])" + re.escape(token.encode()) + rb"(?![\d.])", haystack) is not None
    return token.encode() in haystack or token.lower().encode() in haystack.lower()


def test_the_cmdline_rule_finds_what_it_should() -> None:
    line = "mitigations=auto,nosmt console=ttyS0 quiet ip=10.1.2.3 rdinit=/init -- --addr 0.0.0.0:2024 --auth"
    assert cmdline_tokens(line) == {"console=ttyS0", "ttyS0", "ip=10.1.2.3", "10.1.2.3", "rdinit=/init",
                                    "rdinit", "/init", "--addr", "0.0.0.0:2024", "0.0.0.0", "2024", "--auth"}
    assert _found("2024", b'{"port": 2024}') and not _found("2024", b'"start_ns": 1764620243000')
    assert _found("ttyS0", b"console=TTYS0")


@pytest.mark.skipif(os.geteuid() != 0, reason="a real capture needs root for its environment snapshot")
def test_a_real_capture_packed_anonymized_keeps_nothing_of_this_machine(tmp_path) -> None:
    """Issue 26, must show 3: no token of /proc/cmdline (the rule: :func:`cmdline_tokens`), no hostname, no pid or
    tid of the capture, no absolute path, searched in the packed file's bytes (its column data, its metadata, and
    the base64 copy of the metadata decoded)."""
    capture = tmp_path / "capture-of-this-machine"
    process = subprocess.Popen([str(capture_binary()), "-D", "0.5", "-f", "1000", "--policy", "other", "-q",
                                "--flush-interval", "0.2", "-o", str(capture)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    original = open_dataset(capture).metadata
    tids = [t.tid for t in original.threads if t.tid]
    assert tids
    assert original.environment.get("cmdline") == Path("/proc/cmdline").read_text().strip()  # what is at stake
    out = tmp_path / "shared.parquet"
    pack_dataset(capture, out, anonymize=True)
    shared = _texts(out)
    cmdline = Path("/proc/cmdline").read_text()
    tokens = cmdline_tokens(cmdline)
    assert len(tokens) > 10
    assert sorted(t for t in tokens if _found(t, shared)) == []
    kv = pq.ParquetFile(out).metadata.metadata or {}
    metadata_text = b"\n".join(v for k, v in kv.items() if k.startswith(b"jitterscope.")).decode()
    hostname = socket.gethostname()
    # a short hostname ('vm') is in many words ('kvm-clock'): as a word in the metadata, in all bytes when long
    assert not re.search(rf"(?<![\w-]){re.escape(hostname)}(?![\w-])", metadata_text, re.IGNORECASE), hostname
    assert len(hostname) < 4 or not _found(hostname, shared), hostname
    for number in [*tids, process.pid]:  # the capture's threads and the capture process, as whole numbers
        assert not _found(str(number), shared), number
    assert str(capture).encode() not in shared and str(tmp_path).encode() not in shared
    assert not re.search(r"(?<![\w.~-])/[A-Za-z_]", metadata_text), re.findall(r"(?<![\w.~-])/[^\s\"]*",
                                                                                 metadata_text)
    assert open_dataset(out).num_rows == open_dataset(capture).num_rows
