import json
import math

import numpy as np
from jitterscope.format import jsonable


def test_nested_values_become_plain_json():
    value = {"a": (1, np.float64(2.5), np.int64(3)), 4: {"b": [np.bool_(True), "x", None]}}
    out = jsonable(value)
    assert out == {"a": [1, 2.5, 3], "4": {"b": [True, "x", None]}}
    assert type(out["a"][1]) is float and type(out["a"][2]) is int and type(out["4"]["b"][0]) is bool
    json.dumps(out, allow_nan=False)


def test_nan_is_none_and_inf_is_none_by_default():
    assert jsonable([math.nan, math.inf, -math.inf, np.float64("inf")]) == [None, None, None, None]


def test_inf_as_string_keeps_the_sign_but_nan_stays_none():
    out = jsonable([math.nan, math.inf, -math.inf, np.float32("-inf"), 1.0], inf_as_string=True)
    assert out == [None, "inf", "-inf", "-inf", 1.0]
