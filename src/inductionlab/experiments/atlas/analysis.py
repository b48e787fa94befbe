"""The formation atlas's tables, from the generic stages' tables of its models.

- :func:`atlas_points`: per grid point and seed, the fits of the best last-layer head's
  content part and of the loss on predictable targets (midpoint and span with their 95 %
  intervals, shape and the phase-change verdict: the stacked, decided phase_change
  table's), whether an induction head formed (the head-role rule's ``formed``), the
  accuracy on predictable targets beside the task's floor (the Bayes predictor's accuracy)
  and the share of it reached, and the content and loss midpoints as ratios to the same
  seed's unchanged model at the same T (for the initialisation and intervention points).
- :func:`atlas_law`: the law of formation time on both clocks
  (:mod:`inductionlab.claims.formation_law`) over the context axis of each variant, and
  its band for the figure (:func:`atlas_band`).
- :func:`atlas_changes`: per initialisation and intervention point, the content and loss
  ratios over seeds (the mean of ln ratio with its 95 % t interval, exponentiated), the
  shapes and how many seeds formed a head.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...claims.formation_law import (BOUND_CLOCK, CONTENT, LOSS, MIDPOINT_COLUMNS, clocks_sentence,
                                       law_band, law_fits, law_midpoints, on_both_clocks)
from ...analysis.uncertainty import mean_interval
from ...stages.dynamics.dynamics import INDUCTION_FIT, LOSS_FIT

FIT_COLUMNS = ("midpoint", "midpoint_low", "midpoint_high", "span", "span_low", "span_high",
               "shape", "verdict")
POINT_KEYS = ["model", "variant", "role", "context", "init", "intervention", "seed"]
POINTS_COLUMNS = (POINT_KEYS
                  + [f"content_{c}" for c in FIT_COLUMNS] + [f"loss_{c}" for c in FIT_COLUMNS]
                  + ["formed", "acc_pred", "acc_pred_low", "acc_pred_high", "floor_acc_pred",
                     "floor_share", "content_ratio", "loss_ratio", "note"])
SENTENCE_COLUMNS = ["variant", "base", "metric", "text"]
# A clamp of B holds the last layer's pattern, which the head's content part reads: what
# the table's fit and "formed" count measure there is the clamp, not something learned, and
# the pattern has no formation to time; the loss's midpoint times what is left to learn.
HELD_MATCH = "clampB"
HELD_MATCH_NOTE = ("no content ratio: the last layer's pattern is the clamp's from the first "
                   "step, so the content part and the formed count read the held pattern, not a "
                   "learned one; the loss ratio times what the model learns around it")
CHANGES_COLUMNS = ["variant", "model", "change", "init", "intervention", "n_seeds", "ratio",
                   "ratio_low", "ratio_high", "loss_ratio", "loss_ratio_low", "loss_ratio_high",
                   "shapes", "formed", "note"]


def _fit(rows: pd.DataFrame, metric: str, prefix: str) -> dict:
    row = rows[rows["metric"] == metric]
    if row.empty:
        return {f"{prefix}_{c}": (math.nan if c not in ("shape", "verdict") else "") for c in FIT_COLUMNS}
    r = row.iloc[0]
    if r["shape"] == "flat":  # no change: the logistic's midpoint and span time nothing
        return {f"{prefix}_{c}": (r[c] if c in ("shape", "verdict") else math.nan) for c in FIT_COLUMNS}
    return {f"{prefix}_{c}": r[c] for c in FIT_COLUMNS}


def _accuracy(rows: pd.DataFrame, task: str | None) -> dict:
    """The accuracy on predictable targets with its interval, the task's floor (the Bayes
    predictor's accuracy, ``floor_acc_pred``) and the share of it reached, on the model's
    own task."""
    if "task" in rows.columns and task is not None and (rows["task"] == task).any():
        rows = rows[rows["task"] == task]
    out = {}
    for metric in ("acc_pred", "floor_acc_pred"):
        row = rows[rows["metric"] == metric]
        out[metric] = float(row["value"].iloc[0]) if len(row) else math.nan
        if metric == "acc_pred":
            out["acc_pred_low"] = float(row["low"].iloc[0]) if len(row) else math.nan
            out["acc_pred_high"] = float(row["high"].iloc[0]) if len(row) else math.nan
    acc, floor = out["acc_pred"], out["floor_acc_pred"]
    out["floor_share"] = acc / floor if floor > 0 else math.nan
    return out


def atlas_points(phase: pd.DataFrame, behaviour: pd.DataFrame, grid: list[dict]) -> pd.DataFrame:
    """:data:`POINTS_COLUMNS`, one row per grid point and seed: ``phase``, the stacked and
    decided phase_change table; ``behaviour``, the stacked behaviour table; ``grid``, the
    points (:class:`.settings.GridPoint` as dicts, with the model's ``task`` name)."""
    rows = []
    by_model = {p["model"]: p for p in grid}
    for point in grid:
        fits = phase[phase["variant"] == point["model"]]
        seeds = sorted(int(s) for s in fits["seed"].unique())
        for seed in seeds:
            mine = fits[fits["seed"] == seed]
            content = mine[mine["metric"] == INDUCTION_FIT]
            formed = float(content["formed"].iloc[0]) if len(content) else math.nan
            row = {k: point[k] for k in POINT_KEYS if k != "seed"} | {"seed": seed}
            row.update(_fit(mine, INDUCTION_FIT, "content"))
            row.update(_fit(mine, LOSS_FIT, "loss"))
            row["formed"] = formed
            own = behaviour[(behaviour["variant"] == point["model"]) & (behaviour["seed"] == seed)]
            row.update(_accuracy(own, point.get("task")))
            row["note"] = str(content["note"].iloc[0]) if len(content) and \
                isinstance(content["note"].iloc[0], str) else ""
            rows.append(row)
    frame = pd.DataFrame(rows, columns=POINTS_COLUMNS)
    for prefix, needs_head in (("content", True), ("loss", False)):
        frame[f"{prefix}_ratio"] = [
            _ratio(frame, by_model[row["model"]]["baseline"], row, prefix, needs_head)
            if by_model[row["model"]]["baseline"] != row["model"] else math.nan
            for _, row in frame.iterrows()]
    return frame


def _ratio(frame: pd.DataFrame, baseline: str, row: pd.Series, prefix: str, needs_head: bool) -> float:
    """``row``'s ``{prefix}_midpoint`` over the same seed's baseline's, where both fits made
    one change (a phase change or a smooth rise), and, with ``needs_head``, both formed a
    head; NaN otherwise."""
    base = frame[(frame["model"] == baseline) & (frame["seed"] == row["seed"])]
    if base.empty:
        return math.nan
    base = base.iloc[0]
    if not (_timed(base, prefix, needs_head) and _timed(row, prefix, needs_head)):
        return math.nan
    return float(row[f"{prefix}_midpoint"]) / float(base[f"{prefix}_midpoint"])


def _timed(row: pd.Series, prefix: str, needs_head: bool) -> bool:
    """The fit made one change at a finite, positive midpoint (and a head formed, when
    ``needs_head``)."""
    shape, midpoint = row[f"{prefix}_shape"], row[f"{prefix}_midpoint"]
    return (isinstance(shape, str) and shape in ("phase change", "smooth")
            and np.isfinite(midpoint) and midpoint > 0 and (not needs_head or row["formed"] == 1.0))


def law_input(points: pd.DataFrame, steps: int) -> pd.DataFrame:
    """The rows of the context axis as the fits the law reads (:func:`law_midpoints`)."""
    axis = points[points["role"] == "context"]
    rows = []
    for _, r in axis.iterrows():
        for metric, prefix in ((CONTENT, "content"), (LOSS, "loss")):
            rows.append({"variant": r["variant"], "context": r["context"], "seed": r["seed"],
                         "metric": metric, "shape": r[f"{prefix}_shape"] or math.nan,
                         "midpoint": r[f"{prefix}_midpoint"], "formed": r["formed"],
                         "last_step": steps, "note": r["note"] if metric == CONTENT else ""})
    return pd.DataFrame(rows, columns=["variant", "context", "seed", "metric", "shape",
                                       "midpoint", "formed", "last_step", "note"])


def atlas_midpoints(points: pd.DataFrame, steps: int, batch_size: int) -> pd.DataFrame:
    """The law's midpoints on both clocks (optimiser steps; tokens = steps × batch × T):
    :data:`~inductionlab.claims.formation_law.MIDPOINT_COLUMNS`, ``note`` and
    ``later_than`` (where a change is not over: the last checkpoint, which its midpoint lies
    beyond)."""
    both = on_both_clocks(law_midpoints(law_input(points, steps)), batch_size)
    return both[MIDPOINT_COLUMNS + ["note", "later_than"]]


def atlas_law(points: pd.DataFrame, steps: int, batch_size: int, seed: int = 0) -> pd.DataFrame:
    """The law per variant, quantity and clock (:func:`law_fits`), the verdict against 2 on
    the steps clock."""
    return law_fits(atlas_midpoints(points, steps, batch_size), seed=seed)


def atlas_band(points: pd.DataFrame, steps: int, batch_size: int) -> pd.DataFrame:
    """The fitted law's line and 95 % band per variant, quantity and clock (:func:`law_band`)."""
    return law_band(atlas_midpoints(points, steps, batch_size))


def _counted(values, total: int) -> str:
    counts = pd.Series([v for v in values if v]).value_counts()
    return ", ".join(f"{shape} in {n} of {total}" for shape, n in counts.items())


def _geometric(ratios) -> tuple[list[float], dict]:
    """The finite ratios' ln values and their geometric mean with its 95 % t interval."""
    logs = [math.log(r) for r in ratios if np.isfinite(r) and r > 0]
    values = mean_interval(logs)
    return logs, {name: math.exp(v) if np.isfinite(v) else math.nan
                  for name, v in zip(("", "_low", "_high"), values)}


def atlas_changes(points: pd.DataFrame) -> pd.DataFrame:
    """:data:`CHANGES_COLUMNS`: per initialisation and intervention point, the content
    midpoint's ratio to the unchanged run's over seeds (geometric mean with its 95 % t
    interval over seeds, from ln ratio per seed), the loss midpoint's likewise, the content
    part's shapes counted, and in how many seeds an induction head formed."""
    rows = []
    for model, mine in points[points["role"].isin(["init", "intervention"])].groupby("model", sort=False):
        first = mine.iloc[0]
        n = len(mine)
        logs, content = _geometric(mine["content_ratio"])
        _, loss = _geometric(mine["loss_ratio"])
        notes = []
        if str(first["intervention"]).startswith(HELD_MATCH):
            notes.append(HELD_MATCH_NOTE)
        elif len(logs) < n:
            notes.append(f"{n - len(logs)} of {n} seeds without a content ratio (no head formed "
                         "with one change, here or in the unchanged run)")
        rows.append({"variant": first["variant"], "model": model, "change": first["role"],
                     "init": first["init"], "intervention": first["intervention"], "n_seeds": n,
                     **{f"ratio{k}": v for k, v in content.items()},
                     **{f"loss_ratio{k}": v for k, v in loss.items()},
                     "shapes": _counted(mine["content_shape"], n),
                     "formed": f"{int((mine['formed'] == 1.0).sum())} of {n}",
                     "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=CHANGES_COLUMNS)


def sentence_key(variant: str) -> str:
    """The ``variant`` of a variant's row in the table of sentences (a page-1 highlight
    reads ``{atlas_<variant>:sentence}``)."""
    return f"atlas_{variant}"


def atlas_sentences(law: pd.DataFrame, variants) -> pd.DataFrame:
    """One sentence per variant, for page 1: the law of its head's content part on both
    clocks (:func:`clocks_sentence`), then the verdict against the bound on the bound's
    clock in the law's own words (``sentence``: no stronger than the interval)."""
    rows = []
    for variant in variants:
        mine = law[(law["variant"] == variant) & (law["quantity"] == CONTENT)]
        on_bound = mine[mine["clock"] == BOUND_CLOCK]
        if mine.empty or on_bound.empty:
            text = f"{variant}: no midpoint of its head to fit a law to"
        else:
            text = (f"{variant}, midpoint of {clocks_sentence(law, variant, CONTENT)}. "
                    f"On {BOUND_CLOCK}: {on_bound['sentence'].iloc[0]}")
        rows.append({"variant": sentence_key(variant), "base": variant, "metric": "sentence",
                     "text": text})
    return pd.DataFrame(rows, columns=SENTENCE_COLUMNS)
