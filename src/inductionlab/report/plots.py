"""The house style of every figure: labelled axes, colour bars, titles naming the model.

Every figure is drawn for print: the report shows each PNG at its physical size (pixel
width / the dpi stored in the PNG), on an A4 text column about 7.1 in wide. So a figure
is at most :data:`MAX_WIDTH_IN` wide and :data:`MAX_HEIGHT_IN` tall (after the tight
bounding box), every text in it is at least :data:`MIN_FONT_PT`, and every panel has a
title; :func:`legibility_problems` checks a figure against these rules. A negative number
reads with the true minus sign U+2212 in every text of a figure (titles, labels, ticks,
legends, annotations): matplotlib's ``axes.unicode_minus`` in :data:`STYLE` for the
ticks it formats, :func:`number` and :func:`tick_format` for the rest.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..atomic import atomic_path  # noqa: E402
from .labels import minus_signs  # noqa: E402
# every number a figure prints: a format spec, a true minus sign, no signed zero
from .numbers import number  # noqa: E402,F401

MAX_WIDTH_IN = 7.0   # the report's text column is 182 mm (7.17 in)
MAX_HEIGHT_IN = 9.0
MIN_FONT_PT = 7.0
DPI = 150
STYLE = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,  # stored in the PNG (pHYs): the report shows it at this size
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.04,
    "font.size": 8,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7.5,
    "figure.titlesize": 9.5,
    "lines.markersize": 4,
    "axes.unicode_minus": True,  # tick labels: −0.5, never -0.5
}
SMALL_PT = MIN_FONT_PT  # annotations, legends: the smallest text any figure uses
ATTENTION_CMAP = "viridis"
STEP_LABEL = "training step + 1 (log scale)"


def save(fig, path) -> None:
    """Save ``fig`` as PNG atomically (dpi :data:`DPI`, stored in the file) and close it."""
    with atomic_path(path, suffix=".png") as tmp, plt.rc_context(STYLE):
        fig.savefig(tmp, format="png")
    plt.close(fig)


def tick_format(spec: str = ".2f"):
    """A tick formatter (e.g. a colour bar's) printing ``spec`` with a true minus sign;
    matplotlib's "%.2f" string formats print a hyphen."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _pos: number(value, spec))


def wrap(text: str, width_in: float, fontsize: float = STYLE["axes.titlesize"]) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``fontsize`` points
    (an average character is taken as 0.55 em wide)."""
    chars = max(int(width_in * 72 / (0.55 * fontsize)), 10)
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def step_limits(steps) -> tuple[float, float]:
    """x limits (step + 1) of a log step axis spanning the checkpoints, from the first
    (step 0: 1) to the last; a single checkpoint gets a decade around it."""
    x = np.asarray(steps, dtype=float) + 1.0
    lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
    if hi <= lo:
        return lo / np.sqrt(10), hi * np.sqrt(10)
    return lo, hi


def text_colour(rgba) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba`` (relative
    luminance of the sRGB colour, WCAG)."""
    rgb = np.asarray(rgba, dtype=float)[:3]
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    luminance = float(lin @ [0.2126, 0.7152, 0.0722])
    return "white" if luminance < 0.18 else "black"


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


def png_size(path) -> tuple[float, float, float | None]:
    """(width in, height in, dpi) of a PNG from its pixel size and its pHYs chunk; dpi
    None (sizes at 72 dpi) when the file stores none."""
    import struct

    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    at, dpi = 8, None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"pHYs":
            x, _y, unit = struct.unpack(">IIB", data[at + 8:at + 17])
            if unit == 1:
                dpi = x * 0.0254
            break
        if kind == b"IDAT":
            break
        at += 12 + length
    scale = dpi or 72.0
    return width / scale, height / scale, dpi


# ---------------------------------------------------------------- shared by the figures

def _band(ax, frame, x: str, y: str, label: str, color=None):
    """Mean over seeds with a min-max band."""
    g = frame.dropna(subset=[y]).groupby(x)[y]
    mean, lo, hi = g.mean(), g.min(), g.max()
    line, = ax.plot(mean.index, mean.values, label=label, color=color)
    ax.fill_between(mean.index, lo.values, hi.values, alpha=0.25, color=line.get_color(), linewidth=0)
    return float(lo.min()), float(hi.max())


def _log_steps(ax, steps) -> None:
    """A log step axis (step + 1) from the first checkpoint (step 0: 1) to the last."""
    ax.set_xscale("log")
    ax.set_xlim(*step_limits(steps))
    ax.set_xlabel(STEP_LABEL)


def loss_limits(top: float) -> tuple[float, float]:
    """y limits of a loss: from 0 to a little above its largest value."""
    return 0.0, max(float(top), 1e-3) * 1.05


def difference_limits(lo: float, hi: float, scale: float) -> tuple[float, float]:
    """y limits of a loss difference (e.g. the ICL score): 0 and ``-scale`` (the loss at
    initialisation) always inside, so that noise around 0 is not magnified."""
    scale = max(float(scale), 1e-3)
    lo, hi = min(lo, -scale, 0.0), max(hi, 0.0)
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + 0.15 * scale
