"""Layout check of a drawn figure: every text on the canvas, no two texts on top of each other.

A figure for a paper fails quietly: a legend over the title, a tick label run off the edge, peak labels on top of
each other still save without a warning.  :func:`layout_problems` draws the figure with matplotlib's own renderer
and compares the boxes of the texts it really draws (titles, axis labels, tick labels, offsets, annotations, free
texts, legends as one box each, figure texts), so the tests can run it over every figure a report makes, at every
width it is saved at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # matplotlib loads when a figure is checked, not with the package
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

MAX_LEGEND_ENTRIES = 8
"""A legend with more entries cannot be read at a paper's width: the rest goes into "other"."""

MAX_TITLE_LINES = 2
"""A title at a paper's width holds at most this many lines: what and n, then the uncertainty; details of the
method go into the legend or the caption (a PSD title of six lines at a column's width left a panel half its
height)."""
TOLERANCE_PX = 0.5
"""Boxes that touch within this much (at the figure's dpi) do not count as overlapping: glyph boxes include the
font's line gap, so adjacent tick labels touch without any ink meeting."""


@dataclass(frozen=True)
class TextBox:
    """One drawn text and its box in display pixels."""

    what: str
    box: Bbox
    role: str = "text"
    """title, suptitle, xlabel, ylabel, tick, offset, annotation, text, legend or figtext."""
    artist: Any = None
    ax: Any = None


def text_boxes(figure: Figure) -> list[TextBox]:
    """The boxes of the texts ``figure`` draws (it is drawn first, so the layout engine has placed everything;
    not again when nothing has changed since it was last laid out: a page's legends placed, its labels checked
    next, one layout pass of a spectrum page's four is saved)."""
    from matplotlib.text import Annotation

    renderer = _renderer(figure)
    if figure.stale:  # any change to an artist marks its figure stale; a draw leaves it fresh
        figure.draw_without_rendering()
    found: list[TextBox] = []
    seen: set[int] = set()

    def add(what: str, text: Text | None, role: str, ax: Any = None) -> None:
        if text is None or id(text) in seen or not text.get_visible() or not text.get_text().strip():
            return
        if isinstance(text, Annotation) and not text._check_xy(renderer):
            return  # an annotation of a point outside the axes is not drawn
        seen.add(id(text))
        found.append(TextBox(f"{what} {text.get_text()[:40]!r}", text.get_window_extent(renderer),
                             "annotation" if isinstance(text, Annotation) else role, text, ax))

    def add_legend(where: str, legend: Legend | None, ax: Any = None) -> None:
        if legend is not None and legend.get_visible():
            labels = ", ".join(t.get_text()[:20] for t in legend.get_texts()[:3])
            found.append(TextBox(f"{where} legend [{labels}]", legend.get_window_extent(renderer), "legend",
                                 legend, ax))

    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        add("figure title", getattr(figure, name, None), "suptitle")
    for text in figure.texts:
        add("figure text", text, "figtext")
    for legend in figure.legends:
        add_legend("figure", legend)
    for number, ax in enumerate(figure.axes):
        if not ax.get_visible():
            continue
        where = f"axes {number} ({ax.get_title() or ax.get_title(loc='left') or 'untitled'}"[:50] + ")"
        for title in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            add(f"{where} title", title, "title", ax)
        if ax.axison:
            for axis_name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                if not axis.get_visible():
                    continue
                add(f"{where} {axis_name}-label", axis.label, f"{axis_name}label", ax)
                add(f"{where} {axis_name} offset", axis.offsetText, "offset", ax)
                for tick in _drawn_ticks(axis):
                    for label in (tick.label1, tick.label2):
                        add(f"{where} {axis_name} tick", label, f"{axis_name}tick", ax)
        for text in ax.texts:
            add(f"{where} text", text, "text", ax)
        add_legend(where, ax.get_legend(), ax)
    return found


def _renderer(figure: Figure) -> Any:
    """The renderer that measures ``figure``'s text (a bare Figure's canvas has none: an Agg canvas is set)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(figure.canvas, "get_renderer"):
        FigureCanvasAgg(figure)
    return figure.canvas.get_renderer()


def _drawn_ticks(axis: object) -> list[object]:
    """The ticks an axis draws: those inside its view limits (the others are kept but skipped when drawing)."""
    return list(axis._update_ticks())  # type: ignore[attr-defined]


def long_titles(figure: Figure, *, name: str = "figure", max_lines: int = MAX_TITLE_LINES) -> list[str]:
    """The titles of ``figure`` (its own and its panels') of more than ``max_lines`` lines as drawn, one problem
    each.  Checked on figures refitted to a paper's width (:func:`~.paper.fit_for_paper` wraps what is wider than
    its panel), where every line of a title takes height from the data."""
    titles = [getattr(figure, "_suptitle", None)] + [t for ax in figure.axes if ax.get_visible()
                                                     for t in (ax.title, ax._left_title, ax._right_title)]
    return [f"{name}: a title of {text.count(chr(10)) + 1} lines (at most {max_lines}): {text[:60]!r}"
            for text in (t.get_text() for t in titles if t is not None and t.get_visible())
            if text.strip() and text.count("\n") + 1 > max_lines]


def layout_problems(figure: Figure, *, name: str = "figure") -> list[str]:
    """What is wrong with ``figure``'s text layout, one line per problem (empty when none).

    * a text box (or a legend) reaching outside the canvas;
    * two text boxes overlapping (a legend counts as one box: its entries may not cover a title or labels);
    * a legend of more than :data:`MAX_LEGEND_ENTRIES` entries;
    * a legend over its panel's data, a label on a plotted mark (:func:`data_covers`).
    """
    problems = []
    boxes = text_boxes(figure)  # one layout pass for both checks
    for item, other in clashes(figure, boxes=boxes):
        if other is None and item.role == "annotation" and not _outside(item.box, figure.bbox):
            problems.append(f"{name}: {item.what} reaches past the frame of its panel")
        elif other is None:
            b = item.box
            problems.append(f"{name}: {item.what} reaches outside the canvas ({_pt(b, figure)} on "
                            f"{figure.get_figwidth() * 72:.0f} x {figure.get_figheight() * 72:.0f} pt)")
        else:
            problems.append(f"{name}: {item.what} overlaps {other.what}")
    for ax in figure.axes:
        legend = ax.get_legend()
        if legend is not None and len(legend.get_texts()) > MAX_LEGEND_ENTRIES:
            problems.append(f"{name}: a legend of {len(legend.get_texts())} entries (at most {MAX_LEGEND_ENTRIES})")
    for item, covered in data_covers(figure, boxes):
        problems.append(f"{name}: {item.what} covers {covered}")
    return problems


def data_covers(figure: Figure, boxes: list[TextBox] | None = None) -> list[tuple[TextBox, str]]:
    """The legends and labels drawn over the data of their axes, each with what it covers.

    A legend may not cover any of its panel's plotted data: a point, a bar or step outline, or any stretch of a
    line (sampled every :data:`LINE_STEP_PX`).  A label inside the panel (an annotation, a note) may not sit
    on a mark: a scatter point, a line's marker, a bar; it may cross a line (a peak's label sits by its curve).
    Reference lines across the panel (axhline) and shaded bands are not data.  The text overlap check
    (:func:`clashes`) cannot see either: the data is not text.
    """
    renderer = _renderer(figure)
    found: list[tuple[TextBox, str]] = []
    marks_of: dict[int, np.ndarray] = {}
    lines_of: dict[int, np.ndarray] = {}
    for item in text_boxes(figure) if boxes is None else boxes:
        if item.ax is None or item.role not in ("legend", "annotation", "text"):
            continue
        if item.role != "legend" and item.artist.get_gid() == _empty_note_gid():
            continue  # the note of an empty panel has no data to cover
        key = id(item.ax)
        if key not in marks_of:
            marks_of[key] = _data_points(item.ax, renderer, lines=False)
        if item.role == "legend" and key not in lines_of:  # the points along lines: legends only
            lines_of[key] = _data_points(item.ax, renderer, lines=True)
        points = marks_of[key] if item.role != "legend" else np.vstack([marks_of[key], lines_of[key]])
        box = item.box
        inside = ((points[:, 0] > box.x0 + TOLERANCE_PX) & (points[:, 0] < box.x1 - TOLERANCE_PX)
                  & (points[:, 1] > box.y0 + TOLERANCE_PX) & (points[:, 1] < box.y1 - TOLERANCE_PX))
        if inside.any():
            found.append((item, f"{int(inside.sum())} plotted data point(s) of its panel"))
    return found


LINE_STEP_PX = 2.0
"""A line is checked for a legend over it at points this far apart (display pixels) along each segment."""


def _empty_note_gid() -> str:
    from .style import EMPTY_NOTE_GID

    return EMPTY_NOTE_GID


def _data_points(ax: Any, renderer: Any, *, lines: bool, clip_top: bool = True) -> np.ndarray:
    """Display coordinates of ``ax``'s data inside its frame: the marks (scatter points, line markers, bar and
    step outlines), or with ``lines`` the points along its data lines.  ``clip_top=False`` keeps those above the
    frame too (what headroom would bring into view)."""
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.patches import Rectangle, StepPatch

    parts: list[np.ndarray] = []
    for line in ax.lines:
        if not line.get_visible() or line.get_transform() != ax.transData:
            continue  # axhline/axvline are drawn in axes coordinates: a reference, not data
        drawn = (line.get_linestyle() not in ("None", "none", "", " ") if lines
                 else line.get_marker() not in (None, "None", "none", "", " "))
        if drawn:
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            parts.append(_along(xy) if lines else xy)
    for item in ax.collections:
        if not item.get_visible():
            continue
        if isinstance(item, PathCollection) and not lines:
            offsets = np.asarray(item.get_offsets(), dtype=float)
            if offsets.size:
                parts.append(item.get_offset_transform().transform(offsets))
        elif isinstance(item, LineCollection) and lines and item.get_transform() == ax.transData:
            # vlines across the panel (a rug, transitions marked top to bottom) are references, as axvline is
            transform = item.get_transform()
            parts += [_along(transform.transform(np.asarray(s, dtype=float))) for s in item.get_segments() if len(s)]
    for patch in [] if lines else ax.patches:
        if patch.get_visible() and isinstance(patch, StepPatch | Rectangle) and patch.get_transform().contains_branch(
                ax.transData):
            if isinstance(patch, Rectangle) and not (np.isfinite(patch.get_height()) and patch.get_height()):
                continue
            parts.append(_along(patch.get_path().transformed(patch.get_transform()).vertices))
    if not parts:
        return np.empty((0, 2))
    frame = ax.get_window_extent(renderer)
    xy = np.vstack(parts)
    keep = (np.isfinite(xy).all(axis=1) & (xy[:, 0] >= frame.x0) & (xy[:, 0] <= frame.x1)
            & (xy[:, 1] >= frame.y0) & ((xy[:, 1] <= frame.y1) | (not clip_top)))
    return xy[keep]


def _along(xy: np.ndarray) -> np.ndarray:
    """Points every :data:`LINE_STEP_PX` along the polyline ``xy`` (display pixels); gaps (NaN) stay gaps."""
    if len(xy) < 2:
        return xy
    a, b = xy[:-1], xy[1:]
    ok = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    a, b = a[ok], b[ok]
    # a segment far off the frame (a log axis's clipped tail) would ask for millions of points: cap each
    steps = np.minimum(np.ceil(np.hypot(*(b - a).T) / LINE_STEP_PX), 2000).astype(int) + 1
    # t = 0, 1/(n-1), ..., 1 along each segment of n steps, for all segments at once (a periodogram has 10^5)
    first = np.repeat(np.cumsum(steps) - steps, steps)
    t = (np.arange(int(steps.sum())) - first) / np.repeat(np.maximum(steps - 1, 1), steps)
    start = np.repeat(a, steps, axis=0)
    end = np.repeat(b, steps, axis=0)
    return np.vstack([xy[np.isfinite(xy).all(axis=1)], start + (end - start) * t[:, None]])


def clashes(figure: Figure, *, data: bool = False,
            boxes: list[TextBox] | None = None) -> list[tuple[TextBox, TextBox | None]]:
    """The text boxes that reach outside the canvas (paired with None) and the pairs that overlap; with ``data``,
    also the legends and labels on their panel's data (paired with None: :func:`data_covers`).  ``boxes``: the
    figure's :func:`text_boxes`, when the caller has them (the figure unchanged since)."""
    boxes = text_boxes(figure) if boxes is None else boxes
    canvas = figure.bbox
    found: list[tuple[TextBox, TextBox | None]] = []
    for item in boxes:
        if _outside(item.box, canvas):
            found.append((item, None))
        elif item.role == "annotation" and item.ax is not None and _off_panel(item):
            found.append((item, None))  # a data label run past its panel reads as the next panel's
    if len(boxes) > 1:
        array = np.array([[b.box.x0, b.box.y0, b.box.x1, b.box.y1] for b in boxes])
        x0, y0, x1, y1 = (array[:, i] for i in range(4))
        wide = (np.minimum(x1[:, None], x1[None, :]) - np.maximum(x0[:, None], x0[None, :])) > TOLERANCE_PX
        tall = (np.minimum(y1[:, None], y1[None, :]) - np.maximum(y0[:, None], y0[None, :])) > TOLERANCE_PX
        for i, j in zip(*np.nonzero(np.triu(wide & tall, k=1)), strict=True):
            found.append((boxes[i], boxes[j]))
    if data:
        found += [(item, None) for item, _ in data_covers(figure, boxes)]
    return found


