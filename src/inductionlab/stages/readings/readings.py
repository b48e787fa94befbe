"""What the summary reads of every model, computed from the stacked tables and written as
tables of their own (results/tables/content_or_position.csv and algorithm_readings.csv)
by the ``readings`` command; the report puts them in words and computes nothing.

**Content or position.** Does a model's best copy-seeking head look for a copy, or at a
position? Per model and seed, side by side:

- attention: the best head of the model's last layer (the layer whose heads can be
  induction heads in a 2-layer or smeared model; in a plain 1-layer model, the control)
  by induction score; that score, the same score on random sequences without a repeated
  block (the positional control), the content part (score − control), the chance level,
  and the head's role (``induction``: its score and its content part pass the role rule;
  ``positional_induction``: its score passes by position alone), as the stacked
  head_scores table gives it;
- behaviour: the period test, accuracy after the first block on blocks of n distinct
  letters (``period{n}_acc`` of behaviour.csv). A model that copies the letter after the
  previous occurrence of the current one solves every n; one that looks 5, 11, 17 back by
  position solves only the trained n.

The reading per seed: ``content`` when the best head has the induction role, ``position``
when it has the positional one, ``none`` when neither.

**The algorithm as measured.** Per model, over its seeds (task sample, the whole model's
profile, ``all``):

- it *copies* the letter k back when every seed's 95 % interval at k lies above 0 and the
  mean over seeds is at least :data:`SHARE` of the largest positive mean; it *suppresses*
  the letter k back likewise below 0;
- each set of offsets is attributed to the part of the model that carries most of it: in
  a model of several layers the direct path, layer 0's heads, and for every later layer l
  its heads from the embedding or through the heads of layers 0 … l−1 (V-composition);
  the direct path, the copying and the anti-copying heads in a 1-layer model;
- the profile as a program and the write-up's algorithm as a program: the share of the
  model's KL from uniform each removes, and how often its argmax agrees with the model's,
  mean over seeds with min and max.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ..offsets.offset_attribution import ALL, COMPOSED, DIRECT, EMBEDDING, layer_group, role_group
from ...analysis.roles import (ANTI_COPYING, COPYING, INDUCTION, ROLES_COLUMN, content_column,
                    control_column, positional_role, split_roles)

CONTENT, POSITION, NONE = "content", "position", "none"
PERIOD = re.compile(r"^period(\d+)_acc$")
TRAINED = re.compile(r"^period(\d+)_trained$")  # 1: the model's own task draws this period
TASK_ACC = "period{}_task_acc"  # its task's Bayes predictor on the same blocks


def _reading(roles: str) -> str:
    found = set(split_roles(roles))
    if INDUCTION in found:
        return CONTENT
    return POSITION if positional_role(INDUCTION) in found else NONE


def best_heads(head_scores: pd.DataFrame) -> pd.DataFrame:
    """Per model and seed, the last layer's head with the largest induction score: columns
    variant, seed, layer, head, induction, its chance, control and content part, reading."""
    rows = []
    for (variant, seed), mine in head_scores.groupby(["variant", "seed"], sort=False):
        last = mine[mine["layer"] == mine["layer"].max()]
        best = last.loc[last["induction"].idxmax()]
        rows.append({"variant": variant, "seed": int(seed), "layer": int(best["layer"]),
                     "head": int(best["head"]), "induction": float(best["induction"]),
                     "chance": float(best["induction_chance"]),
                     "control": float(best[control_column("induction")]),
                     "content": float(best[content_column("induction")]),
                     "reading": _reading(best.get(ROLES_COLUMN, ""))})
    return pd.DataFrame(rows)


def period_lengths(behaviour: pd.DataFrame) -> list[int]:
    """The block lengths of the period test in a behaviour table, ascending."""
    return sorted({int(m.group(1)) for m in map(PERIOD.match, behaviour["metric"].astype(str)) if m})


def trained_lengths(behaviour: pd.DataFrame) -> list[int]:
    """The period-test lengths one model's behaviour rows mark as trained, ascending."""
    return sorted({int(m.group(1)) for name, v in zip(behaviour["metric"], behaviour["value"])
                   if (m := TRAINED.match(str(name))) and v == 1})


def own_task(behaviour: pd.DataFrame) -> str:
    """The name of the task one model trained on, from its behaviour rows ("" if none say)."""
    if "task" not in behaviour:
        return ""
    names = behaviour.loc[behaviour["metric"] == "loss_pred", "task"].dropna().astype(str)
    return names.iloc[0] if len(names) else ""


def content_or_position(head_scores: pd.DataFrame, behaviour: pd.DataFrame) -> pd.DataFrame:
    """One row per model: the best last-layer head's induction score, control, content part
    and chance (means over seeds, with min and max), how many seeds read content /
    position / none, its task and the period-test lengths that task trains
    (``trained_periods``, space-separated; empty where the behaviour table does not mark
    them), and the period test's mean accuracy per block length with the task predictor's
    (``period{n}_task_acc``)."""
    heads = best_heads(head_scores)
    lengths = period_lengths(behaviour)
    rows = []
    for variant, mine in heads.groupby("variant", sort=False):
        row = {"variant": variant, "seeds": len(mine), "layer": int(mine["layer"].iloc[0])}
        for name in ("induction", "control", "content", "chance"):
            row[name] = float(mine[name].mean())
            row[f"{name}_min"], row[f"{name}_max"] = float(mine[name].min()), float(mine[name].max())
        for reading in (CONTENT, POSITION, NONE):
            row[f"seeds_{reading}"] = int((mine["reading"] == reading).sum())
        b = behaviour[behaviour["variant"] == variant]
        row["task"] = own_task(b)
        row["trained_periods"] = joined_offsets(trained_lengths(b))
        for n in lengths:
            values = b.loc[b["metric"] == f"period{n}_acc", "value"].astype(float)
            row[f"period{n}_acc"] = float(values.mean()) if len(values) else np.nan
            row[f"period{n}_acc_min"] = float(values.min()) if len(values) else np.nan
            row[f"period{n}_acc_max"] = float(values.max()) if len(values) else np.nan
            task_acc = b.loc[b["metric"] == TASK_ACC.format(n), "value"].astype(float)
            row[TASK_ACC.format(n)] = float(task_acc.mean()) if len(task_acc) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)



# ------------------------------------------------------------ the algorithm as measured

SHARE = 0.25
SHALLOW_PARTS = (DIRECT, role_group(COPYING), role_group(ANTI_COPYING))
LAYER_PART = re.compile(rf"^L(\d+)(?::({EMBEDDING}|{COMPOSED}))?$")
PROGRAMS = ("profile", "write_up")
PROGRAM_METRICS = ("kl_explained", "agreement")


def _deep_parts(profile: pd.DataFrame) -> list[str] | None:
    """The parts of a model of several layers, in order: the direct path, layer 0's heads,
    then per later layer its heads from the embedding and through earlier heads; None for
    a 1-layer model (no composed paths)."""
    layers = sorted({int(m[1]) for c in profile["component"].unique()
                     if (m := LAYER_PART.match(str(c))) and m[2] == COMPOSED})
    if not layers:
        return None
    parts = [DIRECT, layer_group(0)]
    for l in range(1, max(layers) + 1):
        parts += [layer_group(l, EMBEDDING), layer_group(l, COMPOSED)]
    return parts


def _offsets(profile: pd.DataFrame, component: str) -> pd.DataFrame:
    return profile[(profile["component"] == component) & (profile["sample"] == "task")
                   & (profile["source"] == "offset")]


def offset_sets(profile: pd.DataFrame) -> dict[str, list[int]]:
    """The offsets the whole model copies and suppresses in every seed (see the module)."""
    rows = _offsets(profile, ALL)
    by = rows.groupby("offset")
    mean = by["value"].mean()
    above, below = by["low"].min() > 0, by["high"].max() < 0
    out = {}
    for name, sure, sign in (("copies", above, 1.0), ("suppresses", below, -1.0)):
        scale = (sign * mean).clip(lower=0).max()
        keep = sure & (sign * mean >= SHARE * scale) if scale > 0 else sure & False
        out[name] = sorted(int(k) for k in keep[keep].index)
    return out


def carrier(profile: pd.DataFrame, offsets: list[int], sign: float) -> str | None:
    """The part of the model (see the module), as its component group's name, with the
    largest mean effect of ``sign`` over ``offsets`` and seeds; None when no part has one."""
    parts = _deep_parts(profile) or SHALLOW_PARTS
    best, size = None, 0.0
    for part in parts:
        rows = _offsets(profile, part)
        rows = rows[rows["offset"].isin(offsets)]
        if rows.empty:
            continue
        value = sign * float(rows["value"].mean())
        if value > size:
            best, size = part, value
    return best


def program_share(fit: pd.DataFrame, program: str, metric: str) -> tuple[float, float, float]:
    """``metric`` of ``program`` on the task sample: (mean, min, max) over seeds; NaN when
    the model has no such program (or no value)."""
    rows = fit[(fit["program"] == program) & (fit["sample"] == "task") & (fit["metric"] == metric)]
    v = rows["value"].astype(float).dropna()
    if v.empty:
        return (math.nan, math.nan, math.nan)
    return (float(v.mean()), float(v.min()), float(v.max()))


def joined_offsets(offsets: list[int]) -> str:
    """Offsets as a table cell: "0 1 2" ("" for none)."""
    return " ".join(map(str, offsets))


def split_offsets(cell) -> list[int]:
    """The offsets of a table cell (:func:`joined_offsets`)."""
    text = "" if cell is None or cell != cell else str(cell)
    return [int(float(k)) for k in text.split()]


def algorithm_row(profile: pd.DataFrame, fit: pd.DataFrame) -> dict:
    """One model's algorithm as measured (``profile``, ``fit``: its rows of the stacked
    offset_profile and algorithm_fit tables): the offsets it copies and suppresses, the part
    that carries each, and each program's shares."""
    sets = offset_sets(profile)
    row = {}
    for verb, sign in (("copies", 1.0), ("suppresses", -1.0)):
        row[verb] = joined_offsets(sets[verb])
        row[f"{verb}_part"] = (carrier(profile, sets[verb], sign) or "") if sets[verb] else ""
    for program in PROGRAMS:
        for metric in PROGRAM_METRICS:
            mean, low, high = program_share(fit, program, metric)
            row.update({f"{program}_{metric}": mean, f"{program}_{metric}_min": low,
                        f"{program}_{metric}_max": high})
    row["has_write_up"] = int((fit["program"] == "write_up").any())
    return row


def algorithm_table(profile: pd.DataFrame, fit: pd.DataFrame) -> pd.DataFrame:
    """:func:`algorithm_row` of every model of the stacked offset_profile table, in its order."""
    rows = [{"variant": v, **algorithm_row(profile[profile["variant"] == v], fit[fit["variant"] == v])}
            for v in profile["variant"].unique()]
    return pd.DataFrame(rows)
