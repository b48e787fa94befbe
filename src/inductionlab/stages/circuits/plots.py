"""Heatmaps of token-space circuits: every head's V x V OV and QK circuit of one model.

The matrices and their eigenvalue positivity come from :mod:`inductionlab.stages.circuits.circuits`
(``ov_circuit``, ``qk_circuit``, ``circuit_table``); this module only draws them.
Rows are the source token (OV: the token the head attends to; QK: the query token),
columns the output token (OV: the logit it raises or lowers; QK: the key token).
Each panel is scaled by its own largest |entry| (written in its title), so that a head
with a small norm still shows its pattern; one diverging colour bar, centred on 0, per
figure.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from . import circuits
from ...formatting.plots import (LETTERS, MAX_HEIGHT_IN, MAX_WIDTH_IN, SMALL_PT, STYLE, number,
                                 save, text_colour, tick_format, tick_step, wrap)
from ...core.weights import load_weights

CIRCUIT_CMAP = "RdBu_r"
KINDS = {
    "ov": {"name": "OV", "formula": "W_E W_V W_O W_U",
           "rows": "attended token (source)", "cols": "logit (output token)"},
    "qk": {"name": "QK", "formula": "W_E W_Q W_Kᵀ W_Eᵀ (content part)",
           "rows": "query token", "cols": "key token"},
}
# inches around the panels: left of each panel (tick labels, axis label), the colour
# bar, and per row the title (two lines), tick labels and axis label below
PANEL_LEFT_IN = 0.42
COLORBAR_IN = 0.85
ROW_EXTRA_IN = 0.72
SUPTITLE_IN = 0.5


def head_circuits(arrays: dict, kind: str) -> dict[tuple[int, int], np.ndarray]:
    """(layer, head) -> the V x V circuit of that head (``kind``: "ov" or "qk")."""
    W = {k: np.asarray(arrays[k], dtype=np.float64) for k in ("W_E", "W_U", "W_Q", "W_K", "W_V", "W_O")}
    n_layers, n_heads = W["W_Q"].shape[:2]
    out = {}
    for l in range(n_layers):
        for h in range(n_heads):
            if kind == "ov":
                out[l, h] = circuits.ov_circuit(W["W_E"], W["W_V"][l, h], W["W_O"][l, h], W["W_U"])
            elif kind == "qk":
                out[l, h] = circuits.qk_circuit(W["W_E"], W["W_Q"][l, h], W["W_K"][l, h])
            else:
                raise ValueError(f"kind={kind!r}; allowed: {sorted(KINDS)}")
    return out


def positivities(arrays: dict, meta: dict, kind: str) -> dict[tuple[int, int], float]:
    """(layer, head) -> eigenvalue positivity (real part) of that head's ``kind`` circuit."""
    table = circuits.circuit_table(arrays, meta)
    table = table[table["circuit"] == kind]
    return {(int(r.layer), int(r.head)): float(r.positivity_real) for r in table.itertuples()}


