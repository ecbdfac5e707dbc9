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


def test_format_change_is_a_percentage_below_a_doubling_and_a_ratio_from_it():
    from jitterscope.format import format_change
    assert format_change(0.044) == "+4.4%"
    assert format_change(-0.38) == "-38.0%"
    assert format_change(62.841) == "×63.8"
    assert format_change(1.0) == "×2"
    assert format_change(1248.6) == "×1,250" and format_change(11999.0) == "×12,000"  # never "×1.25e+03"
    assert format_change(None) == "n/a" and format_change(float("nan")) == "n/a"


def test_a_p_value_cell_is_never_zero_in_scientific_notation():
    from jitterscope.render import P_VALUE, format_cell
    assert format_cell(0.0, P_VALUE) == "< 1e-12"
    assert format_cell(3.4e-5, P_VALUE) == "3.4e-05"
    assert format_cell(0.034, P_VALUE) == "0.034"
    assert format_cell(None, P_VALUE) == "n/a"


def test_format_ratio_keeps_a_decimal_only_where_it_means_something():
    from jitterscope.format import format_ratio

    assert format_ratio(5.4923) == "5.5"
    assert format_ratio(99.94) == "99.9"
    assert format_ratio(821984.4) == "821,984"
    assert format_ratio(1484262.0) == "1,484,262"
    assert format_ratio(float("inf")) == "inf" and format_ratio(None) == "n/a"


def test_format_hz_is_plain_notation_to_four_digits():
    from jitterscope.format import format_hz
    assert format_hz(999.97) == "1000" and format_hz(250.0) == "250" and format_hz(13.699) == "13.7"
    assert format_hz(0.99997) == "1" and format_hz(None) == format_hz(math.nan)
    assert "e" not in format_hz(1_234_567.0)
