"""The house style of every figure: labelled axes, colour bars, titles naming the model.

Every figure is drawn for print: the report shows each PNG at its physical size (pixel
width / the dpi stored in the PNG), on an A4 text column about 7.1 in wide. So a figure
is at most :data:`MAX_WIDTH_IN` wide and :data:`MAX_HEIGHT_IN` tall (after the tight
bounding box), every text in it is at least :data:`MIN_FONT_PT`, and every panel has a
title; ``tests/figurecheck.py`` checks a figure against these rules. A negative number
reads with the true minus sign U+2212 in every text of a figure (titles, labels, ticks,
legends, annotations): matplotlib's ``axes.unicode_minus`` in :data:`STYLE` for the
ticks it formats, :func:`number` and :func:`tick_format` for the rest.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..atomic import atomic_path  # noqa: E402
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

def seed_band(ax, frame, x: str, y: str, label: str, color=None):
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


# ---------------------------------------------------------------- letters on heatmap axes
TICK_PT = 7
# a 7 pt letter's text box is about 7.2 pt wide ("W") and 7 pt tall: the least spacing
# between two tick labels that do not overlap
TICK_SPACING_PT = 7.6

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tick_step(n: int, side_in: float, spacing_pt: float = TICK_SPACING_PT) -> int:
    """The least step k such that every k-th of ``n`` tick labels fits on a ``side_in``-inch axis."""
    return max(1, math.ceil(n * spacing_pt / (72 * side_in)))


def min_side_in(n: int, spacing_pt: float = TICK_SPACING_PT) -> float:
    """The least axis length (inches) that carries all ``n`` tick labels."""
    return n * spacing_pt / 72


# ---------------------------------------------------------------- several models side by side
# One colour per model, its seeds as a mean line and a min–max band, so that a chapter
# compares the models in one figure.
MODEL_COLOURS = plt.get_cmap("tab10")


def model_colour(k: int):
    """The colour of the ``k``-th model of a figure of several models."""
    return MODEL_COLOURS(k % 10)


def seeds_text(frame) -> str:
    """"n seed(s)" of a stacked table's rows."""
    n = frame["seed"].nunique()
    return f"{n} seed{'s' if n != 1 else ''}"
