"""Plot style shared by every figure: plain log-axis labels, series colours, note and text pages."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import matplotlib
import matplotlib.artist
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import LogFormatter

from ..format import visible

MONO = "DejaVu Sans Mono"


class _PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers (20, 50, 0.5), not 2×10^1: latencies read in µs."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:g}"


def plain_log_axis(axis: Any) -> None:
    """Label a log-scaled axis with plain numbers, minor ticks too where there are few decades."""
    axis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))


ENVELOPE_PT = 2.0
"""Width of an envelope's column in points (1/72 in) of the drawn panel: about 5 px at 150 dpi, 3 px at 100 dpi.
Columns one device pixel wide draw a series that changes every few pixels (50 ms P-states over 10 s in a 3.5 in
column: 200 changes in 190 pt) as a solid block again; columns of 2 pt hold a few changes each, and their mean
says how the time was shared."""
MIN_ENVELOPE_COLUMNS = 8


def plot_envelope(ax: Axes, x: Any, y: Any, *, label: str, color: Any, columns: int | None = None,
                  centre: str = "median", **line: Any) -> None:
    """``y`` over ``x`` as a line; a series of more points than its panel has columns as its envelope instead:
    the minimum to maximum of each column (an equal span of ``x``) shaded, the ``centre`` of each column ("median",
    or "mean": with equally spaced ``x`` the time-weighted mean, which for a series switching between levels says
    the share of time spent at each) drawn over it.

    ``columns`` None: one column per :data:`ENVELOPE_PT` of the panel's width as drawn, counted again each time
    it is drawn, so a figure refitted from an A4 page to a 3.5 in column gets a quarter of the columns
    (:class:`EnvelopeColumns`); a number: that many, fixed.  Half a million points drawn as a line fill the panel
    as a solid block (every pixel column holds hundreds of points); the envelope shows the same range, and its
    centre line where the values sit.  Non-finite values are left out; an empty column leaves a gap.
    """
    if centre not in ("median", "mean"):
        raise ValueError(f"envelope centre {centre!r}: use 'median' or 'mean'")
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    start = columns if columns is not None else _panel_columns(ax, ax.figure.dpi)
    if x.size <= 2 * start or x[-1] <= x[0]:
        ax.plot(x, y, color=color, label=label, **line)
        return
    centres, low, high, middle = envelope(x, y, start, centre=centre)
    band = ax.fill_between(centres, low, high, color=color, alpha=0.35, linewidth=0, step="mid",
                           label=f"{label}: range per column")
    drawn, = ax.plot(centres, middle, color=color, linewidth=0.8, drawstyle="steps-mid",
                     label=f"{label}: {centre} per column")
    if columns is None:
        ax.add_artist(EnvelopeColumns(x, y, band, drawn, centre=centre, columns=start))


def envelope(x: np.ndarray, y: np.ndarray, columns: int, *, centre: str = "median"
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The centres of ``columns`` equal spans of ``x`` and, per span, the least, the greatest and the centre
    (median or mean) of ``y`` (NaN where a span holds no point)."""
    edges = np.linspace(x.min(), x.max(), columns + 1)
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, columns - 1)
    counts = np.bincount(which, minlength=columns)
    full = counts > 0
    if centre == "mean":
        low = np.full(columns, np.inf)
        high = np.full(columns, -np.inf)
        np.minimum.at(low, which, y)
        np.maximum.at(high, which, y)
        middle = np.bincount(which, weights=y, minlength=columns) / np.maximum(counts, 1)
        low, high = np.where(full, low, np.nan), np.where(full, high, np.nan)
        middle = np.where(full, middle, np.nan)
    else:
        order = np.lexsort((y, which))  # by span, then by value: min, median and max are positions
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        ys = y[order]
        low = np.where(full, ys[np.minimum(starts, ys.size - 1)], np.nan)
        high = np.where(full, ys[np.minimum(starts + counts - 1, ys.size - 1)], np.nan)
        middle = np.where(full, ys[np.minimum(starts + counts // 2, ys.size - 1)], np.nan)
    return (edges[:-1] + edges[1:]) / 2, low, high, middle


def _panel_columns(ax: Axes, dpi: float, renderer: Any = None) -> int:
    """Columns of :data:`ENVELOPE_PT` across ``ax`` as it is placed now (``dpi``: the pixels its extent is in)."""
    width_pt = ax.get_window_extent(renderer).width * 72.0 / dpi
    return max(MIN_ENVELOPE_COLUMNS, int(width_pt / ENVELOPE_PT))


class EnvelopeColumns(matplotlib.artist.Artist):
    """Draws nothing: before its panel's data is drawn (it comes first), it counts the columns the panel's width
    holds now and, when they changed, computes the envelope anew into the band and the centre line.  The data
    limits stay those of the first envelope (the same least and greatest values)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, band: Any, line: Any, *, centre: str, columns: int) -> None:
        super().__init__()
        self._x, self._y, self._band, self._line, self._centre = x, y, band, line, centre
        self.columns = columns
        self.set_zorder(-1e9)  # drawn before everything of its panel
        self.set_in_layout(False)  # no box: the layout engine must not count it

    def draw(self, renderer: Any) -> None:
        if self.axes is None or self.figure is None:
            return
        columns = _panel_columns(self.axes, self.figure.dpi, renderer)
        if columns == self.columns:
            return
        self.columns = columns
        centres, low, high, middle = envelope(self._x, self._y, columns, centre=self._centre)
        self._band.set_data(centres, low, high)
        self._line.set_data(centres, middle)


def stairs(ax: Axes, values: Any, edges: Any, **kwargs: Any) -> Any:
    """``ax.stairs(values, edges, **kwargs)``, the same step patch and the same data limits, found at once.

    matplotlib finds a patch's data limits curve by curve (``Path.iter_bezier``: Python objects per segment):
    the latency and period histograms' 8,000-bin outlines of a 10 s capture took 1.6 s of CPU there, while
    their sections were built one after another.  A step outline has straight segments only, so its limits
    are those of its vertices.
    """
    from matplotlib.path import Path

    original = ax._update_patch_limits

    def straight(patch: Any) -> None:
        path = patch.get_path()
        codes = path.codes
        if ax.name != "rectilinear" or not (codes is None or np.isin(codes, (Path.MOVETO, Path.LINETO)).all()):
            original(patch)  # curves, closed outlines, other projections: matplotlib's own walk
            return
        updatex, updatey = patch.get_transform().contains_branch_separately(ax.transData)
        if not (updatex or updatey):
            return
        # non-finite vertices (the gaps) are left out by update_datalim, as matplotlib's walk leaves them out
        xys = (patch.get_transform() - ax.transData).transform(np.asarray(path.vertices, dtype=float))
        ax.update_datalim(xys, updatex=updatex, updatey=updatey)

    ax._update_patch_limits = straight
    try:
        return ax.stairs(values, edges, **kwargs)
    finally:
        del ax._update_patch_limits  # the class's method again


BULK_SHARE = 0.99
"""The share of a histogram's counts that its linear part must hold (the bulk), when its tail is compressed: the
wake-ups up to the 99th percentile, whose shape the OSADL plot is read for (a real jitterdebugger run had 0.5 % of
its wake-ups scattered over 28 ms: 99.9 % would have kept the whole axis linear)."""
TAIL_SQUEEZE = 10.0
"""A histogram reaching more than this many times past its bulk's edge would draw that bulk in a tenth of a
linear axis or less (a 30 µs bulk beside a 17 ms maximum: the left 1 %), a spike against the axis."""
SCALE_SWITCH_GID = "jitterscope-scale-switch"
"""The gid of the dotted lines where :func:`linear_then_log_axis`'s linear part ends."""


def linear_then_log_axis(ax: Axes, histograms: Sequence[tuple[Any, Any]], *, label: str) -> float | None:
    """The x axis of fixed-width histograms (``(edges, counts)`` pairs, one unit): linear, as the OSADL plot
    draws it, where the histograms' bulk (:data:`BULK_SHARE` of their counts) lies, and logarithmic beyond, each
    half of the axis, where their farthest bin lies more than :data:`TAIL_SQUEEZE` times past the bulk's edge.

    The switch is a round value (1, 2 or 5 x 10^k) at or past the edge, marked by a dotted line at it (both
    signs where the values have both) and named in the axis ``label``.  Returns it, or None where the axis stays
    linear (every bin is drawn either way: nothing is cut).
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xlabel(label)
    pairs = [(np.asarray(e, dtype=float), np.asarray(c, dtype=float)) for e, c in histograms]
    pairs = [(e, c) for e, c in pairs if c.size and c.sum() > 0]
    if not pairs:
        return None
    # each bin by its farther edge from zero: the bulk's edge holds BULK_SHARE of all counts on both sides
    reach = np.concatenate([np.maximum(np.abs(e[:-1]), np.abs(e[1:])) for e, _ in pairs])
    counts = np.concatenate([c for _, c in pairs])
    order = np.argsort(reach, kind="stable")
    cumulative = np.cumsum(counts[order])
    bulk = float(reach[order][np.searchsorted(cumulative, BULK_SHARE * cumulative[-1])])
    farthest = float(reach[counts > 0].max())
    switch = _round_up(bulk)
    if not switch > 0 or farthest <= TAIL_SQUEEZE * switch:
        return None
    decades = max(1.0, float(np.log10(farthest * 1.05 / switch)))
    negative = any(((e[:-1] < 0) & (c > 0)).any() for e, c in pairs)
    # matplotlib's symlog draws each sign's linear part linscale / (1 - 1/10) decades wide: in all as wide as
    # the log part
    ax.set_xscale("symlog", linthresh=switch, linscale=decades * 0.9 / (2 if negative else 1))
    ticks = [0.0, switch] if negative else [0.0, switch / 2, switch]
    # log ticks half a decade or more past the switch: nearer, their labels would run into the switch's
    for k in range(int(np.floor(np.log10(switch))) + 1, int(np.ceil(np.log10(farthest * 1.05))) + 1):
        ticks += [m * 10.0**k for m in ((1, 2, 5) if decades < 1.2 else (1,)) if m * 10.0**k >= switch * 10**0.5]
    ticks = sorted({t for t in ticks if t <= farthest * 1.05} | {switch})
    if negative:
        ticks = sorted({-t for t in ticks} | set(ticks))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v + 0.0:.0f}" if v == round(v) else f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    # margins are taken in the drawn scale, where 5 % of a symlog axis reaches far below zero
    lowest = min(float(e[:-1][c > 0].min()) for e, c in pairs)
    highest = max(float(e[1:][c > 0].max()) for e, c in pairs)
    ax.set_xlim(min(0.0, lowest * 1.05) if negative else min(0.0, lowest), max(highest * 1.05, switch))
    for edge in ((-switch, switch) if negative else (switch,)):
        ax.axvline(edge, color="0.45", linewidth=0.7, linestyle=(0, (1, 2)), zorder=0.5, gid=SCALE_SWITCH_GID)
    ax.set_xlabel(f"{label}; linear {'within ±' if negative else 'to '}{switch:g}, logarithmic beyond")
    return switch


def _round_up(value: float) -> float:
    """The least of 1, 2 and 5 x 10^k at or above ``value`` (> 0)."""
    if not value > 0:
        return 0.0
    power = 10.0 ** np.floor(np.log10(value))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= value * (1 - 1e-12)))


def major_labels_only(axis: Any) -> None:
    """Label only the major ticks of a log axis: at less than a decade and a half matplotlib labels the minor
    ticks 2, 3, 4 and 6 too, and in a narrow panel 3 and 4 are set on top of each other."""
    from matplotlib.ticker import NullFormatter

    axis.set_minor_formatter(NullFormatter())


OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000")
"""Okabe & Ito's colour-blind-safe palette (blue, orange, bluish green, vermillion, sky blue, reddish purple,
yellow, black): told apart with every common colour-vision deficiency and in greyscale by lightness."""

TABLEAU_COLORBLIND10 = ("#006BA4", "#FF800E", "#ABABAB", "#595959", "#5F9ED1", "#C85200", "#898989", "#A2C8EC",
                        "#FFBC79", "#CFCFCF")
"""matplotlib's tableau-colorblind10 style colours (the style sheet itself would be loaded from disk)."""

LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)))
"""One dash pattern per palette colour, in the same order (:data:`REPORT_RC` cycles both together), so that lines
differ by more than colour."""


