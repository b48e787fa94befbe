"""Figures, in one consistent style: labelled axes, colour bars, titles naming the model."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .atomic import atomic_path  # noqa: E402

STYLE = {
    "figure.dpi": 110,
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "savefig.bbox": "tight",
}
ATTENTION_CMAP = "viridis"


def save(fig, path) -> None:
    """Save ``fig`` as PNG atomically and close it."""
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)


def attention_grid(patterns: list[np.ndarray], title: str, labels: list[str] | None = None):
    """Heatmaps of [H, T, T] patterns, one row per layer and one panel per head.

    ``labels``: tick labels per position (e.g. "3 D" for position 3, letter D).
    """
    n_layers, n_heads = len(patterns), patterns[0].shape[0]
    T = patterns[0].shape[-1]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_layers, n_heads, figsize=(2.6 * n_heads + 0.8, 2.6 * n_layers + 0.6),
                                 squeeze=False, constrained_layout=True)
        for l, layer in enumerate(patterns):
            for h in range(n_heads):
                ax = axes[l, h]
                im = ax.imshow(layer[h], cmap=ATTENTION_CMAP, vmin=0, vmax=1, interpolation="nearest")
                ax.set_title(f"layer {l} head {h}")
                ticks = np.arange(0, T, 1 if labels else 6)
                ax.set_xticks(ticks)
                ax.set_yticks(ticks)
                if labels:
                    ax.set_xticklabels([labels[t] for t in ticks], rotation=90, fontsize=5)
                    ax.set_yticklabels([labels[t] for t in ticks], fontsize=5)
                ax.set_xlabel("key position")
                if h == 0:
                    ax.set_ylabel("query position")
        fig.colorbar(im, ax=axes, shrink=0.8, label="attention weight")
        fig.suptitle(title)
    return fig


def offset_profiles(profiles: list[np.ndarray], title: str, max_offset: int = 12):
    """Mean attention against offset i - j, one line per head, one panel per layer."""
    n_layers = len(profiles)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, n_layers, figsize=(4 * n_layers, 2.8), squeeze=False,
                                 constrained_layout=True)
        for l, prof in enumerate(profiles):
            ax = axes[0, l]
            k = np.arange(min(max_offset, prof.shape[1]))
            for h in range(prof.shape[0]):
                ax.plot(k, prof[h, :len(k)], marker="o", ms=3, label=f"head {h}")
            ax.set_xlabel("offset (query position − key position)")
            ax.set_ylabel("mean attention")
            ax.set_title(f"layer {l}")
            ax.set_xticks(k)
            ax.set_ylim(0, 1)
            ax.legend(fontsize=6)
        fig.suptitle(title)
    return fig


def write_attention_figures(attention_npz, out_dir, title: str = "") -> list[Path]:
    """Mean-pattern, per-prompt and offset-profile figures of one model's attention.npz."""
    out_dir = Path(out_dir)
    with np.load(attention_npz, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    n_layers = sum(k.startswith("mean_pattern_L") for k in arrays)
    written = []
    means = [arrays[f"mean_pattern_L{l}"] for l in range(n_layers)]
    path = out_dir / "mean.png"
    save(attention_grid(means, f"{title} mean attention over random task sequences"), path)
    written.append(path)
    path = out_dir / "offset_profile.png"
    save(offset_profiles([arrays[f"offset_profile_L{l}"] for l in range(n_layers)],
                         f"{title} attention by offset"), path)
    written.append(path)
    for k, prompt in enumerate(arrays["prompts"]):
        tokens = arrays["prompt_tokens"][k]
        labels = [f"{t} {chr(ord('A') + int(x))}" for t, x in enumerate(tokens)]
        patterns = [arrays[f"prompt_pattern_L{l}"][k] for l in range(n_layers)]
        path = out_dir / f"prompt{k}_{prompt}.png"
        save(attention_grid(patterns, f"{title} prompt {prompt} (completed greedily)", labels), path)
        written.append(path)
    return written


# ---------------------------------------------------------------- across seeds

def _band(ax, frame, x: str, y: str, label: str, color=None):
    """Mean over seeds with a min-max band."""
    g = frame.groupby(x)[y]
    mean, lo, hi = g.mean(), g.min(), g.max()
    line, = ax.plot(mean.index, mean.values, label=label, color=color)
    ax.fill_between(mean.index, lo.values, hi.values, alpha=0.25, color=line.get_color(), linewidth=0)


def training_curves(log, title: str, floor: float | None = None):
    """Validation losses and predictable accuracy against step, mean and min-max over seeds."""
    n = log["seed"].nunique()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(8.5, 3), constrained_layout=True)
        ax = axes[0]
        _band(ax, log, "step", "val_loss_all", "all targets")
        _band(ax, log, "step", "val_loss_pred", "predictable targets")
        if floor is not None:
            ax.axhline(floor, color="grey", ls=":", lw=1, label=f"floor (all) {floor:.3f}")
        ax.set_xscale("symlog", linthresh=100)
        ax.set_xlabel("training step (linear below 100, log above)")
        ax.set_ylabel("validation loss (nats)")
        ax.legend(fontsize=6)
        ax = axes[1]
        _band(ax, log, "step", "val_acc_pred", "predictable targets", color="tab:green")
        ax.set_xscale("symlog", linthresh=100)
        ax.set_ylim(0, 1)
        ax.set_xlabel("training step (linear below 100, log above)")
        ax.set_ylabel("validation accuracy (argmax)")
        ax.legend(fontsize=6)
        fig.suptitle(f"{title}: mean over {n} seed(s), band = min–max")
    return fig


