"""The gate: a dataset's metadata checked against the contract once, when it is opened, for every command alike.

A dataset is untrusted input (someone else's file, maybe damaged, maybe hostile), so nothing is decoded or
allocated from what its metadata claims before the claim is checked:

1. sizes, on the raw bytes, before any JSON is parsed (:data:`MAX_VALUE_BYTES`, :data:`MAX_THREADS_BYTES`);
2. types and ranges, with the JSON Schema :data:`METADATA_SCHEMA` (docs/dataset-format.md, "Metadata", in
   machine-readable form; validated with ``jsonschema``, the reference implementation, whenever
   :func:`conforms` (the schema's keywords only, no import) does not accept the metadata outright);
3. consistency with the data actually present (:func:`check_against_data`): row counts from the row
   groups, not the footer's total alone; per-thread samples against those rows; every part of the same run.

Each refusal is one line naming the key (``metadata jitterscope.threads[3].interval_ns: ...``) and what to do.
Unknown keys and unknown fields stay allowed: readers ignore them (the contract's forward compatibility).
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import SchemaError

if TYPE_CHECKING:
    import jsonschema

FORMAT_MODULES = ("rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "fqdn", "idna",
                  "webcolors", "jsonpointer", "uri_template", "isoduration")
"""The optional modules jsonschema imports only to check ``"format"`` keywords (the gate checks no formats)."""


@functools.cache
def _import_jsonschema() -> Any:
    """``import jsonschema`` without its format checkers' modules.

    jsonschema imports, when installed (as jupyter's jsonschema[format-nongpl] does), a module per ``"format"``
    it can check: ``rfc3987_syntax`` builds a parser grammar at import (0.6 s), ``isoduration`` brings ``arrow``
    (0.3 s of the 0.5 s jsonschema took), on every command that opens a dataset.  The gate checks no formats, so
    those imports are made to fail fast for the moment jsonschema loads; the modules stay importable for anyone
    else afterwards.
    """
    blocked = [name for name in FORMAT_MODULES if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # None makes that import fail fast
    try:
        import jsonschema
    finally:
        for name in blocked:
            del sys.modules[name]
    return jsonschema


MAX_THREADS = 65_536
"""Threads one dataset may list: 8× Linux's largest NR_CPUS (8192) leaves room for several threads per CPU."""
MAX_VALUE_BYTES = 32 << 20
"""Largest JSON value of one metadata key, checked before it is parsed (a day of turbostat at 5 s on 16 CPUs, the
largest value a producer writes, is ~25 MB)."""
MAX_FOOTER_BYTES = 96 << 20
"""Largest Parquet footer opened: the metadata (up to :data:`MAX_VALUE_BYTES` and its base64 copy in
``ARROW:schema``) plus a day of row groups. Checked from the file's last 8 bytes, before pyarrow decodes anything:
decoding a footer costs several times its size in memory."""
MAX_THREADS_BYTES = 16 << 20
"""Largest ``jitterscope.threads`` value: :data:`MAX_THREADS` entries of a capture are ~12 MB."""
INT64_MAX = 2**63 - 1
MAX_INTERVAL_NS = 3_600 * 10**9
"""One wake-up an hour: longer intervals are no timer-latency measurement (and keep period arithmetic exact)."""
MAX_TEXT = 1 << 20
"""Longest single string the contract accepts (1 MiB; a kernel command line is at most a few KiB)."""

_INT = {"type": "integer", "minimum": -INT64_MAX - 1, "maximum": INT64_MAX}
_COUNT = {"type": "integer", "minimum": 0, "maximum": INT64_MAX}
_TEXT = {"type": "string", "maxLength": MAX_TEXT}
_TEXT_OR_NULL = {"type": ["string", "null"], "maxLength": MAX_TEXT}
_INT_OR_NULL = {"type": ["integer", "null"], "minimum": -INT64_MAX - 1, "maximum": INT64_MAX}
_TEXTS = {"type": "array", "items": _TEXT}
_SHARE_OR_NULL = {"type": ["number", "null"], "minimum": 0, "maximum": 1}

THREAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["thread", "interval_ns"],
    "properties": {
        "thread": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "cpu": {"type": "integer", "minimum": -1, "maximum": 2**31 - 1},
        "tid": {"type": ["integer", "null"], "minimum": 0, "maximum": 2**31 - 1},
        # 0 is allowed for histogram imports whose source does not say; sample datasets need > 0 (invariants)
        "interval_ns": {"type": "integer", "minimum": 0, "maximum": MAX_INTERVAL_NS},
        "samples": _COUNT, "drops": _COUNT, "overruns": _COUNT, "wakeups": _COUNT,
        "drops_after_last": _COUNT, "counter_read_errors": _COUNT, "overflows": _COUNT,
        "overflow_above_ns": {"type": "number", "minimum": 0},
        "min_ns": {"type": ["number", "null"]}, "avg_ns": {"type": ["number", "null"]},
        "max_ns": {"type": ["number", "null"]},
    },
}

_ENVIRONMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{key: _TEXT_OR_NULL for key in (
            "hostname", "kernel_release", "kernel_version", "cmdline", "preempt", "no_hz", "kernel_config_source",
            "clocksource", "available_clocksources", "cpu_model", "cpu_vendor", "microcode", "cpus_online",
            "isolated_cpus", "nohz_full_cpus", "intel_pstate_status", "machine", "sysname", "hz_source",
        )},
        "preempt_rt": {"type": ["boolean", "null"]},
        "hz": _INT_OR_NULL, "rt_runtime_us": _INT_OR_NULL, "rt_period_us": _INT_OR_NULL,
        "smt_active": _INT_OR_NULL,
        "cpu_siblings": {"type": "object", "additionalProperties": _TEXT},
        "cpufreq": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "driver": _TEXT_OR_NULL, "governor": _TEXT_OR_NULL,
                    "cur_khz": _INT_OR_NULL, "min_khz": _INT_OR_NULL, "max_khz": _INT_OR_NULL,
                },
            },
        },
        "cpuidle": {
            "type": "object",
            "properties": {
                "driver": _TEXT_OR_NULL, "governor": _TEXT_OR_NULL,
                "states": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": _TEXT_OR_NULL, "desc": _TEXT_OR_NULL,
                            "exit_latency_us": {"type": ["number", "null"]},
                            "disabled": {"type": ["boolean", "null"]},
                        },
                    },
                },
            },
        },
    },
}