class VerdictStyle(NamedTuple):
    """How one verdict is drawn: a colour-blind-safe colour, a marker shape and a word, so that it reads without
    colour (grey print, a colour-vision deficiency) from the shape or the word alone."""

    colour: str
    marker: str
    word: str


VERDICT_STYLES: dict[str, VerdictStyle] = {
    "regressed": VerdictStyle("#D55E00", "^", "slower"),      # vermillion, pointing up: latency went up
    "improved": VerdictStyle("#0072B2", "v", "faster"),       # blue, pointing down
    "within noise": VerdictStyle("#4D4D4D", "o", "no change"),
    "inconclusive": VerdictStyle("#E69F00", "D", "unclear"),  # orange diamond
    "not judged": VerdictStyle("#8C8C8C", "x", "not judged"),
}
"""Every compare/fleet/sweep verdict's look.  Red against green is the pair most readers with a colour-vision
deficiency cannot tell apart: Okabe & Ito's vermillion and blue are told apart, and the marker (up for slower,
down for faster) and the word carry the verdict without any colour."""


def verdict_style(verdict: str) -> VerdictStyle:
    """The look of ``verdict`` (a compare verdict, or a sweep's "effect"/"no effect ..."); unknown ones as
    "inconclusive"."""
    if verdict.startswith("effect"):
        return VerdictStyle(VERDICT_STYLES["regressed"].colour, "s", "effect")  # either direction: a square
    if verdict.startswith("no effect"):
        return VERDICT_STYLES["within noise"]._replace(word="no effect")
    return VERDICT_STYLES.get(verdict, VERDICT_STYLES["inconclusive"])


