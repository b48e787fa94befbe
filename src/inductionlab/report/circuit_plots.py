"""Heatmaps of token-space circuits: every head's V x V OV and QK circuit of one model.

The matrices and their eigenvalue positivity come from :mod:`inductionlab.analysis.circuits`
(``ov_circuit``, ``qk_circuit``, ``circuit_table``); this module only draws them.
Rows are the source token (OV: the token the head attends to; QK: the query token),
columns the output token (OV: the logit it raises or lowers; QK: the key token).
Each panel is scaled by its own largest |entry| (written in its title), so that a head
with a small norm still shows its pattern; one diverging colour bar, centred on 0, per
figure.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ..analysis import circuits
from .attention_plots import LETTERS, tick_step
from .plots import MAX_HEIGHT_IN, MAX_WIDTH_IN, STYLE, number, save, wrap
from ..core.weights import load_weights

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
