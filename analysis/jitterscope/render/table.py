"""Tables: a small result-to-rows layer and its writers (text, CSV, JSON, LaTeX booktabs).

A :class:`Table` holds raw cell values (numbers stay numbers, for CSV/JSON)
and a display format per column (for text and LaTeX).  Each feature's
``tables`` module turns its results into tables; :func:`key_value_table` here
serves them all.  Tables format and select, they compute no statistics.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import textwrap
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..format import format_p, shorten, visible

Cell = str | int | float | None

LATEX_WRAP = 40  # characters: a longer left-aligned cell puts its column in a paragraph (X) column

MISSING = "n/a"
"""What a missing or non-finite cell shows in text and LaTeX (never a bare NaN)."""

P_VALUE = "p-value"
"""A column format that prints probabilities as :func:`~jitterscope.format.format_p` does, without the
"p": "0.034", "3.4e-05", "< 1e-12" (a tiny probability is never "0.0e+00"); CSV/JSON keep the number."""

# LaTeX specials and the non-ASCII characters our texts use, written so that a default pdflatex
# (no inputenc/fontspec tricks) compiles them; math symbols via \ensuremath work in text and math mode.
_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "µ": r"\textmu{}", "μ": r"\textmu{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "−": "-", "…": r"\dots{}", "·": r"\textperiodcentered{}", "─": "-", "—": "---", "–": "--",
    "‘": "`", "’": "'", "“": "``", "”": "''", "\u00a0": "~", "\u2009": r"\,", "\u202f": r"\,",
    "≥": r"\ensuremath{\geq}", "≤": r"\ensuremath{\leq}", "×": r"\ensuremath{\times}",
    "±": r"\ensuremath{\pm}", "→": r"\ensuremath{\rightarrow}", "←": r"\ensuremath{\leftarrow}",
    "↔": r"\ensuremath{\leftrightarrow}", "≈": r"\ensuremath{\approx}", "≠": r"\ensuremath{\neq}",
    "∞": r"\ensuremath{\infty}", "√": r"\ensuremath{\surd}", "°": r"\ensuremath{^\circ}",
    "²": r"\ensuremath{^2}", "³": r"\ensuremath{^3}", "¹": r"\ensuremath{^1}", "⁻": r"\ensuremath{^-}",
    "½": r"\ensuremath{\frac12}", "•": r"\textbullet{}", "∆": r"\ensuremath{\Delta}",
    "Ω": r"\ensuremath{\Omega}", "✓": "yes", "✗": "no",
}
# Greek letters by their Unicode names (GREEK SMALL LETTER XI -> \xi); capitals LaTeX lacks are Latin.
_GREEK = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lamda mu nu xi omicron pi rho sigma tau "
          "upsilon phi chi psi omega").split()
_GREEK_CAPITALS = {"gamma", "delta", "theta", "lamda", "xi", "pi", "sigma", "upsilon", "phi", "psi", "omega"}
_GREEK_AS_LATIN = {"alpha": "A", "beta": "B", "epsilon": "E", "zeta": "Z", "eta": "H", "iota": "I", "kappa": "K",
                   "mu": "M", "nu": "N", "omicron": "O", "rho": "P", "tau": "T", "chi": "X"}
# combining accents (after Unicode decomposition) as LaTeX accent commands: Š -> \v{S}, é -> \'{e}
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u",
            "\u0307": ".", "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c",
            "\u0328": "k"}


@dataclass(frozen=True)
class Table:
    """A titled table of raw values with a display format per column.

    Attributes
    ----------
    name
        File stem for ``--figures`` (``summary`` -> ``summary.csv``); unique within a report.
    title
        Human title, shown above the table in the PDF and as the LaTeX caption.
    columns
        Column headers, with units in brackets (``"p99 [µs]"``).
    rows
        One tuple of raw cells per row (str, int, float or None).
    formats
        One ``str.format`` spec per column (``"{:.2f}"``) or ``""`` for ``str(value)``.
    notes
        Sentences printed under the table (sources, definitions, caveats).
    """

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    formats: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    align: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        # titles, headers and notes can quote a dataset (a degraded reason): visible in every output format
        object.__setattr__(self, "title", visible(self.title))
        object.__setattr__(self, "columns", tuple(visible(str(c)) for c in self.columns))
        object.__setattr__(self, "notes", tuple(visible(str(n)) for n in self.notes))
        width = len(self.columns)
        for row in self.rows:
            if len(row) != width:
                raise ValueError(f"table {self.name}: row {row!r} has {len(row)} cells, expected {width}")
        if self.formats and len(self.formats) != width:
            raise ValueError(f"table {self.name}: {len(self.formats)} formats for {width} columns")

    def cell_text(self, row: int, col: int) -> str:
        """The display text of one cell."""
        return format_cell(self.rows[row][col], self.formats[col] if self.formats else "")

    def text_rows(self) -> list[list[str]]:
        """All cells as display text, row by row."""
        return [[self.cell_text(r, c) for c in range(len(self.columns))] for r in range(len(self.rows))]

    def alignment(self) -> tuple[str, ...]:
        """'l' or 'r' per column: given, else right for columns whose cells are all numbers."""
        if self.align:
            return self.align
        out = []
        for c in range(len(self.columns)):
            values = [row[c] for row in self.rows if row[c] is not None]
            numeric = bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            out.append("r" if numeric else "l")
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        """The table as a JSON-ready dict: rows as objects keyed by column header."""
        return {
            "name": self.name, "title": self.title, "columns": list(self.columns),
            "rows": [{col: _json_cell(v) for col, v in zip(self.columns, row, strict=True)} for row in self.rows],
            "notes": list(self.notes),
        }


def format_cell(value: Cell, spec: str = "") -> str:
    """Display text of one cell: ``spec.format(value)``, ``n/a`` for None and non-finite numbers."""
    if value is None:
        return MISSING
    if isinstance(value, float) and not math.isfinite(value):
        return MISSING
    if spec == P_VALUE and isinstance(value, int | float) and not isinstance(value, bool):
        return format_p(value).removeprefix("p = ").removeprefix("p ")
    if spec and isinstance(value, int | float) and not isinstance(value, bool):
        return spec.format(value)
    # text from a dataset is data: controls and lone surrogates shown as escapes, long values cut (JSON keeps them)
    return shorten(visible(str(value)))


def to_text(table: Table, *, max_width: int | None = None) -> list[str]:
    """The table as monospace lines: rule, header, rule, rows, rule, notes.

    A header ``"p99 [µs]"`` is set on two lines, ``p99`` over ``[µs]``, so
    units do not widen the columns.  To fit ``max_width`` characters, a last
    left-aligned column wraps onto continuation lines; other cells are
    shortened from the middle with an ellipsis, widest column first.  Notes wrap.
    """
    names, units = zip(*(_split_header(c) for c in table.columns), strict=True) if table.columns else ((), ())
    body = table.text_rows()
    widths = [max([len(names[c]), len(units[c])] + [len(row[c]) for row in body]) for c in range(len(names))]
    align = table.alignment()
    gaps = 2 * (len(widths) - 1)
    wrap_last = False
    if max_width is not None and sum(widths) + gaps > max_width:
        if align and align[-1] == "l":
            room = max_width - gaps - sum(widths[:-1])
            if room >= 20:
                widths[-1], wrap_last = room, True
        if not wrap_last:
            widths = _shrink(widths, max_width - gaps)

    def line(row: Sequence[str]) -> str:
        parts = []
        for text, width, how in zip(row, widths, align, strict=True):
            text = _ellipsize(text, width)
            parts.append(text.rjust(width) if how == "r" else text.ljust(width))
        return "  ".join(parts).rstrip()

    rule = "─" * (sum(widths) + gaps)
    out = [rule, line(names)]
    if any(units):
        out.append(line(units))
    out.append(rule)
    for row in body:
        if wrap_last and len(row[-1]) > widths[-1]:
            pieces = textwrap.wrap(row[-1], widths[-1], break_long_words=True, break_on_hyphens=False) or [""]
            out.append(line([*row[:-1], pieces[0]]))
            out += [line([""] * (len(row) - 1) + [piece]) for piece in pieces[1:]]
        else:
            out.append(line(row))
    out.append(rule)
    for note in table.notes:
        out += textwrap.wrap(note, max_width) if max_width else [note]
    return out


def tables_text(tables: Sequence[Table], *, max_width: int | None = 150) -> str:
    """Several tables as plain text, each under its title, separated by a blank line (the CLI's text output)."""
    return "\n\n".join(table.title + "\n" + "\n".join(to_text(table, max_width=max_width)) for table in tables)


def text_header_lines(lines: Sequence[str]) -> int:
    """How many of :func:`to_text`'s first lines are the header block (rules included)."""
    rules = [i for i, text in enumerate(lines) if text and set(text) == {"─"}]
    return rules[1] + 1 if len(rules) > 1 else 0


def _split_header(column: str) -> tuple[str, str]:
    name, bracket, unit = column.partition(" [")
    return (name, "[" + unit) if bracket else (column, "")


def to_csv(table: Table) -> str:
    """The table as CSV text: header row, then raw values (empty for missing)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    for row in table.rows:
        writer.writerow(["" if _json_cell(v) is None else _json_cell(v) for v in row])
    return buffer.getvalue()


def to_json_text(table: Table) -> str:
    """The table as a JSON document (see :meth:`Table.to_json`)."""
    return json.dumps(table.to_json(), indent=2, ensure_ascii=False) + "\n"


def to_latex(table: Table) -> str:
    """The table as a complete LaTeX float a two-column paper can ``\\input``: booktabs rules, ``siunitx``
    number columns, every special character escaped (pure ASCII).

    Needs :data:`LATEX_PREAMBLE` (``booktabs``, ``siunitx``, ``tabularx``).  Numbers go in ``S`` columns
    (aligned on the decimal point, exponents set as powers of ten, no thousands commas); a cell that is not a
    number (``n/a``, ``< 1e-12``, ``all``) is braced text in its column.  A header ``"p99 [µs]"`` is set as
    ``p99`` over ``[µs]``.  Long text goes in a ``tabularx`` ``X`` column that takes the width left, with break
    points inside long tokens (hashes, paths).  The table is a ``table`` when it fits a column
    (:data:`LATEX_COLUMN_PT`) in at most :data:`LATEX_MAX_COLUMNS` columns, else a ``table*`` across the page,
    split into blocks of at most :data:`LATEX_MAX_COLUMNS` columns that each fit :data:`LATEX_PAGE_PT` (the
    first column, the row's key, repeated in each block).
    """
    columns = [_latex_column(table, c) for c in range(len(table.columns))]
    blocks, wide = _latex_blocks(columns)
    env = "table*" if wide else "table"
    lines = [
        rf"\begin{{{env}}}[htbp]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}", r"\sloppy",
        rf"\caption{{{latex_escape(table.title)}}}", rf"\label{{tab:{_label(table.name)}}}",
    ]
    for number, block in enumerate(blocks):
        if number:
            lines.append(r"\par\medskip")
        lines += _latex_tabular([columns[c] for c in block], len(table.rows), wide)
    for note in table.notes:
        lines.append(rf"\par\smallskip{{\footnotesize {latex_breakable(note)}\par}}")
    lines.append(rf"\end{{{env}}}")
    return "\n".join(lines) + "\n"


LATEX_PREAMBLE = "\\usepackage{booktabs}\n\\usepackage{siunitx}\n\\usepackage{tabularx}\n"
"""What a document needs to ``\\input`` the tables of :func:`to_latex`."""
LATEX_MAX_COLUMNS = 8
"""Columns in one tabular: more do not read at a paper's width (a wider table is split into blocks)."""
LATEX_COLUMN_PT = 245.0
"""The column width a ``table`` must fit: 3.5 in (252 pt, IEEE/ACM/Elsevier two-column), less a margin."""
LATEX_PAGE_PT = 500.0
"""The text width a ``table*`` block must fit: 7.16 in (516 pt), less a margin."""
_CHAR_PT = 4.8  # an average glyph of \small (9 pt) Computer Modern, rounded up: digits are 4.5 pt
_GAP_PT = 8.0  # 2 \tabcolsep
_X_MIN_PT = 90.0  # the least width left to an X column


@dataclass(frozen=True)
class _LatexColumn:
    name: str
    unit: str
    cells: tuple[str, ...]  # LaTeX, ready to set
    spec: str
    width_pt: float  # estimated, \tabcolsep excluded
    paragraph: bool


_NUMBER = re.compile(r"^([-+]?)(\d*)(?:\.(\d*))?(?:[eE]([-+]?)(\d+))?$")


def _latex_column(table: Table, c: int) -> _LatexColumn:
    name, unit = _split_header(table.columns[c])
    texts = [table.cell_text(r, c) for r in range(len(table.rows))]
    how = table.alignment()[c]
    header_pt = max(len(name), len(unit)) * _CHAR_PT
    numbers = [_NUMBER.match(t.replace(",", "")) if how == "r" else None for t in texts]
    if any(m is not None and (m.group(2) or m.group(3)) for m in numbers):
        found = [m for m in numbers if m is not None and (m.group(2) or m.group(3))]
        sign = "-" if any(m.group(1) == "-" for m in found) else ""
        whole = max(len(m.group(2) or "0") for m in found)
        decimals = max(len(m.group(3) or "") for m in found)
        exponent = max((len(m.group(5)) for m in found if m.group(5)), default=0)
        exp_sign = "-" if any(m.group(4) == "-" for m in found if m.group(5)) else ""
        fmt = f"{sign}{whole}.{decimals}" + (f"e{exp_sign}{exponent}" if exponent else "")
        cells = tuple(t.replace(",", "") if m is not None and (m.group(2) or m.group(3)) else
                      "{" + latex_escape(t) + "}" for t, m in zip(texts, numbers, strict=True))
        number_chars = len(sign) + whole + decimals + 1 + (exponent + len(exp_sign) + 4 if exponent else 0)
        text_chars = max((len(t) for t, m in zip(texts, numbers, strict=True)
                          if m is None or not (m.group(2) or m.group(3))), default=0)
        return _LatexColumn(name, unit, cells, f"S[table-format={fmt}]",
                            max(header_pt, max(number_chars, text_chars) * _CHAR_PT), False)
    paragraph = how == "l" and any(len(t) > LATEX_WRAP for t in texts)
    cells = tuple(latex_breakable(t) if paragraph else latex_escape(t) for t in texts)
    width = _X_MIN_PT if paragraph else max([header_pt, *(len(t) * _CHAR_PT for t in texts)])
    return _LatexColumn(name, unit, cells, r">{\raggedright\arraybackslash}X" if paragraph else how, width,
                        paragraph)


def _latex_blocks(columns: list[_LatexColumn]) -> tuple[list[list[int]], bool]:
    """The columns of each tabular, and whether the table spans the page (``table*``)."""
    total = sum(col.width_pt + _GAP_PT for col in columns)
    if len(columns) <= LATEX_MAX_COLUMNS and total <= LATEX_COLUMN_PT:
        return [list(range(len(columns)))], False
    if len(columns) <= LATEX_MAX_COLUMNS and total <= LATEX_PAGE_PT:
        return [list(range(len(columns)))], True
    key = columns[0].width_pt + _GAP_PT
    # as few blocks as the column limit allows, of even size (16 columns: 8 + 8, not 8 + 7 + 1) when they fit
    count = -(-(len(columns) - 1) // (LATEX_MAX_COLUMNS - 1))
    size = -(-(len(columns) - 1) // count)
    even = [[0, *range(start, min(start + size, len(columns)))] for start in range(1, len(columns), size)]
    if all(key + sum(columns[c].width_pt + _GAP_PT for c in block[1:]) <= LATEX_PAGE_PT for block in even):
        return even, True
    blocks: list[list[int]] = [[0]]
    used = key
    for c in range(1, len(columns)):
        width = columns[c].width_pt + _GAP_PT
        if len(blocks[-1]) > 1 and (len(blocks[-1]) >= LATEX_MAX_COLUMNS or used + width > LATEX_PAGE_PT):
            blocks.append([0])
            used = key
        blocks[-1].append(c)
        used += width
    return blocks, True


def _latex_tabular(columns: list[_LatexColumn], rows: int, wide: bool) -> list[str]:
    spec = "".join(col.spec for col in columns)
    width = r"\textwidth" if wide else r"\columnwidth"
    begin, end = ((rf"\begin{{tabularx}}{{{width}}}{{{spec}}}", r"\end{tabularx}")
                  if any(col.paragraph for col in columns) else
                  (rf"\begin{{tabular}}{{{spec}}}", r"\end{tabular}"))

    def header(texts: list[str]) -> str:
        return " & ".join("{" + latex_escape(text) + "}" if text else "" for text in texts) + r" \\"

    lines = [begin, r"\toprule", header([col.name for col in columns])]
    if any(col.unit for col in columns):
        lines.append(header([col.unit for col in columns]))
    lines.append(r"\midrule")
    lines += [" & ".join(col.cells[r] for col in columns) + r" \\" for r in range(rows)]
    lines += [r"\bottomrule", end]
    return lines


def latex_breakable(text: str) -> str:
    """``text`` escaped, with break points inside tokens too long for a narrow column (hashes, paths, JSON)."""
    words = []
    for word in text.split(" "):
        if len(word) <= 16:
            words.append(latex_escape(word))
        else:
            words.append(r"\allowbreak{}".join(latex_escape(word[i:i + 8]) for i in range(0, len(word), 8)))
    return " ".join(words)


def latex_escape(text: str) -> str:
    """Escape ``text`` for LaTeX text mode; the result is pure ASCII.

    LaTeX specials (``& % $ # _ { } ~ ^ \\``) are escaped; µ, →, ≥, ±, Greek letters, dashes,
    accented letters and the other non-ASCII characters become LaTeX commands, so a default
    pdflatex compiles every table.  A character with no LaTeX spelling is written as ``[U+XXXX]``.
    """
    text = visible(text)  # control characters would reach the .tex raw (and stop pdflatex)
    return "".join(ch if ch.isascii() and ch not in _LATEX_ESCAPES else _latex_char(ch) for ch in text)


def _latex_char(ch: str) -> str:
    if ch in _LATEX_ESCAPES:
        return _LATEX_ESCAPES[ch]
    name = unicodedata.name(ch, "")
    if name.startswith("GREEK ") and name.split()[-1].lower() in _GREEK:
        letter = name.split()[-1].lower().replace("lamda", "lambda")
        if "SMALL" in name:
            return rf"\ensuremath{{\{letter}}}"
        if name.split()[-1].lower() in _GREEK_CAPITALS:
            return rf"\ensuremath{{\{letter.capitalize()}}}"
        return _GREEK_AS_LATIN[name.split()[-1].lower()]
    decomposed = unicodedata.normalize("NFD", ch)
    if decomposed[0].isascii() and decomposed[0].isalpha() and all(c in _ACCENTS for c in decomposed[1:]):
        out = decomposed[0]
        for mark in decomposed[1:]:
            out = rf"\{_ACCENTS[mark]}{{{out}}}"
        return out
    compatible = unicodedata.normalize("NFKD", ch)
    if compatible.isascii() and compatible.isprintable() and compatible:
        return "".join(_LATEX_ESCAPES.get(c, c) for c in compatible)
    return f"[U+{ord(ch):04X}]"


def key_value_table(name: str, title: str, items: Mapping[str, Any] | Sequence[tuple[str, Any]],
                    *, headers: tuple[str, str] = ("item", "value"), notes: Sequence[str] = ()) -> Table:
    """A two-column table from a mapping or pairs; nested values are written as compact JSON."""
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    rows = tuple((str(key), _display_value(value)) for key, value in pairs)
    return Table(name=name, title=title, columns=headers, rows=rows, formats=("", ""),
                 notes=tuple(notes), align=("l", "l"))


def _label(name: str) -> str:
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-:.") else "-" for ch in name)


def _display_value(value: Any) -> Cell:
    if value is None or (isinstance(value, str | int | float) and not isinstance(value, bool)):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _json_cell(value: Cell) -> Cell:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return visible(value)  # full length, but no control character or lone surrogate
    return value


def _shrink(widths: list[int], budget: int) -> list[int]:
    widths = list(widths)
    while sum(widths) > budget and max(widths) > 8:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    return widths


def _ellipsize(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = width - 1
    head = keep - keep // 3
    return text[:head] + "…" + text[len(text) - (keep - head):]