def verdict_label(verdict: str) -> str:
    """A verdict with its plain word where they differ: "regressed (slower)", "within noise (no change)"."""
    word = verdict_style(verdict).word
    return verdict if word in verdict else f"{verdict} ({word})"


def colour(index: int, total: int = 10) -> Any:
    """The colour of series ``index`` of ``total``: Okabe-Ito for up to 8 (colour-blind safe), matplotlib's
    tableau-colorblind10 for up to 10, sampled from a colour map beyond.

    A CPU keeps its colour across the figures of one report (same index, same total).
    """
    if total <= len(OKABE_ITO):
        return OKABE_ITO[index % len(OKABE_ITO)]
    if total <= 10:
        return TABLEAU_COLORBLIND10[index % 10]
    if total <= 20:
        return matplotlib.colormaps["tab20"](index % 20)
    return matplotlib.colormaps["cividis"](index / max(total - 1, 1))


def capped_legend(ax: Axes, *, outside: bool = False, **kwargs: Any) -> Any:
    """``ax.legend(**kwargs)`` of at most :data:`~.layout.MAX_LEGEND_ENTRIES` entries: the first ones, and a last
    entry saying how many more series the plot has.  ``outside``: to the right of the axes, off the data (the
    layout engine makes room for it).  Returns the legend, or None when nothing is labelled."""
    from matplotlib.lines import Line2D

    from .layout import MAX_LEGEND_ENTRIES

    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if len(handles) > MAX_LEGEND_ENTRIES:
        rest = len(handles) - (MAX_LEGEND_ENTRIES - 1)
        handles = [*handles[:MAX_LEGEND_ENTRIES - 1], Line2D([], [], linestyle="none")]
        labels = [*labels[:MAX_LEGEND_ENTRIES - 1], f"and {rest} more (not listed)"]
    if outside:
        kwargs = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0, **kwargs}
    return ax.legend(handles, labels, **kwargs)