def _outside(b: Bbox, canvas: Bbox) -> bool:
    return (b.x0 < canvas.x0 - TOLERANCE_PX or b.y0 < canvas.y0 - TOLERANCE_PX
            or b.x1 > canvas.x1 + TOLERANCE_PX or b.y1 > canvas.y1 + TOLERANCE_PX)


def _off_panel(item: TextBox) -> bool:
    """Whether an annotation (a label at a data point) reaches past the frame of its axes."""
    b, frame = item.box, item.ax.get_window_extent()
    return (b.x0 < frame.x0 - TOLERANCE_PX or b.x1 > frame.x1 + TOLERANCE_PX
            or b.y0 < frame.y0 - TOLERANCE_PX or b.y1 > frame.y1 + TOLERANCE_PX)


def _pt(box: Bbox, figure: Figure) -> str:
    scale = 72.0 / figure.dpi
    return (f"x {box.x0 * scale:.1f}..{box.x1 * scale:.1f} pt, y {box.y0 * scale:.1f}..{box.y1 * scale:.1f} pt")



NARROW_IN = 5.0
"""A figure narrower than this (a 3.5 in column) gets no legend right of its axes."""


def tidy_layout(figure: Figure, *, rounds: int = 8) -> list[str]:
    """Move what collides until no text box leaves the canvas or covers another, and no legend or label covers
    its panel's data; returns what is left.

    Used when a figure is refitted to a paper's width, where a layout made for an A4 page crowds.  Each round
    draws the figure, finds the clashes (:func:`clashes`) and applies the least change for each: a legend
    goes outside its axes (right, then below the figure), an axis label or title too wide is wrapped, crowded
    tick labels are thinned, an annotation is moved off what it covers (and dropped when no place is left), an
    annotated axes gets headroom.  Nothing of the data is changed.
    """
    if figure.get_figwidth() < NARROW_IN:
        # at a column's width a legend to the right of the axes takes the room the data needs: below it
        for ax in figure.axes:
            legend = ax.get_legend()
            anchor = None if legend is None else legend.get_bbox_to_anchor()
            if anchor is not None and anchor.x0 >= ax.get_window_extent().x1 - 1:
                legend._jitterscope_stage = 1
                _move_legend(legend, ax, figure)
    for _ in range(rounds):
        found = clashes(figure, data=True)
        if not found:
            return []
        done: set[int] = set()
        for item, other in found:
            # the more movable side first: a legend or an annotation moves before a label is wrapped
            pair = sorted([item, other], key=lambda b: _MOVABLE.index(b.role) if b is not None else 0)
            for box in pair:
                if box is None or id(box.artist) in done:
                    continue
                if _fix(box, other if box is item else item, figure):
                    done.add(id(box.artist))
                    break  # one change per clash: the other side may be fine where it is
    return layout_problems(figure)


