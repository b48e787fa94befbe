"""When and how an induction head forms: one model's values, read from the tables the
generic stages wrote (head scores, composition, ablations, behaviour, phase change). The
answers in words, verdicts counted over seeds, are :mod:`.answers`'.

Per model (metric, value, low, high, note), each value as its own stage measured it:

- the task: ``loss_pred`` and ``acc_pred`` on the model's own task beside its floors
  (``floor_*``), and on the write-up's task (``write_up_*``, beside the trained task's
  Bayes predictor there, ``write_up_floor_*``);
- the period test, every length the behaviour stage tested: ``period{n}_acc`` with its
  interval, ``period{n}_trained`` (1: the model's task draws period n) and
  ``period{n}_task_acc`` (the task's Bayes predictor on the same blocks);
- ``previous_token``: the best layer-0 head's previous-token score and its chance level
  (the head named in ``note``); ``previous_token_head`` 1 when it has the previous-token
  role (its ``roles`` in the stacked head_scores table, where the head-role rule is applied);
- ``induction``: in the last layer, the induction head: the head with the induction role
  and the largest content part, or where no head has the role the head with the largest
  content part; its induction score, positional control, content part (score − control)
  and chance; ``induction_head`` 1 when it has the induction role (score and content part
  pass the rule), ``positional_induction_head`` 1 when its score passes but its content
  part does not (a head that looks at positions);
- ``k_composition``: K-composition of (the best previous-token head → that head) and the
  baseline of random matrices of the same shapes (``k_composition_baseline``);
- ``keys_left_L0H{h}``, one per layer-0 head h: the share of that head's content part left
  when h is removed from the last layer's keys, content after / content before, with its
  paired bootstrap interval (the ablation stage's ``induction_content_left``): <= 0.5 over
  the whole interval means h is needed; ``keys_ablation_left``: the same when the last
  layer's keys are computed from the embedding alone (every earlier head removed: no
  K-composition at all, the write-up's "+Q-composition" row);
- the timing: the logistic fits of the loss and of the best head's content part
  (``loss_midpoint``, ``loss_span``, ``content_midpoint``, ``content_span`` with their
  intervals) and ``midpoint_gap``, |ln| of the ratio of the two midpoints. Whether each is a
  phase change, and whether the two are at the same time, are verdicts of the stacked,
  decided phase_change table, which the answers read.

A model with one layer has no later layer to compose into: those rows are NaN, with the
reason in ``note``. So are a model's ``write_up_*`` rows, and its ``period_test`` row stands
for the period test, where its context is shorter than the write-up's sequences.
"""
from __future__ import annotations

import math
import re

import pandas as pd

from ...core.tasks import WRITE_UP
from ...stages.behaviour.behaviour import FLOOR_PREFIX, WRITE_UP_PREFIX
from ...stages.dynamics.dynamics import COINCIDENCE, INDUCTION_FIT, LOSS_FIT
from ...stages.dynamics.phase_change import PHASE_CHANGE
from ...analysis.roles import INDUCTION, PREVIOUS_TOKEN, ROLES_COLUMN, positional_role, split_roles

NAN = math.nan


def _row(metric, value, low=NAN, high=NAN, note=""):
    return {"metric": metric, "value": float(value), "low": float(low), "high": float(high),
            "note": note}


_PERIOD_ROWS = re.compile(r"^period\d+_(acc|trained|task_acc)$")
# why a model has no row measured on the write-up's task (the period test included)
SHORT_CONTEXT = ("its context is shorter than the write-up's sequences, on which the "
                 "period test and the write-up's task are measured")
PERIOD_TEST = "period_test"  # a row of no value that says why no period was tested


def _behaviour_rows(behaviour: pd.DataFrame) -> list[dict]:
    by = behaviour.set_index("metric")
    names = [n for n in by.index if str(n).startswith(FLOOR_PREFIX)]
    names += ["loss_pred", "acc_pred", *[n for n in by.index if _PERIOD_ROWS.match(str(n))]]
    names += [n for n in by.index if str(n).startswith(f"{WRITE_UP_PREFIX}{FLOOR_PREFIX}")]
    rows = [_row(name, by.loc[name, "value"], by.loc[name, "low"], by.loc[name, "high"])
            for name in dict.fromkeys(names) if name in by.index]
    # a model of another task was measured on the write-up's too, unless its context is
    # shorter than the write-up's sequences (the behaviour stage leaves those rows out)
    on_write_up = str(by.loc["loss_pred"].get("task", WRITE_UP)) == WRITE_UP
    if not on_write_up and f"{WRITE_UP_PREFIX}loss_pred" not in by.index:
        rows += [_row(f"{WRITE_UP_PREFIX}{name}", NAN, note=SHORT_CONTEXT)
                 for name in ("loss_pred", "acc_pred")]
        if not any(_PERIOD_ROWS.match(str(n)) for n in by.index):
            rows.append(_row(PERIOD_TEST, NAN, note=SHORT_CONTEXT))
        return rows
    for name in ("loss_pred", "acc_pred"):  # the same model on the write-up's task
        source = f"{WRITE_UP_PREFIX}{name}" if f"{WRITE_UP_PREFIX}{name}" in by.index else name
        r = by.loc[source]
        rows.append(_row(f"{WRITE_UP_PREFIX}{name}", r["value"], r["low"], r["high"]))
    return rows