def spectra_figure(spectra_by_seed: dict[int, dict], title: str):
    """Eigenvalues in the complex plane: direct path and each layer's OV sum for every
    seed, and each head's OV circuit for the first seed."""
    seeds = sorted(spectra_by_seed)
    first = spectra_by_seed[seeds[0]]
    n_layers = sum(k.startswith("ov_sum_L") for k in first)
    panels = [("direct path W_E W_U (all seeds)", lambda s: {f"seed {s}": spectra_by_seed[s]["direct"]})]
    for l in range(n_layers):
        panels.append((f"layer {l} OV sum (all seeds)",
                       lambda s, l=l: {f"seed {s}": spectra_by_seed[s][f"ov_sum_L{l}"]}))
    for l in range(n_layers):
        heads = sorted(k for k in first if k.startswith(f"ov_L{l}H"))
        panels.append((f"layer {l} OV per head (seed {seeds[0]})",
                       lambda s, heads=heads: {f"head {k.split('H')[-1]}": first[k] for k in heads}
                       if s == seeds[0] else {}))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels), 3.1),
                                 constrained_layout=True, squeeze=False)
        for ax, (name, get) in zip(axes[0], panels):
            for s in seeds:
                for label, lam in get(s).items():
                    lam = lam[np.abs(lam) > 1e-9 * max(np.abs(lam).max(), 1e-30)]
                    ax.scatter(lam.real, lam.imag, s=8, alpha=0.7, label=label)
            ax.axhline(0, color="grey", lw=0.5)
            ax.axvline(0, color="grey", lw=0.5)
            ax.set_title(name)
            ax.set_xlabel("Re λ")
            ax.set_ylabel("Im λ")
            ax.legend(fontsize=5, markerscale=0.8)
        fig.suptitle(f"{title}: nonzero eigenvalues of token-space circuits")
    return fig


