"""Figures of the training dynamics, in the style of :mod:`inductionlab.plots`.

Steps are drawn on a log axis as step + 1 (so that step 0 appears); every axis
label says so.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .plots import STYLE, plt, save

STEP_LABEL = "training step + 1 (log scale)"
PHASE_STYLE = {"steepest_drop_loss_pred": ("steepest loss drop", "tab:red", "--"),
               "induction_rise": ("induction rise", "tab:purple", ":")}


def _detected(step) -> bool:
    from .dynamics import NOT_DETECTED

    return str(step) not in NOT_DETECTED and not pd.isna(step)


def _phase_lines(ax, phase: pd.DataFrame | None) -> None:
    if phase is None:
        return
    for r in phase.itertuples():
        if not _detected(r.step) or r.metric not in PHASE_STYLE:
            continue
        label, colour, ls = PHASE_STYLE[r.metric]
        ax.axvline(int(r.step) + 1, color=colour, ls=ls, lw=1, label=f"{label} ({int(r.step)})")


def _legend(ax, **kwargs) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kwargs)


def _curve(frame, metric, layer=-1, head=-1):
    from .dynamics import metric_curve

    return metric_curve(frame, metric, layer, head)


def loss_curves(frame: pd.DataFrame, phase: pd.DataFrame | None, title: str,
                loss_floor: float | None = None):
    """Loss (all / predictable targets), predictable accuracy and ICL score against step."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(11, 3), constrained_layout=True)
        ax = axes[0]
        for metric, label in (("loss_all", "all 23 predictions"), ("loss_pred", "predictable targets")):
            s, v = _curve(frame, metric)
            ax.plot(s + 1, v, marker="o", ms=2.5, label=label)
        if loss_floor is not None:
            ax.axhline(loss_floor, color="grey", lw=0.8, label=f"floor, all ({loss_floor:.3f})")
        ax.set_ylabel("loss (nats)")
        ax.set_title("loss")
        ax = axes[1]
        s, v = _curve(frame, "acc_pred")
        ax.plot(s + 1, v, marker="o", ms=2.5, color="tab:green")
        ax.set_ylim(0, 1)
        ax.set_ylabel("argmax accuracy, predictable targets")
        ax.set_title("accuracy")
        ax = axes[2]
        s, v = _curve(frame, "icl_score")
        ax.plot(s + 1, v, marker="o", ms=2.5, color="tab:orange")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_ylabel("loss at last − loss at first prediction")
        ax.set_title("ICL score")
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlabel(STEP_LABEL)
            _phase_lines(ax, phase)
            _legend(ax, fontsize=6)
        fig.suptitle(title)
    return fig


def _chance_line(ax, frame: pd.DataFrame, metric: str, layer: int | None = None) -> None:
    """The ``<metric>_chance`` level (of ``layer``, or the mean over layers, at the last
    checkpoint) as a grey dotted line labelled "chance"; nothing when it is not recorded."""
    from .dynamics import score_chance

    try:
        chance = score_chance(frame, metric, None if layer is None else [layer])
    except LookupError:
        return
    ax.axhline(chance, color="grey", ls=":", lw=1, label=f"chance ({chance:.3f})")


def head_score_curves(frame: pd.DataFrame, phase: pd.DataFrame | None, title: str):
    """Per-head OV positivity (with the direct path), previous-token and induction score
    against step, each score with its chance level; one column per layer."""
    heads = frame[frame["metric"] == "ov_positivity"][["layer", "head"]].drop_duplicates()
    layers = sorted(heads["layer"].unique())
    rows = [("ov_positivity", "OV eigenvalue positivity", (-1.05, 1.05)),
            ("previous_token", "previous-token score", (0, 1)),
            ("induction", "induction score", (0, 1))]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(rows), len(layers), figsize=(4.2 * len(layers) + 0.5, 2.4 * len(rows)),
                                 squeeze=False, constrained_layout=True, sharex=True)
        for c, l in enumerate(layers):
            for r, (metric, label, ylim) in enumerate(rows):
                ax = axes[r, c]
                for h in sorted(heads[heads["layer"] == l]["head"]):
                    s, v = _curve(frame, metric, l, h)
                    ax.plot(s + 1, v, marker="o", ms=2, label=f"head {h}")
                if metric == "ov_positivity":
                    s, v = _curve(frame, "direct_positivity")
                    ax.plot(s + 1, v, color="black", ls="--", lw=1, label="direct path")
                    ax.axhline(0, color="grey", lw=0.6)
                else:
                    _chance_line(ax, frame, metric, l)
                ax.set_xscale("log")
                ax.set_ylim(*ylim)
                ax.set_title(f"layer {l}: {label}")
                ax.set_ylabel(label)
                if r == len(rows) - 1:
                    ax.set_xlabel(STEP_LABEL)
                _phase_lines(ax, phase)
                _legend(ax, fontsize=5.5, ncol=2)
        fig.suptitle(title)
    return fig


