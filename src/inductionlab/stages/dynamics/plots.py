"""Figures of the training dynamics, in the style of :mod:`inductionlab.formatting.plots`.

Steps are drawn on a log axis as step + 1 (so that step 0 appears at 1), from the first
checkpoint to the last; every axis label says so. Every figure fits the report's text
column (:data:`inductionlab.formatting.plots.MAX_WIDTH_IN`), every panel is titled, and y ranges
are the quantities' own (losses from 0, scores 0–1, positivity −1..1).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...formatting.plots import (MAX_WIDTH_IN, SMALL_PT, STEP_LABEL, STYLE, _log_steps,
                                 difference_limits, loss_limits, model_colour, number, plt, save,
                                 seed_band, seeds_text, step_limits, wrap)
from .dynamics import BEST_INDUCTION_CONTENT, metric_curve
from ...core.data import TaskConfig, loss_floor
from ...core.loading import read_table

PHASE_STYLE = {"loss_pred": ("loss fit midpoint", "tab:red", "--"),
               "induction_content": ("induction fit midpoint", "tab:purple", ":")}
SUPTITLE_PT = STYLE["figure.titlesize"]


def _is_phase_change(row) -> bool:
    """A fit whose shape is a phase change (its midpoint is drawn)."""
    from .phase_change import PHASE_CHANGE

    shape, midpoint = (row["shape"], row["midpoint"]) if isinstance(row, pd.Series) else (row.shape, row.midpoint)
    return str(shape) == PHASE_CHANGE and np.isfinite(float(midpoint))


def _phase_lines(ax, phase: pd.DataFrame | None) -> None:
    """A vertical line at the midpoint of each fit that is a phase change."""
    if phase is None:
        return
    for r in phase.itertuples():
        if r.metric not in PHASE_STYLE or not _is_phase_change(r):
            continue
        label, colour, ls = PHASE_STYLE[r.metric]
        ax.axvline(float(r.midpoint) + 1, color=colour, ls=ls, lw=1.2,
                   label=f"{label}: phase change at step {float(r.midpoint):.0f}")


def _figure_legend(fig, axes, **kwargs) -> None:
    """One legend below the panels with every labelled artist of ``axes``, each label once."""
    seen = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", **kwargs)


def _curve(frame, metric, layer=-1, head=-1):
    from .dynamics import metric_curve

    return metric_curve(frame, metric, layer, head)


def loss_curves(frame: pd.DataFrame, phase: pd.DataFrame | None, title: str,
                loss_floor: float | None = None):
    """Loss (all / predictable targets), predictable accuracy and ICL score against step."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(MAX_WIDTH_IN, 3.1), constrained_layout=True)
        ax = axes[0]
        top = 0.0
        for metric, label in (("loss_all", "all predictions"), ("loss_pred", "predictable targets")):
            s, v = _curve(frame, metric)
            ax.plot(s + 1, v, marker="o", ms=2.5, label=label)
            top = max([top, *v[np.isfinite(v)]])
        if loss_floor is not None:
            ax.axhline(loss_floor, color="grey", lw=0.8, label=f"floor, all ({loss_floor:.3f})")
        ax.set_ylim(*loss_limits(top))
        ax.set_ylabel("loss (nats)")
        ax.set_title("loss")
        ax.legend(loc="best")
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
        finite = v[np.isfinite(v)]
        if finite.size:
            ax.set_ylim(*difference_limits(finite.min(), finite.max(), top or 1.0))
        ax.set_ylabel("loss at last − at first prediction (nats)")
        ax.set_title("ICL score")
        for ax in axes:
            _log_steps(ax, frame["step"])
            _phase_lines(ax, phase)
        phase_handles = [(h, l) for h, l in zip(*axes[1].get_legend_handles_labels())]
        if phase_handles:
            fig.legend(*zip(*phase_handles), loc="outside lower center", ncol=2,
                       title="phase change (vertical lines)")
        fig.suptitle(wrap(title, MAX_WIDTH_IN, SUPTITLE_PT))
    return fig


