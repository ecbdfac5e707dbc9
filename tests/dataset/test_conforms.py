"""The gate's own check of the metadata schema (contract.conforms) agrees with jsonschema, the reference.

Valid metadata is accepted without importing jsonschema (a tenth of a second of every command); anything else
goes to jsonschema, which names the error.  conforms must therefore never accept what jsonschema refuses: checked
here on values generated from the schema itself (at and across every bound) and on arbitrary JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitterscope.dataset import contract
from jitterscope.io import SimulationSpec, simulate

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=8)


def _walk(schema: Any):
    """Every (sub)schema of ``schema``."""
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key in ("properties",):
                for sub in value.values():
                    yield from _walk(sub)
            elif key == "prefixItems":
                for sub in value:
                    yield from _walk(sub)
            elif key in ("items", "additionalProperties"):
                yield from _walk(value)


def _bounds(schema: dict) -> list[Any]:
    values = []
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            values += [schema[key] - 1, schema[key], schema[key] + 1, float(schema[key]), schema[key] + 0.5,
                       schema[key] - 0.5]
    return values


def from_schema(schema: Any, depth: int = 0) -> st.SearchStrategy:
    """Values near what ``schema`` accepts: of its types, at its bounds, with its keys; sometimes anything."""
    if not isinstance(schema, dict) or depth > 6:
        return JSON
    options: list[st.SearchStrategy] = [JSON]
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "enum" in schema:
        options.append(st.sampled_from([*schema["enum"], True, 1, "other"]))
    if {"integer", "number"} & set(types):
        options.append(st.sampled_from(_bounds(schema) or [0]) | st.integers() | st.floats(allow_nan=True))
        options.append(st.sampled_from([True, False, 1.0, 2.5]))
    if "string" in types:
        limit = schema.get("maxLength", 8)
        options.append(st.sampled_from(["", "x" * limit, "x" * (limit + 1)]) if limit < 100 else st.text(max_size=4))
    if "required" in schema:
        options.append(st.just({key: 0 for key in schema["required"][1:]}))
    if "null" in types:
        options.append(st.none())
    if "boolean" in types:
        options.append(st.booleans())
    if "array" in types:
        prefix = [from_schema(s, depth + 1) for s in schema.get("prefixItems", ())]
        item = from_schema(schema.get("items", {}), depth + 1)
        low, high = schema.get("minItems", 0), min(schema.get("maxItems", 4), 6)
        options.append(st.tuples(*prefix).flatmap(lambda head: st.lists(item, min_size=max(low - len(head) - 1, 0),
                                                                        max_size=max(high - len(head) + 1, 0)).map(
            lambda tail: [*head, *tail])) if prefix else st.integers(max(low - 1, 0), high + 1).flatmap(
            lambda n: st.lists(item, min_size=n, max_size=n)))
    if "object" in types:
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        options.append(st.fixed_dictionaries({}, optional={k: from_schema(v, depth + 1) for k, v in properties.items()})
                       .flatmap(lambda known: st.dictionaries(st.sampled_from(["zz", "yy"]), from_schema(
                           extra if isinstance(extra, dict) else {}, depth + 1), max_size=1).map(
                           lambda more: {**known, **more})))
    return st.one_of(options)


def test_conforms_knows_every_keyword_of_the_schema():
    # a keyword it does not know sends every dataset to jsonschema (correct, but the import comes back)
    used = {key for sub in _walk(contract.METADATA_SCHEMA) for key in sub}
    assert used <= contract.KEYWORDS | contract.ANNOTATIONS, sorted(used - contract.KEYWORDS - contract.ANNOTATIONS)
    assert not contract.conforms({}, {"pattern": "x"})  # and an unknown keyword is no pass


SUBSCHEMAS = list({json.dumps(sub, sort_keys=True): sub for sub in _walk(contract.METADATA_SCHEMA)}.values())
KEYWORD_SCHEMAS = [  # every keyword conforms knows, with bounds small enough to generate values on both sides
    {"type": "integer", "minimum": 1, "maximum": 3}, {"type": ["number", "null"], "exclusiveMinimum": 0},
    {"type": "number", "exclusiveMaximum": 2}, {"type": ["string", "null"], "maxLength": 2},
    {"type": "array", "minItems": 2, "maxItems": 3}, {"type": "array", "items": {"type": "integer"}},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": {"type": "null"}},
    {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "minimum": 0}},
     "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "string", "maxLength": 1}},
    {"enum": ["a", "b"]}, {"type": "boolean"}, {"type": "null"},
]


@pytest.mark.parametrize("schema", KEYWORD_SCHEMAS, ids=lambda s: "-".join(k for k in s if k != "type") or s["type"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_conforms_agrees_with_jsonschema_on_each_keyword(schema, data):
    instance = data.draw(from_schema(schema), label="instance")
    reference = contract._import_jsonschema().Draft202012Validator(schema).is_valid(instance)
    assert contract.conforms(instance, schema) == reference


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_conforms_agrees_with_jsonschema(data):
    # each part of the schema on its own: a value broken in one place is what tells a missing check apart
    index = data.draw(st.integers(0, len(SUBSCHEMAS) - 1), label="subschema")
    schema = SUBSCHEMAS[index]
    instance = data.draw(from_schema(schema), label="instance")
    reference = contract._import_jsonschema().Draft202012Validator(schema).is_valid(instance)
    assert contract.conforms(instance, schema) == reference


def test_a_simulated_dataset_conforms():
    _, metadata = simulate(SimulationSpec(threads=2, samples=100), 1)
    decoded = {k.decode()[len("jitterscope."):]: json.loads(v) for k, v in metadata.to_kv().items()
               if k.startswith(b"jitterscope.")}
    assert contract.conforms(decoded, contract.METADATA_SCHEMA)
    decoded["threads"][0]["interval_ns"] = -5
    assert not contract.conforms(decoded, contract.METADATA_SCHEMA)
    with pytest.raises(contract.SchemaError, match=r"threads\[0\]\.interval_ns: -5 is out of range"):
        contract.check_metadata(decoded, "x")


def test_opening_a_valid_dataset_does_not_import_jsonschema(tmp_path: Path):
    from jitterscope.io import write_simulation

    path = tmp_path / "sim.parquet"
    write_simulation(SimulationSpec(threads=1, samples=200), path, seed=1)
    code = ("import sys; from jitterscope.dataset import open_dataset; open_dataset(sys.argv[1]); "
            "print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
