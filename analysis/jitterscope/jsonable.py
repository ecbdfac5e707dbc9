"""Turn a result's ``dataclasses.asdict`` into plain JSON values, for every result's ``to_json``.

Tuples become lists, numpy scalars Python scalars, mapping keys strings and NaN ``None``, so the output passes
``json.dumps(..., allow_nan=False)``. Infinity is the one choice a caller makes: most results have nothing to say
about an infinite value and write ``None``; tail fits write ``"inf"``/``"-inf"`` because there an infinite
confidence bound is an answer ("not bounded by the data"), not a missing value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def jsonable(value: Any, *, inf_as_string: bool = False) -> Any:
    """Return `value` with every nested value made JSON-safe.

    Parameters
    ----------
    value : Any
        Usually ``dataclasses.asdict(result)``: mappings, lists/tuples, numpy or Python scalars, strings, None.
    inf_as_string : bool
        Write ±inf as the strings ``"inf"``/``"-inf"`` instead of ``None``.

    Returns
    -------
    Any
        The same structure with lists for tuples, ``str`` keys, Python scalars, ``None`` for NaN.
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, inf_as_string=inf_as_string) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, inf_as_string=inf_as_string) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or not inf_as_string:
            return None
        return "inf" if value > 0 else "-inf"
    return value
