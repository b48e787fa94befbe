"""Does a model's best copy-seeking head look for a copy, or at a position?

Read from two kinds of evidence, per model and seed, and set side by side:

- attention: the best head of the model's last layer (the layer whose heads can be
  induction heads in a 2-layer or smeared model; in a plain 1-layer model, the control)
  by induction score; that score, the same score on random sequences without a repeated
  block (the positional control), the content part (score − control), the chance level,
  and the head's role (``induction``: its score and its content part pass the role rule;
  ``positional_induction``: its score passes by position alone);
- behaviour: the period test, accuracy after the first block on blocks of n distinct
  letters (``period{n}_acc`` of behaviour.csv). A model that copies the letter after the
  previous occurrence of the current one solves every n; one that looks 5, 11, 17 back by
  position solves only the trained n.

The reading per seed: ``content`` when the best head has the induction role, ``position``
when it has the positional one, ``none`` when neither.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..analysis.roles import (INDUCTION, POSITIONAL, ROLES_COLUMN, content_column,
                              control_column, positional_role, split_roles)
from ..formatting.numbers import number

CONTENT, POSITION, NONE = "content", "position", "none"
_PERIOD = re.compile(r"^period(\d+)_acc$")


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
    return sorted({int(m.group(1)) for m in map(_PERIOD.match, behaviour["metric"].astype(str)) if m})


def content_or_position(head_scores: pd.DataFrame, behaviour: pd.DataFrame) -> pd.DataFrame:
    """One row per model: the best last-layer head's induction score, control, content part
    and chance (means over seeds, with min and max), how many seeds read content /
    position / none, and the period test's mean accuracy per block length."""
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
        for n in lengths:
            values = b.loc[b["metric"] == f"period{n}_acc", "value"].astype(float)
            row[f"period{n}_acc"] = float(values.mean()) if len(values) else np.nan
            row[f"period{n}_acc_min"] = float(values.min()) if len(values) else np.nan
            row[f"period{n}_acc_max"] = float(values.max()) if len(values) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _num(value: float, places: int = 2) -> str:
    """A number at ``places`` decimals with a true minus sign and no negative zero."""
    return number(value, f".{places}f")


def sentence(row, block_len: int) -> str:
    """The reading of one model in words, every number from ``row``."""
    n = int(row["seeds"])
    parts = [f"best layer-{int(row['layer'])} head: induction score {_num(row['induction'])} "
             f"(chance {_num(row['chance'], 3)}, {_num(row['induction'] / row['chance'], 1)} × chance), "
             f"{_num(row['control'])} on random sequences, content part {_num(row['content'])}"]
    counts = [f"{int(row[f'seeds_{r}'])} of {n} seeds {w}" for r, w in (
        (CONTENT, "look for a copy"), (POSITION, f"look at a position ({POSITIONAL} head)"),
        (NONE, "have no induction head")) if int(row[f"seeds_{r}"])]
    parts.append("; ".join(counts))
    period = [(int(m.group(1)), row[k]) for k in row.index if (m := _PERIOD.match(str(k)))]
    if period:
        trained = [v for k, v in period if k == block_len]
        other = [v for k, v in period if k != block_len and not pd.isna(v)]
        text = "period test " + ", ".join(f"n = {k}: {_num(v)}" for k, v in period)
        if other and trained:
            text += (f" (other lengths {_num(min(other))}–{_num(max(other))} against "
                     f"{_num(trained[0])} on the trained length)")
        parts.append(text)
    return "; ".join(parts) + "."