def literal_text(figure: Figure) -> Figure:
    """Draw every text of ``figure`` literally: no mathtext, no control characters, no missing glyphs; call it
    before saving.

    Text in a figure may come from a dataset (hostnames, command lines, degraded reasons), which is data, never
    markup: two ``$`` in a hostname would otherwise start matplotlib's mathtext parser (a crash on
    ``a $\\frac{1}{$``) and ESC or NUL would make the SVG invalid XML. A character the text's font cannot draw
    (a private-use code point, a rare script) is written as its escape (``\\U000ea86e``) instead of an empty box
    and a matplotlib warning on the user's terminal. jitterscope's own labels use no mathtext, so this holds
    for every text alike.
    """
    for text in _dataset_texts(figure):
        text.set_parse_math(False)
        content = text.get_text()
        shown = _drawable(visible(content), _glyphs(text))
        if shown != content:
            text.set_text(shown)
    return figure


def _glyphs(text: Text) -> frozenset[int]:
    """The code points the font ``text`` is drawn with has glyphs for."""
    from matplotlib import font_manager

    return _font_charmap(font_manager.findfont(text.get_fontproperties()))


_CHARMAPS: dict[str, frozenset[int]] = {}


def _font_charmap(path: str) -> frozenset[int]:
    if path not in _CHARMAPS:
        from matplotlib.ft2font import FT2Font

        _CHARMAPS[path] = frozenset(FT2Font(path).get_charmap())
    return _CHARMAPS[path]