METADATA_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "jitterscope dataset metadata (docs/dataset-format.md), one property per jitterscope.* key",
    "type": "object",
    "required": ["schema_version", "kind", "tool", "threads"],
    "properties": {
        "schema_version": {"type": "integer", "minimum": 1},
        "kind": {"enum": ["capture", "import", "simulation", "histogram", "poll"]},
        "tool": {"type": "object", "properties": {"name": _TEXT, "version": _TEXT}},
        "threads": {"type": "array", "maxItems": MAX_THREADS, "items": THREAD_SCHEMA},
        "settings": {
            "type": ["object", "null"],
            "properties": {
                "asked": {"type": "object"},
                "granted": {"type": "object", "properties": {"degraded": _TEXTS}},
            },
        },
        "environment": {**_ENVIRONMENT, "type": ["object", "null"]},
        "counters": {
            "type": ["object", "null"],
            "properties": {
                "source": _TEXT_OR_NULL, "columns": _TEXTS,
                "missing": {"type": "object", "additionalProperties": _TEXT_OR_NULL},
            },
        },
        "clock": {
            "type": ["object", "null"],
            "properties": {
                "realtime_ns": _INT, "monotonic_ns": _INT,
                "tsc_hz": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1e13},
                "tsc_hz_source": _TEXT_OR_NULL,
            },
        },
        "status": {
            "type": ["object", "null"],
            "properties": {
                "state": _TEXT, "reason": _TEXT_OR_NULL, "flushes": _COUNT,
                "cpu_load": {
                    "type": ["object", "null"],
                    "properties": {
                        "since": _TEXT, "seconds": {"type": "number", "minimum": 0},
                        "cpus": {"type": "object", "additionalProperties": {
                            "type": "object",
                            "properties": {"ticks": _COUNT, "busy": _SHARE_OR_NULL, "steal": _SHARE_OR_NULL},
                        }},
                    },
                },
            },
        },
        "source": {
            "type": ["object", "null"],
            "properties": {
                "format": _TEXT_OR_NULL, "files": _TEXTS, "notes": _TEXTS,
                "reconstructed": {"type": "object", "additionalProperties": _TEXT},
                "absolute_times": {"type": "boolean"},
                "assumptions": {"type": "object", "additionalProperties": _TEXT},
            },
        },
        "ground_truth": {"type": ["object", "null"]},
        "poll": {
            "type": ["object", "null"],
            "required": ["threshold_ns", "clock", "histogram_edges_ns", "window_ns"],
            "properties": {
                "threshold_ns": {"type": "integer", "minimum": 1, "maximum": INT64_MAX},
                "clock": {"enum": ["tsc", "vdso"]},
                "clock_read_ns": {"type": ["number", "null"], "minimum": 0},
                "iteration_ns": {"type": ["object", "null"], "properties": {"min": {"type": "number", "minimum": 0},
                                                                  "median": {"type": "number", "minimum": 0}}},
                "histogram_edges_ns": {"type": "array", "minItems": 2, "maxItems": 4096, "items": _COUNT},
                "window_ns": {"type": "integer", "minimum": 1, "maximum": INT64_MAX},
                "rt_throttling": {"type": ["object", "null"],
                                  "properties": {"runtime_us": _INT, "period_us": _INT}},
                "rows_dropped": _COUNT,
                "tsc_hz": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e13},
                "tsc_hz_source": _TEXT,
            },
        },
        "pack": {
            "type": ["object", "null"],
            "properties": {
                "sha256": _TEXT, "anonymized": _TEXTS, "rows": _COUNT,
                # a packed poll dataset's per-second table (dataset.poll.pack_poll_windows): one file, no _poll/
                "poll_windows": {"type": "object", "required": ["format", "rows", "sha256", "data"],
                                 "properties": {"format": _TEXT, "rows": _COUNT, "sha256": _TEXT,
                                                "data": {"type": "string", "maxLength": MAX_VALUE_BYTES}}},
            },
        },
        "timeline": {"type": ["object", "null"]},
        "steal": {
            "type": ["object", "null"],
            "properties": {
                "source": _TEXT, "error": _TEXT, "tick_ns": {**_COUNT, "minimum": 1},
                "period_ns": {**_COUNT, "minimum": 1}, "cpus": {"type": "array", "items": _INT},
                "samples": _COUNT, "failed": _COUNT, "first_ns": _INT, "last_ns": _INT, "max_gap_ns": _COUNT,
                "total_ns": {"type": "object", "additionalProperties": _COUNT},
                "rises": {"type": "array", "items": {"type": "array", "minItems": 4, "maxItems": 4,
                                                     "prefixItems": [_INT, _INT, _INT, _COUNT]}},
                "left_out": _COUNT,
            },
        },
        "experiment": {
            "type": ["object", "null"],
            "properties": {"sweep": _TEXT, "run": _TEXT, "replicate": _COUNT, "position": _COUNT,
                           "condition": _COUNT, "levels": {"type": "object"}, "warmup_ns": _COUNT},
        },
    },
}



@functools.cache
def _validator() -> Any:
    """jsonschema's validator of :data:`METADATA_SCHEMA`, made when metadata first fails :func:`conforms`."""
    return _import_jsonschema().Draft202012Validator(METADATA_SCHEMA)


ANNOTATIONS = frozenset({"$schema", "title", "description", "$comment"})
"""Keywords that constrain nothing."""
KEYWORDS = frozenset({"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "maxLength", "minItems",
                      "maxItems", "required", "enum", "properties", "additionalProperties", "items", "prefixItems"})
"""The keywords :func:`conforms` evaluates: those :data:`METADATA_SCHEMA` uses (a test walks it)."""