def _chance_line(ax, frame: pd.DataFrame, metric: str, layer: int | None = None) -> None:
    """The ``<metric>_chance`` level (of ``layer``, or the mean over layers, at the last
    checkpoint) as a grey dotted line labelled "chance level", its value written at its
    right end; nothing when it is not recorded."""
    from .dynamics import score_chance

    try:
        chance = score_chance(frame, metric, None if layer is None else [layer])
    except LookupError:
        return
    ax.axhline(chance, color="grey", ls=":", lw=1.2, label="chance level")
    ax.annotate(f"chance {chance:.2f}", xy=(1, chance), xycoords=("axes fraction", "data"),
                xytext=(-2, 2), textcoords="offset points", ha="right", va="bottom",
                fontsize=SMALL_PT, color="dimgrey")


def head_score_curves(frame: pd.DataFrame, phase: pd.DataFrame | None, title: str):
    """Per-head OV positivity (with the direct path), previous-token and induction score
    against step, each score with its chance level; one column per layer."""
    heads = frame[frame["metric"] == "ov_positivity"][["layer", "head"]].drop_duplicates()
    layers = sorted(heads["layer"].unique())
    rows = [("ov_positivity", "OV eigenvalue positivity", "positivity", (-1.05, 1.05)),
            ("previous_token", "previous-token score", "score", (0, 1)),
            ("induction", "induction score", "score", (0, 1))]
    with plt.rc_context(STYLE):
        # the last column's last tick label ("10⁴") reaches past the figure's edge and the
        # saved figure adds its padding: room for both
        width = MAX_WIDTH_IN - 0.2
        fig, axes = plt.subplots(len(rows), len(layers), figsize=(width, 2.35 * len(rows) + 0.9),
                                 squeeze=False, constrained_layout=True, sharex=True)
        for c, l in enumerate(layers):
            for r, (metric, name, label, ylim) in enumerate(rows):
                ax = axes[r, c]
                for h in sorted(heads[heads["layer"] == l]["head"]):
                    s, v = _curve(frame, metric, l, h)
                    ax.plot(s + 1, v, marker="o", ms=2, color=f"C{int(h) % 10}", label=f"head {h}")
                if metric == "ov_positivity":
                    s, v = _curve(frame, "direct_positivity")
                    ax.plot(s + 1, v, color="black", ls="--", lw=1, label="direct path")
                    ax.axhline(0, color="grey", lw=0.6)
                else:
                    _chance_line(ax, frame, metric, l)
                _log_steps(ax, frame["step"])
                ax.set_ylim(*ylim)
                ax.set_title(f"layer {l}: {name}")
                ax.set_ylabel(label)
                if r < len(rows) - 1:
                    ax.set_xlabel("")
                    ax.tick_params(labelbottom=False)
                _phase_lines(ax, phase)
        _figure_legend(fig, axes.ravel(), ncol=4)
        fig.suptitle(wrap(title, MAX_WIDTH_IN, SUPTITLE_PT))
    return fig


def _log_edges(x: np.ndarray) -> np.ndarray:
    """Cell edges for centres ``x`` (> 0, increasing) on a log axis: geometric midpoints
    inside, and the first and last centre at the ends (the axis runs from the first
    checkpoint to the last, not beyond)."""
    lx = np.log(x)
    if len(lx) == 1:
        return np.exp(np.array([lx[0] - 0.5, lx[0] + 0.5]))
    mid = (lx[1:] + lx[:-1]) / 2
    return np.exp(np.concatenate([[lx[0]], mid, [lx[-1]]]))


def per_position_heat_strip(frame: pd.DataFrame, phase: pd.DataFrame | None, title: str):
    """Per-position loss (behaviour sample) over training: x = step, y = prediction index.

    Colours run from a loss of 0 to the largest loss (not autoscaled to the spread)."""
    sel = frame[frame["metric"] == "loss_pos"]
    grid = sel.pivot(index="position", columns="step", values="value").sort_index()
    steps = grid.columns.to_numpy()
    values = grid.to_numpy()
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, 3.4), constrained_layout=True)
        im = ax.pcolormesh(_log_edges(steps + 1.0), np.arange(len(grid) + 1) - 0.5, values,
                           cmap="magma_r", shading="flat", vmin=0, vmax=max(top, 1e-3))
        ax.set_xscale("log")
        ax.set_xlabel(STEP_LABEL)
        ax.set_ylabel("prediction i (position i → token i + 1)")
        ax.invert_yaxis()
        _phase_lines(ax, phase)
        if ax.get_legend_handles_labels()[0]:
            fig.legend(loc="outside lower center", ncol=2, title="phase change (vertical lines)")
        fig.colorbar(im, ax=ax, label="mean loss (nats)")
        ax.set_title(wrap(f"{title} per-position loss over training".strip(), 6.0))
    return fig