def _log_edges(x: np.ndarray) -> np.ndarray:
    """Cell edges for centres ``x`` (> 0) on a log axis: geometric midpoints."""
    lx = np.log(x)
    mid = (lx[1:] + lx[:-1]) / 2
    first = lx[0] - (mid[0] - lx[0]) if len(lx) > 1 else lx[0] - 0.5
    last = lx[-1] + (lx[-1] - mid[-1]) if len(lx) > 1 else lx[-1] + 0.5
    return np.exp(np.concatenate([[first], mid, [last]]))


def per_position_heat_strip(frame: pd.DataFrame, phase: pd.DataFrame | None, title: str):
    """Per-position loss (behaviour sample) over training: x = step, y = prediction index."""
    sel = frame[frame["metric"] == "loss_pos"]
    grid = sel.pivot(index="position", columns="step", values="value").sort_index()
    steps = grid.columns.to_numpy()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 3.2), constrained_layout=True)
        im = ax.pcolormesh(_log_edges(steps + 1.0), np.arange(len(grid) + 1) - 0.5, grid.to_numpy(),
                           cmap="magma_r", shading="flat")
        ax.set_xscale("log")
        ax.set_xlabel(STEP_LABEL)
        ax.set_ylabel("prediction i (position i → token i + 1)")
        ax.invert_yaxis()
        _phase_lines(ax, phase)
        _legend(ax, fontsize=6, loc="lower left")
        fig.colorbar(im, ax=ax, label="mean loss (nats)")
        ax.set_title(f"{title} per-position loss over training")
    return fig


def write_dynamics_figures(dynamics_csv, phase_csv, out_dir, title: str = "",
                           task: dict | None = None) -> list[Path]:
    """losses.png, head_scores.png and per_position_loss.png of one model.

    ``task``: the task section of the config, to draw the loss floor (optional).
    """
    from .data import TaskConfig, loss_floor

    out_dir = Path(out_dir)
    frame = pd.read_csv(dynamics_csv)
    phase = pd.read_csv(phase_csv, dtype={"step": str})
    floor = loss_floor(TaskConfig.from_dict(task)) if task else None
    written = []
    for name, fig in (("losses.png", loss_curves(frame, phase, f"{title} losses over training", floor)),
                      ("head_scores.png", head_score_curves(frame, phase, f"{title} circuits and head scores over training")),
                      ("per_position_loss.png", per_position_heat_strip(frame, phase, title))):
        save(fig, out_dir / name)
        written.append(out_dir / name)
    return written


def pca_trajectories(frame: pd.DataFrame):
    """Trajectories of every model on PC1/PC2, coloured by variant, one line per seed.

    A circle marks step 0 and a square the final step.
    """
    variants = list(dict.fromkeys(frame["variant"]))
    colours = plt.get_cmap("tab10")
    ev1, ev2 = frame["explained_variance_PC1"].iloc[0], frame["explained_variance_PC2"].iloc[0]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 4.6), constrained_layout=True)
        for i, variant in enumerate(variants):
            colour = colours(i % 10)
            for j, (seed, part) in enumerate(frame[frame["variant"] == variant].groupby("seed")):
                part = part.sort_values("step")
                ax.plot(part["PC1"], part["PC2"], color=colour, lw=1, alpha=0.8,
                        label=variant if j == 0 else None)
                ax.scatter(part["PC1"].iloc[:1], part["PC2"].iloc[:1], color=colour, marker="o", s=14)
                ax.scatter(part["PC1"].iloc[-1:], part["PC2"].iloc[-1:], color=colour, marker="s", s=14)
        ax.set_xlabel(f"PC1 ({ev1:.1%} of variance)")
        ax.set_ylabel(f"PC2 ({ev2:.1%} of variance)")
        n_models = frame[["variant", "seed"]].drop_duplicates().shape[0]
        ax.set_title(f"per-token loss PCA over training ({n_models} model{'s' * (n_models != 1)}, "
                     "one line per seed; "
                     "○ step 0, □ final step)")
        ax.legend(fontsize=7)
    return fig


