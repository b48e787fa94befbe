"""Figures of training: the validation curves of one model across its seeds, and of every
model side by side (one colour per model, mean over seeds with a min–max band)."""
from __future__ import annotations

import pandas as pd

from ...formatting.plots import (MAX_WIDTH_IN, SMALL_PT, STYLE, seed_band, _log_steps, loss_limits,
                                 model_colour, plt, seeds_text, wrap)


def training_curves(log, title: str, floor: float | None = None):
    """Validation losses and predictable accuracy against step, mean and min-max over seeds."""
    n = log["seed"].nunique()
    log = log.assign(step1=log["step"] + 1)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 2.9), constrained_layout=True)
        ax = axes[0]
        _, top1 = seed_band(ax, log, "step1", "val_loss_all", "all targets")
        _, top2 = seed_band(ax, log, "step1", "val_loss_pred", "predictable targets")
        if floor is not None:
            ax.axhline(floor, color="grey", ls=":", lw=1, label=f"floor, all targets ({floor:.3f})")
        ax.set_ylim(*loss_limits(max(top1, top2)))
        ax.set_ylabel("validation loss (nats)")
        ax.set_title("validation loss")
        ax.legend(loc="best")
        ax = axes[1]
        seed_band(ax, log, "step1", "val_acc_pred", "predictable targets", color="tab:green")
        ax.set_ylim(0, 1)
        ax.set_ylabel("argmax accuracy")
        ax.set_title("validation accuracy, predictable targets")
        for ax in axes:
            _log_steps(ax, log["step"])
        fig.suptitle(wrap(f"{title}: training curves, mean over {n} seed(s), band = min–max",
                          MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


def training_models(log: pd.DataFrame, models: list[str], floor: float | None = None):
    """Validation loss (all targets) and predictable-target accuracy against step, one
    colour per model: mean over seeds, band min–max."""
    log = log[log["variant"].isin(models)].assign(step1=log["step"] + 1)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 2.9), constrained_layout=True)
        top = 0.0
        for k, m in enumerate(models):
            mine = log[log["variant"] == m]
            if mine.empty:
                continue
            _, hi = seed_band(axes[0], mine, "step1", "val_loss_all", m, color=model_colour(k))
            top = max(top, hi)
            seed_band(axes[1], mine, "step1", "val_acc_pred", m, color=model_colour(k))
        if floor is not None:
            axes[0].axhline(floor, color="grey", ls=":", lw=1, label=f"floor ({floor:.3f})")
        axes[0].set_ylim(*loss_limits(top))
        axes[0].set_ylabel("validation loss, all targets (nats)")
        axes[0].set_title("validation loss")
        axes[0].legend(loc="best", fontsize=SMALL_PT)
        axes[1].set_ylim(0, 1)
        axes[1].set_ylabel("argmax accuracy")
        axes[1].set_title("accuracy, predictable targets")
        for ax in axes:
            _log_steps(ax, log["step"])
        fig.suptitle(wrap(f"Training curves of every model: mean over {seeds_text(log)}, "
                          "band = min–max", MAX_WIDTH_IN))
    return fig