def write_dynamics_figures(dynamics_csv, phase_csv, out_dir, title: str = "",
                           task: dict | None = None) -> list[Path]:
    """losses.png, head_scores.png and per_position_loss.png of one model.

    ``phase_csv``: the stacked phase_change table, where the head-role rule decided whether
    an induction head formed (the model's own rows are drawn); ``task``: the task section
    of the config, to draw the loss floor (optional).
    """
    from .dynamics import read_phase_change, undecided

    out_dir = Path(out_dir)
    frame = read_table(dynamics_csv, ["variant", "seed", "step", "metric"])
    model, seed = frame["variant"].iloc[0], frame["seed"].iloc[0]
    phase = read_phase_change(phase_csv)
    phase = phase[(phase["variant"] == model) & (phase["seed"] == seed)]
    if phase.empty:
        raise ValueError(f"{phase_csv}: has no row of {model} seed {seed}")
    if undecided(phase).any():
        raise ValueError(f"{phase_csv}: whether an induction head formed is not decided in it; "
                         "give the stacked phase_change table (results/tables/phase_change.csv), "
                         "where the head-role rule is applied")
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
    from matplotlib.lines import Line2D

    variants = list(dict.fromkeys(frame["variant"]))
    colours = plt.get_cmap("tab10")
    ev1, ev2 = frame["explained_variance_PC1"].iloc[0], frame["explained_variance_PC2"].iloc[0]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.2, 4.9), constrained_layout=True)
        for i, variant in enumerate(variants):
            colour = colours(i % 10)
            for j, (seed, part) in enumerate(frame[frame["variant"] == variant].groupby("seed")):
                part = part.sort_values("step")
                ax.plot(part["PC1"], part["PC2"], color=colour, lw=1, alpha=0.8,
                        label=variant if j == 0 else None)
                ax.scatter(part["PC1"].iloc[:1], part["PC2"].iloc[:1], color=colour, marker="o", s=20)
                ax.scatter(part["PC1"].iloc[-1:], part["PC2"].iloc[-1:], color=colour, marker="s", s=20)
        ax.set_xlabel(f"PC1 ({ev1:.1%} of variance)")
        ax.set_ylabel(f"PC2 ({ev2:.1%} of variance)")
        n_models = frame[["variant", "seed"]].drop_duplicates().shape[0]
        ax.set_title(wrap(f"Per-token loss PCA over training: {n_models} model"
                          f"{'s' * (n_models != 1)}, one line per seed", 5.8))
        marks = [Line2D([], [], ls="", marker="o", color="grey", label="step 0"),
                 Line2D([], [], ls="", marker="s", color="grey", label="final step")]
        ax.legend(handles=ax.get_legend_handles_labels()[0] + marks, loc="best")
    return fig


def _step_limits(steps) -> tuple[float, float]:
    """x limits (step + 1) spanning the checkpoints (:func:`inductionlab.formatting.plots.step_limits`)."""
    return step_limits(steps)


def _fit_text(rows: pd.DataFrame, metric: str) -> str:
    """'phase change at 410 (span 2.1, R² 0.98)' or the shape with its numbers."""
    r = rows[rows["metric"] == metric]
    if r.empty:
        return "no fit"
    r = r.iloc[0]
    from .phase_change import FLAT

    if r["shape"] == FLAT:  # no change: its midpoint and span mean nothing
        text = f"{r['shape']} (R² {number(float(r['r2']))})"  # R² < 0: a fit worse than flat
    else:
        text = (f"{r['shape']}, midpoint {float(r['midpoint']):.0f}, span {float(r['span']):.2g}, "
                f"R² {number(float(r['r2']))}")
    if float(r.get("formed", 1.0)) == 0.0:
        text += "; no induction head formed"
    return text


