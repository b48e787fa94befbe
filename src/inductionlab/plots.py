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
