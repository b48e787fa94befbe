"""Figures of the positional-shortcut experiment: attention by offset of every head, and the
position–position term of the attention score."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.data import TaskConfig
from ...core.seeding import first_seed
from .tables import OFFSETS, POSITIONS, copy_offset

def _panel_grid(n: int) -> tuple[int, int]:
    """(rows, columns) of ``n`` panels within the report's width: at most 2 per row
    (3 when there are more than 4)."""
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    return -(-n // cols), cols


def offsets_figure(offsets: pd.DataFrame, task: TaskConfig):
    """Mean attention against offset, one panel per model, one line per (seed, head);
    the offsets of the target's copies (block_len − 1 back, then every block_len) are marked."""
    import matplotlib.pyplot as plt

    from ...formatting.plots import MAX_HEIGHT_IN, MAX_WIDTH_IN, SMALL_PT, STYLE, wrap

    variants = list(dict.fromkeys(offsets["variant"]))
    T = int(offsets["offset"].max()) + 1
    copies = list(range(copy_offset(task), T, task.block_len))
    n_rows, n_cols = _panel_grid(len(variants))
    width = MAX_WIDTH_IN if n_cols > 1 else 4.5
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(width, min(2.7 * n_rows + 0.8, MAX_HEIGHT_IN)),
                                 sharey=True, squeeze=False, constrained_layout=True)
        flat = axes.ravel()
        for ax, variant in zip(flat, variants):
            part = offsets[offsets["variant"] == variant]
            n_seeds, n_heads = part["seed"].nunique(), len(part[["layer", "head"]].drop_duplicates())
            for (_seed, layer, head), line in part.groupby(["seed", "layer", "head"]):
                ax.plot(line["offset"], line["attention"], color=f"C{layer}", alpha=0.5, lw=1)
            for c in copies:
                ax.axvline(c, color="black", ls="--", lw=0.8)
            ax.text(copies[0] + 0.3, 0.97, f"{copies[0]} back", transform=ax.get_xaxis_transform(),
                    fontsize=SMALL_PT, va="top")
            ax.set_title(wrap(f"{variant}: {n_heads} heads × {n_seeds} seed(s)", width / n_cols - 0.5))
            ax.set_xlabel("offset i − j (query − key position)")
            ax.set_ylabel("mean attention weight")
            ax.set_xticks(range(0, T, 4 if n_cols > 2 else 2))
            ax.set_ylim(bottom=0)
        for ax in flat[len(variants):]:
            ax.remove()
        n_layers = offsets["layer"].nunique()
        if n_layers > 1:
            for l in range(n_layers):
                flat[len(variants) - 1].plot([], [], color=f"C{l}", label=f"layer {l}")
            flat[len(variants) - 1].legend(loc="upper right")
        fig.suptitle(wrap("Attention by relative offset: every head of every seed; dashed: the "
                          "offsets of the target's earlier copies", width, STYLE["figure.titlesize"]))
    return fig


def positions_figure(positions: pd.DataFrame, seed: int, offset: int):
    """The position–position score p pᵀ/√d of each model at ``seed`` (query rows, key
    columns, causal part), with each row's argmax marked and the period offset dashed."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from ...formatting.plots import MAX_HEIGHT_IN, MAX_WIDTH_IN, STYLE, wrap

    part = positions[positions["seed"] == seed]
    variants = list(dict.fromkeys(part["variant"]))
    T = int(part["query"].max()) + 1
    n_rows, n_cols = _panel_grid(len(variants))
    width = MAX_WIDTH_IN if n_cols > 1 else 4.2
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(width, min(3.3 * n_rows + 0.9, MAX_HEIGHT_IN)),
                                 squeeze=False, constrained_layout=True)
        flat = axes.ravel()
        for ax, variant in zip(flat, variants):
            rows = part[part["variant"] == variant]
            grid = np.full((T, T), np.nan)
            grid[rows["query"], rows["key"]] = rows["score"]
            lim = max(np.nanmax(np.abs(grid)), 1e-9)
            im = ax.imshow(grid, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
            best = rows[rows["is_row_argmax"] == 1.0]
            ax.scatter(best["key"], best["query"], s=10, color="black", label="row argmax")
            ax.plot([0, T - 1 - offset], [offset, T - 1], color="black", ls="--", lw=0.8,
                    label=f"{offset} back")
            ax.set_title(wrap(f"{variant} (seed {seed})", width / n_cols - 0.8))
            ax.set_xlabel("key position j")
            ax.set_ylabel("query position i")
            fig.colorbar(im, ax=ax, shrink=0.85, label="p_i·p_j / √d")
        for ax in flat[len(variants):]:
            ax.remove()
        handles = [Line2D([], [], ls="", marker="o", ms=3.5, color="black", label="row argmax"),
                   Line2D([], [], ls="--", lw=0.8, color="black", label=f"{offset} back")]
        fig.legend(handles=handles, loc="outside lower center", ncol=2)
        fig.suptitle(wrap("Position–position term of the attention score (causal part)", width,
                          STYLE["figure.titlesize"]))
    return fig


def _task(settings_path) -> TaskConfig:
    from ...core.loading import read_json

    return TaskConfig.from_dict(read_json(settings_path, "the experiment's settings", ["task"])["task"])


def offsets_figure_of(offsets_csv, settings_path):
    """:func:`offsets_figure` of the stacked offsets table."""
    from ...core.loading import read_table

    offsets = read_table(offsets_csv, OFFSETS.columns, kind="the stacked positional_shortcut_offsets table")
    return offsets_figure(offsets, _task(settings_path))


def positions_figure_of(positions_csv, settings_path):
    """:func:`positions_figure` of the stacked positional table, its first seed."""
    from ...core.loading import read_table

    positions = read_table(positions_csv, POSITIONS.columns,
                           kind="the stacked positional_shortcut_positions table")
    return positions_figure(positions, first_seed(positions["seed"]), copy_offset(_task(settings_path)))
