"""A checker of the Trace Event Format (the JSON ui.perfetto.dev and chrome://tracing open), for the tests.

From the format's definition: a JSON object with a ``traceEvents`` list; every event has ``name``, ``ph`` and
``pid``; every event but metadata (``M``) has a numeric ``ts`` in µs; complete events (``X``) a ``dur`` ≥ 0
and a ``tid``; instants (``i``) a scope ``s`` of ``g``, ``p`` or ``t`` (thread scope: a ``tid``); counters (``C``)
``args`` of numbers.  Beyond the format, what a viewer needs to draw it right: per track (``pid``, ``tid``) the
events in time order and the ``X`` slices properly nested (a slice that starts inside another ends inside it),
counter values in time order per counter; and here one named track per CPU.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

PHASES = {"X", "i", "C", "M"}  # the phases the export writes
METADATA = {"process_name", "thread_name", "thread_sort_index"}
EPS_US = 0.0005  # half a ns: ts and dur are µs rounded to ns


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check(doc: Any) -> list[str]:
    """Every violation of the format (and of the nesting and ordering rules above), as sentences."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not an object with a traceEvents list"]
    errors: list[str] = []
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    counters: dict[tuple[int, str], list[float]] = defaultdict(list)
    names: dict[tuple[int, int], str] = {}
    for k, e in enumerate(doc["traceEvents"]):
        where = f"event {k} ({e.get('name') if isinstance(e, dict) else e!r})"
        if not isinstance(e, dict):
            errors.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if not isinstance(e.get("name"), str) or ph not in PHASES or not isinstance(e.get("pid"), int):
            errors.append(f"{where}: needs a string name, a phase of {sorted(PHASES)} and an integer pid")
            continue
        if ph == "M":
            if e["name"] not in METADATA or not isinstance(e.get("args"), dict) or not isinstance(e.get("tid"), int):
                errors.append(f"{where}: metadata needs one of {sorted(METADATA)}, a tid and args")
            elif e["name"] == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"].get("name")
            continue
        if not _number(e.get("ts")) or e["ts"] < 0:
            errors.append(f"{where}: ts must be a number of µs")
            continue
        if ph == "C":
            if not isinstance(e.get("args"), dict) or not e["args"] or not all(map(_number, e["args"].values())):
                errors.append(f"{where}: a counter's args must be numbers")
            counters[(e["pid"], e["name"])].append(e["ts"])
            continue
        if not isinstance(e.get("tid"), int):
            errors.append(f"{where}: needs an integer tid")
            continue
        if ph == "X" and (not _number(e.get("dur")) or e["dur"] < 0):
            errors.append(f"{where}: a complete event needs dur >= 0")
            continue
        if ph == "i" and e.get("s") not in ("g", "p", "t"):
            errors.append(f"{where}: an instant's scope s must be g, p or t")
            continue
        tracks[(e["pid"], e["tid"])].append(e)
    for track, events in tracks.items():
        if track not in names:
            errors.append(f"track {track} has no thread_name")
        open_ends: list[float] = []
        last = -math.inf
        for e in events:
            if e["ts"] < last - EPS_US:
                errors.append(f"track {track}: {e['name']} at {e['ts']} µs after {last} µs (time goes back)")
            last = max(last, e["ts"])
            if e["ph"] != "X":
                continue
            while open_ends and open_ends[-1] <= e["ts"] + EPS_US:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + EPS_US:
                errors.append(f"track {track}: {e['name']} [{e['ts']}, {end}] crosses the end of the slice "
                              f"around it ({open_ends[-1]})")
            open_ends.append(end)
    for name, times in counters.items():
        if any(b < a for a, b in itertools.pairwise(times)):
            errors.append(f"counter {name}: values not in time order")
    shown = list(names.values())
    if len(set(shown)) != len(shown):
        errors.append(f"two tracks share a name: {shown}")
    return errors


def load(path: Path) -> Any:
    """The file as JSON, strictly (NaN and Infinity are not JSON)."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=refuse)


def cpu_tracks(doc: Any) -> dict[str, int]:
    """The thread_name of every track that holds events ("CPU 1" -> its tid)."""
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M"
             and e["name"] == "thread_name"}
    used = {e["tid"] for e in doc["traceEvents"] if e.get("ph") in ("X", "i")}
    return {names[tid]: tid for tid in used if tid in names}