def phase_change_figure(dynamics: pd.DataFrame, phase: pd.DataFrame, title: str):
    """The phase change of every seed of one variant, measured as a shape.

    Left: predictable-target loss over training; right: the best head's induction content
    part (induction score minus its positional control; the ``best_induction_content``
    rows). Points are the checkpoints, one colour per seed; the solid line of the same
    colour is the seed's fitted logistic in ln(step + 1), and a vertical line marks its
    midpoint where the fit is a phase change. Each seed's legend entry gives both fits'
    shape, midpoint, span and R². The legend is below the panels.
    """
    from .dynamics import BEST_INDUCTION_CONTENT, metric_curve
    from .phase_change import logistic_curve

    seeds = sorted(int(s) for s in dynamics["seed"].unique())
    colours = plt.get_cmap("tab10")
    has_best = (dynamics["metric"] == BEST_INDUCTION_CONTENT).any()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 4.2), constrained_layout=True)
        top, low = 0.0, 0.0
        for k, seed in enumerate(seeds):
            colour = colours(k % 10)
            frame = dynamics[dynamics["seed"] == seed]
            rows = phase[phase["seed"] == seed]
            for ax, metric, fit_name in ((axes[0], "loss_pred", "loss_pred"),
                                         (axes[1], BEST_INDUCTION_CONTENT, "induction_content")):
                if metric == BEST_INDUCTION_CONTENT and not has_best:
                    continue
                s, v = metric_curve(frame, metric)
                if ax is axes[0]:
                    top = max([top, *v[np.isfinite(v)]])
                else:
                    low = min([low, *v[np.isfinite(v)]])
                label = (f"seed {seed}: loss {_fit_text(rows, 'loss_pred')}; induction "
                         f"{_fit_text(rows, 'induction_content')}") if ax is axes[0] else None
                ax.plot(s + 1, v, color=colour, marker="o", ms=2.5, lw=0, label=label)
                fit = rows[rows["metric"] == fit_name]
                if len(fit) and np.isfinite(float(fit.iloc[0]["midpoint"])):
                    grid = np.geomspace(max(s.min(), 0) + 1, s.max() + 1, 200) - 1
                    ax.plot(grid + 1, logistic_curve(grid, fit.iloc[0]), color=colour, lw=1.2)
                    if _is_phase_change(fit.iloc[0]):
                        ax.axvline(float(fit.iloc[0]["midpoint"]) + 1, color=colour,
                                   ls=PHASE_STYLE[fit_name][2], lw=1.0)
        axes[0].set_ylim(*loss_limits(top))
        ax = axes[1]
        ax.set_ylim(min(low, 0.0) - 0.05, 1)
        ax.axhline(0.0, color="grey", ls=":", lw=1.0)
        if not has_best:
            ax.text(0.5, 0.5, "no induction scores", ha="center", va="center", transform=ax.transAxes)
        axes[0].set_ylabel("predictable-target loss (nats)")
        axes[0].set_title("loss on predictable targets")
        ax.set_ylabel("induction score − control")
        ax.set_title(wrap("best head's induction content part (0 = no content)", 3.0))
        lo, hi = _step_limits(dynamics["step"])
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlim(lo, hi)
            ax.set_xlabel(STEP_LABEL)
        fig.legend(handles=axes[0].get_legend_handles_labels()[0], loc="outside lower center",
                   ncol=1, fontsize=SMALL_PT,
                   title="points: checkpoints; lines: logistic fits in ln(step + 1); vertical: "
                         "midpoint of a phase change")
        fig.suptitle(wrap(f"{title}: phase change per seed", MAX_WIDTH_IN, SUPTITLE_PT))
    return fig


# ---------------------------------------------------------------- across seeds


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
    from .dynamics import score_chance

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
                lo, hi = seed_band(ax, frame, "step1", "value", "mean over seeds")
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


# ---------------------------------------------------------------- several models side by side

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
            _, hi = seed_band(axes[0], loss, "step1", "value",
                          f"{m}: {_fit_words(fits, 'loss_pred')}", color=model_colour(k))
            top = max(top, hi)
            content = _curves(mine, BEST_INDUCTION_CONTENT)
            if len(content):
                lo, _ = seed_band(axes[1], content, "step1", "value",
                              f"{m}: {_fit_words(fits, 'induction_content')}", color=model_colour(k))
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
        fig.suptitle(wrap(f"Phase change of every model: mean over {seeds_text(dynamics)}, "
                          "band = min–max", MAX_WIDTH_IN))
    return fig
