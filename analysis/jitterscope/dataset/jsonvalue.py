"""Every JSON value read from a file, parsed with bounds: size and nesting depth checked before parsing.

A dataset's metadata, a simulation spec and other tools' JSON are untrusted: a value of 100,000 nested ``[``
makes Python's parser recurse until ``RecursionError``, and ``NaN``/``Infinity`` (which Python accepts and JSON
does not) would flow into arithmetic as numbers.  :func:`load_json` refuses all three in one line naming the
value (``FILE: metadata jitterscope.environment is nested more than the 64 levels ... allowed; ...``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..errors import JitterscopeError, SchemaError

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in any JSON value read from a file (the deepest the format
writes, a cpuidle state inside the environment, is 4)."""
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_BLOCK = 1 << 20


def json_depth(raw: bytes | str, limit: int = MAX_JSON_DEPTH) -> int:
    """The nesting depth of the JSON text ``raw`` (brackets inside strings do not count), without parsing it.

    Stops counting once it passes ``limit`` (then returns some value above it). Linear in the size, memory a few MiB
    whatever the size.
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if data.count(b"[") + data.count(b"{") <= limit:  # the usual case: too few brackets to be too deep
        return min(limit, data.count(b"[") + data.count(b"{"))
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    depth, deepest = 0, 0
    for start in range(0, len(brackets), _BLOCK):
        block = np.frombuffer(brackets, np.uint8, count=min(_BLOCK, len(brackets) - start), offset=start)
        steps = np.where((block == ord("[")) | (block == ord("{")), 1, -1).astype(np.int64)
        levels = np.cumsum(steps) + depth
        deepest = max(deepest, int(levels.max()))
        if deepest > limit:
            return deepest
        depth = int(levels[-1])
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(raw: bytes | str, where: str, *, max_bytes: int | None = None, max_depth: int = MAX_JSON_DEPTH,
              error: type[JitterscopeError] = SchemaError, hint: str = "the file is damaged or was not "
              "written by jitterscope") -> Any:
    """Parse the JSON text ``raw`` after checking its size and depth; refuse NaN and ±Infinity.

    Parameters
    ----------
    raw
        The JSON text.
    where
        What the value is, for the message ("FILE: metadata jitterscope.environment").
    max_bytes
        Largest size accepted (None: no limit here; the caller bounded what it read).
    max_depth
        Deepest nesting accepted.
    error
        The exception raised (a :class:`~jitterscope.errors.JitterscopeError`: one line, no traceback).
    hint
        What to do, appended to the message.

    Raises
    ------
    error
        Too large, too deep, not valid JSON, or holding NaN/Infinity.
    """
    if max_bytes is not None and len(raw) > max_bytes:
        raise error(f"{where} is {len(raw) / (1 << 20):.1f} MiB, more than the {max_bytes / (1 << 20):g} MiB "
                    f"allowed; {hint}")
    if json_depth(raw, max_depth) > max_depth:
        raise error(f"{where} is nested more than the {max_depth} levels of arrays and objects allowed; {hint}")
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) if isinstance(exc, ValueError) \
            else "not UTF-8 text"
        line = f" (line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise error(f"{where} is not valid JSON: {reason}{line}; {hint}") from None