MIN_TITLE_PT = 7.0
"""The smallest a title is set when wrapping it would give it more than :data:`MAX_TITLE_LINES` lines."""

MIN_WRAP_CHARS = 18
"""The narrowest a title, label or legend entry is wrapped to: narrower, it reads one word per line."""

_MOVABLE = ("legend", "annotation", "xtick", "ytick", "xlabel", "ylabel", "title", "suptitle", "figtext", "text",
            "offset")


def _fix(box: TextBox, other: TextBox | None, figure: Figure) -> bool:
    """One change to ``box`` that may resolve its clash with ``other`` (None: it leaves the canvas)."""
    import textwrap

    role = box.role
    if role == "legend":
        if other is None and not _outside(box.box, figure.bbox) and _raise_top(box):
            return True  # a legend at the top over the data: headroom above the data, before moving the legend
        return _move_legend(box.artist, box.ax, figure)
    if other is not None and other.role == "legend" and role not in ("title", "suptitle"):
        return False  # the legend moves, not the axis
    if role in ("title", "suptitle", "xlabel", "ylabel", "figtext"):
        text = box.artist.get_text()
        lines = text.split("\n")
        longest = max(lines, key=len)
        if len(longest) < MIN_WRAP_CHARS + 4:
            return False
        # never narrower than MIN_WRAP_CHARS: halving again and again set a title one word per line
        half = max(MIN_WRAP_CHARS, (len(longest) + 1) // 2 + 2)
        # the whole text re-wrapped, not each line: wrapping lines one by one leaves a word alone on a line
        wrapped = textwrap.wrap(" ".join(lines), half)
        if role in ("title", "suptitle") and len(wrapped) > MAX_TITLE_LINES:
            # a title of more lines takes the panel's height: a point smaller instead, down to MIN_TITLE_PT
            size = box.artist.get_fontsize()
            if size - 1.0 < MIN_TITLE_PT:
                return False
            box.artist.set_fontsize(size - 1.0)
            return True
        box.artist.set_text("\n".join(wrapped))
        return True
    if role in ("xtick", "ytick"):
        if other is not None and other.role == role and other.ax is box.ax:
            return _thin_ticks(box.ax.xaxis if role == "xtick" else box.ax.yaxis)
        return False
    if role == "annotation":
        return _move_annotation(box, other)
    return False


MAX_HEADROOM_ROUNDS = 5
""":func:`tidy_layout` raises an axis's top for its legend at most this many times (then the legend moves)."""


def _raise_top(box: TextBox) -> bool:
    """Raise the y axis's top by :data:`HEADROOM` when the legend ``box`` sits in the upper half of its panel
    (a legend in the panel's top covers the data's highest values); False when it sits lower or has had its
    rounds."""
    ax = box.ax
    if ax is None or box.artist is not ax.get_legend():
        return False
    rounds = getattr(ax, "_jitterscope_headroom", 0)
    frame = ax.get_window_extent()
    if rounds >= MAX_HEADROOM_ROUNDS or (box.box.y0 + box.box.y1) / 2 < (frame.y0 + frame.y1) / 2:
        return False
    ax._jitterscope_headroom = rounds + 1
    low, high = ax.get_ylim()
    if ax.get_yscale() == "log":
        ax.set_ylim(low, high * (high / low) ** HEADROOM)
    else:
        ax.set_ylim(low, high + HEADROOM * (high - low))
    return True


def _move_legend(legend: Any, ax: Any, figure: Figure) -> bool:
    """A legend: outside its axes on the right (last column), then below (the figure's only legend, or the last
    row), then inside at matplotlib's 'best' place, smaller, its labels wrapped to the panel's width, and at a
    column's width last into the figure's one legend below all panels."""
    import textwrap

    handles, labels = legend.legend_handles, [t.get_text() for t in legend.get_texts()]
    size = legend.get_texts()[0].get_fontsize() if labels else 8
    stage = getattr(legend, "_jitterscope_stage", 0)
    if ax is None or stage >= 4:
        return False
    if stage == 3:
        # inside covered the data too (a panel full of it: a P-state trace) and at a column's width the right
        # side has no room: the legend joins the figure's one legend below everything, which the layout engine
        # makes room for
        if figure.get_figwidth() >= NARROW_IN or not _constrained(figure) or \
                len(_below_legend_labels(figure)) + len(labels) > MAX_LEGEND_ENTRIES:
            return False
        legend.remove()
        # at the size it had before it was shrunk to fit inside
        _legend_below_figure(figure, list(handles), labels, getattr(legend, "_jitterscope_size", size))
        return True
    alone = _only_legend(figure)
    legend.remove()
    last_col, last_row = _grid_edges(ax)
    if stage == 0 and (_has_twin(ax, figure) or not last_col or figure.get_figwidth() < NARROW_IN):
        # the right side holds the twin axis's ticks or the next panel; at a column's width a legend there
        # squeezes the data to a strip a third of the column wide
        stage = 1
    if stage == 1 and not alone and not last_row:
        stage = 2  # below is the next row's title
    if stage == 0:
        new = ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                        fontsize=size, ncols=1)
    elif stage == 1 and alone:
        # below everything, in the figure's margin: the layout engine makes room for it under the axis labels
        _legend_below_figure(figure, list(handles), labels, size)
        return True
    elif stage == 1:
        renderer = _renderer(figure)
        figure.draw_without_rendering()
        below = ax.get_tightbbox(renderer).y0
        frame = ax.get_window_extent(renderer)
        new = ax.legend(handles, labels, loc="upper center", borderaxespad=0.0, fontsize=size,
                        bbox_to_anchor=(0.5, (below - frame.y0) / max(frame.height, 1.0) - 0.02),
                        ncols=_legend_columns(labels, figure, ax))
    else:  # inside, where it covers the least data, smaller, its labels wrapped to the panel's width
        small = max(6.0, size - 1.5)
        chars = max(MIN_WRAP_CHARS, int(ax.get_position().width * figure.get_figwidth() * 72 * 0.6 / (0.6 * small)) - 4)
        new = ax.legend(handles, ["\n".join(textwrap.wrap(label, chars)) or label for label in labels], loc="best",
                        fontsize=small, ncols=1, handlelength=1.2, labelspacing=0.2, framealpha=0.8)
    new._jitterscope_stage = stage + 1
    new._jitterscope_size = size
    return True


