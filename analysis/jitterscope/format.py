"""How numbers are written, in one place: µs, percentages, p-values, counts, and JSON-safe values.

Every page, table, verdict sentence and CLI line formats through these, so the
same value reads the same everywhere (a p-value of 3e-15 is "p < 1e-12" in the
report, the terminal and the JSON text alike).  Two families:

* ``*_value`` return a number for a table cell (CSV and JSON keep numbers) or
  ``None`` for a missing or non-finite value;
* ``format_*`` return text for sentences and terminal lines.

Imports nothing heavy: the CLI uses it before it has parsed its arguments.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

NS_PER_US = 1000.0
P_FLOOR = 1e-12
"""Below this a p-value is written "< 1e-12": double precision and the tests' approximations say no more."""

MISSING = "n/a"
"""What a missing or non-finite value shows as in text (never a bare NaN)."""


# C0 controls but tab and newline, DEL, C1 controls, and lone surrogates (invalid Unicode: no encoder writes them)
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
TEXT_CELL_LIMIT = 4096
"""Characters of a text cell shown in terminal, PDF and LaTeX tables (a kernel command line fits: at most 4 KiB);
CSV and JSON keep the full value."""


def visible(text: str) -> str:
    """``text`` with every control character (but newline and tab) and lone surrogate written as an escape.

    Text from a dataset is data, never markup or terminal commands: ESC, CR, NUL, BEL become ``\\x1b``,
    ``\\r``, ``\\x00``, ``\\x07`` (visible, and valid in XML, TeX, PDF and every terminal), and a lone
    surrogate such as ``\\ud800`` its escape instead of an error when the text is encoded.
    """
    if _INVISIBLE.search(text) is None:
        return text
    return _INVISIBLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {0x0D: "\\r"}.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def shorten(text: str, limit: int = TEXT_CELL_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with a note saying how long it was (the full value is in the JSON)."""
    if len(text) <= limit:
        return text
    note = f"… [{len(text):,} characters; full value in the JSON]"
    return text[: max(limit - len(note), 16)] + note


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def us_value(ns: float | None) -> float | None:
    """Nanoseconds as a µs number for a table cell; ``None`` when missing or not finite."""
    value = _finite(ns)
    return None if value is None else value / NS_PER_US


def percent_value(fraction: float | None) -> float | None:
    """A fraction (0.25) as a percent number (25.0) for a table cell; ``None`` when missing or not finite."""
    value = _finite(fraction)
    return None if value is None else 100.0 * value


def format_us(ns: float | None) -> str:
    """Nanoseconds as text in µs with a precision that suits the size: "8.76 µs", "14.4 µs", "1,040 µs"."""
    value = us_value(ns)
    if value is None:
        return MISSING
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f} µs"
    return f"{value:.1f} µs" if size >= 10 else f"{value:.2f} µs"


def format_percent(fraction: float | None, *, signed: bool = False) -> str:
    """A fraction as a percentage: "25%", "2.5%", "0.012%"; ``signed`` for changes: "+6.2%", "−3.0%"."""
    value = _finite(fraction)
    if value is None:
        return MISSING
    if signed:
        return f"{value * 100:+.1f}%"
    size = abs(value)
    if size == 0 or size >= 0.1:
        return f"{value:.0%}"
    return f"{value:.1%}" if size >= 0.001 else f"{value * 100:.2g}%"


def format_change(relative: float | None) -> str:
    """A relative change as text: "+4.4%", "−38%" below a doubling, a ratio "×64.8" from a doubling on.

    "+6284.1%" reads worse than "×64.8"; a change by a factor is said as one.
    """
    value = _finite(relative)
    if value is None:
        return MISSING
    if value >= 1.0:
        ratio = 1 + value
        # "×1,250", not "×1.25e+03": three significant digits without an exponent
        return f"×{ratio:.3g}" if ratio < 1000 else f"×{float(f'{ratio:.3g}'):,.0f}"
    return format_percent(value, signed=True)


def format_p(p: float | None, *, floor: float = P_FLOOR, cap: float = 1.0) -> str:
    """A p-value as text, with its name: "p = 0.034", "p = 3.4e-05", "p < 1e-12".

    ``floor`` and ``cap`` are the smallest and largest p the method can resolve
    (a table-interpolated p-value such as Anderson-Darling's): at or beyond them
    the text is "p ≤ floor" or "p ≥ cap".
    """
    value = _finite(p)
    if value is None:
        return f"p {MISSING}"
    if floor > P_FLOOR and value <= floor:
        return f"p ≤ {floor:g}"
    if cap < 1.0 and value >= cap:
        return f"p ≥ {cap:g}"
    if value < P_FLOOR:
        return f"p < {P_FLOOR:g}"
    return f"p = {value:.2g}" if value >= 1e-3 else f"p = {value:.1e}"


MODEL_P_FLOOR = 1e-6
"""Below this a probability from a fitted model is written "< 1e-6 (model)": that far out it is the model's
extrapolation, and its digits (1e-290) say nothing about the machine."""


def format_resampled_p(p: float | None, resamples: int) -> str:
    """A p-value from ``resamples`` resamples (bootstrap, surrogates): "p = 0.034", or at its floor
    ``1/(B + 1)`` "p ≤ 0.005 (floor, B = 199)": no smaller p can come out of B resamples."""
    value = _finite(p)
    floor = 1.0 / (resamples + 1)
    if value is not None and value <= floor * (1 + 1e-9):
        return f"p ≤ {floor:.2g} (floor, B = {resamples:,})"
    return format_p(p)


def model_probability(p: float | None) -> float | str | None:
    """A probability from a fitted model for a table cell: the number, or "< 1e-6 (model)" below
    :data:`MODEL_P_FLOOR` (a recorded fraction is never passed here: it is data, not a model)."""
    value = _finite(p)
    if value is not None and 0 < value < MODEL_P_FLOOR:
        return "< 1e-6 (model)"
    return value


def format_model_chance(p: float | None) -> str:
    """A probability from a fitted model as text: "0.034", "3.4e-05", or "< 1e-6 (model)" below
    :data:`MODEL_P_FLOOR`: a fitted tail's "5.5e-290" is its extrapolation, not a fact about the machine."""
    value = model_probability(p)
    if value is None:
        return MISSING
    if isinstance(value, str):
        return value
    return f"{value:.2g}" if value >= 1e-3 or value == 0 else f"{value:.1e}"


def format_thread_cpu(thread: int, cpu: int) -> str:
    """A measuring thread for titles and notes: "CPU 3 (thread 0)", or "thread 0 (CPU unknown)" when the source
    did not record the CPU (cpu -1: cyclictest -v without --json), never "CPU -1"."""
    return f"CPU {cpu} (thread {thread})" if cpu >= 0 else f"thread {thread} (CPU unknown)"


def format_hz(hz: float | None) -> str:
    """A frequency to four significant digits in plain notation: "1000", "250", "13.7" (``:.3g`` writes
    "1e+03" for a 1 kHz source)."""
    value = _finite(hz)
    return MISSING if value is None else f"{float(f'{value:.4g}'):g}" if abs(value) < 1e6 else f"{value:,.0f}"


def format_count(n: int | None) -> str:
    """A count with thousands separators: "1,234,567"."""
    return MISSING if n is None else f"{int(n):,}"


def format_ratio(ratio: float | None) -> str:
    """A risk ratio: one decimal below 100 ("5.5"), whole numbers with thousands separators above ("821,984").

    Ratios of hundreds of thousands arise where the unexposed group has almost no spikes (a C0 bin that holds
    every late wake-up); a decimal there is noise, and "821984.4" is hard to read in a sentence.
    """
    value = _finite(ratio)
    if value is None:
        return MISSING if ratio is None else str(ratio)
    return f"{value:.1f}" if abs(value) < 100 else f"{value:,.0f}"


def jsonable(value: Any, *, inf_as_string: bool = False) -> Any:
    """Return `value` with every nested value made JSON-safe, for every result's ``to_json``.

    Tuples become lists, numpy scalars Python scalars, mapping keys strings and
    NaN ``None``, so the output passes ``json.dumps(..., allow_nan=False)``.
    Infinity is the one choice a caller makes: most results have nothing to say
    about an infinite value and write ``None``; tail fits write ``"inf"``/``"-inf"``
    because there an infinite confidence bound is an answer ("not bounded by the
    data"), not a missing value.

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
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, Mapping):
        return {visible(str(k)): jsonable(v, inf_as_string=inf_as_string) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, inf_as_string=inf_as_string) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # a numpy scalar; numpy not imported here
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or not inf_as_string:
            return None
        return "inf" if value > 0 else "-inf"
    return value
