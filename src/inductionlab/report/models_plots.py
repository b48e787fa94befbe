"""Figures of several models side by side: one colour per model, its seeds as a mean line
and a min–max band, so that a chapter compares the models in one figure.

Each takes the stacked table of every model (a ``variant`` column) and the models in the
order the report lists them.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..analysis.dynamics import BEST_INDUCTION_CONTENT, metric_curve
from ..analysis.offset_attribution import ALL
from .plots import (MAX_WIDTH_IN, SMALL_PT, STEP_LABEL, STYLE, _band, _log_steps, loss_limits,
                    step_limits, wrap)

MODEL_COLOURS = plt.get_cmap("tab10")


def _colour(k: int):
    return MODEL_COLOURS(k % 10)


def _seeds_text(frame: pd.DataFrame) -> str:
    n = frame["seed"].nunique()
    return f"{n} seed{'s' if n != 1 else ''}"


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
            _, hi = _band(axes[0], mine, "step1", "val_loss_all", m, color=_colour(k))
            top = max(top, hi)
            _band(axes[1], mine, "step1", "val_acc_pred", m, color=_colour(k))
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
        fig.suptitle(wrap(f"Training curves of every model: mean over {_seeds_text(log)}, "
                          "band = min–max", MAX_WIDTH_IN))
    return fig


def _curves(dynamics: pd.DataFrame, metric: str) -> pd.DataFrame:
    """(seed, step1, value) of one model-level metric, every seed."""
    parts = []
    for seed, frame in dynamics.groupby("seed"):
        steps, values = metric_curve(frame, metric)
        parts.append(pd.DataFrame({"seed": seed, "step1": steps + 1, "value": values}))
    return pd.concat(parts) if parts else pd.DataFrame(columns=["seed", "step1", "value"])


def _fit_words(phase: pd.DataFrame, metric: str) -> str:
    """'phase change in 5 of 5 seeds, midpoint 776–857' or the shapes seen."""
    rows = phase[phase["metric"] == metric]
    if rows.empty:
        return "no fit"
    shapes = rows["shape"].value_counts()
    words = ", ".join(f"{shape} {count}/{len(rows)}" for shape, count in shapes.items())
    if "formed" in rows and (rows["formed"] == 0).all():
        words += ", no induction head"
    return words


def phase_change_models(dynamics: pd.DataFrame, phase: pd.DataFrame, models: list[str]):
    """Loss on predictable targets and the best head's induction content part over training,
    one colour per model (mean over seeds, band min–max); the legend gives each model's fitted
    shapes (the phase change as a shape: a logistic in ln(step + 1), per seed)."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 4.0), constrained_layout=True)
        top, low = 0.0, 0.0
        for k, m in enumerate(models):
            mine, fits = dynamics[dynamics["variant"] == m], phase[phase["variant"] == m]
            if mine.empty:
                continue
            loss = _curves(mine, "loss_pred")
            _, hi = _band(axes[0], loss, "step1", "value",
                          f"{m}: {_fit_words(fits, 'loss_pred')}", color=_colour(k))
            top = max(top, hi)
            content = _curves(mine, BEST_INDUCTION_CONTENT)
            if len(content):
                lo, _ = _band(axes[1], content, "step1", "value",
                              f"{m}: {_fit_words(fits, 'induction_content')}", color=_colour(k))
                low = min(low, lo)
        axes[0].set_ylim(*loss_limits(top))
        axes[0].set_ylabel("loss, predictable targets (nats)")
        axes[0].set_title("loss on predictable targets")
        axes[1].set_ylim(min(low, 0.0) - 0.05, 1)
        axes[1].axhline(0.0, color="grey", ls=":", lw=1.0)
        axes[1].set_ylabel("induction score − control")
        axes[1].set_title(wrap("best head's induction content part (0 = no content)", 3.0))
        lo, hi = step_limits(dynamics["step"])
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlim(lo, hi)
            ax.set_xlabel(STEP_LABEL)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=SMALL_PT,
                      title="shape of the fits (seeds)", title_fontsize=SMALL_PT)
        fig.suptitle(wrap(f"Phase change of every model: mean over {_seeds_text(dynamics)}, "
                          "band = min–max", MAX_WIDTH_IN))
    return fig


def offsets_models(profile: pd.DataFrame, models: list[str], component: str = ALL,
                   samples: tuple[str, ...] = ("task", "control")):
    """The whole model's offset profile (component ``all``: its effect on the logit of the
    letter k back), one colour per model, one panel per sample (the task's sequences, and
    the control's with no repeated block): mean over seeds, band min–max."""
    rows = profile[(profile["component"] == component) & profile["variant"].isin(models)
                   & (profile["source"] == "offset") & (profile["offset"] >= 0)]
    samples = [s for s in samples if (rows["sample"] == s).any()]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(samples), figsize=(MAX_WIDTH_IN, 2.9), sharey=True,
                                 squeeze=False, constrained_layout=True)
        for ax, sample in zip(axes[0], samples):
            for k, m in enumerate(models):
                mine = rows[(rows["variant"] == m) & (rows["sample"] == sample)]
                if len(mine):
                    _band(ax, mine, "offset", "value", m, color=_colour(k))
            ax.axhline(0.0, color="grey", ls=":", lw=1.0)
            top = int(rows["offset"].max()) if len(rows) else 1
            ax.set_xticks(np.arange(0, top + 1, 6 if top > 12 else 1))
            ax.set_xticks(np.arange(0, top + 1), minor=True)
            ax.set_xlabel("offset k (letters back)")
            ax.set_title(f"{sample} sample")
        axes[0][0].set_ylabel("effect on the logit (logits)")
        axes[0][0].legend(loc="best", fontsize=SMALL_PT)
        fig.suptitle(wrap(f"Offset profile of every model: its effect on the letter k back, "
                          f"mean over {_seeds_text(rows)}, band = min–max", MAX_WIDTH_IN))
    return fig