def _drawable(text: str, glyphs: frozenset[int]) -> str:
    if all(ord(c) in glyphs or c in "\n\t" for c in text):
        return text
    return "".join(c if ord(c) in glyphs or c in "\n\t" else
                   (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}") for c in text)


def _dataset_texts(artist: Any) -> Iterator[Text]:
    """The texts of ``artist`` and everything under it (as ``findobj(Text)`` finds them) but the axes' tick
    labels and offsets: matplotlib's formatters write those, with mathtext (10^3), never from a dataset.

    An axis is not asked for its ticks: ``findobj`` would (``Axis.get_children`` makes a tick for each place
    its locator gives, running the locators), ticks on text pages whose axes are never drawn, and locators run
    again where the draw runs them (about 7% of a small report's CPU).  Ticks made later, when the page is
    drawn, are matplotlib's as before."""
    from matplotlib.axis import Axis

    if isinstance(artist, Axis):
        if isinstance(artist.label, Text):  # an axis label is ours, and may name a dataset's thing
            yield artist.label
        return
    for child in artist.get_children():
        yield from _dataset_texts(child)
    if isinstance(artist, Text):
        yield artist


EMPTY_NOTE_GID = "jitterscope-empty-panel"
"""The gid of the note :func:`empty_panel_note` draws: a check finds every empty panel's explanation by it."""


def empty_panel_note(ax: Axes, message: str) -> Any:
    """A note centred on a panel that has nothing to draw, saying why ("no variation: constant input,
    n = 20,000"): an empty frame reads as a bug or a lost plot."""
    return ax.text(0.5, 0.5, "\n".join(textwrap.wrap(message, 44)), ha="center", va="center", fontsize=9,
                   color="0.25", transform=ax.transAxes, gid=EMPTY_NOTE_GID,
                   bbox={"boxstyle": "round,pad=0.5", "facecolor": "#f3f3f3", "edgecolor": "0.6"})


def plot_note(title: str, message: str, ax: Axes) -> Axes:
    """A titled, boxed explanation in place of a figure that cannot be drawn."""
    ax.set_axis_off()
    ax.set_title(title, fontsize=14, weight="bold", loc="left")
    ax.text(0.5, 0.55, "\n".join(textwrap.wrap(message, 90)), ha="center", va="center", fontsize=12,
            transform=ax.transAxes, bbox={"boxstyle": "round,pad=1.0", "facecolor": "#f3f3f3", "edgecolor": "0.5"})
    return ax


def plot_text_page(heading: str, blocks: Sequence[tuple[str, Sequence[str]]], ax: Axes, *,
                   banner: str | None = None, line_pt: float = 10.0) -> Axes:
    """Headed blocks of monospace lines (tables from :func:`tables.to_text`), top to bottom."""
    ax.set_axis_off()
    height_pt = ax.get_position().height * ax.figure.get_figheight() * 72.0
    step = line_pt / height_pt
    y = 1.0
    ax.text(0.0, y, heading, fontsize=15, weight="bold", va="top", transform=ax.transAxes)
    y -= 2.4 * step
    if banner:
        ax.text(0.0, y, banner, fontsize=14, weight="bold", color="#b00000", va="top", transform=ax.transAxes,
                bbox={"facecolor": "#ffe8e8", "edgecolor": "#b00000", "boxstyle": "square,pad=0.4"})
        y -= 3.6 * step
    for title, lines in blocks:
        if title:
            ax.text(0.0, y, title, fontsize=10, weight="bold", va="top", transform=ax.transAxes)
            y -= 1.4 * step
        ax.text(0.0, y, "\n".join(lines), fontsize=8, family=MONO, va="top", linespacing=1.25,
                transform=ax.transAxes)
        y -= (len(lines) * 1.25 * 8 / line_pt + 0.6) * step
    return ax