def composition_figure(comp, title: str, seed: int):
    """K/Q/V composition of one seed: term positivity and score minus baseline per head pair."""
    comp = comp[comp["seed"] == seed]
    kinds = ["K", "Q", "V"]
    pairs = comp[["layer", "src_layer"]].drop_duplicates().values.tolist()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2 * len(pairs), 3, figsize=(9, 5.6 * len(pairs)),
                                 constrained_layout=True, squeeze=False)
        for r, (l2, l1) in enumerate(pairs):
            part = comp[(comp["layer"] == l2) & (comp["src_layer"] == l1)]
            for c, kind in enumerate(kinds):
                k = part[part["kind"] == kind]
                for row, (col, cmap, lim, label) in enumerate(
                        [("positivity_real", "RdBu_r", 1.0, "eigenvalue positivity"),
                         ("score_minus_baseline", "PuOr_r", None, "composition score − baseline")]):
                    grid = k.pivot(index="src_head", columns="head", values=col)
                    ax = axes[2 * r + row, c]
                    vmax = lim or max(abs(grid.values).max(), 1e-6)
                    im = ax.imshow(grid.values, cmap=cmap, vmin=-vmax, vmax=vmax)
                    for (i, j), v in np.ndenumerate(grid.values):
                        ax.text(j, i, f"{v:+.2f}", ha="center", va="center", fontsize=6)
                    ax.set_xticks(range(grid.shape[1]), [f"L{l2}H{h}" for h in grid.columns])
                    ax.set_yticks(range(grid.shape[0]), [f"L{l1}H{p}" for p in grid.index])
                    ax.set_xlabel("later head h (reads)")
                    ax.set_ylabel("earlier head p (writes)")
                    ax.set_title(f"{kind}-composition: {label}")
                    fig.colorbar(im, ax=ax, shrink=0.8)
        fig.suptitle(f"{title}: composition between layers (seed {seed})")
    return fig


def failure_chart(failures, title: str, top: int = 15):
    """The patterns with the largest error mass (probability x error rate), mean and min-max over seeds."""
    g = failures.groupby("pattern")
    stats = g.agg(mass=("error_mass", "mean"), lo=("error_mass", "min"), hi=("error_mass", "max"),
                  acc=("teacher_forced_acc", "mean"), prob=("probability", "first"))
    stats = stats.sort_values("mass", ascending=False).head(top)[::-1]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.26 * len(stats) + 1.2), constrained_layout=True)
        y = np.arange(len(stats))
        ax.barh(y, stats["mass"], xerr=[stats["mass"] - stats["lo"], stats["hi"] - stats["mass"]],
                color="tab:red", alpha=0.7, capsize=2)
        ax.set_yticks(y, [f"{p}  (p={pr:.3g}, acc {a:.2f})" for p, pr, a in
                          zip(stats.index, stats["prob"], stats["acc"])], fontfamily="monospace")
        ax.set_xlabel("error mass = pattern probability × teacher-forced error rate")
        ax.set_title(f"{title}: repetition patterns that cost the most (mean over seeds, bars min–max)")
    return fig


def write_figure(name: str, variant: str, settings_path, out, inputs: list) -> None:
    """One figure of ``variant`` across its seeds (ablated_attention: its first seed)."""
    import json

    import pandas as pd

    from .data import TaskConfig, loss_floor

    task = TaskConfig.from_dict(json.loads(open(settings_path).read())["task"])

    def table(path):
        frame = pd.read_csv(path)
        return frame[frame["variant"] == variant]

    if name == "training":
        fig = training_curves(table(inputs[0]), variant, loss_floor(task))
    elif name == "spectra":
        by_seed = {}
        for path in inputs:
            seed = int(Path(path).parent.name.removeprefix("seed"))
            with np.load(path) as f:
                by_seed[seed] = {k: f[k] for k in f.files}
        fig = spectra_figure(by_seed, variant)
    elif name == "composition":
        comp = table(inputs[0])
        fig = composition_figure(comp, variant, int(comp["seed"].min()))
    elif name == "failure_modes":
        fig = failure_chart(table(inputs[0]), variant)
    elif name == "ablations":
        fig = ablation_bars(table(inputs[0]), variant)
    elif name == "ablated_attention":
        with np.load(inputs[0], allow_pickle=False) as f:
            n_layers = f["baseline"].shape[0]
        rows = [(name, l) for l in range(1, n_layers)  # every later layer: clean, then ablated
                for name in ("baseline", f"qk_from_embedding_L{l}", f"plus_k_L{l}", f"plus_q_L{l}")]
        fig = ablated_patterns(inputs[0], rows, f"{variant} {Path(inputs[0]).parent.name}")
    elif name == "dynamics":
        fig = dynamics_bands(table(inputs[0]), variant)
    elif name == "phase_change":
        from .dynamics import read_phase_change
        from .dynamics_plots import phase_change_figure

        phase = read_phase_change(inputs[1])
        fig = phase_change_figure(table(inputs[0]), phase[phase["variant"] == variant], variant)
    else:
        raise ValueError(f"unknown figure {name!r}; known: training, spectra, composition, "
                         "failure_modes, ablations, ablated_attention, dynamics, phase_change")
    save(fig, out)