def _step_limits(steps) -> tuple[float, float]:
    """x limits (step + 1) spanning the checkpoints; a single checkpoint gets a decade around it."""
    x = np.asarray(steps, dtype=float) + 1.0
    lo, hi = float(x.min()), float(x.max())
    if hi <= lo:
        return lo / np.sqrt(10), hi * np.sqrt(10)
    return lo, hi


def _seed_label(seed: int, rows: pd.DataFrame) -> str:
    """"seed s", plus each detector that found no step and why, in words."""
    missing = [f"{PHASE_STYLE[r.metric][0]}: {r.step}" for r in rows.itertuples()
               if r.metric in PHASE_STYLE and not _detected(r.step)]
    return f"seed {seed}" + (f" ({'; '.join(missing)})" if missing else "")


def phase_change_figure(dynamics: pd.DataFrame, phase: pd.DataFrame, title: str):
    """Both phase-change detectors of every seed of one variant.

    Left: predictable-target loss over training; right: the best head's induction score
    (the ``best_induction`` rows: layers that can form an induction head) with its
    chance level. One colour per seed; each seed's detected steps are vertical lines in
    its colour (steepest loss drop dashed, induction rise dotted); a detector that found
    no step draws nothing, and the seed's legend entry says so.
    """
    from matplotlib.lines import Line2D

    from .dynamics import BEST_INDUCTION, metric_curve, score_chance

    seeds = sorted(int(s) for s in dynamics["seed"].unique())
    colours = plt.get_cmap("tab10")
    has_best = (dynamics["metric"] == BEST_INDUCTION).any()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
        for k, seed in enumerate(seeds):
            colour = colours(k % 10)
            frame = dynamics[dynamics["seed"] == seed]
            rows = phase[phase["seed"] == seed]
            s, v = metric_curve(frame, "loss_pred")
            axes[0].plot(s + 1, v, color=colour, marker="o", ms=2, lw=1,
                         label=_seed_label(seed, rows))
            if has_best:
                s, v = metric_curve(frame, BEST_INDUCTION)
                axes[1].plot(s + 1, v, color=colour, marker="o", ms=2, lw=1, label=f"seed {seed}")
            for r in rows.itertuples():
                if r.metric in PHASE_STYLE and _detected(r.step):
                    for ax in axes:
                        ax.axvline(int(r.step) + 1, color=colour, ls=PHASE_STYLE[r.metric][2], lw=1)
        ax = axes[1]
        if has_best:
            chance = score_chance(dynamics, "induction")
            ax.axhline(chance, color="grey", ls=":", lw=1.2, label=f"chance ({chance:.3f})")
            ax.set_ylim(0, 1)
        else:
            ax.text(0.5, 0.5, "no layer can form an induction head\n(needs layer ≥ 1 or smeared keys)",
                    ha="center", va="center", transform=ax.transAxes)
        styles = [Line2D([], [], color="black", ls=PHASE_STYLE[m][2], lw=1,
                         label=f"{PHASE_STYLE[m][0]} (vertical line)") for m in PHASE_STYLE]
        axes[0].set_ylabel("predictable-target loss (nats)")
        axes[0].set_title("loss on predictable targets")
        ax.set_ylabel("best head's induction score")
        ax.set_title("best induction score (layers ≥ 1 or smeared)")
        lo, hi = _step_limits(dynamics["step"])
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlim(lo, hi)
            ax.set_xlabel(STEP_LABEL)
        axes[0].legend(handles=axes[0].get_legend_handles_labels()[0] + styles, fontsize=6)
        _legend(axes[1], fontsize=6)
        fig.suptitle(f"{title}: phase change per seed")
    return fig