def conforms(instance: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``instance`` is valid against ``schema`` (JSON Schema 2020-12, :data:`KEYWORDS` only), in plain Python.

    jsonschema's import is a tenth of a second of every command that opens a dataset (``summary`` of 10^7
    wake-ups is ~1 s in all), and almost every dataset is valid.  So valid metadata is accepted here; anything
    else (an invalid value, a keyword not in :data:`KEYWORDS`) goes to jsonschema, which names the error.  False
    only sends a dataset to the reference; a property test checks that True never accepts what it refuses.
    """
    for keyword, rule in schema.items():
        if keyword in ANNOTATIONS:
            continue
        if keyword not in KEYWORDS or not _keyword_holds(keyword, rule, instance, schema):
            return False
    return True


def _keyword_holds(keyword: str, rule: Any, instance: Any, schema: Mapping[str, Any]) -> bool:
    if keyword == "type":
        return any(_is_type(instance, name) for name in ([rule] if isinstance(rule, str) else rule))
    if keyword == "enum":
        return any(_equal(option, instance) for option in rule)
    if isinstance(instance, bool):  # of the other keywords, none applies to a boolean (it is no number here)
        return True
    if isinstance(instance, int | float):
        return not ((keyword == "minimum" and instance < rule) or (keyword == "maximum" and instance > rule)
                    or (keyword == "exclusiveMinimum" and instance <= rule)
                    or (keyword == "exclusiveMaximum" and instance >= rule))
    if isinstance(instance, str):
        return keyword != "maxLength" or len(instance) <= rule
    if isinstance(instance, list):
        if keyword == "minItems":
            return len(instance) >= rule
        if keyword == "maxItems":
            return len(instance) <= rule
        if keyword == "prefixItems":
            return all(conforms(item, sub) for item, sub in zip(instance, rule, strict=False))
        if keyword == "items":
            return all(conforms(item, rule) for item in instance[len(schema.get("prefixItems", ())):])
        return True
    if isinstance(instance, dict):
        if keyword == "required":
            return all(key in instance for key in rule)
        if keyword == "properties":
            return all(conforms(instance[key], sub) for key, sub in rule.items() if key in instance)
        if keyword == "additionalProperties":
            known = schema.get("properties", {})
            extra = [value for key, value in instance.items() if key not in known]
            return bool(rule) or not extra if isinstance(rule, bool) else all(conforms(v, rule) for v in extra)
    return True


def _is_type(instance: Any, name: str) -> bool:
    """JSON Schema's types of decoded JSON: booleans are no numbers, 1.0 is an integer."""
    if name == "null":
        return instance is None
    if name == "boolean":
        return isinstance(instance, bool)
    if isinstance(instance, bool):
        return False
    if name == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    return isinstance(instance, {"number": int | float, "string": str, "array": list, "object": dict}.get(name, ()))


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's equality for enum: a boolean equals only a boolean (True is not 1)."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, str) or isinstance(two, str):
        return isinstance(one, str) and isinstance(two, str) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    if isinstance(one, list | dict) or isinstance(two, list | dict):
        return False
    return one == two