def ablation_bars(ablations, title: str, metric: str = "loss_all"):
    """Loss under every ablation that ran: mean over seeds, whiskers min-max, baseline dashed."""
    ran = ablations[ablations["status"] == "ok"]
    g = ran.groupby("ablation", sort=False)[metric]
    stats = g.agg(["mean", "min", "max"])
    baseline = stats.loc["baseline", "mean"] if "baseline" in stats.index else None
    stats = stats[::-1]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.2 * len(stats) + 1.3), constrained_layout=True)
        y = np.arange(len(stats))
        ax.barh(y, stats["mean"], xerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                color="tab:blue", alpha=0.7, capsize=2)
        if baseline is not None:
            ax.axvline(baseline, color="black", ls="--", lw=1, label=f"baseline {baseline:.3f}")
            ax.legend(fontsize=6, loc="lower right")
        ax.set_yticks(y, stats.index, fontsize=6)
        ax.set_xlabel(f"validation {metric.replace('_', ' ')} (nats) under the ablation")
        ax.set_title(f"{title}: ablations (mean over {ran['seed'].nunique()} seed(s), whiskers min–max)")
    return fig


def ablated_patterns(npz_path, rows: list[tuple[str, int]], title: str):
    """Mean attention of one model's heads: one row per (ablation, layer), one panel per head.

    Rows whose ablation was not saved (it did not run on this model) are left out.
    """
    with np.load(npz_path, allow_pickle=False) as f:
        present = [(n, l) for n, l in rows if n in f.files]
        patterns = {(n, l): f[n][l] for n, l in present}
    if not present:
        raise ValueError(f"{npz_path}: none of the ablations {[n for n, _ in rows]} were saved")
    n_heads = patterns[present[0]].shape[0]
    layers = sorted({l for _, l in present})
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(present), n_heads, figsize=(2.2 * n_heads + 0.8, 2.2 * len(present) + 0.5),
                                 squeeze=False, constrained_layout=True)
        for r, (name, layer) in enumerate(present):
            for h in range(n_heads):
                ax = axes[r, h]
                im = ax.imshow(patterns[name, layer][h], cmap=ATTENTION_CMAP, vmin=0, vmax=1)
                ax.set_title(f"{name}: L{layer}H{h}", fontsize=6)
                ax.set_xlabel("key position", fontsize=6)
                if h == 0:
                    ax.set_ylabel("query position", fontsize=6)
                ax.tick_params(labelsize=5)
        fig.colorbar(im, ax=axes, shrink=0.6, label="attention weight")
        which = ("layer " if len(layers) == 1 else "layers ") + ", ".join(map(str, layers))
        fig.suptitle(f"{title}: {which} mean attention, clean and ablated")
    return fig


def dynamics_bands(dynamics, title: str):
    """Over training, mean and min-max over seeds: predictable loss, ICL score, and the
    largest induction and previous-token score of any head, each with its chance level."""
    per_step = lambda metric, how: (dynamics[dynamics["metric"] == metric]  # noqa: E731
                                    .groupby(["seed", "step"])["value"].agg(how).reset_index())
    panels = [("loss_pred", "first", "predictable-target loss (nats)"),
              ("icl_score", "first", "ICL score (last − first loss)"),
              ("induction", "max", "largest induction score of any head"),
              ("previous_token", "max", "largest previous-token score of any head")]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 4, figsize=(13, 2.8), constrained_layout=True)
        for ax, (metric, how, label) in zip(axes, panels):
            frame = per_step(metric, how)
            frame["step1"] = frame["step"] + 1
            _band(ax, frame, "step1", "value", label)
            if f"{metric}_chance" in set(dynamics["metric"]):
                from .dynamics import score_chance

                ax.axhline(score_chance(dynamics, metric), color="grey", ls=":", lw=1, label="chance")
                ax.legend(fontsize=6)
            ax.set_xscale("log")
            ax.set_xlabel("training step + 1 (log)")
            ax.set_ylabel(label)
        fig.suptitle(f"{title}: over training (mean over seeds, band min–max)")
    return fig
