"""Checks on drawn figures shared by the figure tests: does a figure read at print size
(the house style of :mod:`inductionlab.formatting.plots`)."""
import re

from inductionlab.formatting.labels import minus_signs
from inductionlab.formatting.plots import MAX_HEIGHT_IN, MAX_WIDTH_IN, MIN_FONT_PT, STYLE


def _drawn_tick_labels(axis) -> list:
    try:
        ticks = axis._update_ticks()  # the ticks inside the view limits, as drawn
    except AttributeError:  # pragma: no cover - other matplotlib versions
        ticks = axis.get_major_ticks()
    return [t for tick in ticks for t in (tick.label1, tick.label2)
            if t.get_visible() and t.get_text().strip()]


_MATHTEXT = re.compile(r"(?<!\\)\$.*?(?<!\\)\$")


def _is_colorbar(ax) -> bool:
    return getattr(ax, "_colorbar", None) is not None


def legibility_problems(fig, min_pt: float = MIN_FONT_PT, max_width: float = MAX_WIDTH_IN,
                        max_height: float = MAX_HEIGHT_IN, axis_labels: bool = True) -> list[str]:
    """Why ``fig`` would not read at print size; empty when it does.

    Checks: the figure (``figsize`` and the tight bounding box it is saved with) is at
    most ``max_width`` x ``max_height`` inches; every visible, non-empty text is at least
    ``min_pt`` points and prints a negative number with a true minus sign (U+2212; a
    hyphen-minus before a digit outside mathtext is a problem); every Axes that shows data
    has a title (colour bars: a label); with ``axis_labels``, every axis that shows tick
    labels has a label; no title, axis label or tick label overlaps another of them or
    another Axes (a title running into a colour bar, say).
    """
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    problems = []
    w, h = fig.get_size_inches()
    if w > max_width + 1e-6 or h > max_height + 1e-6:
        problems.append(f"figsize {w:.2f} x {h:.2f} in exceeds {max_width} x {max_height} in")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pad = STYLE["savefig.pad_inches"]
    tight = fig.get_tightbbox(renderer)
    tw, th = tight.width + 2 * pad, tight.height + 2 * pad
    if tw > max_width + 1e-6 or th > max_height + 1e-6:
        problems.append(f"saved (bbox tight) {tw:.2f} x {th:.2f} in exceeds "
                        f"{max_width} x {max_height} in")
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        if t.get_fontsize() < min_pt - 1e-6:
            problems.append(f"{t.get_fontsize():.1f} pt text {t.get_text()[:40]!r}")
        plain = _MATHTEXT.sub("", t.get_text())  # mathtext draws its "-" as a minus sign
        if minus_signs(plain) != plain:
            problems.append(f"hyphen for a minus sign in text {t.get_text()[:40]!r}")
    # titles, labels and tick labels: each with the Axes it belongs to (None: the figure)
    framed = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        titles = [ax.title, ax._left_title, ax._right_title]
        if _is_colorbar(ax):
            if not (ax.get_xlabel().strip() or ax.get_ylabel().strip()):
                problems.append("colour bar without a label")
        elif ax.has_data() and ax.axison is not False:
            if not any(t.get_text().strip() for t in titles):
                problems.append(f"panel without a title (axis labels {ax.get_xlabel()!r}, "
                                f"{ax.get_ylabel()!r})")
            if axis_labels:
                for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
                    if _drawn_tick_labels(axis) and not axis.label.get_text().strip():
                        problems.append(f"{name} axis without a label in panel "
                                        f"{ax.get_title()[:40]!r}")
        texts = titles + [ax.xaxis.label, ax.yaxis.label]
        texts += _drawn_tick_labels(ax.xaxis) + _drawn_tick_labels(ax.yaxis)
        framed += [(t, ax) for t in texts if t.get_visible() and t.get_text().strip()]
    figures = [fig]
    while figures:
        f = figures.pop()
        figures += list(f.subfigs)
        for t in (f._suptitle, f._supxlabel, f._supylabel):
            if t is not None and t.get_visible() and t.get_text().strip():
                framed.append((t, None))
    shrink = lambda b: Bbox.from_extents(b.x0 + 1, b.y0 + 1, b.x1 - 1, b.y1 - 1)  # noqa: E731
    boxes = [shrink(t.get_window_extent(renderer)) for t, _ in framed]
    for i, (t, owner) in enumerate(framed):
        for j in range(i + 1, len(framed)):
            if framed[j][0] is not t and boxes[i].overlaps(boxes[j]):
                problems.append(f"text {t.get_text()[:30]!r} overlaps "
                                f"{framed[j][0].get_text()[:30]!r}")
        for ax in fig.axes:
            if ax is owner or not ax.get_visible():
                continue
            if shrink(ax.get_window_extent(renderer)).overlaps(boxes[i]):
                problems.append(f"text {t.get_text()[:30]!r} runs into another panel "
                                f"{ax.get_title()[:30] or ax.get_label()!r}")
    return problems