def _constrained(figure: Figure) -> bool:
    engine = figure.get_layout_engine()
    return engine is not None and type(engine).__name__ == "ConstrainedLayoutEngine"


def _below_legend(figure: Figure) -> Any:
    return next((lg for lg in figure.legends if getattr(lg, "_jitterscope_below", False)), None)


def _below_legend_labels(figure: Figure) -> list[str]:
    old = _below_legend(figure)
    return [] if old is None else [t.get_text() for t in old.get_texts()]


def _legend_below_figure(figure: Figure, handles: list[Any], labels: list[str], size: float) -> None:
    """Entries into the figure's one legend below all panels (made, or extended: two panels' legends there are
    one legend, not two stacked), labels wrapped to the figure's width, the figure taller by the lines they
    add."""
    import textwrap

    old = _below_legend(figure)
    old_lines = 0
    if old is not None:
        handles = list(old.legend_handles) + handles
        labels = [t.get_text() for t in old.get_texts()] + labels
        old_lines = old._jitterscope_lines
        old.remove()
    columns = _legend_columns(labels, figure)
    # 0.55 em a glyph, the handle and padding: a label longer than its column's room wraps instead of leaving
    # the canvas
    chars = max(MIN_WRAP_CHARS, int(figure.get_figwidth() * 72 / columns / (0.55 * size)) - 8)
    labels = ["\n".join(textwrap.wrap(label.replace("\n", " "), chars)) or label for label in labels]
    lines = sum(max(labels[i].count("\n") + 1 for i in range(start, min(start + columns, len(labels))))
                for start in range(0, len(labels), columns))
    width, height = figure.get_size_inches()
    figure.set_size_inches(width, height + (lines - old_lines) * size * 1.3 / 72 + (0.1 if old is None else 0.0))
    new = figure.legend(handles, labels, loc="outside lower center", fontsize=size, ncols=columns)
    new._jitterscope_below = True  # what _below_legend finds
    new._jitterscope_lines = lines  # the height it added, taken off again when it is remade with more entries


