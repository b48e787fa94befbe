"""Ablation figures: the loss of every ablation with heads ranked within each seed, and the
attention left by the composition ablations, in the style of :mod:`inductionlab.formatting.plots`."""
from __future__ import annotations

import numpy as np

from ...formatting.labels import ablation_words
from ...formatting.plots import ATTENTION_CMAP, MAX_HEIGHT_IN, MAX_WIDTH_IN, STYLE, plt, wrap


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