def check_footer_size(path: os.PathLike[str] | str) -> None:
    """Refuse a Parquet file whose footer is larger than :data:`MAX_FOOTER_BYTES`, reading only its last 8 bytes."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size < 12:
            return  # pyarrow says what is wrong with it
        handle.seek(size - 8)
        tail = handle.read(8)
    if tail[4:] != b"PAR1":
        return
    footer = int.from_bytes(tail[:4], "little")
    if footer > MAX_FOOTER_BYTES:
        raise SchemaError(f"{path}: its Parquet footer is {footer / (1 << 20):.0f} MiB, more than the "
                          f"{MAX_FOOTER_BYTES >> 20} MiB a dataset's metadata can need; the file is damaged or was "
                          "not written by jitterscope")


def check_raw_sizes(kv: Mapping[bytes, bytes], prefix: bytes, where: str) -> None:
    """Refuse a metadata value too large to be what the contract describes, before parsing it."""
    for key, value in kv.items():
        if not key.startswith(prefix):
            continue
        limit = MAX_THREADS_BYTES if key == prefix + b"threads" else MAX_VALUE_BYTES
        if len(value) > limit:
            name = key.decode("utf-8", "replace")
            raise SchemaError(
                f"{where}: metadata {name} is {len(value) / (1 << 20):.1f} MiB, more than the "
                f"{limit >> 20} MiB the format allows; the file is damaged or was not written by jitterscope"
            )


def check_metadata(decoded: Mapping[str, Any], where: str) -> None:
    """Check decoded ``jitterscope.*`` values against :data:`METADATA_SCHEMA`; one line naming the first bad key.

    Raises
    ------
    SchemaError
        A value of the wrong type, out of range, or too long.
    """
    threads = decoded.get("threads")
    if isinstance(threads, list) and len(threads) > MAX_THREADS:  # before the per-item checks: one line, fast
        raise SchemaError(f"{where}: metadata jitterscope.threads lists {len(threads)} threads, more than the "
                          f"{MAX_THREADS} the format allows; the file is damaged or was not written by jitterscope")
    instance = dict(decoded)
    error = None if conforms(instance, METADATA_SCHEMA) else (
        _import_jsonschema().exceptions.best_match(_validator().iter_errors(instance)))
    if error is None:
        _check_intervals(decoded, where)
        return
    raise SchemaError(f"{where}: metadata {key_path(error.absolute_path)}: {_reason(error)}; "
                      "the file is damaged or was not written by jitterscope ('jitterscope validate' says more)")


def _check_intervals(decoded: Mapping[str, Any], where: str) -> None:
    """A dataset of wake-up rows needs every thread's interval > 0: periods, rates and frequencies divide by it
    (0 is allowed by the schema for histogram imports whose source does not say)."""
    if decoded.get("kind") == "poll":  # a busy loop has no interval: 0 by the contract; its own key is required
        if not isinstance(decoded.get("poll"), Mapping):
            raise SchemaError(f"{where}: metadata jitterscope.poll is missing, but a poll dataset needs it (threshold, "
                              "clock, histogram edges); the file is damaged or was not written by jitterscope")
        edges = decoded["poll"]["histogram_edges_ns"]
        if any(b <= a for a, b in itertools.pairwise(edges)):
            raise SchemaError(f"{where}: metadata jitterscope.poll.histogram_edges_ns is not strictly increasing; "
                              "the file is damaged or was not written by jitterscope")
        return
    if decoded.get("kind") == "histogram":
        return
    for index, thread in enumerate(decoded.get("threads") or ()):
        if isinstance(thread, Mapping) and thread.get("interval_ns") == 0:
            raise SchemaError(f"{where}: metadata jitterscope.threads[{index}].interval_ns: 0, but a dataset of "
                              f"{decoded.get('kind')} rows needs an interval > 0; the file is damaged or was not "
                              "written by jitterscope ('jitterscope validate' says more)")


def key_path(path: Sequence[Any]) -> str:
    """``["threads", 3, "interval_ns"]`` as ``jitterscope.threads[3].interval_ns``."""
    parts = list(path)
    if not parts:
        return "jitterscope.*"
    out = f"jitterscope.{parts[0]}"
    for part in parts[1:]:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _reason(error: jsonschema.ValidationError) -> str:
    value = error.instance
    shown = _shown(value)
    validator = error.validator
    if validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"{shown} is a {_json_type(value)}, the contract says {expected}"
    if validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[validator]
        return f"{shown} is out of range (the contract says {sign} {error.validator_value:g})"
    if validator == "maxLength":
        return f"a string of {len(value)} characters, longer than the {error.validator_value} allowed"
    if validator == "maxItems":
        return f"{len(value)} entries, more than the {error.validator_value} allowed"
    if validator == "required":
        return " ".join(error.message.split()).replace("is a required property", "is missing")
    if validator == "enum":
        return f"{shown} is not one of {', '.join(map(str, error.validator_value))}"
    return _shown(error.message, 160)


def _json_type(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value: Any, limit: int = 60) -> str:
    text = ascii(value) if isinstance(value, str) else " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def rows_from_row_groups(file_rows: Sequence[tuple[str, int, int]]) -> int:
    """The dataset's rows from its row groups, each file's footer total checked against them.

    Parameters
    ----------
    file_rows
        Per file: its name, the footer's total, and the sum of its row groups' rows.

    Raises
    ------
    SchemaError
        A footer whose total disagrees with its row groups (a patched or damaged footer).
    """
    for name, footer, groups in file_rows:
        if footer != groups:
            raise SchemaError(f"{name}: the footer says {footer} rows, its row groups hold {groups}; the file is "
                              "damaged ('jitterscope validate' says what is still readable)")
    return sum(groups for _, _, groups in file_rows)


def check_samples(*, kind: str, threads: Sequence[Any], rows: int, where: str) -> None:
    """Refuse per-thread ``samples`` that do not add up to the rows present (a sample dataset's invariant).

    Cheap (no data read), so every command checks it when it opens a dataset: a missing part, a part from
    another run or an empty ``threads[]`` shows here, not deep inside one analysis.

    Raises
    ------
    SchemaError
        ``threads[]`` empty while there are rows, or its samples summing to another count.
    """
    if kind == "histogram":
        return  # rows are bins there; samples count wake-ups
    if rows and not threads:
        raise SchemaError(f"{where}: metadata jitterscope.threads is empty but the data has {rows} rows; the "
                          "dataset breaks its contract ('jitterscope validate' lists every problem)")
    claimed = sum(t.samples for t in threads)
    if claimed != rows:
        raise SchemaError(f"{where}: metadata jitterscope.threads counts {claimed} samples, the files hold {rows} "
                          "rows (a part missing, from another run, or damaged); 'jitterscope validate' lists "
                          "every problem")
