"""Typed access to a dataset's ``jitterscope.*`` key-value metadata.

Every value is stored as JSON (docs/dataset-format.md, "Metadata").  This
module only converts between the Parquet key-value map and :class:`Metadata`;
it does not open files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .. import __version__
from ..errors import SchemaError, UnsupportedVersionError
from .contract import check_metadata, check_raw_sizes
from .jsonvalue import load_json
from .schema import DATASET_KINDS, METADATA_KEYS, METADATA_PREFIX, REQUIRED_METADATA_KEYS, SCHEMA_VERSION


@dataclass(frozen=True)
class ThreadInfo:
    """Per-thread facts from ``jitterscope.threads``."""

    thread: int
    cpu: int
    interval_ns: int
    samples: int = 0
    drops: int = 0
    overruns: int = 0
    tid: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "thread": self.thread, "cpu": self.cpu, "tid": self.tid,
            "interval_ns": self.interval_ns, "samples": self.samples,
            "drops": self.drops, "overruns": self.overruns,
        }
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ThreadInfo:
        known = {"thread", "cpu", "tid", "interval_ns", "samples", "drops", "overruns"}
        if not isinstance(obj, Mapping):
            raise SchemaError(
                f"metadata 'jitterscope.threads' has an entry {obj!r} that is not an object; "
                "re-create the dataset with a current jitterscope"
            )
        try:
            return cls(
                thread=int(obj["thread"]), cpu=int(obj.get("cpu", -1)),
                interval_ns=int(obj["interval_ns"]),
                samples=int(obj.get("samples", 0)), drops=int(obj.get("drops", 0)),
                overruns=int(obj.get("overruns", 0)),
                tid=None if obj.get("tid") is None else int(obj["tid"]),
                extra={k: v for k, v in obj.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError(
                f"metadata 'jitterscope.threads' has a malformed entry {_short(dict(obj))} ({_short(exc)}); "
                "re-create the dataset with a current jitterscope"
            ) from None


@dataclass(frozen=True)
class Metadata:
    """All ``jitterscope.*`` metadata of a dataset, decoded."""

    kind: str
    threads: tuple[ThreadInfo, ...]
    tool: Mapping[str, Any] = field(default_factory=lambda: {"name": "jitterscope", "version": __version__})
    schema_version: int = SCHEMA_VERSION
    settings: Mapping[str, Any] | None = None
    environment: Mapping[str, Any] | None = None
    counters: Mapping[str, Any] | None = None
    clock: Mapping[str, Any] | None = None
    status: Mapping[str, Any] | None = None
    source: Mapping[str, Any] | None = None
    ground_truth: Mapping[str, Any] | None = None
    pack: Mapping[str, Any] | None = None
    timeline: Mapping[str, Any] | None = None
    steal: Mapping[str, Any] | None = None
    experiment: Mapping[str, Any] | None = None
    """The run of a sweep this dataset is (``jitterscope sweep run``): its factor levels, replicate, order."""
    poll: Mapping[str, Any] | None = None
    """Kind ``poll``: threshold, clock, iteration time, histogram edges, RT throttling, rows dropped."""

    def thread(self, index: int) -> ThreadInfo:
        for info in self.threads:
            if info.thread == index:
                return info
        raise KeyError(index)

    @property
    def tsc_hz(self) -> float | None:
        """TSC frequency recorded by the producer, if any."""
        value = (self.clock or {}).get("tsc_hz")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
        return None

    @property
    def asked(self) -> Mapping[str, Any]:
        """Capture settings as asked (``settings.asked``); empty when unknown."""
        value = (self.settings or {}).get("asked")
        return value if isinstance(value, Mapping) else {}

    @property
    def granted(self) -> Mapping[str, Any]:
        """Capture settings as actually applied (``settings.granted``); empty when unknown."""
        value = (self.settings or {}).get("granted")
        return value if isinstance(value, Mapping) else {}

    @property
    def drops(self) -> int:
        """Samples lost over all threads (``threads[].drops``)."""
        return sum(t.drops for t in self.threads)

    @property
    def overruns(self) -> int:
        """Periods skipped over all threads (``threads[].overruns``)."""
        return sum(t.overruns for t in self.threads)

    @property
    def governors(self) -> dict[str, str | None]:
        """cpufreq governor per CPU from the environment (``{}`` when not recorded)."""
        cpufreq = (self.environment or {}).get("cpufreq")
        if not isinstance(cpufreq, Mapping):
            return {}
        return {str(cpu): (v.get("governor") if isinstance(v, Mapping) else None) for cpu, v in cpufreq.items()}

    def with_changes(self, **changes: Any) -> Metadata:
        return replace(self, **changes)

    def to_kv(self) -> dict[bytes, bytes]:
        """Encode as Parquet key-value metadata (keys and values are bytes)."""
        values: dict[str, Any] = {
            "schema_version": self.schema_version,
            "kind": self.kind,
            "tool": dict(self.tool),
            "threads": [t.to_json() for t in self.threads],
        }
        for key in METADATA_KEYS:
            if key not in values and getattr(self, key) is not None:
                values[key] = getattr(self, key)
        return {(METADATA_PREFIX + key).encode(): _dumps(key, value) for key, value in values.items()}

    @classmethod
    def from_kv(cls, kv: Mapping[bytes, bytes] | None, *, where: str) -> Metadata:
        """Decode Parquet key-value metadata; ``where`` names the file in error messages."""
        kv = kv or {}
        check_raw_sizes(kv, METADATA_PREFIX.encode(), where)  # before any JSON is parsed
        decoded = _decode_kv(kv, where)
        missing = [k for k in REQUIRED_METADATA_KEYS if k not in decoded]
        if missing:
            keys = ", ".join(METADATA_PREFIX + k for k in missing)
            raise SchemaError(
                f"{where}: not a jitterscope dataset (metadata {keys} missing); "
                "use 'jitterscope import' for other tools' output"
            )
        version = decoded["schema_version"]
        if not isinstance(version, int) or version < 1:
            raise SchemaError(f"{where}: invalid schema_version {version!r}")
        if version > SCHEMA_VERSION:
            raise UnsupportedVersionError(
                f"{where}: dataset schema version {version} is newer than this jitterscope "
                f"supports ({SCHEMA_VERSION}); upgrade jitterscope to read it"
            )
        check_metadata(decoded, where)  # types, ranges and sizes of every documented key, one line naming it
        kind = decoded["kind"]
        if kind not in DATASET_KINDS:
            raise SchemaError(f"{where}: unknown dataset kind {kind!r} (expected one of {DATASET_KINDS})")
        threads = decoded["threads"]
        if not isinstance(threads, list):
            raise SchemaError(f"{where}: metadata jitterscope.threads is not a list")
        for key in ("tool", *(k for k in METADATA_KEYS if k not in REQUIRED_METADATA_KEYS)):
            if key in decoded and not isinstance(decoded[key], dict) and not (key != "tool" and decoded[key] is None):
                raise SchemaError(
                    f"{where}: metadata {METADATA_PREFIX}{key} is not a JSON object; "
                    "the file is damaged or was not written by jitterscope"
                )
        try:
            infos = tuple(ThreadInfo.from_json(t) for t in threads)
        except SchemaError as exc:
            raise SchemaError(f"{where}: {exc}") from None
        if len({info.thread for info in infos}) != len(infos):
            raise SchemaError(f"{where}: metadata jitterscope.threads lists a thread twice")
        return cls(
            kind=kind,
            threads=infos,
            tool=decoded["tool"],
            schema_version=version,
            **{k: decoded.get(k) for k in METADATA_KEYS if k not in REQUIRED_METADATA_KEYS},
        )


def _short(value: Any, limit: int = 200) -> str:
    text = " ".join(repr(value).split()) if not isinstance(value, BaseException) else " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _decode_kv(kv: Mapping[bytes, bytes], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    prefix = METADATA_PREFIX.encode()
    for raw_key, raw_value in kv.items():
        if not raw_key.startswith(prefix):
            continue
        key = raw_key[len(prefix):].decode("utf-8", "replace")
        # depth checked before parsing (100,000 nested '[' made the parser recurse to a RecursionError), NaN and
        # Infinity refused (JSON has neither; they passed every range check as numbers)
        out[key] = load_json(raw_value, f"{where}: metadata {raw_key.decode('utf-8', 'replace')}")
    return out


def _dumps(key: str, value: Any) -> bytes:
    """One metadata value as JSON: never NaN or Infinity (not JSON; readers refuse them)."""
    try:
        return json.dumps(value, sort_keys=True, default=_json_default, allow_nan=False).encode()
    except ValueError:
        raise SchemaError(f"metadata {METADATA_PREFIX}{key} holds NaN or Infinity, which JSON does not have; "
                          "nothing is written") from None


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays reach us from simulate and importers
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in dataset metadata")