def _grid_edges(ax: Any) -> tuple[bool, bool]:
    """Whether ``ax`` is in the last column and in the last row of its grid (True, True when not in a grid)."""
    spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
    if spec is None:
        return True, True
    grid = spec.get_gridspec()
    return spec.colspan.stop == grid.ncols, spec.rowspan.stop == grid.nrows


def _has_twin(ax: Any, figure: Figure) -> bool:
    """Whether another axes of ``figure`` shares ``ax``'s frame (twinx/twiny): its ticks sit beside it."""
    box = ax.get_position().bounds
    return any(other is not ax and other.get_position().bounds == box for other in figure.axes)


def _legend_columns(labels: list[str], figure: Figure, ax: Any = None) -> int:
    """Columns of a legend set across the figure (or under ``ax``): as many as its longest label fits, at most 3."""
    longest_in = max((len(label) for label in labels), default=1) * 0.075 + 0.5  # 8 pt glyphs, the handle
    room = figure.get_figwidth() if ax is None else ax.get_position().width * figure.get_figwidth()
    return max(1, min(len(labels), 3, int(room * 0.9 / longest_in)))


def _only_legend(figure: Figure) -> bool:
    """Whether ``figure`` has one legend in all (that one can become the figure's, below everything)."""
    return _constrained(figure) and not figure.legends and sum(ax.get_legend() is not None for ax in figure.axes) == 1


