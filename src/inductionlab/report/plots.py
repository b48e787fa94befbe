"""Figures, in one consistent style: labelled axes, colour bars, titles naming the model.

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
from .labels import ABLATION_WORDS, ablation_words, minus_signs  # noqa: E402,F401

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


def number(value: float, spec: str = ".2f") -> str:
    """``value`` formatted by ``spec`` with a true minus sign: number(-0.25) -> "−0.25"."""
    return minus_signs(format(value, spec))


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


# ---------------------------------------------------------------- across seeds

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


def training_curves(log, title: str, floor: float | None = None):
    """Validation losses and predictable accuracy against step, mean and min-max over seeds."""
    n = log["seed"].nunique()
    log = log.assign(step1=log["step"] + 1)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 2.9), constrained_layout=True)
        ax = axes[0]
        _, top1 = _band(ax, log, "step1", "val_loss_all", "all targets")
        _, top2 = _band(ax, log, "step1", "val_loss_pred", "predictable targets")
        if floor is not None:
            ax.axhline(floor, color="grey", ls=":", lw=1, label=f"floor, all targets ({floor:.3f})")
        ax.set_ylim(*loss_limits(max(top1, top2)))
        ax.set_ylabel("validation loss (nats)")
        ax.set_title("validation loss")
        ax.legend(loc="best")
        ax = axes[1]
        _band(ax, log, "step1", "val_acc_pred", "predictable targets", color="tab:green")
        ax.set_ylim(0, 1)
        ax.set_ylabel("argmax accuracy")
        ax.set_title("validation accuracy, predictable targets")
        for ax in axes:
            _log_steps(ax, log["step"])
        fig.suptitle(wrap(f"{title}: training curves, mean over {n} seed(s), band = min–max",
                          MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


def _unit_circle_panel(ax, title: str) -> None:
    from matplotlib.patches import Circle

    ax.add_patch(Circle((0, 0), 1, fill=False, ls="--", lw=0.8, color="grey"))
    ax.text(0.74, 0.74, "|λ| = largest", color="grey", fontsize=SMALL_PT, rotation=-45,
            ha="center", va="center")
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlim(-1.12, 1.12)
    ax.set_ylim(-1.12, 1.12)
    ax.set_aspect("equal")
    ax.set_xticks([-1, -0.5, 0, 0.5, 1])
    ax.set_yticks([-1, -0.5, 0, 0.5, 1])
    ax.set_title(title)
    ax.set_xlabel("Re λ / max |λ|")
    ax.set_ylabel("Im λ / max |λ|")


def _scatter_spectrum(ax, lam, **kwargs) -> None:
    """The nonzero eigenvalues ``lam``, divided by the largest |λ|."""
    lam = np.asarray(lam)
    top = np.abs(lam).max() if lam.size else 0.0
    if top <= 0:
        return
    lam = lam[np.abs(lam) > 1e-9 * top] / top
    ax.scatter(lam.real, lam.imag, s=18, alpha=0.75, linewidths=0, **kwargs)


def spectra_figure(spectra_by_seed: dict[int, dict], title: str):
    """Eigenvalues in the complex plane, each circuit's divided by its largest |λ| (so
    the dashed unit circle is the largest): direct path and each layer's OV sum for
    every seed (one colour per seed), and every head's OV circuit for the first seed."""
    from matplotlib.lines import Line2D

    seeds = sorted(spectra_by_seed)
    first = spectra_by_seed[seeds[0]]
    n_layers = sum(k.startswith("ov_sum_L") for k in first)
    seed_colour = {s: plt.get_cmap("tab10")(k % 10) for k, s in enumerate(seeds)}
    panels = [("direct path W_E W_U", "direct")]
    panels += [(f"layer {l}: OV circuit, sum of heads", f"ov_sum_L{l}") for l in range(n_layers)]
    heads = sorted((k for k in first if k.startswith("ov_L")),
                   key=lambda k: tuple(int(x) for x in k[4:].split("H")))
    n_panels = len(panels) + 1
    n_cols = 2
    n_rows = -(-n_panels // n_cols)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(MAX_WIDTH_IN, min(3.3 * n_rows + 0.9, MAX_HEIGHT_IN)),
                                 constrained_layout=True, squeeze=False)
        axes = axes.ravel()
        for ax, (name, key) in zip(axes, panels):
            for s in seeds:
                _scatter_spectrum(ax, spectra_by_seed[s][key], color=seed_colour[s])
            _unit_circle_panel(ax, f"{name} (all seeds)")
        ax = axes[len(panels)]
        markers = "o^sDvP"
        for k in heads:
            l, h = (int(x) for x in k[4:].split("H"))
            _scatter_spectrum(ax, first[k], color=plt.get_cmap("Dark2")(h % 8),
                              marker=markers[l % len(markers)], label=f"L{l}H{h}")
        _unit_circle_panel(ax, f"OV circuit of each head (seed {seeds[0]})")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, markerscale=1.2,
                  handletextpad=0.2, columnspacing=0.8)
        seed_handles = [Line2D([], [], ls="", marker="o", color=seed_colour[s], label=f"seed {s}")
                        for s in seeds]
        if n_panels < len(axes):  # the empty slot holds the seed legend
            spare = axes[-1]
            spare.axis("off")
            spare.legend(handles=seed_handles, loc="center", title="colour = seed")
        else:
            fig.legend(handles=seed_handles, loc="outside lower center", ncol=min(len(seeds), 6),
                       title="colour = seed (panels marked all seeds)")
        fig.suptitle(wrap(f"{title}: nonzero eigenvalues of token-space circuits, each divided "
                          "by its largest |λ|", MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


COMPOSITION_MEASURES = (("positivity_real", "RdBu_r", "eigenvalue positivity", "positivity"),
                        ("score_minus_baseline", "PuOr_r", "composition score − baseline",
                         "score − base"))


def composition_figure(comp, title: str, seed: int):
    """K/Q/V composition of one seed: term positivity and score minus baseline per head
    pair, one row per measure and layer pair, one colour scale per row."""
    from matplotlib.colors import Normalize

    comp = comp[comp["seed"] == seed]
    kinds = ["K", "Q", "V"]
    pairs = comp[["layer", "src_layer"]].drop_duplicates().values.tolist()
    rows = [(l2, l1, m) for l2, l1 in pairs for m in COMPOSITION_MEASURES]
    panel = max(min(1.75, (MAX_HEIGHT_IN - 0.6) / max(len(rows), 1) - 0.75), 0.8)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(rows), 3, figsize=(MAX_WIDTH_IN, len(rows) * (panel + 0.75) + 0.6),
                                 constrained_layout=True, squeeze=False)
        for r, (l2, l1, (col, cmap, long_label, short_label)) in enumerate(rows):
            part = comp[(comp["layer"] == l2) & (comp["src_layer"] == l1)]
            grids = [part[part["kind"] == kind].pivot(index="src_head", columns="head", values=col)
                     for kind in kinds]
            if col == "positivity_real":
                vmax = 1.0
            else:
                vmax = max(max((np.nanmax(np.abs(g.values)) for g in grids if g.size), default=0), 1e-6)
            norm = Normalize(-vmax, vmax)
            for c, (kind, grid) in enumerate(zip(kinds, grids)):
                ax = axes[r, c]
                im = ax.imshow(grid.values, cmap=cmap, norm=norm)
                cell = panel / max(grid.shape + (1,))
                if cell >= 0.3:
                    for (i, j), v in np.ndenumerate(grid.values):
                        label = "0.00" if round(v, 2) == 0 else number(v, "+.2f")
                        ax.text(j, i, label, ha="center", va="center",
                                fontsize=SMALL_PT, color=text_colour(im.cmap(norm(v))))
                ax.set_xticks(range(grid.shape[1]), [f"L{l2}H{h}" for h in grid.columns])
                ax.set_yticks(range(grid.shape[0]), [f"L{l1}H{p}" for p in grid.index])
                ax.set_xlabel("later head (reads)")
                if c == 0:
                    ax.set_ylabel("earlier head (writes)")
                else:
                    ax.tick_params(labelleft=False)
                ax.set_title(f"{kind}-comp.: {short_label}")
            fig.colorbar(im, ax=axes[r, :], shrink=0.9, format=tick_format(".2f"),
                         label=wrap(long_label, 1.8, STYLE["axes.labelsize"]))
        fig.suptitle(wrap(f"{title}: composition between layers (seed {seed}); cells: earlier "
                          "head (row) writes, later head (column) reads",
                          MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


def failure_chart(failures, title: str, top: int = 15):
    """The patterns with the largest error mass (probability x error rate), mean and min-max over seeds."""
    g = failures.groupby("pattern")
    stats = g.agg(mass=("error_mass", "mean"), lo=("error_mass", "min"), hi=("error_mass", "max"),
                  acc=("teacher_forced_acc", "mean"), prob=("probability", "first"))
    stats = stats.sort_values("mass", ascending=False).head(top)[::-1]
    n = failures["seed"].nunique() if "seed" in failures else 1
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, min(0.22 * len(stats) + 1.4, MAX_HEIGHT_IN)),
                               constrained_layout=True)
        y = np.arange(len(stats))
        ax.barh(y, stats["mass"], xerr=[stats["mass"] - stats["lo"], stats["hi"] - stats["mass"]],
                color="tab:red", alpha=0.7, capsize=2)
        ax.set_yticks(y, [f"{p}  p={pr:.3g}  acc {a:.2f}" for p, pr, a in
                          zip(stats.index, stats["prob"], stats["acc"])], fontfamily="monospace")
        ax.set_xlim(left=0)
        ax.set_xlabel("error mass = pattern probability × teacher-forced error rate")
        ax.set_ylabel("block pattern, its probability and accuracy")
        ax.set_title(f"the {len(stats)} costliest block patterns")
        fig.suptitle(wrap(f"{title}: block patterns with the largest error mass (mean over "
                          f"{n} seed(s), whiskers min–max)", MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


PER_HEAD_ABLATIONS = {
    "zero_heads": "zero a layer-{layer} head",
    "mean_heads": "mean-ablate a layer-{layer} head",
    "zero_heads_frozen_patterns": "zero a layer-{layer} head, patterns frozen",
    "remove_head_from_keys": "layer-{layer} keys minus a layer-{source_layer} head",
    "remove_head_from_queries": "layer-{layer} queries minus a layer-{source_layer} head",
}
METRIC_WORDS = {"loss_all": "loss on all targets", "loss_pred": "loss on predictable targets",
                "acc_pred": "accuracy on predictable targets", "suite_acc": "prompt-suite accuracy"}


def _rank_label(rank: int) -> str:
    return "#1 (largest)" if rank == 1 else f"#{rank}"


def ranked_ablations(ablations, metric: str = "loss_all"):
    """One row per ablation and seed that ran, labelled in words: head-agnostic
    ablations by name; per-head ones (:data:`PER_HEAD_ABLATIONS`) ranked within each
    seed and group (kind, layer, source layer) by effect (largest loss first; for a
    score, lowest first), labelled "<group>: #1 (largest)", "<group>: #2", ….

    Columns: seed, label, value, per_head (bool), rank (0 for head-agnostic), order.
    """
    import pandas as pd

    ran = ablations[(ablations["status"] == "ok") & ablations[metric].notna()].copy()
    ran["order"] = np.arange(len(ran))
    whole = ran[~ran["kind"].isin(list(PER_HEAD_ABLATIONS))]
    rows = [pd.DataFrame({"seed": whole["seed"], "label": whole["ablation"].map(ablation_words),
                          "value": whole[metric], "per_head": False, "rank": 0,
                          "order": whole.groupby("ablation", sort=False)["order"].transform("min")})]
    heads = ran[ran["kind"].isin(list(PER_HEAD_ABLATIONS))].copy()
    if len(heads):
        def group(r):
            src = r["source_layer"]
            return PER_HEAD_ABLATIONS[r["kind"]].format(
                layer=int(r["layer"]), source_layer="?" if pd.isna(src) else int(src))

        heads["group"] = heads.apply(group, axis=1)
        heads["order"] = heads.groupby("group", sort=False)["order"].transform("min")
        larger_is_worse = metric.startswith("loss")
        heads["rank"] = (heads.groupby(["seed", "group"])[metric]
                         .rank(ascending=not larger_is_worse, method="first").astype(int))
        rows.append(pd.DataFrame({"seed": heads["seed"],
                                  "label": heads["group"] + ": " + heads["rank"].map(_rank_label),
                                  "value": heads[metric], "per_head": True, "rank": heads["rank"],
                                  "order": heads["order"]}))
    return pd.concat(rows, ignore_index=True)


def ablation_bars(ablations, title: str, metric: str = "loss_all"):
    """Loss under every ablation that ran: mean over seeds, whiskers min-max, baseline dashed.

    Head-agnostic ablations are averaged by name; per-head ones by their rank within
    each seed (:func:`ranked_ablations`), since head numbers differ between seeds.
    """
    from matplotlib.patches import Patch

    ranked = ranked_ablations(ablations, metric)
    n_seeds = ranked["seed"].nunique()
    row_in, fixed_in = 0.19, 1.7
    max_rows = int((MAX_HEIGHT_IN - fixed_in) / 0.145)
    top_rank = full_rank = int(ranked["rank"].max()) if len(ranked) else 0
    while top_rank > 1 and ranked.groupby("label").ngroups > max_rows:
        top_rank -= 1
        ranked = ranked[ranked["rank"] <= top_rank]
    stats = (ranked.groupby(["order", "rank", "label", "per_head"], sort=True)["value"]
             .agg(["mean", "min", "max"]).reset_index())
    baseline = ranked.loc[ranked["label"] == ablation_words("baseline"), "value"].mean()
    n = len(stats)
    height = min(row_in * n + fixed_in, MAX_HEIGHT_IN)
    what = METRIC_WORDS.get(metric, metric.replace("_", " "))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, height), constrained_layout=True)
        y = np.arange(n)[::-1]
        colours = np.where(stats["per_head"], "tab:orange", "tab:blue")
        ax.barh(y, stats["mean"], xerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                color=colours, alpha=0.75, capsize=2, height=0.7)
        ax.set_yticks(y, stats["label"])
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlim(left=0)
        handles = [Patch(color="tab:blue", alpha=0.75, label="whole-path ablation (same in every seed)")]
        if stats["per_head"].any():
            handles.append(Patch(color="tab:orange", alpha=0.75,
                                 label="one head, ranked within each seed by effect"))
        if not np.isnan(baseline):
            handles.append(ax.axvline(baseline, color="black", ls="--", lw=1,
                                      label=f"no ablation ({baseline:.3f})"))
        fig.legend(handles=handles, loc="outside lower center", ncol=2)
        ax.set_xlabel(f"{what}{' (nats)' if metric.startswith('loss') else ''} under the ablation")
        ax.set_ylabel("ablation")
        ranked_note = ("; single-head ablations ranked within each seed by effect, #1 = the "
                       "largest (head numbers differ between seeds, so heads are not averaged "
                       "by index)" + (f", top {top_rank} per group" if top_rank < full_rank else "")
                       if stats["per_head"].any() else "")
        ax.set_title(f"{what} per ablation")
        fig.suptitle(wrap(f"{title}: {what} under each ablation, mean over {n_seeds} seed(s), "
                          f"whiskers min–max{ranked_note}", MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


# the ablated_attention rows: ablation name prefix -> the row's title, in words
PATTERN_ROW_WORDS = {
    "baseline": "layer {l} of the clean model",
    "qk_from_embedding": "layer {l}, queries and keys from the embedding (no K- or Q-composition)",
    "plus_k": "layer {l}, + keys from the residual (K-composition on, Q off)",
    "plus_q": "layer {l}, + queries from the residual (Q-composition on, K off)",
    "qk_full": "layer {l}, queries and keys from the residual (= the clean model)",
}


def pattern_row_words(name: str, layer: int) -> str:
    prefix = name if name == "baseline" else name.rpartition("_L")[0]
    return PATTERN_ROW_WORDS.get(prefix, f"layer {{l}}, {name.replace('_', ' ')}").format(l=layer)


def ablated_patterns(npz_path, rows: list[tuple[str, int]], title: str):
    """Mean attention of one model's heads: one row per (ablation, layer), one panel per head.

    Rows whose ablation was not saved (it did not run on this model) are left out.
    Each row is titled in words; one colour bar (attention weight, 0–1) below.
    """
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    with np.load(npz_path, allow_pickle=False) as f:
        present = [(n, l) for n, l in rows if n in f.files]
        patterns = {(n, l): f[n][l] for n, l in present}
    if not present:
        raise ValueError(f"{npz_path}: none of the ablations {[n for n, _ in rows]} were saved")
    n_heads = patterns[present[0]].shape[0]
    layers = sorted({l for _, l in present})
    n_rows = len(present)
    # inches: per row the row title, panel titles and tick labels; below the last row
    # the x labels; the colour bar; the suptitle
    row_extra, last_extra, bar_in, title_in = 0.55, 0.3, 0.6, 0.35
    panel = max(min(1.45, (MAX_WIDTH_IN - 0.75) / n_heads - 0.1,
                    (MAX_HEIGHT_IN - 0.1 - last_extra - bar_in - title_in) / n_rows - row_extra), 0.6)
    heights = [panel + row_extra] * n_rows
    heights[-1] += last_extra
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(MAX_WIDTH_IN, sum(heights) + bar_in + title_in),
                         layout="constrained")
        subs = fig.subfigures(n_rows + 1, 1, height_ratios=heights + [bar_in])
        for r, (name, layer) in enumerate(present):
            sub = subs[r]
            axes = sub.subplots(1, n_heads, squeeze=False)[0]
            last = r == n_rows - 1
            for h in range(n_heads):
                ax = axes[h]
                ax.imshow(patterns[name, layer][h], cmap=ATTENTION_CMAP, vmin=0, vmax=1,
                          interpolation="nearest", aspect="auto")
                ax.set_title(f"L{layer}H{h}")
                if last:
                    ax.set_xlabel("key position")
                else:
                    ax.tick_params(labelbottom=False)
                if h == 0:
                    ax.set_ylabel("query position")
                else:
                    ax.tick_params(labelleft=False)
            sub.suptitle(wrap(pattern_row_words(name, layer), MAX_WIDTH_IN - 0.3,
                              STYLE["axes.titlesize"]), fontsize=STYLE["axes.titlesize"],
                         fontweight="bold")
        bar = subs[-1]
        cax = bar.add_axes([0.3, 0.55, 0.4, 0.15])
        bar.colorbar(ScalarMappable(Normalize(0, 1), ATTENTION_CMAP), cax=cax,
                     orientation="horizontal", label="attention weight (mean over sequences)")
        which = ("layer " if len(layers) == 1 else "layers ") + ", ".join(map(str, layers))
        fig.suptitle(wrap(f"{title}: mean attention of {which}, clean and with the "
                          "composition ablations", MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


DYNAMICS_PANELS = (("loss_pred", "first", "loss on predictable targets", "loss (nats)"),
                   ("icl_score", "first", "ICL score", "loss at last − at first prediction (nats)"),
                   ("induction", "max", "best induction score of any head", "induction score"),
                   ("previous_token", "max", "best previous-token score of any head",
                    "previous-token score"))


def dynamics_bands(dynamics, title: str):
    """Over training, mean and min-max over seeds: predictable loss, ICL score, and the
    largest induction and previous-token score of any head, each with its chance level.

    y ranges are the quantities' own: losses from 0, scores 0–1, the ICL score from
    minus the initial loss to a little above 0 (noise is not magnified)."""
    from ..analysis.dynamics import score_chance

    per_step = lambda metric, how: (dynamics[dynamics["metric"] == metric]  # noqa: E731
                                    .groupby(["seed", "step"])["value"].agg(how).reset_index())
    n = dynamics["seed"].nunique()
    loss_scale = per_step("loss_pred", "first")["value"].max()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(MAX_WIDTH_IN, 5.2), constrained_layout=True)
        for ax, (metric, how, name, label) in zip(axes.ravel(), DYNAMICS_PANELS):
            frame = per_step(metric, how)
            frame["step1"] = frame["step"] + 1
            if len(frame):
                lo, hi = _band(ax, frame, "step1", "value", "mean over seeds")
            else:
                lo, hi = 0.0, 1.0
                ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
            if f"{metric}_chance" in set(dynamics["metric"]):
                ax.axhline(score_chance(dynamics, metric), color="grey", ls=":", lw=1.2, label="chance")
                ax.legend(loc="upper left")
            if metric.startswith("loss"):
                ax.set_ylim(*loss_limits(hi))
            elif metric == "icl_score":
                ax.set_ylim(*difference_limits(lo, hi, loss_scale if np.isfinite(loss_scale) else 1.0))
                ax.axhline(0, color="grey", lw=0.6)
            else:
                ax.set_ylim(0, 1)
            _log_steps(ax, dynamics["step"])
            ax.set_title(name)
            ax.set_ylabel(label)
        fig.suptitle(wrap(f"{title}: over training (mean over {n} seed(s), band min–max)",
                          MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig
