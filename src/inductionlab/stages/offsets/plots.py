"""The offset profile of one model: what each term of the logits does to the letter k back.

The logits of an attention-only transformer split exactly into terms, one per component
(the direct path, each head's path from the embedding, each V-composition path) and
source position. The table ``offset_profile.csv`` holds, per component and offset
k = query − source position, the mean *self-logit effect*: what the term adds to the
logit of the letter at its own source, minus its mean over all letters (logits, nats);
positive copies the letter k back, negative suppresses it.

:func:`offset_profile_figure` draws, for the first seed, a components × offsets heatmap
of the task sample and of the control sample (random letters) on one diverging colour
scale centred at 0; below, the group sums (per layer, embedding vs composed terms, per
OV role) on the task sample, mean over seeds with a min–max band.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .offset_attribution import (ALL, DIRECT, HEADS, ROLE_PREFIX, component_groups,
                                           last_head, path_heads, role_group)
from ...analysis.roles import (ANTI_COPYING, COPY_SEEKING, COPYING, OV_ROLES, ROLE_SCORES,
                              role_names, split_roles)
from ...core.seeding import first_seed
from ...formatting.labels import role_label
from ...formatting.plots import (MAX_HEIGHT_IN, MAX_WIDTH_IN, SMALL_PT, STYLE, model_colour, plt,
                                 seed_band, seeds_text, wrap)

OFFSET_CMAP = "RdBu_r"
VALUE_LABEL = "self-logit effect (logits)"
OFFSET_LABEL = "offset k (query − source)"
MAX_PATH_ROWS = 24  # path rows of a heatmap; more (deep models): the largest max |value|
# roles of a head, most telling first: the copy-seeking roles (each before its positional
# form), the other attention roles, then anti-copying and copying; a row label names the
# first the head has, in its one display form (labels.role_label)
_OTHER_ROLES = tuple(s for s in ROLE_SCORES if s not in COPY_SEEKING)  # previous token, local
ROLE_ORDER = (tuple(r for r in role_names() if r not in _OTHER_ROLES + OV_ROLES)
              + _OTHER_ROLES + (ANTI_COPYING, COPYING))
# inches: per heatmap row; around the heatmaps (titles, x ticks and label); the group
# panels with their legends; the figure title
ROW_IN = 0.16
HEAT_EXTRA_IN = 1.05
BOTTOM_IN = 3.0
SUPTITLE_IN = 0.3


def role_word(role) -> str:
    """The most telling role of a ``role`` cell (:data:`ROLE_ORDER`) in its display form
    (:func:`~inductionlab.formatting.labels.role_label`): an attention role (induction, …)
    before the OV role (copying, anti-copying); "" when the head has none."""
    roles = split_roles(role)
    for name in ROLE_ORDER:
        if name in roles:
            return role_label(name)
    return role_label(roles[0]) if roles else ""


def copy_rank(role) -> int:
    """0 for a copying head, 1 for an anti-copying head, 2 for any other."""
    roles = split_roles(role)
    return 0 if COPYING in roles else 1 if ANTI_COPYING in roles else 2


def row_key(component: str, role) -> tuple:
    """Sort key of a heatmap row: ``direct`` first; then paths by the layer of their last
    head, the OV role of that head (copying, anti-copying, other), the last head, the
    number of heads along the path (the head's own term from the embedding before the
    composed ones), then the heads along it (by number)."""
    if component == DIRECT:
        return (-1,)
    heads = path_heads(component)
    last = heads[-1] if heads else (10 ** 6, 10 ** 6)
    return (last[0], copy_rank(role), last[1], len(heads), heads, str(component))


def row_label(component: str, role) -> str:
    """``L0H2 copying``, ``L0H1>L1H3 anti-copying``; ``direct``; a head without a role:
    its name alone."""
    word = "" if component == DIRECT else role_word(role)
    return f"{component} {word}".strip()


def _profile_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the offset profile (source ``offset``, offset ≥ 0)."""
    rows = frame[(frame["source"] == "offset") & (frame["offset"] >= 0)].copy()
    rows["offset"] = rows["offset"].astype(int)
    rows["kind"] = rows["kind"].astype(str)
    rows["component"] = rows["component"].astype(str)
    return rows


def heatmap_rows(rows: pd.DataFrame, max_paths: int = MAX_PATH_ROWS) -> tuple[list[str], dict, int]:
    """(components in drawing order, component -> role, number of path components): the
    direct path and the path components of ``rows`` (one seed, both samples), at most
    ``max_paths`` paths (those with the largest max |value|), ordered by :func:`row_key`."""
    paths = rows[rows["kind"] == "path"]
    roles = paths.groupby("component", sort=False)["role"].first().to_dict()
    size = paths.groupby("component", sort=False)["value"].apply(lambda v: np.nanmax(np.abs(v))
                                                                  if v.notna().any() else -1.0)
    others = [c for c in size.index if c != DIRECT]
    n_paths = len(others)
    if n_paths > max_paths:
        others = list(size[others].sort_values(ascending=False, kind="stable").index[:max_paths])
    shown = ([DIRECT] if DIRECT in size.index else []) + sorted(
        others, key=lambda c: row_key(c, roles.get(c)))
    return shown, roles, n_paths


def _grid(rows: pd.DataFrame, components: list[str], T: int) -> np.ndarray:
    grid = np.full((len(components), T), np.nan)
    index = {c: i for i, c in enumerate(components)}
    part = rows[rows["component"].isin(index)]
    means = part.groupby(["component", "offset"])["value"].mean()
    for (c, k), v in means.items():
        if 0 <= k < T:
            grid[index[c], k] = v
    return grid


# ------------------------------------------------------------------ the group sums

def _group_words(name: str) -> str:
    if name == ALL:
        return "all terms"
    if name == HEADS:
        return "all heads"
    if name.startswith(ROLE_PREFIX):
        roles = name[len(ROLE_PREFIX):].split("+")
        words = f"{roles[0].replace('_', '-')} heads"
        return words + "".join(f" + {r} path" if r == DIRECT else f" + {r.replace('_', '-')} heads"
                               for r in roles[1:])
    m = re.fullmatch(r"L(\d+)", name)
    if m:
        return f"layer {m.group(1)} heads"
    m = re.fullmatch(r"L(\d+):(embedding|composed)", name)
    if m:
        return (f"layer {m.group(1)}: from the embedding" if m.group(2) == "embedding"
                else f"layer {m.group(1)}: through earlier heads")
    return name


def derived_groups(paths: pd.DataFrame) -> pd.DataFrame:
    """Group rows summed from the path rows of each seed (the terms are exact, so a group's
    mean effect is the sum of its paths'), the groups of the offsets stage
    (:func:`~inductionlab.stages.offsets.offset_attribution.component_groups`) by the roles the
    rows carry: ``all``, ``L{l}``, ``L{l}:embedding``, ``L{l}:composed`` (l ≥ 1),
    ``role:copying``, ``role:anti_copying``."""
    keys = ["seed", "sample", "offset"]
    paths = paths[paths["kind"] == "path"]
    left_out = {HEADS, role_group(ANTI_COPYING, DIRECT)}  # all minus direct; a mix of both
    out = []
    for _, mine in paths.groupby("seed", sort=False):
        names = list(dict.fromkeys(mine["component"]))
        roles = {last_head(c): r for c, r in zip(mine["component"], mine["role"]) if c != DIRECT}
        for name, members in component_groups(names, roles).items():
            part = mine[mine["component"].isin(members)]
            if name not in left_out and len(part):
                out.append(part.groupby(keys, as_index=False)["value"].sum().assign(component=name))
    if not out:
        return pd.DataFrame(columns=keys + ["value", "component"])
    return pd.concat(out, ignore_index=True)


def group_panels(groups: list[str]) -> list[tuple[str, list[str]]]:
    """(panel title, groups drawn in it): by layer (``all`` and ``L{l}``), the embedding
    and composed terms of each later layer, and by OV role; ``heads`` is left out (it
    is ``all`` minus the direct path); a panel without a group present is left out."""
    present = set(groups)
    layer_of = lambda g: int(re.match(r"L(\d+)", g).group(1))  # noqa: E731
    layers = sorted((g for g in present if re.fullmatch(r"L\d+", g)), key=layer_of)
    splits = sorted((g for g in present if re.fullmatch(r"L\d+:(embedding|composed)", g)),
                    key=lambda g: (layer_of(g), not g.endswith("embedding")))
    roles = [g for g in map(role_group, OV_ROLES) if g in present]
    roles += sorted(g for g in present if g.startswith(ROLE_PREFIX) and g not in roles)
    panels = [("by layer of the last head", ([ALL] if ALL in present else []) + layers),
              ("embedding vs composed terms", splits),
              ("by OV role of the last head", roles)]
    return [(title, names) for title, names in panels if names]


LAYER_COLOURS = ("tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:olive", "tab:cyan")
# the heatmap's signs; the write-up's group "anti-copying heads + direct path" dashed
ROLE_STYLES = {role_group(COPYING): {"color": "tab:red"},
               role_group(ANTI_COPYING): {"color": "tab:blue"},
               role_group(ANTI_COPYING, DIRECT): {"color": "tab:blue", "ls": "--"}}


def _group_style(name: str) -> dict:
    if name == ALL:
        return {"color": "black"}
    m = re.fullmatch(r"L(\d+)(?::(embedding|composed))?", name)
    if m:
        ls = {None: "-", "embedding": "--", "composed": ":"}[m.group(2)]
        return {"color": LAYER_COLOURS[int(m.group(1)) % len(LAYER_COLOURS)], "ls": ls}
    return ROLE_STYLES.get(name, {"color": "tab:grey", "ls": "-."})


def _band(ax, part: pd.DataFrame, label: str, style: dict) -> None:
    """Mean over seeds (line) and min–max over seeds (band) of ``part`` against offset."""
    per_seed = part.groupby(["seed", "offset"])["value"].mean().reset_index()
    g = per_seed.groupby("offset")["value"]
    mean, lo, hi = g.mean(), g.min(), g.max()
    line, = ax.plot(mean.index, mean.values, label=label, lw=1.3, **style)
    ax.fill_between(mean.index, lo.values, hi.values, alpha=0.25, color=line.get_color(), linewidth=0)


# ------------------------------------------------------------------ the figure

def _offset_ticks(ax, T: int, minor: bool = True) -> None:
    ax.set_xticks(np.arange(0, T, 2 if T <= 24 else 4))
    if minor:
        ax.set_xticks(np.arange(T), minor=True)
        ax.tick_params(which="minor", length=1.5)


def offset_profile_figure(frame: pd.DataFrame, model: str):
    """The offset profile of ``model`` (its rows of the aggregated offset_profile table,
    every seed): per component (direct path, head paths, V-composition paths) the mean
    self-logit effect against offset k of the first seed, on the task and the control
    sample; below, the group sums on the task sample, mean and min–max over seeds."""
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D

    rows = _profile_rows(frame)
    if rows.empty:
        raise ValueError(f"{model}: no offset-profile rows (source 'offset', offset ≥ 0)")
    seeds = sorted(int(s) for s in rows["seed"].unique())
    seed = first_seed(seeds)
    T = int(rows["offset"].max()) + 1
    first = rows[(rows["seed"] == seed) & (rows["kind"] == "path")]
    components, roles, n_paths = heatmap_rows(first)
    samples = [(s, first[first["sample"] == s]) for s in ("task", "control")]
    grids = [_grid(part, components, T) for _, part in samples]
    finite = np.concatenate([g[np.isfinite(g)] for g in grids])
    scale = float(np.abs(finite).max()) if finite.size else 0.0
    scale = scale if scale > 0 else 1.0
    norm = Normalize(-scale, scale)
    cmap = plt.get_cmap(OFFSET_CMAP).with_extremes(bad="0.85")

    task = rows[rows["sample"] == "task"]
    groups = task[task["kind"] == "group"]
    derived = groups.empty
    if derived:
        groups = derived_groups(task)
    panels = group_panels(groups["component"].unique()) if len(groups) else []

    n_rows = max(len(components), 1)
    heat_in = min(ROW_IN * n_rows, 4.3) + HEAT_EXTRA_IN
    bottom_in = BOTTOM_IN if panels else 0.0
    height = min(heat_in + bottom_in + SUPTITLE_IN, MAX_HEIGHT_IN)
    shown = len(components) - (DIRECT in components)
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(MAX_WIDTH_IN, height), layout="constrained")
        if panels:
            top, bottom = fig.subfigures(2, 1, height_ratios=[heat_in, bottom_in])
        else:
            top, bottom = fig, None
        axes = top.subplots(1, 2, sharey=True)
        titles = [f"task sample (seed {seed})", "control sample (random letters)"]
        if shown < n_paths:
            titles[0] += (f": direct path and the {shown} of {n_paths} paths with the largest"
                          " max |effect|")
        for ax, grid, title, (sample, part) in zip(axes, grids, titles, samples):
            im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto",
                           interpolation="nearest", extent=(-0.5, T - 0.5, len(components) - 0.5, -0.5))
            if part.empty:
                title += " (not recorded)"
            ax.set_title(wrap(title, (MAX_WIDTH_IN - 2.6) / 2))
            ax.set_xlabel(OFFSET_LABEL)
            _offset_ticks(ax, T)
            # thin lines between the direct path and each layer's block of rows
            layer = [-1 if c == DIRECT else (path_heads(c) or [(-1, 0)])[-1][0] for c in components]
            for i in range(1, len(components)):
                if layer[i] != layer[i - 1]:
                    ax.axhline(i - 0.5, color="black", lw=0.6)
        axes[0].set_yticks(np.arange(len(components)),
                           [row_label(c, roles.get(c)) for c in components])
        axes[0].set_ylabel("term (path, role of its last head)")
        axes[1].tick_params(labelleft=False)
        top.colorbar(im, ax=list(axes), label=VALUE_LABEL, shrink=0.9 if n_rows > 6 else 1.0)

        if bottom is not None:
            gaxes = bottom.subplots(1, len(panels), sharey=True, squeeze=False)[0]
            n_seeds = groups["seed"].nunique()
            for i, (ax, (title, names)) in enumerate(zip(gaxes, panels)):
                for name in names:
                    _band(ax, groups[groups["component"] == name], _group_words(name),
                          _group_style(name))
                ax.axhline(0, color="grey", lw=0.6)
                ax.set_xlim(0, T - 1)
                _offset_ticks(ax, T, minor=False)
                ax.set_xlabel(OFFSET_LABEL)
                if i == 0:
                    ax.set_ylabel(VALUE_LABEL)
                else:
                    ax.tick_params(labelleft=False)
                ax.set_title(wrap(title, MAX_WIDTH_IN / len(panels) - 0.4))
            # one legend below, a column per panel (padded with blank entries)
            columns = [list(zip(*ax.get_legend_handles_labels())) for ax in gaxes]
            depth = max(len(c) for c in columns)
            blank = (Line2D([], [], alpha=0), "")
            entries = [e for c in columns for e in c + [blank] * (depth - len(c))]
            bottom.legend(*zip(*entries), loc="outside lower center", ncol=len(columns),
                          handlelength=2.2)
            how = (f"mean over {n_seeds} seeds, band min–max" if n_seeds > 1
                   else "1 seed")
            source = "; summed from the path rows" if derived else ""
            bottom.suptitle(wrap(f"Sums of terms, task sample ({how}{source})", MAX_WIDTH_IN,
                                 STYLE["axes.titlesize"]), fontsize=STYLE["axes.titlesize"])
        fig.suptitle(wrap(f"{model}: offset profile", MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig


# ---------------------------------------------------------------- several models side by side

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
                    seed_band(ax, mine, "offset", "value", m, color=model_colour(k))
            ax.axhline(0.0, color="grey", ls=":", lw=1.0)
            top = int(rows["offset"].max()) if len(rows) else 1
            ax.set_xticks(np.arange(0, top + 1, 6 if top > 12 else 1))
            ax.set_xticks(np.arange(0, top + 1), minor=True)
            ax.set_xlabel("offset k (letters back)")
            ax.set_title(f"{sample} sample")
        axes[0][0].set_ylabel("effect on the logit (logits)")
        axes[0][0].legend(loc="best", fontsize=SMALL_PT)
        fig.suptitle(wrap(f"Offset profile of every model: its effect on the letter k back, "
                          f"mean over {seeds_text(rows)}, band = min–max", MAX_WIDTH_IN))
    return fig