def _thin_ticks(axis: Any) -> bool:
    """Half as many labelled ticks: minor labels off first (log axes), then fewer major ticks."""
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

    if not isinstance(axis.get_minor_formatter(), NullFormatter) and any(
            t.label1.get_text() for t in axis.get_minor_ticks()):
        axis.set_minor_formatter(NullFormatter())
        return True
    shown = len([t for t in _drawn_ticks(axis) if t.label1.get_text()])
    if shown <= 3:  # as few ticks as can be: smaller labels
        size = axis.get_ticklabels()[0].get_fontsize() if axis.get_ticklabels() else 8.0
        if size <= 6.0:
            return False
        axis.set_tick_params(labelsize=size - 1.0)
        return True
    if axis.get_scale() == "log":
        axis.set_major_locator(LogLocator(numticks=max(2, shown // 2)))
    elif axis.get_scale() == "symlog":
        # linear then logarithmic (render.linear_then_log_axis): every other tick outward from zero, zero kept;
        # a locator for one kind of scale would put all its ticks in one part
        from matplotlib.ticker import FixedLocator
        ticks = np.asarray(axis.get_majorticklocs(), dtype=float)
        sizes = np.unique(np.abs(ticks[ticks != 0]))  # both signs of a size kept or dropped together
        kept = [t for t in ticks if t == 0 or np.searchsorted(sizes, abs(t)) % 2 == 1]
        axis.set_major_locator(FixedLocator(kept or list(ticks[:1])))
    else:
        # the steps of a paper's axis (1, 2, 2.5, 5): matplotlib's default 1.5 left a 2 s run at "0.0, 1.5"
        axis.set_major_locator(MaxNLocator(nbins=max(1, shown // 2), steps=[1, 2, 2.5, 5, 10]))
    return True


def _move_annotation(box: TextBox, other: TextBox | None) -> bool:
    """An annotation: below its point instead of above, then left of it; dropped when neither place is free."""
    text = box.artist
    tries = getattr(text, "_jitterscope_tries", 0)
    text._jitterscope_tries = tries + 1
    if other is not None and other.role in ("title", "suptitle") and tries == 0 and box.ax is not None:
        low, high = box.ax.get_ylim()  # room above the highest point, under the title
        if box.ax.get_yscale() == "log":
            box.ax.set_ylim(low, high * 3.0)
        else:
            box.ax.set_ylim(low, high + 0.15 * (high - low))
        return True
    if tries < 2:
        x, y = text.xyann if hasattr(text, "xyann") else (0.0, 0.0)
        text.xyann = (x, -abs(y) - 10) if tries == 0 else (-abs(x) - 4, y)
        if tries == 1:
            text.set_horizontalalignment("right")
        return True
    text.set_visible(False)  # two labels in one place read as neither
    return True


HEADROOM = 0.25
"""Each round of :func:`legend_off_data` raises the top of the y axis by this share of its span (decades on a
log axis)."""


def legend_off_data(ax: Any, *, rounds: int = 6) -> bool:
    """Room above the data of ``ax`` for its legend (placed at the top): the y axis's top is raised until the
    legend covers none of the panel's data (:func:`data_covers`), at most ``rounds`` times.  Call it once the
    figure is complete: the layout decides the panel's size.  Returns whether the legend is clear."""
    return legends_off_data(ax.figure, [ax], rounds=rounds) == []


def legends_off_data(figure: Figure, axes: Any = None, *, rounds: int = 6, hold: bool = False) -> list[Any]:
    """:func:`legend_off_data` for each of ``axes`` with a legend (default: every panel of ``figure``), one
    after another; returns the panels whose legend is still on their data.

    A check needs the panels where the layout engine puts them, not a drawn figure: each pass runs only the
    layout (a draw without rendering also walks every artist: about 40 % of a spectrum page's pass), and is
    reused while nothing has changed since.  A covered legend's panel is raised, in one step, by the larger of
    :data:`HEADROOM` and the headroom that moves every point in the legend's columns below it
    (:func:`_headroom_top`), so a legend that needs much headroom gets it in one pass, not one 25 % at a time;
    a further pass confirms it, as the new tick labels may shift the panel.  The top is raised at most as far as
    ``rounds`` raises of :data:`HEADROOM` would take it: a legend that needs more stays where it is, and its
    panel is returned.

    ``hold``: the panels stay where the last pass put them (laid out once more if anything changed after it),
    and the figure's layout engine is set aside (``set_layout_engine("none")``), so that the draw that follows
    does not lay out again what was just laid out: a spectrum page's last layout pass, 0.1-0.15 s of CPU.  The
    caller puts the engine back before the figure changes or is resized.
    """
    renderer = _renderer(figure)
    stale = True
    failed = []
    for ax in figure.axes if axes is None else axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        low, high = ax.get_ylim()
        log = ax.get_yscale() == "log"
        most = _raised_top(low, high, (1.0 + HEADROOM) ** rounds, log=log)  # the headroom rounds of HEADROOM give
        for _ in range(rounds + 1):
            if stale:
                _lay_out(figure)
                stale = False
            if not _legend_covers(ax, legend, renderer):
                break
            current = ax.get_ylim()[1]
            if current >= most:
                failed.append(ax)
                break
            top = max(_headroom_top(ax, legend, renderer), _raised_top(low, current, 1.0 + HEADROOM, log=log))
            ax.set_ylim(low, min(top, most))
            stale = True
        else:
            failed.append(ax)
    if hold:
        if stale:
            _lay_out(figure)
        figure.set_layout_engine("none")
    return failed


def _lay_out(figure: Figure) -> None:
    """Put ``figure``'s panels where its layout engine places them (what a draw does first, without the draw)."""
    engine = figure.get_layout_engine()
    if engine is not None:
        engine.execute(figure)


def _raised_top(low: float, high: float, factor: float, *, log: bool) -> float:
    """The top of a y axis from ``low`` to ``high`` whose span (in decades on a log axis) is ``factor`` times
    longer."""
    if log:
        return low * (high / low) ** factor
    return low + factor * (high - low)


def _headroom_top(ax: Any, legend: Legend, renderer: Any) -> float:
    """The top of ``ax``'s y axis (its bottom kept) that puts every data point in the legend's columns below the
    legend's bottom edge, with a few pixels and 5 % to spare for the layout's change with the new ticks.

    On the panel's scale (decades on a log axis) a point at height ``a`` (a share of the panel's height from its
    bottom) moves to ``a * old / new`` when the span grows from ``old`` to ``new``; so the span must grow by the
    largest ``a`` over the share of the panel under the legend.
    """
    box = legend.get_window_extent(renderer)
    frame = ax.get_window_extent(renderer)
    points = np.vstack([_data_points(ax, renderer, lines=False, clip_top=False),
                        _data_points(ax, renderer, lines=True, clip_top=False)])
    columns = (points[:, 0] > box.x0 + TOLERANCE_PX) & (points[:, 0] < box.x1 - TOLERANCE_PX)
    heights = (points[columns, 1] - frame.y0) / max(frame.height, 1.0)
    room = (box.y0 - 3.0 - frame.y0) / max(frame.height, 1.0)
    low, high = ax.get_ylim()
    if not len(heights) or room <= 0.05:
        return high  # nothing to go by: the caller's fixed raise
    return _raised_top(low, high, max(1.0, float(heights.max()) / room * 1.05), log=ax.get_yscale() == "log")


def _legend_covers(ax: Any, legend: Legend, renderer: Any) -> bool:
    """Whether ``legend`` covers any data of ``ax`` (as :func:`data_covers` finds it), on the figure as last drawn."""
    if not (legend.get_visible() and ax.get_visible()):
        return False
    box = legend.get_window_extent(renderer)
    points = np.vstack([_data_points(ax, renderer, lines=False), _data_points(ax, renderer, lines=True)])
    inside = ((points[:, 0] > box.x0 + TOLERANCE_PX) & (points[:, 0] < box.x1 - TOLERANCE_PX)
              & (points[:, 1] > box.y0 + TOLERANCE_PX) & (points[:, 1] < box.y1 - TOLERANCE_PX))
    return bool(inside.any())
