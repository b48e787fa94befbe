"""Attention figures: one model's heatmaps (mean, offset profile, every suite prompt) and
the cross-seed grid of every head's mean pattern, heads ordered by their role score.

Every figure fits the report's text column (see :mod:`inductionlab.formatting.plots`): panels are sized
from the number of tick labels they must carry, and a figure that would grow too tall
is split (a prompt's heatmaps are one figure per layer). The limits are
:data:`inductionlab.formatting.plots.MAX_WIDTH_IN`, ``MAX_HEIGHT_IN`` and ``MIN_FONT_PT``.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ...analysis.roles import INDUCTION, NO_ROLE, PREVIOUS_TOKEN, split_roles
from ...formatting.labels import ROLE_ABBREVIATIONS
# plots selects the Agg backend and holds the shared style and size rules
from ...formatting.plots import (ATTENTION_CMAP, LETTERS, MAX_HEIGHT_IN, MAX_WIDTH_IN, STYLE,
                                 TICK_PT, TICK_SPACING_PT, min_side_in, number, save, tick_step,
                                 wrap)
from ...core.loading import open_npz, read_json, read_table

def letters(tokens) -> list[str]:
    """Token ids as letters (0 -> A)."""
    return [LETTERS[int(t)] for t in tokens]


# ---------------------------------------------------------------- one model


GRID_HEADS_PER_ROW = 4


def attention_grid(patterns: list[np.ndarray], title: str):
    """Heatmaps of [H, T, T] mean patterns: each layer's heads in rows of at most
    :data:`GRID_HEADS_PER_ROW` panels (an 8-head layer takes two rows), the panels sized to
    fit the page whatever the number of layers and heads.

    Position ticks every ``block_len``-ish (6) positions where they fit, else fewer; every
    panel titled L{l}H{h}; tick labels and axis labels on the outer panels."""
    n_layers, n_heads = len(patterns), patterns[0].shape[0]
    T = patterns[0].shape[-1]
    per_row = min(n_heads, GRID_HEADS_PER_ROW)
    rows_per_layer = -(-n_heads // per_row)
    n_rows = n_layers * rows_per_layer
    side = min(2.2, (MAX_WIDTH_IN - 0.9) / per_row - 0.45,
               (MAX_HEIGHT_IN - 0.9) / n_rows - 0.45)
    width = per_row * (side + 0.45) + 0.9
    height = min(MAX_HEIGHT_IN, n_rows * (side + 0.45) + 0.9)
    ticks = np.arange(0, T, 6 * tick_step(-(-T // 6), side, 2 * TICK_SPACING_PT))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_rows, per_row, figsize=(width, height), squeeze=False,
                                 constrained_layout=True)
        for l, layer in enumerate(patterns):
            for h in range(n_heads):
                r, c = l * rows_per_layer + h // per_row, h % per_row
                ax = axes[r, c]
                im = ax.imshow(layer[h], cmap=ATTENTION_CMAP, vmin=0, vmax=1, interpolation="nearest")
                ax.set_title(f"L{l}H{h}", fontsize=8)
                ax.set_xticks(ticks)
                ax.set_yticks(ticks)
                ax.tick_params(labelsize=TICK_PT, labelleft=c == 0, labelbottom=r == n_rows - 1)
                if r == n_rows - 1:
                    ax.set_xlabel("key position", fontsize=7)
                if c == 0:
                    ax.set_ylabel("query position", fontsize=7)
            for h in range(n_heads, rows_per_layer * per_row):  # a layer's last row, not full
                axes[l * rows_per_layer + h // per_row, h % per_row].set_axis_off()
        fig.colorbar(im, ax=axes, shrink=0.8, label="attention weight")
        fig.suptitle(wrap(title, width - 0.2, 9), fontsize=9)
    return fig


def offset_profiles(profiles: list[np.ndarray], title: str, max_offset: int | None = None):
    """Mean attention against offset i - j, one line per head, one panel per layer.

    Offsets 0 .. ``max_offset`` − 1 (default: every offset, so that the copies 5, 11
    and 17 back are all on the axis)."""
    n_layers = len(profiles)
    width = min(MAX_WIDTH_IN, 3.4 * n_layers + 0.4)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, n_layers, figsize=(width, 2.9), squeeze=False,
                                 constrained_layout=True)
        for l, prof in enumerate(profiles):
            ax = axes[0, l]
            k = np.arange(min(max_offset or prof.shape[1], prof.shape[1]))
            for h in range(prof.shape[0]):
                ax.plot(k, prof[h, :len(k)], marker="o", ms=3, label=f"L{l}H{h}")
            ax.set_xlabel("offset (query position − key position)")
            ax.set_ylabel("mean attention")
            ax.set_title(f"layer {l}")
            panel_in = (width - 0.4) / n_layers - 0.55
            ax.set_xticks(k[::tick_step(len(k), panel_in, spacing_pt=10.5)])  # two-digit labels
            ax.set_xticks(k, minor=True)
            ax.tick_params(labelsize=TICK_PT)
            ax.set_ylim(0, 1)
            ax.legend(fontsize=7)
        fig.suptitle(wrap(title, width - 0.2, 9), fontsize=9)
    return fig


def prompt_figure(pattern: np.ndarray, tokens, prompt_len: int, layer: int, title: str,
                  teacher_forced: bool, heads_per_row: int = 2):
    """One layer's attention [H, T, T] on one prompt's sequence, ``heads_per_row`` heads a row.

    Every position is labelled with its letter (completion letters in red); dashed
    lines mark the end of the prompt (queries below, keys right of them are the
    completion). ``teacher_forced``: the sequence is prompt + correct completion;
    otherwise prompt + the model's greedy completion (out of distribution).
    """
    n_heads, T = pattern.shape[0], pattern.shape[-1]
    labels = letters(tokens)
    cols = min(heads_per_row, n_heads)
    rows = math.ceil(n_heads / cols)
    side = max(min_side_in(T), 2.45)
    width = cols * side + 0.45 * cols + 0.8
    height = rows * (side + 0.75) + 0.75
    sequence = "".join(labels)
    how = (f"teacher-forced on the correct sequence {sequence[:prompt_len]}·{sequence[prompt_len:]}"
           if teacher_forced else
           f"on the greedy completion {sequence[:prompt_len]}·{sequence[prompt_len:]} "
           "(no correct completion: out of distribution)")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False,
                                 constrained_layout=True)
        for h in range(rows * cols):
            ax = axes[h // cols, h % cols]
            if h >= n_heads:
                ax.set_visible(False)
                continue
            im = ax.imshow(pattern[h], cmap=ATTENTION_CMAP, vmin=0, vmax=1, interpolation="nearest")
            ax.set_title(f"L{layer}H{h}")
            ax.set_xticks(np.arange(T), labels, fontsize=TICK_PT)
            ax.set_yticks(np.arange(T), labels, fontsize=TICK_PT)
            for axis_labels in (ax.get_xticklabels(), ax.get_yticklabels()):
                for t, lab in enumerate(axis_labels):
                    if t >= prompt_len:
                        lab.set_color("tab:red")
            ax.tick_params(length=2, pad=1.5)
            if 0 < prompt_len < T:
                for draw in (ax.axvline, ax.axhline):
                    draw(prompt_len - 0.5, color="white", ls="--", lw=0.9)
            ax.set_xlabel("key (letter at each position)")
            ax.set_ylabel("query (letter at each position)")
        fig.colorbar(im, ax=axes, shrink=0.6, label="attention weight")
        fig.suptitle(wrap(f"{title} layer {layer} attention on prompt {sequence[:prompt_len]}, {how}. "
                          "Dashed lines: end of the prompt; red letters: the completion.",
                          width - 0.2, 9), fontsize=9)
    return fig


def prompt_figure_names(k: int, prompt: str, n_layers: int) -> dict[int, str]:
    """File name of each layer's figure for suite prompt ``k``: the last layer (the one the
    unembedding reads; a 1-layer model's only layer) is ``prompt{k}_{PROMPT}.png``, an
    earlier layer l ``prompt{k}_{PROMPT}_L{l}.png``."""
    return {l: f"prompt{k}_{prompt}.png" if l == n_layers - 1 else f"prompt{k}_{prompt}_L{l}.png"
            for l in range(n_layers)}


def not_measured_figure(title: str, why: str):
    """A figure that holds only its title and why it shows nothing."""
    fig, ax = plt.subplots(figsize=(6, 1.6))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, textwrap.fill(why, 70), ha="center", va="center", transform=ax.transAxes)
    return fig


def write_attention_figures(attention_npz, out_dir, title: str = "") -> list[Path]:
    """Mean-pattern, offset-profile and per-prompt figures of one model's attention.npz.

    Per suite prompt one figure per layer (:func:`prompt_figure_names`): 24 letters on
    each axis need panels too large for all of a 2-layer model's heads in one figure.
    """
    out_dir = Path(out_dir)
    arrays = open_npz(attention_npz, "an attention.npz",
                      ["mean_pattern_L0", "offset_profile_L0", "prompts"])
    unread = str(arrays["prompts_not_measured"]) if "prompts_not_measured" in arrays else None
    if unread is None and "prompt_tokens" not in arrays:
        arrays = open_npz(attention_npz, "an attention.npz", ["prompt_tokens"])
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
    prompts = [str(p) for p in arrays["prompts"]]
    lengths = arrays.get("prompt_length", np.array([len(p) for p in prompts]))
    forced = arrays.get("prompt_teacher_forced", np.zeros(len(prompts), dtype=bool))
    for k, prompt in enumerate(prompts):
        for l, name in prompt_figure_names(k, prompt, n_layers).items():
            if unread is not None:  # the model cannot read the prompt's sequence: say why
                save(not_measured_figure(f"{title} layer {l} on {prompt}", unread),
                     out_dir / name)
                written.append(out_dir / name)
                continue
            fig = prompt_figure(arrays[f"prompt_pattern_L{l}"][k], arrays["prompt_tokens"][k],
                                int(lengths[k]), l, title, bool(forced[k]))
            path = out_dir / name
            save(fig, path)
            written.append(path)
    return written


# ---------------------------------------------------------------- across seeds

# a panel is too narrow for a role's display form: its abbreviation, kept with the display
# forms in labels.py; the scores that order heads are named as their roles
SCORE_ABBREVIATIONS = {score: ROLE_ABBREVIATIONS[score] for score in (INDUCTION, PREVIOUS_TOKEN)}


def ordering_score(layer: int, n_layers: int, smear_layers=()) -> str:
    """The score that orders a layer's heads: ``induction`` where the layer can form an
    induction head (layer ≥ 1, or keys smeared in that layer), else ``previous_token``
    (layer 0 of a model without smeared keys: at best a previous-token layer)."""
    return INDUCTION if layer >= 1 or layer in set(smear_layers) else PREVIOUS_TOKEN


ORDERING_RULE = ("within each layer heads ordered by score, highest first: induction (ind) in "
                 "layers that can form an induction head (layer ≥ 1 or smeared keys), "
                 "previous-token (prev) in the others")


def order_heads(scores, n_layers: int, smear_layers=()) -> list[tuple[int, list[int], str]]:
    """Per layer: (layer, heads sorted by descending :func:`ordering_score`, score name).

    ``scores``: one seed's head scores (columns layer, head and the score columns).
    Ties keep head order.
    """
    out = []
    for l in range(n_layers):
        name = ordering_score(l, n_layers, smear_layers)
        rows = scores[scores["layer"] == l]
        if rows.empty:
            raise ValueError(f"head scores: no heads of layer {l}")
        ranked = rows.sort_values(["head"]).sort_values(name, ascending=False, kind="stable")
        out.append((l, [int(h) for h in ranked["head"]], name))
    return out


def _pack(pieces: list[tuple[str, str]], width_chars: int) -> str:
    """Pieces (text, separator before it) joined into lines of at most ``width_chars``
    characters where possible; a line breaks only between pieces."""
    lines = [pieces[0][0]]
    for text, sep in pieces[1:]:
        if len(lines[-1] + sep + text) <= width_chars:
            lines[-1] += sep + text
        else:
            lines[-1] += sep.strip() if sep.strip() == "+" else ""
            lines.append(text)
    return "\n".join(lines)


def panel_title(row: int | str, layer: int, head: int, name: str, score: float, roles: str,
                width_chars: int = 40) -> str:
    """"s2 L1H3 · ind 0.61" (a seed number ``row`` reads s2; a text is the prefix as it
    is, "" none) then the roles ("ind+copy"), broken to fit ``width_chars``."""
    prefix = f"s{row}" if isinstance(row, int) else row
    pieces = [(f"{prefix} L{layer}H{head}".strip(), ""),
              (f"{SCORE_ABBREVIATIONS[name]} {number(score, '.2f')}", " · ")]
    roles = [ROLE_ABBREVIATIONS.get(r, r) for r in split_roles(roles) or [NO_ROLE]]
    first = _pack(pieces, width_chars)
    return first + "\n" + _pack([(roles[0], "")] + [(r, "+") for r in roles[1:]], width_chars)


MAX_PANELS_PER_ROW = 8


def layer_chunks(n_layers: int, n_heads: int, max_panels: int = MAX_PANELS_PER_ROW) -> list[list[int]]:
    """Layers grouped so that one figure row shows at most ``max_panels`` heads (at least
    one whole layer): a 3-layer model of 4 heads is drawn as rows of layers 0–1 and 2."""
    per_row = max(1, max_panels // n_heads)
    return [list(range(l, min(l + per_row, n_layers))) for l in range(0, n_layers, per_row)]


def attention_seeds_figure(means_by_seed: dict[int, list[np.ndarray]], scores, title: str,
                           smear_layers=()):
    """Every seed's mean attention of every head: rows = seeds (and, past
    :data:`MAX_PANELS_PER_ROW` heads, a row per group of layers, :func:`layer_chunks`),
    columns = each layer's heads, ordered within each seed and layer by :func:`order_heads`.

    ``means_by_seed``: seed -> [H, T, T] per layer; ``scores``: head scores of these seeds
    (columns seed, layer, head, induction, previous_token, roles).
    """
    rows = []
    for seed in sorted(means_by_seed):
        frame = scores[scores["seed"] == seed]
        if frame.empty:
            raise ValueError(f"head scores: no rows for seed {seed}")
        rows.append({"label": f"s{seed}", "means": means_by_seed[seed], "scores": frame,
                     "smear": smear_layers})
    return attention_rows_figure(rows, f"{title}: mean attention of every head, one row per "
                                       f"seed; {ORDERING_RULE}. Panel: seed, head, score, roles.")


def attention_models_figure(rows: list[dict], seed: int):
    """The models side by side: one row per model (``rows``: label = the model's name,
    means = its [H, T, T] per layer, scores = its head scores of ``seed``, smear = its
    smeared layers), heads ordered as in :func:`attention_seeds_figure`."""
    return attention_rows_figure(
        [{**r, "name": r["label"], "label": ""} for r in rows],
        f"Mean attention of every head over random task sequences, seed {seed}, one row per "
        f"model; {ORDERING_RULE}. Panel: head, score, roles.")


def attention_rows_figure(rows: list[dict], title: str):
    """Mean attention of every head, one figure row per entry of ``rows`` (label: the
    panel titles' prefix; optional name: the row's name beside it; means: [H, T, T] per
    layer; scores: its head scores; smear: its smeared layers), a row split per group of
    layers past :data:`MAX_PANELS_PER_ROW` heads; within a row each layer's heads ordered
    by :func:`order_heads`."""
    n_heads, T = rows[0]["means"][0].shape[:2]
    chunks_of = [layer_chunks(len(r["means"]), r["means"][0].shape[0]) for r in rows]
    widest = max(len(c) for chunks in chunks_of for c in chunks)
    n_cols = max(len(c) * r["means"][0].shape[0] for r, chunks in zip(rows, chunks_of) for c in chunks)
    named = any(r.get("name") for r in rows)
    # width: 0.55 in left of the panels (ticks, label; more with a row name), 0.85 in
    # colour bar, gaps between layers
    gap, left_in, bar_in = 0.12, 0.7 if named else 0.55, 0.85
    cell = (MAX_WIDTH_IN - left_in - bar_in - gap * (widest - 1)) / n_cols
    width_chars = max(6, int((cell - 0.04) * 72 / (0.58 * 7)))
    panels, names = [], []  # one list per figure row: (means, layer, head, title) or None for a gap
    for r, chunks in zip(rows, chunks_of):
        n_layers = len(r["means"])
        ordered = {l: (heads, name) for l, heads, name in order_heads(r["scores"], n_layers, r["smear"])}
        for c, chunk in enumerate(chunks):
            row_panels = []
            for l in chunk:
                heads, name = ordered[l]
                for h in heads:
                    row = r["scores"][(r["scores"]["layer"] == l) & (r["scores"]["head"] == h)].iloc[0]
                    row_panels.append((r["means"], l, h, panel_title(
                        r["label"], l, h, name, row[name], row.get("roles", "none"), width_chars)))
                row_panels.append(None)  # the gap column between layers
            panels.append(row_panels[:-1])
            names.append(r.get("name", "") if c == 0 else "")
    n_rows = len(panels)
    title_lines = max(p[3].count("\n") + 1 for row in panels for p in row if p)
    row_extra = title_lines * 0.115 + 0.08  # the panel titles above each row
    row_gap, bottom_in = 0.06, 0.32  # between rows; key ticks and label below the last
    width = min(MAX_WIDTH_IN, n_cols * cell + gap * (widest - 1) + left_in + bar_in)
    suptitle = wrap(title, width - 0.2, 9)
    top_in = (suptitle.count("\n") + 1) * 9 * 1.25 / 72 + 0.12
    side = min(cell - 0.06, (MAX_HEIGHT_IN - top_in - bottom_in) / n_rows - row_extra - row_gap)
    height = n_rows * (side + row_extra + row_gap) + top_in + bottom_in
    few_ticks = side < 1.0
    # Placed by hand, in inches: each figure row has its own columns (its layers' heads,
    # a narrow gap between layers, starting at the left edge), so every panel has the
    # same size whatever the other rows hold, and no head falls into another row's gap.
    inch = lambda x, y, w, h: [x / width, y / height, w / width, h / height]  # noqa: E731
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(width, height))
        axes = []
        for r, row_panels in enumerate(panels):
            bottom = height - top_in - r * (side + row_extra + row_gap) - row_extra - side
            x = left_in
            for col, panel in enumerate(row_panels):
                if panel is None:
                    x += gap
                    continue
                means, l, h, text = panel
                ax = fig.add_axes(inch(x, bottom, side, side))
                x += cell
                axes.append(ax)
                im = ax.imshow(means[l][h], cmap=ATTENTION_CMAP, vmin=0, vmax=1,
                               interpolation="nearest")
                ax.set_title(text, fontsize=7, loc="left")
                ticks = [0, T // 2] if few_ticks else [0, T // 2, T - 1]
                ax.set_xticks(ticks)
                ax.set_yticks(ticks)
                ax.tick_params(labelsize=7, length=2, pad=1)
                first, last_row = col == 0, r == n_rows - 1
                ax.tick_params(labelleft=first, labelbottom=last_row)
                if first:
                    ax.set_ylabel(f"{names[r]}\nquery pos." if names[r] else "query pos.", fontsize=7)
                if last_row:
                    ax.set_xlabel("key pos.", fontsize=7)
        # the colour bar right of the widest row, over the middle half of the panels
        panels_in = height - top_in - bottom_in
        cax = fig.add_axes(inch(width - bar_in + 0.15, bottom_in + panels_in / 4, 0.12,
                                panels_in / 2))
        fig.colorbar(im, cax=cax, label="mean attention weight")
        fig.suptitle(suptitle, fontsize=9, y=1 - 0.06 / height, va="top")
    return fig


def read_attention_inputs(figure: str, inputs: list) -> tuple[dict, object, dict]:
    """The inputs of an attention figure: every attention.npz's mean patterns by (model,
    seed) (from its results/{model}/seed{N} folder), the stacked head_scores table, and each
    spec.json's smeared layers by model; a file of another kind is refused."""
    means, scores, smear = {}, None, {}
    for path in map(Path, inputs):
        model = path.parent.parent.name
        if path.suffix == ".npz":
            seed = int(path.parent.name.removeprefix("seed"))
            arrays = open_npz(path, "an attention.npz", ["mean_pattern_L0"])
            n_layers = sum(k.startswith("mean_pattern_L") for k in arrays)
            means[model, seed] = [arrays[f"mean_pattern_L{l}"] for l in range(n_layers)]
        elif path.suffix == ".csv":
            scores = read_table(path, ["variant", "seed", "layer", "head", "induction"],
                                kind="the stacked head_scores table")
        elif path.suffix == ".json":
            smear[model] = tuple(read_json(path, "a spec.json", ["model"])["model"].get("smear_layers", []))
        else:
            raise ValueError(f"{figure}: unexpected input {path}; expected attention.npz "
                             "files, a head_scores CSV and spec.json files")
    if not means or scores is None:
        raise ValueError(f"{figure} needs attention.npz files and a head_scores CSV")
    return means, scores, smear


