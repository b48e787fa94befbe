"""When and how an induction head forms: one model's answers, read from the tables the
generic stages wrote (head scores, composition, ablations, behaviour, phase change).

Per model (metric, value, low, high, note), each value as its own stage measured it:

- the task: ``loss_pred`` and ``acc_pred`` on the model's own task beside its floor
  (``floor_*``), and on the write-up's task (``write_up_*``);
- the period test ``period{n}_acc`` (flat over n: the model looks for a copy; peaked at
  one n: it looks at a position);
- ``previous_token``: the best layer-0 head's previous-token score and its chance level
  (the head named in ``note``); ``previous_token_head`` 1 when it has the previous-token
  role (its ``roles`` in the stacked head_scores table, where the head-role rule is applied);
- ``induction``: in the last layer, the head with the largest induction content part:
  its induction score, positional control, content part (score − control) and chance;
  ``induction_head`` 1 when it has the induction role (score and content part pass the
  rule), ``positional_induction_head`` 1 when its score passes but its content part does
  not (a head that looks at positions);
- ``k_composition``: K-composition of (that previous-token head → that induction head)
  and the baseline of random matrices of the same shapes (``k_composition_baseline``);
- ``ablation_left``: the ablation that removes the previous-token head from the last
  layer's keys, as the share of the induction head's excess over chance that is left,
  (score after − chance) / (score before − chance): <= 0.5 means the previous-token head
  is needed; ``keys_ablation_left``: the same when the last layer's keys are computed
  from the embedding alone (every earlier head removed: no K-composition at all), the
  write-up's "+Q-composition" row. A head built by K-composition from several earlier
  heads at once keeps much of its excess without any one of them, and little without all;
- the timing: the logistic fits of the loss and of the best head's content part
  (``loss_midpoint``, ``loss_span``, ``content_midpoint``, ``content_span`` with their
  intervals; ``*_phase_change`` 1 when the fit's shape is a phase change) and
  ``midpoint_gap``, |ln| of the ratio of the two midpoints ("at the same time" when at
  most ln 2 with its interval).

A model with one layer has no later layer to compose into: those rows are NaN, with the
reason in ``note``.
"""
from __future__ import annotations

import math

import pandas as pd

from ...stages.behaviour.behaviour import FLOOR_PREFIX, WRITE_UP_PREFIX
from ...stages.dynamics.dynamics import COINCIDENCE, INDUCTION_FIT, LOSS_FIT
from ...stages.dynamics.phase_change import PHASE_CHANGE
from ...analysis.roles import INDUCTION, PREVIOUS_TOKEN, ROLES_COLUMN, positional_role, split_roles

NAN = math.nan


def _row(metric, value, low=NAN, high=NAN, note=""):
    return {"metric": metric, "value": float(value), "low": float(low), "high": float(high),
            "note": note}


def _behaviour_rows(behaviour: pd.DataFrame, periods) -> list[dict]:
    by = behaviour.set_index("metric")
    rows = []
    names = ["loss_pred", "acc_pred", f"{FLOOR_PREFIX}loss_pred", f"{FLOOR_PREFIX}acc_pred"]
    names += [f"period{n}_acc" for n in periods]
    for name in names:
        if name in by.index:
            r = by.loc[name]
            rows.append(_row(name, r["value"], r["low"], r["high"]))
    for name in ("loss_pred", "acc_pred"):  # the same model on the write-up's task
        source = f"{WRITE_UP_PREFIX}{name}" if f"{WRITE_UP_PREFIX}{name}" in by.index else name
        r = by.loc[source]
        rows.append(_row(f"{WRITE_UP_PREFIX}{name}", r["value"], r["low"], r["high"]))
    return rows


def formation_table(head_scores: pd.DataFrame, composition: pd.DataFrame,
                    ablations: pd.DataFrame, behaviour: pd.DataFrame, phase: pd.DataFrame,
                    periods) -> pd.DataFrame:
    """The formation study's answers for one model (see the module's docstring).
    ``head_scores``: the model's rows of the stacked head_scores table, whose ``roles``
    are the head-role rule's, applied where head scores are stacked."""
    rows = _behaviour_rows(behaviour, periods)
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
    best = top.loc[top["induction_content"].idxmax()]
    g, name = int(best["head"]), f"L{last}H{int(best['head'])}"
    rows += [_row("induction", best["induction"], best["induction_low"], best["induction_high"], name),
             _row("induction_control", best["induction_control"], note=name),
             _row("induction_content", best["induction_content"], best["induction_content_low"],
                  best["induction_content_high"], name),
             _row("induction_chance", best["induction_chance"])]
    roles = split_roles(best[ROLES_COLUMN])
    rows += [_row("induction_head", INDUCTION in roles, note=name),
             _row("positional_induction_head", positional_role(INDUCTION) in roles, note=name)]
    rows += _mechanism_rows(composition, ablations, last, p, g)
    rows += _timing_rows(phase)
    return pd.DataFrame(rows)


def _mechanism_rows(composition, ablations, last: int, p: int, g: int) -> list[dict]:
    if last < 1:
        why = "one layer: no later layer reads the previous-token head"
        return [_row(m, NAN, note=why) for m in ("k_composition", "k_composition_baseline",
                                                 "ablation_induction_score", "ablation_left",
                                                 "keys_ablation_left")]
    pair = composition[(composition["kind"] == "K") & (composition["layer"] == last)
                       & (composition["head"] == g) & (composition["src_layer"] == 0)
                       & (composition["src_head"] == p)]
    note = f"L0H{p} -> L{last}H{g}"
    rows = [_row("k_composition", pair["score"].iloc[0] if len(pair) else NAN, note=note),
            _row("k_composition_baseline", pair["baseline"].iloc[0] if len(pair) else NAN)]
    by = ablations.set_index("ablation")
    name, column = f"remove_L0H{p}_from_keys_L{last}", f"induction_L{last}H{g}"
    chance = f"induction_chance_L{last}"
    if name not in by.index or "baseline" not in by.index or column not in by.columns \
            or pd.isna(by.loc[name, column]):
        why = f"no ablation {name} in ablations.csv"
        return rows + [_row(m, NAN, note=why) for m in
                       ("ablation_induction_score", "ablation_left", "keys_ablation_left")]
    before, level = float(by.loc["baseline", column]), float(by.loc["baseline", chance])
    excess = before - level
    why = "" if excess > 0 else "the induction head has no excess over chance to remove"

    def left(ablation):
        if ablation not in by.index or pd.isna(by.loc[ablation, column]) or excess <= 0:
            return NAN
        return (float(by.loc[ablation, column]) - level) / excess

    keys_only = f"plus_q_L{last}"  # queries from the residual, keys from the embedding
    return rows + [_row("ablation_induction_score", by.loc[name, column], note=f"{name}: {column}"),
                   _row("ablation_left", left(name), note=why),
                   _row("keys_ablation_left", left(keys_only),
                        note=why or (f"{keys_only}: {column}" if keys_only in by.index
                                     else f"no ablation {keys_only} in ablations.csv"))]


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