def induction_head_of(top: pd.DataFrame) -> pd.Series:
    """The head the answers name in the last layer (``top``: its rows of the stacked
    head_scores table): the role holder with the largest content part, else the head with
    the largest content part."""
    holders = top[[INDUCTION in split_roles(r) for r in top[ROLES_COLUMN]]]
    pool = holders if len(holders) else top
    return pool.loc[pool["induction_content"].idxmax()]


def formation_table(head_scores: pd.DataFrame, composition: pd.DataFrame,
                    ablations: pd.DataFrame, behaviour: pd.DataFrame,
                    phase: pd.DataFrame) -> pd.DataFrame:
    """The formation study's answers for one model (see the module's docstring).
    ``head_scores``: the model's rows of the stacked head_scores table, whose ``roles``
    are the head-role rule's, applied where head scores are stacked."""
    rows = _behaviour_rows(behaviour)
    last = int(head_scores["layer"].max())
    layer0 = head_scores[head_scores["layer"] == 0]
    prev = layer0.loc[layer0["previous_token"].idxmax()]
    p = int(prev["head"])
    rows += [_row("previous_token", prev["previous_token"], prev["previous_token_low"],
                  prev["previous_token_high"], f"L0H{p}"),
             _row("previous_token_chance", prev["previous_token_chance"]),
             _row("previous_token_head", PREVIOUS_TOKEN in split_roles(prev[ROLES_COLUMN]),
                  note=f"L0H{p}")]
    top = head_scores[head_scores["layer"] == last]
    best = induction_head_of(top)
    g, name = int(best["head"]), f"L{last}H{int(best['head'])}"
    rows += [_row("induction", best["induction"], best["induction_low"], best["induction_high"], name),
             _row("induction_control", best["induction_control"], note=name),
             _row("induction_content", best["induction_content"], best["induction_content_low"],
                  best["induction_content_high"], name),
             _row("induction_chance", best["induction_chance"])]
    roles = split_roles(best[ROLES_COLUMN])
    rows += [_row("induction_head", INDUCTION in roles, note=name),
             _row("positional_induction_head", positional_role(INDUCTION) in roles, note=name)]
    rows += _mechanism_rows(composition, ablations, last, p, g, sorted(layer0["head"].astype(int)))
    rows += _timing_rows(phase)
    return pd.DataFrame(rows)


MECHANISM = ("k_composition", "k_composition_baseline", "keys_ablation_left")


def keys_left_metric(head: int) -> str:
    """The formation table's row of layer-0 head ``head``'s removal from the last layer's keys."""
    return f"keys_left_L0H{head}"


def _mechanism_rows(composition, ablations, last: int, p: int, g: int, heads: list[int]) -> list[dict]:
    if last < 1:
        why = "one layer: no later layer reads a layer-0 head"
        return [_row(m, NAN, note=why) for m in MECHANISM]
    pair = composition[(composition["kind"] == "K") & (composition["layer"] == last)
                       & (composition["head"] == g) & (composition["src_layer"] == 0)
                       & (composition["src_head"] == p)]
    rows = [_row("k_composition", pair["score"].iloc[0] if len(pair) else NAN,
                 note=f"L0H{p} -> L{last}H{g}"),
            _row("k_composition_baseline", pair["baseline"].iloc[0] if len(pair) else NAN)]
    by = ablations.set_index("ablation")
    column = f"induction_content_left_L{last}H{g}"

    def left(metric: str, ablation: str) -> dict:
        if ablation not in by.index or column not in by.columns:
            return _row(metric, NAN, note=f"no {column} of {ablation} in ablations.csv")
        r = by.loc[ablation]
        note = f"{ablation}: L{last}H{g}" + ("" if pd.notna(r[column]) else
                                            ": no content part before the ablation to remove")
        return _row(metric, r[column], r[f"{column}_low"], r[f"{column}_high"], note)

    rows += [left(keys_left_metric(h), f"remove_L0H{h}_from_keys_L{last}") for h in heads]
    return rows + [left("keys_ablation_left", f"plus_q_L{last}")]


def _timing_rows(phase: pd.DataFrame) -> list[dict]:
    by = phase.set_index("metric")
    rows = []
    for fit, prefix in ((LOSS_FIT, "loss"), (INDUCTION_FIT, "content")):
        if fit not in by.index:
            rows += [_row(f"{prefix}_{m}", NAN, note="no fit") for m in
                     ("midpoint", "span", "phase_change")]
            continue
        r = by.loc[fit]
        rows += [_row(f"{prefix}_midpoint", r["midpoint"], r["midpoint_low"], r["midpoint_high"],
                      str(r["shape"])),
                 _row(f"{prefix}_span", r["span"], r["span_low"], r["span_high"]),
                 _row(f"{prefix}_phase_change", float(r["shape"] == PHASE_CHANGE), note=str(r["shape"]))]
    if COINCIDENCE in by.index:
        r = by.loc[COINCIDENCE]
        note = r["note"] if isinstance(r["note"], str) else ""
        rows.append(_row("midpoint_gap", r["value"], r["low"], r["high"], note))
    return rows