def attention_seeds_from_files(variant: str, inputs: list):
    """The ``attention_seeds`` figure of ``variant``: ``inputs`` are every seed's
    attention.npz, the aggregated head_scores table, and optionally a spec.json of the
    variant (for its smeared layers); see :func:`read_attention_inputs`."""
    means, scores, smear = read_attention_inputs("attention_seeds", inputs)
    if "variant" in scores:
        scores = scores[scores["variant"] == variant]
    by_seed = {seed: m for (_, seed), m in means.items()}
    return attention_seeds_figure(by_seed, scores, variant, next(iter(smear.values()), ()))


def attention_models_from_files(models: list[str], inputs: list):
    """The ``attention`` figure of several models: ``inputs`` are each model's
    attention.npz of one seed, the aggregated head_scores table, and each model's spec.json
    (its smeared layers); see :func:`read_attention_inputs`."""
    means, scores, smear = read_attention_inputs("attention", inputs)
    seeds = {m: seed for m, seed in means}
    missing = [m for m in models if m not in seeds]
    if missing:
        raise ValueError(f"attention needs an attention.npz of every model (missing: "
                         f"{', '.join(missing)})")
    rows = [{"label": m, "means": means[m, seeds[m]], "smear": smear.get(m, ()),
             "scores": scores[(scores["variant"] == m) & (scores["seed"] == seeds[m])]}
            for m in models]
    return attention_models_figure(rows, seeds[models[0]])