def panel_layout(n_panels: int, max_width: float = MAX_WIDTH_IN,
                 max_height: float = MAX_HEIGHT_IN) -> tuple[int, float]:
    """(columns, panel side in inches): the largest square panels of ``n_panels`` that fit."""
    best = (1, 0.0)
    for cols in range(1, n_panels + 1):
        rows = -(-n_panels // cols)
        side = (max_width - COLORBAR_IN - 0.1) / cols - PANEL_LEFT_IN
        side = min(side, (max_height - SUPTITLE_IN - 0.1) / rows - ROW_EXTRA_IN)
        if side > best[1] + 1e-9:
            best = (cols, side)
    return best


def circuit_figure(mats: dict[tuple[int, int], np.ndarray], positivity: dict, kind: str,
                   title: str):
    """Every head's circuit as a heatmap, panels titled "L{l}H{h} OV, positivity +0.98"."""
    spec = KINDS[kind]
    heads = sorted(mats)
    V = mats[heads[0]].shape[0]
    cols, side = panel_layout(len(heads))
    rows = -(-len(heads) // cols)
    width = cols * (side + PANEL_LEFT_IN) + COLORBAR_IN + 0.1
    height = rows * (side + ROW_EXTRA_IN) + SUPTITLE_IN + 0.1
    step = tick_step(V, side * 0.95)
    ticks = np.arange(0, V, step)
    labels = [LETTERS[i] for i in ticks]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False,
                                 constrained_layout=True)
        shown = []
        for i in range(rows * cols):
            ax = axes[i // cols, i % cols]
            if i >= len(heads):
                ax.set_visible(False)
                continue
            l, h = heads[i]
            M = mats[l, h]
            scale = float(np.abs(M).max()) or 1.0
            im = ax.imshow(M / scale, cmap=CIRCUIT_CMAP, vmin=-1, vmax=1, interpolation="nearest")
            shown.append(ax)
            p = positivity[l, h]
            value = number(p, "+.2f") if np.isfinite(p) else "undefined"  # an all-zero circuit
            ax.set_title(f"L{l}H{h} {spec['name']}, positivity {value}\n"
                         f"largest |entry| {scale:.3g}", fontsize=7)
            ax.set_xticks(ticks, labels, fontsize=7)
            ax.set_yticks(ticks, labels, fontsize=7)
            ax.set_xticks(np.arange(V), minor=True)
            ax.set_yticks(np.arange(V), minor=True)
            ax.tick_params(length=2, pad=1.5)
            ax.tick_params(which="minor", length=1)
            ax.set_xlabel(spec["cols"], fontsize=7)
            ax.set_ylabel(spec["rows"], fontsize=7)
        fig.colorbar(im, ax=shown, shrink=0.6,
                     label="entry ÷ largest |entry| of its panel")
        every = "" if step == 1 else f"; every {step}{'nd' if step == 2 else 'rd' if step == 3 else 'th'} letter labelled"
        fig.suptitle(wrap(f"{title} {spec['name']} circuit {spec['formula']} of every head "
                          f"(rows: {spec['rows']}; columns: {spec['cols']}{every})",
                          width - 0.2, 9), fontsize=9)
    return fig


def write_circuit_figures(weights_path, out_dir, title: str | None = None) -> list[Path]:
    """``ov.png`` and ``qk.png`` of one model's weights.npz in ``out_dir``."""
    arrays, meta = load_weights(weights_path)
    title = title if title is not None else f"{meta['variant']} seed {meta['seed']}:"
    out_dir = Path(out_dir)
    written = []
    for kind in ("ov", "qk"):
        path = out_dir / f"{kind}.png"
        save(circuit_figure(head_circuits(arrays, kind), positivities(arrays, meta, kind), kind,
                            title), path)
        written.append(path)
    return written


# ---------------------------------------------------------------- across seeds

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


# a tick label's width (inches per character at the tick font, about 0.6 em) and the
# least room between two labels; a 7.5 pt label is about 0.11 in tall
TICK_CHAR_IN = 0.6 * STYLE["xtick.labelsize"] / 72
TICK_GAP_IN = 0.05
TICK_HEIGHT_IN = 1.35 * STYLE["ytick.labelsize"] / 72
# the least cell (inches) that carries its value ("+0.53" at 7 pt)
VALUE_CELL_IN = 0.3


def head_ticks(layer: int, heads, side_in: float, across: bool,
               short: bool = False) -> tuple[list[int], list[str]]:
    """Tick positions and labels of ``heads`` (of ``layer``) on a ``side_in``-inch axis:
    "L1H2" where every such label fits (``across``: side by side on an x axis, else
    stacked on a y axis), else the bare head number (the axis label names the layer),
    every k-th head where even those would run together; ``short``: the bare numbers
    whatever the room (to match the panel's other axis)."""
    heads = [int(h) for h in heads]
    n = len(heads)

    def room(text_len: int) -> float:
        return (text_len * TICK_CHAR_IN if across else TICK_HEIGHT_IN) + TICK_GAP_IN

    full = [f"L{layer}H{h}" for h in heads]
    if not short and n * room(max(map(len, full))) <= side_in:
        return list(range(n)), full
    short = [str(h) for h in heads]
    step = max(1, math.ceil(n * room(max(map(len, short))) / side_in))
    return list(range(0, n, step)), short[::step]


def composition_figure(comp, title: str, seed: int):
    """K/Q/V composition of one seed: term positivity and score minus baseline per head
    pair, one row per measure and layer pair, one colour scale per row.

    Panels are sized to fit the page whatever the number of layer pairs; head labels
    shorten (and thin out) as the heads get more (:func:`head_ticks`); each cell shows its
    value where the cell is large enough, and the row's colour bar gives it otherwise."""
    from matplotlib.colors import Normalize

    comp = comp[comp["seed"] == seed]
    kinds = ["K", "Q", "V"]
    pairs = comp[["layer", "src_layer"]].drop_duplicates().values.tolist()
    rows = [(l2, l1, m) for l2, l1 in pairs for m in COMPOSITION_MEASURES]
    n_heads = max(int(comp["head"].nunique()), int(comp["src_head"].nunique()), 1)
    # width: the y label and ticks left of the first panel, three panels, the colour bar
    fit_width = (MAX_WIDTH_IN - 0.75 - COLORBAR_IN - 0.3) / 3
    fit_height = (MAX_HEIGHT_IN - 0.7) / max(len(rows), 1) - 0.75
    panel = max(min(1.75, fit_width, fit_height), 0.45)
    values = panel / n_heads >= VALUE_CELL_IN
    heading = f"{title}: composition between layers (seed {seed}); cells: earlier head (row) " \
              "writes, later head (column) reads"
    if not values:
        heading += "; cells too small for their values: read them on each row's colour bar"
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(rows), 3, figsize=(MAX_WIDTH_IN, min(len(rows) * (panel + 0.75) + 0.7, MAX_HEIGHT_IN)),
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
                if values:
                    for (i, j), v in np.ndenumerate(grid.values):
                        ax.text(j, i, number(v, "+.2f"), ha="center", va="center",
                                fontsize=SMALL_PT, color=text_colour(im.cmap(norm(v))))
                x_ticks = head_ticks(l2, grid.columns, panel, across=True)
                y_ticks = head_ticks(l1, grid.index, panel, across=False)
                if not all(labels[0].startswith("L") for _, labels in (x_ticks, y_ticks)):
                    # one axis shortened: both read as bare head numbers
                    x_ticks = head_ticks(l2, grid.columns, panel, across=True, short=True)
                    y_ticks = head_ticks(l1, grid.index, panel, across=False, short=True)
                ax.set_xticks(*x_ticks)
                ax.set_yticks(*y_ticks)
                ax.set_xlabel(f"layer {l2} head (reads)")
                if c == 0:
                    ax.set_ylabel(f"layer {l1} head (writes)" if panel >= 1.4
                                  else f"layer {l1} head\n(writes)")
                else:
                    ax.tick_params(labelleft=False)
                ax.set_title(f"{kind}-comp.: {short_label}")
            bar_label = long_label if panel >= 1.2 else short_label
            fig.colorbar(im, ax=axes[r, :], shrink=0.9, format=tick_format(".2f"),
                         label=wrap(bar_label, max(panel * 0.9, 0.8), STYLE["axes.labelsize"]))
        fig.suptitle(wrap(heading, MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig
