"""Claims (workflow/claims.yaml) evaluated on small hand-made per-seed tables."""
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from helpers import ROOT, stage_settings
from inductionlab.analysis.roles import ROLE_RULE
from inductionlab.claims.metrics import (DERIVED, FAILS, HOLDS, NOT_MEASURED, TOO_CLOSE, ClaimError,
                                         Tables, family_claims, metric_value)
from inductionlab.claims.rules import load_claims
from inductionlab.claims.verdicts import WRITE_UP_TITLE, evaluate_claim, evaluate_claims, run_claims, scorecard
from inductionlab.formatting.numbers import format_value

RULE = stage_settings("roles")  # the schema's head-role rule

# the aggregated per-seed tables the workflow hands to the claims (results/tables/<name>.csv)
TABLE_NAMES = {"train_log", "circuits", "composition", "head_scores", "behaviour", "completions",
               "failure_modes", "ablations", "dynamics", "phase_change", "offset_profile", "algorithm_fit"}
# tables of an extra experiment, aggregated and handed to the claims when it is switched on
EXPERIMENT_TABLES = {"positional_shortcut_offsets"}
# tables a derived metric reads by itself, without a spec naming them
IMPLICIT_TABLES = {"best_composition": {"composition"}, "composition_margin": {"composition"},
                   "score_of_composition_head": {"head_scores", "composition"}}
# chance levels of uniform causal attention, T = 24 (the head-score table carries them per row)
PREV, LOCAL, NEAREST, INDUCTION = 0.121, 0.310, 0.074, 0.127
HEAD_COLUMNS = ["variant", "seed", "layer", "head", "previous_token", "previous_token_chance",
                "nearest_copy", "nearest_copy_chance", "induction", "induction_chance", "local",
                "local_chance", "roles"]


def _frame(columns, rows):
    return pd.DataFrame(rows, columns=columns)


@pytest.fixture
def tables():
    """Per-seed tables shaped like results/tables/*.csv (variant, seed, keys, values)."""
    behaviour = _frame(["variant", "seed", "metric", "value"], [
        ("one_layer", 0, "acc_pred", 0.2),
        ("one_layer", 1, "acc_pred", 0.7),
        ("one_layer", 2, "acc_pred", 0.5),
        ("one_layer", 0, "loss_all", 2.5),
        ("one_layer", 0, "random_len6_repeat_rate", 0.0),
        ("one_layer", 0, "random_len12_repeat_rate", 0.004),
        ("one_layer", 0, "ood_len12_repeat_rate", 0.02),
        ("one_layer", 0, "icl_score", float("nan")),
        ("smeared", 0, "loss_all", 1.0),
        ("two_layer", 0, "loss_all", 1.4),
        ("two_layer", 1, "loss_all", 1.1),
    ])
    circuits = _frame(["variant", "seed", "circuit", "layer", "head", "positivity_real"], [
        ("smeared", 0, "direct", -1, -1, -0.99),
        ("smeared", 0, "ov", 0, 0, -0.7),
        ("smeared", 0, "ov", 0, 1, 0.95),
        ("smeared", 0, "ov", 0, 2, 0.9),
        ("smeared", 0, "ov", 0, 3, -0.5),
        ("smeared", 0, "ov_sum", 0, -1, 0.99),
        ("smeared", 1, "ov", 0, 0, 0.1),
        ("smeared", 1, "ov", 0, 1, 0.2),
        ("smeared", 1, "ov", 0, 2, 0.3),
        ("smeared", 1, "ov", 0, 3, 0.4),
    ])
    # role thresholds (2 x chance, chance + 0.2): previous_token 0.321, nearest_copy 0.274,
    # induction 0.327, local 0.62
    head_scores = _frame(HEAD_COLUMNS, [
        (*key, prev, PREV, near, NEAREST, ind, INDUCTION, local, LOCAL, roles)
        for key, prev, near, ind, local, roles in [
            (("smeared", 0, 0, 0), 0.1, 0.05, 0.1, 0.8, "local"),
            (("smeared", 0, 0, 1), 0.0, 0.6, 0.7, 0.1, "induction"),
            (("smeared", 0, 0, 2), 0.1, 0.4, 0.5, 0.2, "induction"),
            (("smeared", 0, 0, 3), 0.2, 0.1, 0.1, 0.6, ""),
            (("smeared", 1, 0, 0), 0.1, 0.1, 0.1, 0.1, ""),
            (("two_layer", 0, 0, 0), 0.1, 0.0, 0.1, 0.5, ""),
            (("two_layer", 0, 0, 1), 0.3, 0.0, 0.1, 0.5, ""),  # below the role threshold 0.321
            (("two_layer", 0, 0, 2), 0.9, 0.0, 0.1, 0.5, "previous_token"),  # the role head
            (("two_layer", 0, 0, 3), 0.2, 0.0, 0.1, 0.5, ""),
            (("two_layer", 0, 1, 0), 0.95, 0.7, 0.8, 0.1, "induction"),  # higher, but in layer 1
            (("two_layer", 0, 1, 1), 0.05, 0.6, 0.2, 0.1, ""),
            (("two_layer", 1, 0, 0), 0.16, 0.0, 0.1, 0.5, ""),  # seed 1: no previous-token head
            (("two_layer", 1, 0, 1), 0.30, 0.0, 0.1, 0.5, ""),
        ]])
    composition = _frame(["variant", "seed", "kind", "layer", "head", "src_layer", "src_head",
                          "positivity_real"], [
        (*key, h, 0, p, value)
        for key, values in {
            ("two_layer", 0, "K", 1): {0: [0.1, 0.2], 1: [0.3, 0.4], 2: [0.97, 0.93], 3: [-0.5, 0.0]},
            ("two_layer", 0, "Q", 1): {0: [0.5, 0.5], 1: [0.5, 0.5], 2: [-0.8, -0.9], 3: [0.5, 0.5]},
            ("two_layer", 1, "K", 1): {0: [0.95, 0.95], 1: [0.99, 0.99]},
        }.items()
        for p, per_head in values.items()
        for h, value in enumerate(per_head)
    ])
    completions = _frame(["variant", "seed", "prompt", "completion", "accuracy"], [
        ("two_layer", 0, "AAABBBAAABBB", "ABABABABABAB", 0.5),
        ("two_layer", 0, "ABCDEF", "ABCDEFABCDEFABCDEF", 1.0),
    ])
    return Tables({"behaviour": behaviour, "circuits": circuits, "head_scores": head_scores,
                   "composition": composition, "completions": completions}, RULE)


def claim(metric, compare="<", threshold=0.5, variant="one_layer", id="c"):
    return {"id": id, "variant": variant, "quote": "q", "metric": metric, "compare": compare,
            "threshold": threshold}


ACC = {"table": "behaviour", "where": {"metric": "acc_pred"}, "column": "value"}


# ---------------------------------------------------------------- status

def test_claim_that_holds(tables):
    row = evaluate_claim(claim(ACC), tables, seed=0)
    assert row["status"] == HOLDS and row["value"] == pytest.approx(0.2)
    assert row["claim"] == "c" and row["seed"] == 0 and row["note"] == ""


def test_claim_that_fails(tables):
    row = evaluate_claim(claim(ACC), tables, seed=1)
    assert row["status"] == FAILS and row["value"] == pytest.approx(0.7)


def test_comparison_at_the_threshold(tables):
    assert evaluate_claim(claim(ACC, "<", 0.5), tables, seed=2)["status"] == FAILS
    assert evaluate_claim(claim(ACC, "<=", 0.5), tables, seed=2)["status"] == HOLDS
    assert evaluate_claim(claim(ACC, "==", 0.5), tables, seed=2)["status"] == HOLDS
    assert evaluate_claim(claim(ACC, ">=", 0.5), tables, seed=2)["status"] == HOLDS
    assert evaluate_claim(claim(ACC, ">", 0.5), tables, seed=2)["status"] == FAILS


@pytest.mark.parametrize("metric, why", [
    ({"table": "ablations", "column": "value"}, "no table 'ablations'"),
    ({"table": "behaviour", "where": {"pattern": "AAAAAA"}, "column": "value"}, "no column 'pattern'"),
    ({"table": "behaviour", "where": {"metric": "acc_pred"}, "column": "mean"}, "no column 'mean'"),
    ({"table": "behaviour", "where": {"metric": "no_such_metric"}, "column": "value"}, "no rows"),
    ({"table": "behaviour", "where": {"metric": "icl_score"}, "column": "value"}, "no rows"),  # NaN
], ids=["missing-table", "missing-where-column", "missing-value-column", "no-rows", "nan-value"])
def test_metric_without_a_value_is_not_measured(tables, metric, why):
    for compare in ("<", ">="):  # whichever way the test points, it never holds
        row = evaluate_claim(claim(metric, compare), tables, seed=0)
        assert row["status"] == NOT_MEASURED
        assert math.isnan(row["value"])
        assert why in row["note"]


@pytest.mark.parametrize("seed, variant", [(7, "one_layer"), (0, "no_such_variant")])
def test_no_rows_for_the_seed_or_variant_is_not_measured(tables, seed, variant):
    row = evaluate_claim(claim(ACC, variant=variant), tables, seed=seed)
    assert row["status"] == NOT_MEASURED and math.isnan(row["value"])


def test_nan_value_of_a_derived_metric_is_not_measured(tables):
    """A value that comes out NaN (here inf - inf) is "not measured", never "holds"."""
    tables["behaviour"] = pd.concat([tables["behaviour"], _frame(
        ["variant", "seed", "metric", "value"], [("one_layer", 0, "inf_metric", math.inf)])])
    inf = {"table": "behaviour", "where": {"metric": "inf_metric"}, "column": "value"}
    metric = {"derived": "difference", "a": inf, "b": inf}
    for compare in ("<", ">", "=="):
        row = evaluate_claim(claim(metric, compare, 0.0), tables, seed=0)
        assert row["status"] == NOT_MEASURED and row["note"] == "value is NaN"


# ---------------------------------------------------------------- reduce

REPEATS = {"table": "behaviour", "column": "value",
           "where": {"metric": ["random_len6_repeat_rate", "random_len12_repeat_rate",
                                "ood_len12_repeat_rate"]}}


@pytest.mark.parametrize("reduce, extra, expected", [
    ("min", {}, 0.0),
    ("max", {}, 0.02),
    ("mean", {}, (0.0 + 0.004 + 0.02) / 3),
    ("count_at_least", {"at_least": 0.004}, 2.0),  # inclusive
    ("count_at_least", {"at_least": 0.5}, 0.0),
    ("count_at_most", {"at_most": 0.004}, 2.0),  # inclusive
    ("count_at_most", {"at_most": -1.0}, 0.0),
    ("count_above", {"above": 0.004}, 1.0),  # strict
    ("count_below", {"below": 0.004}, 1.0),  # strict
])
def test_reduce(tables, reduce, extra, expected):
    spec = {**REPEATS, "reduce": reduce, **extra}
    assert metric_value(tables, spec, "one_layer", 0) == pytest.approx(expected)


def test_where_list_means_any_of(tables):
    spec = {**REPEATS, "reduce": "count_at_least", "at_least": -1}
    assert metric_value(tables, spec, "one_layer", 0) == 3


def test_count_reduces_on_the_shipped_style_claims(tables):
    copying = {"table": "circuits", "where": {"circuit": "ov"}, "column": "positivity_real"}
    two_copying = claim({**copying, "reduce": "count_above", "above": 0.5}, "==", 2,
                        variant="smeared")
    two_anti = claim({**copying, "reduce": "count_below", "below": -0.5}, "==", 2,
                     variant="smeared")
    assert evaluate_claim(two_copying, tables, 0)["status"] == HOLDS
    assert evaluate_claim(two_copying, tables, 1)["status"] == FAILS
    # strictly below -0.5: head 3 (-0.5) is not anti-copying, head 0 (-0.7) is
    assert evaluate_claim(two_anti, tables, 0)["value"] == 1
    assert metric_value(tables, {**copying, "reduce": "count_at_most", "at_most": -0.5},
                        "smeared", 0) == 2


def test_several_rows_without_reduce_is_an_error(tables):
    with pytest.raises(ClaimError, match="3 rows"):
        metric_value(tables, REPEATS, "one_layer", 0)
    # a malformed claim is an error, not a silent "not measured"
    with pytest.raises(ClaimError):
        evaluate_claim(claim(REPEATS), tables, 0)


def test_unknown_reduce_and_derived_are_errors(tables):
    with pytest.raises(ClaimError, match="median"):
        metric_value(tables, {**REPEATS, "reduce": "median"}, "one_layer", 0)
    with pytest.raises(ClaimError, match="quotient"):
        metric_value(tables, {"derived": "quotient", "a": ACC, "b": ACC}, "one_layer", 0)


def test_variant_override(tables):
    spec = {"table": "behaviour", "where": {"metric": "loss_all"}, "column": "value",
            "variant": "two_layer"}
    assert metric_value(tables, spec, "one_layer", 0) == pytest.approx(1.4)
    assert metric_value(tables, spec, "one_layer", 1) == pytest.approx(1.1)


# ---------------------------------------------------------------- derived metrics

LOSS = {"table": "behaviour", "where": {"metric": "loss_all"}, "column": "value"}


def test_difference_across_variants(tables):
    metric = {"derived": "difference", "a": LOSS, "b": {**LOSS, "variant": "two_layer"}}
    assert metric_value(tables, metric, "smeared", 0) == pytest.approx(1.0 - 1.4)
    row = evaluate_claim(claim(metric, "<", 0.0, variant="smeared"), tables, 0)
    assert row["status"] == HOLDS and row["value"] == pytest.approx(-0.4)
    # b has a value for seed 1 but a does not: the difference is not measured
    assert evaluate_claim(claim(metric, "<", 0.0, variant="smeared"), tables, 1)["status"] == NOT_MEASURED


def test_ratio(tables):
    metric = {"derived": "ratio", "a": LOSS, "b": {**LOSS, "variant": "two_layer"}}
    assert metric_value(tables, metric, "smeared", 0) == pytest.approx(1.0 / 1.4)
    zero = {"table": "behaviour", "where": {"metric": "random_len6_repeat_rate"}, "column": "value"}
    row = evaluate_claim(claim({"derived": "ratio", "a": LOSS, "b": zero}, "<=", 0.5), tables, 0)
    assert row["status"] == NOT_MEASURED and "zero" in row["note"]


def _phase_change(gap, low, high, note=""):
    return {"phase_change": _frame(["variant", "seed", "metric", "value", "low", "high", "note"], [
        ("two_layer", 0, "coincidence", gap, low, high, note),
    ])}


PHASE = {"table": "phase_change", "where": {"metric": "coincidence"}, "column": "value"}


def test_coincidence_is_decided_by_its_interval():
    c = claim(PHASE, "<=", 0.6931, variant="two_layer")
    assert evaluate_claim(c, _phase_change(0.2, 0.1, 0.4), 0)["status"] == HOLDS
    assert evaluate_claim(c, _phase_change(1.5, 1.0, 2.0), 0)["status"] == FAILS
    row = evaluate_claim(c, _phase_change(0.6, 0.4, 0.9), 0)
    assert row["status"] == TOO_CLOSE and (row["low"], row["high"]) == (0.4, 0.9)
    # no phase_change table, or no row for the seed: not measured
    assert evaluate_claim(c, {}, 0)["status"] == NOT_MEASURED
    assert evaluate_claim(c, _phase_change(0.2, 0.1, 0.4), 1)["status"] == NOT_MEASURED


def test_phase_change_without_an_induction_head_is_not_measured_with_its_reason():
    why = "coincidence not measured: no induction head formed: the best content part is 0.013 (< 0.1)."
    for compare in ("<=", ">"):
        row = evaluate_claim(claim(PHASE, compare, 0.6931, variant="two_layer"),
                             _phase_change(math.nan, math.nan, math.nan, note=why), 0)
        assert row["status"] == NOT_MEASURED and row["note"] == why


def _selected(compare, threshold, measure_column, reduce="min", measure_where=None):
    return {"derived": "over_selected_heads",
            "select": {"table": "circuits", "where": {"circuit": "ov"}, "column": "positivity_real",
                       "compare": compare, "threshold": threshold},
            "measure": {"table": "head_scores", "column": measure_column,
                        **({"where": measure_where} if measure_where else {})},
            "reduce": reduce}


def test_over_selected_heads(tables):
    # copying heads (ov > 0.5): heads 1 and 2, nearest-copy scores 0.6 and 0.4
    assert metric_value(tables, _selected(">", 0.5, "nearest_copy"), "smeared", 0) == pytest.approx(0.4)
    assert metric_value(tables, _selected(">", 0.5, "nearest_copy", "max"), "smeared", 0) == pytest.approx(0.6)
    # anti-copying heads (ov <= -0.5): heads 0 and 3, local 0.8 and 0.6
    assert metric_value(tables, _selected("<=", -0.5, "local"), "smeared", 0) == pytest.approx(0.6)
    assert metric_value(tables, _selected("<", -0.5, "local"), "smeared", 0) == pytest.approx(0.8)


def test_selection_by_role_compares_each_head_with_its_own_chance(tables):
    by_role = {"derived": "over_selected_heads",
               "select": {"table": "head_scores", "column": "induction", "compare": ">=",
                          "threshold": "role"},
               "measure": {"table": "head_scores", "column": "nearest_copy"}, "reduce": "min"}
    # induction role threshold max(2 x 0.127, 0.327) = 0.327: heads 1 (0.7) and 2 (0.5)
    assert metric_value(tables, by_role, "smeared", 0) == pytest.approx(0.4)
    # a stricter rule leaves head 1 only
    strict = Tables(tables, {"times_chance": 5.0, "above_chance": 0.2})
    assert metric_value(strict, by_role, "smeared", 0) == pytest.approx(0.6)


def test_over_selected_heads_with_no_head_selected_is_not_measured(tables):
    metric = _selected(">", 0.5, "nearest_copy")
    with pytest.raises(LookupError, match="no head"):
        metric_value(tables, metric, "smeared", 1)  # seed 1: no ov > 0.5
    for compare in ("<", ">="):
        row = evaluate_claim(claim(metric, compare, 0.3, variant="smeared"), tables, 1)
        assert row["status"] == NOT_MEASURED and "no head" in row["note"]


def test_over_selected_heads_without_measure_rows_for_the_heads_is_not_measured(tables):
    # heads 1 and 2 of layer 0 are selected; the measure only has rows of layer 1
    metric = _selected(">", 0.5, "nearest_copy", measure_where={"layer": 1})
    tables["head_scores"] = pd.concat([tables["head_scores"], _frame(
        HEAD_COLUMNS, [("smeared", 0, 1, 0, 0.0, PREV, 0.9, NEAREST, 0.9, INDUCTION, 0.0, LOCAL, "")])])
    row = evaluate_claim(claim(metric, ">=", 0.3, variant="smeared"), tables, 0)
    assert row["status"] == NOT_MEASURED


BEST_K = {"derived": "best_composition", "kind": "K", "layer": 1, "src_layer": 0, "reduce": "min"}
MARGIN_K = {"derived": "composition_margin", "kind": "K", "layer": 1, "src_layer": 0, "reduce": "min"}
PREV_OF_K = {"derived": "score_of_composition_head", "kind": "K", "layer": 1, "src_layer": 0,
             "reduce": "min", "column": "previous_token"}


def test_a_head_named_by_two_properties_is_picked_by_the_first(tables):
    # seed 0: the layer-0 head whose K terms with every layer-1 head are largest is head 2
    # (0.97 and 0.93): its smallest, 0.93; its margin per layer-1 head 0.97 - 0.3 and
    # 0.93 - 0.4, the least 0.53; and its previous-token score 0.9
    assert metric_value(tables, BEST_K, "two_layer", 0) == pytest.approx(0.93)
    assert metric_value(tables, {**BEST_K, "reduce": "max"}, "two_layer", 0) == pytest.approx(0.97)
    assert metric_value(tables, MARGIN_K, "two_layer", 0) == pytest.approx(0.53)
    assert metric_value(tables, PREV_OF_K, "two_layer", 0) == pytest.approx(0.9)
    assert evaluate_claim(claim(BEST_K, ">=", 0.9, variant="two_layer"), tables, 0)["status"] == HOLDS
    # the Q terms pick another head (0 or 1 and 3 at 0.5; the largest min wins, head 0)
    assert metric_value(tables, {**BEST_K, "kind": "Q"}, "two_layer", 0) == pytest.approx(0.5)


def test_the_second_property_is_measured_even_where_no_head_has_the_role(tables):
    # seed 1: head 1 has the larger K terms (0.99); its previous-token score 0.30 is below the
    # role threshold 0.321: the sentence's second half fails, it is not "not measured"
    c = {**claim(PREV_OF_K, ">=", "role", variant="two_layer"),
         "chance": {"table": "head_scores", "where": {"layer": 0}, "column": "previous_token_chance",
                    "reduce": "max"}}
    row = evaluate_claim(c, tables, 1)
    assert row["status"] == FAILS and row["value"] == pytest.approx(0.30)
    assert evaluate_claim(c, tables, 0)["status"] == HOLDS


def test_also_conditions_must_hold_too(tables):
    c = {**claim(BEST_K, ">=", 0.9, variant="two_layer"),
         "also": [{"label": "margin", "metric": MARGIN_K, "compare": ">", "threshold": 0.6}]}
    row = evaluate_claim(c, tables, 0)
    assert row["status"] == FAILS and row["value"] == pytest.approx(0.93)
    assert "margin 0.53" in row["note"] and "needs > 0.6" in row["note"]
    c["also"][0]["threshold"] = 0.5
    assert evaluate_claim(c, tables, 0)["status"] == HOLDS


def test_composition_without_composition_rows_is_not_measured(tables):
    metric = {**BEST_K, "kind": "V"}
    assert evaluate_claim(claim(metric, ">=", 0.9, variant="two_layer"), tables, 0)["status"] == NOT_MEASURED
    del tables["composition"]
    assert evaluate_claim(claim(BEST_K, ">=", 0.9, variant="two_layer"), tables, 0)["status"] == NOT_MEASURED


def _role_claim(column, where=None, compare=">="):
    spec = {"table": "head_scores", "column": column, "reduce": "max", **({"where": where} if where else {})}
    return {**claim(spec, compare, "role", variant="two_layer"),
            "chance": {**spec, "column": f"{column}_chance"}}


def test_role_threshold_claim_reads_the_chance_level(tables):
    # seed 0 layer 0: best previous-token score 0.9 against chance 0.121 (threshold 0.321)
    row = evaluate_claim(_role_claim("previous_token", {"layer": 0}), tables, 0)
    assert row["status"] == HOLDS and row["chance"] == pytest.approx(PREV)
    assert row["threshold_value"] == pytest.approx(PREV + 0.2)
    # seed 1: 0.30 is more than twice chance but not chance + 0.2
    row = evaluate_claim(_role_claim("previous_token", {"layer": 0}), tables, 1)
    assert row["status"] == FAILS
    # twice chance binds when chance is above 0.2
    rules = {"times_chance": 2.0, "above_chance": 0.2}
    high = Tables(tables, rules)
    high["head_scores"] = tables["head_scores"].assign(local_chance=0.3)
    row = evaluate_claim(_role_claim("local"), high, 0)
    assert row["threshold_value"] == pytest.approx(0.6) and row["status"] == FAILS


def test_value_at_its_chance_level_is_flagged(tables):
    # seed 1 layer 0: best previous-token 0.30 vs chance 0.121 is not at chance; local 0.5
    # vs 0.31 is not either; a value within 0.05 of chance is
    t = Tables(tables, tables.roles)
    t["head_scores"] = tables["head_scores"].assign(previous_token_chance=0.28)
    row = evaluate_claim(_role_claim("previous_token", {"layer": 0}), t, 1)
    assert row["at_chance"] and row["status"] == FAILS
    assert not evaluate_claim(_role_claim("previous_token", {"layer": 0}), tables, 1)["at_chance"]
    card = scorecard([_role_claim("previous_token", {"layer": 0})],
                     evaluate_claims([_role_claim("previous_token", {"layer": 0})], t, [1]), RULE).iloc[0]
    assert "(at chance)" in card["values"] and "at its chance level in 1 of 1" in card["notes"]
    assert card["chance"] == "0.280"  # three significant digits, as everywhere
    assert card["test"].startswith("≥ role threshold")


def test_chance_excess_ratio():
    tables = {"ablations": _frame(["variant", "seed", "ablation", "first_block_mean_L1",
                                   "first_block_chance_L1"], [
        ("two_layer", 0, "baseline", 0.256, 0.056),
        ("two_layer", 0, "plus_q_L1", 0.096, 0.056),
        ("two_layer", 1, "baseline", 0.09, 0.056),  # only 0.034 above chance
        ("two_layer", 1, "plus_q_L1", 0.06, 0.056),
    ])}
    col = lambda name: {"table": "ablations", "where": {"ablation": name}, "column": "first_block_mean_L1"}  # noqa: E731
    metric = {"derived": "chance_excess_ratio", "a": col("plus_q_L1"), "b": col("baseline"),
              "chance": {**col("baseline"), "column": "first_block_chance_L1"}, "min_excess": 0.05}
    assert metric_value(tables, metric, "two_layer", 0) == pytest.approx(0.04 / 0.2)
    row = evaluate_claim(claim(metric, "<=", 0.5, variant="two_layer"), tables, 1)
    assert row["status"] == NOT_MEASURED and "nothing to remove" in row["note"]


def _offset_rows(variant, seed, layer, profiles):
    """Rows of an attention-by-offset table (positional_shortcut_offsets.csv): one per head
    and offset, from per-head profiles."""
    return [(variant, seed, layer, h, k, float(v)) for h, profile in enumerate(profiles)
            for k, v in enumerate(profile)]


def test_profile_overlap_known_answers():
    from inductionlab.stages.behaviour.attention import offset_profile, uniform_pattern

    T = 24
    uniform = offset_profile(uniform_pattern(T, torch.float64)[0])[0].tolist()  # [T]
    at = lambda k: [1.0 if j == k else 0.0 for j in range(T)]  # noqa: E731  (all on offset k)
    local = [1 / 3 if j < 3 else 0.0 for j in range(T)]  # current and 2 previous tokens
    columns = ["variant", "seed", "layer", "head", "offset", "attention"]
    tables = {"positional_shortcut_offsets": _frame(columns, [
        *_offset_rows("m", 0, 0, [local, local, local]),  # identical heads
        *_offset_rows("m", 1, 0, [uniform, uniform]),  # uniform causal attention, twice
        *_offset_rows("m", 2, 0, [at(0), at(5)]),  # positional heads at different offsets
        *_offset_rows("m", 3, 0, [uniform, at(0)]),  # uniform beside a current-token head
        *_offset_rows("m", 4, 0, [at(0), local]),  # share 1/3 of their attention
        *_offset_rows("m", 4, 1, [at(5), at(5)]),  # another layer: compared within it only
        *_offset_rows("m", 5, 0, [local]),  # one head: nothing to compare
    ])}
    metric = {"derived": "profile_overlap", "table": "positional_shortcut_offsets",
              "key": "offset", "column": "attention", "reduce": "min"}
    value = lambda seed, **kw: metric_value(tables, {**metric, **kw}, "m", seed)  # noqa: E731
    assert value(0) == pytest.approx(1.0) and value(0).exact
    assert value(1) == pytest.approx(1.0)
    assert value(2) == pytest.approx(0.0)
    assert value(3) == pytest.approx(uniform[0] / sum(uniform))  # uniform's share at offset 0
    assert value(3) < 0.5  # T = 24: about 0.1, uniform attention is unlike a positional head
    assert value(4) == pytest.approx(1 / 3) and value(4, reduce="max") == pytest.approx(1.0)
    broadly_similar = claim(metric, ">=", 0.5, variant="m")
    assert [evaluate_claim(broadly_similar, tables, s)["status"] for s in range(6)] == [
        HOLDS, HOLDS, FAILS, FAILS, FAILS, NOT_MEASURED]


@pytest.mark.parametrize("value, compare, threshold, text", [
    (0.2996, ">=", 0.3, "0.2996"),
    (-0.99976, "<=", -1.0, "−0.9998"),  # "−1" would satisfy "<= -1"; a true minus sign
    (0.1234, ">=", 0.3, "0.123"),
    (2.0, "==", 2, "2"),
    (-0.99982, "<=", -0.9, "−1.00"),  # three significant digits shown, as every table: never "−1"
    (123.4, ">=", 0.1, "123"),
    (math.inf, "<=", 0.69, "∞"),
])
def test_format_value_never_reads_the_other_way(value, compare, threshold, text):
    assert format_value(value, compare, threshold) == text


# ---------------------------------------------------------------- scorecard

def test_scorecard_holds_in_k_of_n_seeds(tables):
    claims = [claim(ACC, "<", 0.6, id="acc_low"), claim(ACC, ">", 0.9, id="acc_high")]
    results = evaluate_claims(claims, tables, [0, 1, 2])
    assert len(results) == 6
    card = scorecard(claims, results).set_index("claim")
    assert card.loc["acc_low", "verdict"] == "holds in 2 of 3 seeds"
    assert card.loc["acc_high", "verdict"] == "holds in 0 of 3 seeds"
    assert card.loc["acc_low", ["holds", "measured", "seeds"]].tolist() == [2, 3, 3]
    assert card.loc["acc_low", "values"] == "0: 0.200 ✓, 1: 0.700 ✗, 2: 0.500 ✓"
    assert card.loc["acc_low", "marks"] == "✓✗✓"
    assert card.loc["acc_low", "test"] == "< 0.6"
    assert card.loc["acc_low", "quote"] == "q"


def test_scorecard_counts_not_measured_seeds(tables):
    claims = [{**claim(ACC, "<", 0.6, id="acc_low"), "write_up": "0.25"}]
    results = evaluate_claims(claims, tables, [0, 1, 2, 3])  # seed 3 has no rows
    card = scorecard(claims, results).iloc[0]
    assert card["verdict"] == "holds in 2 of 4 seeds (fails in 1, 1 not measured)"
    assert (card["holds"], card["measured"], card["seeds"]) == (2, 3, 4)
    assert card["values"] == "0: 0.200 ✓, 1: 0.700 ✗, 2: 0.500 ✓, 3: not measured"
    assert card["marks"] == "✓✗✓–"
    assert card["write_up"] == "0.25"


def test_scorecard_with_no_seed_measured(tables):
    claims = [claim({"table": "ablations", "column": "value"}, ">", 0.0, id="absent")]
    card = scorecard(claims, evaluate_claims(claims, tables, [0, 1])).iloc[0]
    assert card["verdict"] == "not measured in 2 of 2 seeds"
    assert card["notes"] == "not measured: no table 'ablations'"
    assert card["values"] == "0: not measured, 1: not measured"


def test_run_claims_reads_tables_by_file_stem(tmp_path, tables):
    paths = []
    for name in ("behaviour", "circuits"):
        paths.append(tmp_path / f"{name}.csv")
        tables[name].to_csv(paths[-1], index=False)
    claims_yaml = tmp_path / "claims.yaml"
    claims_yaml.write_text(yaml.safe_dump({"claims": [
        claim(ACC, "<", 0.5, id="acc"),
        claim({"table": "head_scores", "column": "induction", "reduce": "max"}, ">=", 0.3, id="induction"),
    ]}))
    run_claims(claims_yaml, paths, tmp_path / "claims.csv", tmp_path / "scorecard.csv")
    results = pd.read_csv(tmp_path / "claims.csv")
    assert sorted(results["seed"].unique()) == [0, 1, 2]  # every seed of any table
    acc = results[results["claim"] == "acc"].set_index("seed")["status"]
    assert acc.to_dict() == {0: HOLDS, 1: FAILS, 2: FAILS}
    assert set(results.loc[results["claim"] == "induction", "status"]) == {NOT_MEASURED}
    card = pd.read_csv(tmp_path / "scorecard.csv").set_index("claim")
    assert card.loc["acc", "verdict"] == "holds in 1 of 3 seeds"
    assert card.loc["induction", "verdict"] == "not measured in 3 of 3 seeds"
    assert "no table 'head_scores'" in card.loc["induction", "notes"]


# ---------------------------------------------------------------- model families

LOSS = {"table": "behaviour", "where": {"metric": "loss_all"}, "column": "value"}


def test_family_claims_map_every_role_a_metric_reads():
    beats = claim({"derived": "difference", "a": LOSS, "b": {**LOSS, "variant": "one_layer"}},
                  "<", 0.0, variant="two_layer", id="beats")
    alone = claim(LOSS, "<", 2.0, variant="two_layer", id="alone")
    mapped = family_claims([beats, alone], {"two_layer": "deep_b", "one_layer": "shallow_b"})
    assert [c["id"] for c in mapped] == ["beats", "alone"]
    assert mapped[0]["variant"] == "deep_b" and mapped[0]["role"] == "two_layer"
    assert mapped[0]["metric"]["b"]["variant"] == "shallow_b"  # the nested role too
    assert beats["metric"]["b"]["variant"] == "one_layer"  # the claim set is not modified
    # a family without the one_layer role cannot evaluate "beats"
    assert [c["id"] for c in family_claims([beats, alone], {"two_layer": "deep_b"})] == ["alone"]
    # the write-up's own family: every claim on the variant it names
    assert [c["variant"] for c in family_claims([beats, alone], None)] == ["two_layer", "two_layer"]


def test_run_claims_on_a_second_family_side_by_side(tmp_path, tables):
    """A family whose model copies the one_layer rows of seed 0 but with a higher accuracy:
    the accuracy claim flips, the loss claim does not, and the comparison says which."""
    behaviour = tables["behaviour"]
    copy = behaviour[behaviour["variant"] == "one_layer"].assign(variant="other")
    copy.loc[copy["metric"] == "acc_pred", "value"] = 0.9
    path = tmp_path / "behaviour.csv"
    pd.concat([behaviour, copy]).to_csv(path, index=False)
    claims_yaml = tmp_path / "claims.yaml"
    claims_yaml.write_text(yaml.safe_dump({"claims": [
        claim(ACC, "<", 0.5, id="acc"), claim(LOSS, ">", 2.0, id="loss"),
        claim(LOSS, "<", 1.2, variant="two_layer", id="deep")]}))
    families = {"fam": {"title": "other models", "models": {"one_layer": "other"}}}
    run_claims(claims_yaml, [path], tmp_path / "claims.csv", tmp_path / "scorecard.csv",
               families=families, comparison_csv=tmp_path / "comparison.csv")
    card = pd.read_csv(tmp_path / "scorecard.csv", keep_default_na=False)
    assert card[["family", "claim", "variant", "role"]].values.tolist() == [
        ["write_up", "acc", "one_layer", "one_layer"], ["write_up", "loss", "one_layer", "one_layer"],
        ["write_up", "deep", "two_layer", "two_layer"],
        ["fam", "acc", "other", "one_layer"], ["fam", "loss", "other", "one_layer"]]
    fam = card[card["family"] == "fam"].set_index("claim")
    assert fam.loc["acc", "holds"] == 0 and fam.loc["loss", "holds"] == 1
    comparison = pd.read_csv(tmp_path / "comparison.csv", keep_default_na=False).set_index("claim")
    assert list(comparison.columns) == ["role", "group", "measure", "test", WRITE_UP_TITLE,
                                        "other models", "differs"]
    assert comparison["differs"].to_dict() == {"acc": True, "loss": False, "deep": False}
    assert comparison.loc["acc", "other models"].startswith("does not replicate (holds in 0 of 3")
    assert comparison.loc["deep", "other models"].startswith("not evaluated")
    results = pd.read_csv(tmp_path / "claims.csv")
    assert set(results["family"]) == {"write_up", "fam"}


# ---------------------------------------------------------------- claims.yaml

def _write_claims(tmp_path, claims):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"claims": claims}))
    return path


@pytest.mark.parametrize("metric, message", [
    ({"table": "behavior", "column": "value"}, "no stage writes a table 'behavior'"),
    ({"table": "head_scores", "column": "inducton"}, r"has no column\(s\) \['inducton'\]"),
    ({"table": "head_scores", "column": "induction", "where": {"layr": 1}}, r"\['layr'\]"),
    ({"derived": "difference", "a": ACC, "b": {"table": "ablations", "column": "delta_los_all"}},
     r"'ablations' has no column\(s\) \['delta_los_all'\]"),
    ({"table": "phase_change", "column": "span", "require": {"formd": 1}}, r"\['formd'\]"),
])
def test_a_claim_on_a_table_or_column_no_stage_writes_is_refused(tmp_path, metric, message):
    """A misspelt table or column is an error when the claims are read, not a claim that
    is quietly not measured."""
    with pytest.raises(ClaimError, match=message):
        load_claims(_write_claims(tmp_path, [claim(ACC, id="ok"), claim(metric, id="bad")]))


def test_columns_generated_from_a_list_are_accepted(tmp_path):
    metrics = [{"table": "ablations", "column": "induction_max_L3"},
               {"table": "ablations", "column": "prefix_matching_L1H2"},
               {"table": "head_scores", "column": "induction", "where": {"roles": "induction"}},
               {"table": "failure_modes", "column": "greedy_exact_prompt12"},
               {"table": "train_log", "column": "val_loss_pos7"}]
    claims = [claim(m, id=f"c{k}") for k, m in enumerate(metrics)]
    assert len(load_claims(_write_claims(tmp_path, claims))) == len(metrics)


def test_an_experiment_brings_its_own_claims(tmp_path):
    from inductionlab import experiments

    shortcut = experiments.available()["positional_shortcut"].claims
    main = tmp_path / "claims.yaml"
    main.write_text(yaml.safe_dump({"groups": {"copy": "Copy"}, "claims": [claim(ACC, id="a")
                                                                            | {"group": "copy"}]}))
    ids = [c["id"] for c in load_claims(main, [shortcut])]
    assert ids[0] == "a" and "one_layer.attention_similar_across_heads" in ids
    for name, extra, message in (("clash", claim(ACC, id="a") | {"group": "copy"}, "'a' appears twice"),
                                 ("group", claim(ACC, id="b") | {"group": "elsewhere"},
                                  "group 'elsewhere'")):
        (tmp_path / name).mkdir()
        with pytest.raises(ClaimError, match=message):
            load_claims(main, [_write_claims(tmp_path / name, [extra])])


@pytest.mark.parametrize("key", ["id", "variant", "quote", "metric", "compare", "threshold"])
def test_load_claims_missing_key(tmp_path, key):
    bad = claim(ACC, id="broken")
    del bad[key]
    with pytest.raises(ClaimError, match=repr(key)):
        load_claims(_write_claims(tmp_path, [claim(ACC, id="ok"), bad]))


def test_load_claims_bad_compare(tmp_path):
    with pytest.raises(ClaimError, match="'=<'"):
        load_claims(_write_claims(tmp_path, [claim(ACC, "=<", id="x")]))


def test_load_claims_duplicate_id(tmp_path):
    with pytest.raises(ClaimError, match="'twice'"):
        load_claims(_write_claims(tmp_path, [claim(ACC, id="twice"), claim(ACC, ">", id="twice")]))


def test_load_claims_keeps_order_and_content(tmp_path):
    claims = [claim(ACC, id="a"), claim(ACC, ">=", 0.9, id="b")]
    assert load_claims(_write_claims(tmp_path, claims)) == [{**c, "source": "write-up"} for c in claims]


def test_only_the_write_up_is_quoted(tmp_path):
    """A reference value or Anthropic's account is a statement, never a quotation."""
    paraphrase = {**claim(ACC, id="p"), "source": "anthropic"}
    with pytest.raises(ClaimError, match="statement"):
        load_claims(_write_claims(tmp_path, [paraphrase]))
    del paraphrase["quote"]
    with pytest.raises(ClaimError, match="'statement'"):
        load_claims(_write_claims(tmp_path, [paraphrase]))
    with pytest.raises(ClaimError, match="'hearsay'"):
        load_claims(_write_claims(tmp_path, [{**claim(ACC, id="h"), "source": "hearsay"}]))
    ok = {**paraphrase, "statement": "induction heads copy"}
    assert load_claims(_write_claims(tmp_path, [ok]))[0]["source"] == "anthropic"


def test_scorecard_labels_provenance_and_explains_infinity(tables):
    ref = {**claim(ACC, "<", 0.6, id="r"), "source": "reference", "statement": "s",
           "reference": "2.606"}
    del ref["quote"]
    card = scorecard([ref], evaluate_claims([ref], tables, [0])).iloc[0]
    assert (card["source"], card["quote"], card["statement"], card["reference"]) == (
        "reference", "", "s", "2.606")
    never = math.inf
    results = pd.DataFrame([{"claim": "g", "variant": "v", "seed": 0, "compare": "<=",
                             "threshold": 0.69, "chance": math.nan, "beside": "",
                             "value": never, "low": math.nan, "high": math.nan,
                             "threshold_value": 0.69, "status": FAILS, "at_chance": False,
                             "note": ""}])
    gap = {**claim({"derived": "ratio", "a": "x", "b": "y"}, "<=", 0.69, id="g")}
    card = scorecard([gap], results).iloc[0]
    assert card["values"] == "0: ∞ ✗"
    assert "division by zero" in card["notes"]




def _metric_tables(spec):
    """Every table a metric spec reads (derived metrics: their parts and implicit tables)."""
    if "derived" in spec:
        assert spec["derived"] in DERIVED, spec
        found = set(IMPLICIT_TABLES.get(spec["derived"], set()))
        if "table" in spec:  # a derived metric that reads rows of its own table
            found.add(spec["table"])
        for part in ("a", "b", "select", "measure", "chance"):
            if isinstance(spec.get(part), dict):
                found |= _metric_tables(spec[part])
        return found
    return {spec["table"]}


def test_shipped_claims_load_and_name_known_tables():
    claims = load_claims(ROOT / "workflow" / "claims.yaml")
    assert len(claims) >= 20
    for c in claims:
        metric = c["metric"]
        assert "derived" in metric or "table" in metric, c["id"]
        tables = _metric_tables(metric)
        allowed = TABLE_NAMES | EXPERIMENT_TABLES | IMPLICIT_TABLES.get(metric.get("derived"), set())
        assert tables and tables <= allowed, (c["id"], tables)
        reduce = metric.get("reduce")
        assert reduce in (None, "min", "max", "mean", "count_above", "count_below"), c["id"]
        assert c.get("measure"), c["id"]
        if c["threshold"] == "role":
            assert "chance" in c, c["id"]
        if reduce == "count_above":
            assert "above" in metric, c["id"]
        if reduce == "count_below":
            assert "below" in metric, c["id"]
        assert c["threshold"] in ("role", *ROLE_RULE) or isinstance(c["threshold"], (int, float)), c["id"]


def test_every_quote_is_verbatim_in_the_write_up():
    root = Path(__file__).resolve().parents[1]
    seeds = root.parent / "shared" / "seeds"
    write_ups = sorted(seeds.glob("000_*.txt")) if seeds.is_dir() else []
    if not write_ups:
        pytest.skip(f"the write-up is not at {seeds}")
    text = " ".join(write_ups[0].read_text().split())
    claims = load_claims(root / "workflow" / "claims.yaml")
    quoted = [c for c in claims if c["source"] == "write-up"]
    assert len(quoted) >= 20
    assert [c["id"] for c in quoted if " ".join(c["quote"].split()) not in text] == []


def _card_row(statuses, family="write_up", value_range=""):
    from inductionlab.claims.words import verdict_text

    return {"family": family, "role": "one_layer_smeared", "claim": "local", "group": "g",
            "measure": "m", "test": "≥ 0.5", "holds": statuses.count(HOLDS),
            "fails": statuses.count(FAILS), "too_close": statuses.count(TOO_CLOSE),
            "measured": sum(s != NOT_MEASURED for s in statuses), "seeds": len(statuses),
            "verdict": verdict_text(statuses), "range": value_range}


H, F, T, N = HOLDS, FAILS, TOO_CLOSE, NOT_MEASURED


@pytest.mark.parametrize("statuses, expected", [
    ([H] * 5, "replicates in every seed"),
    ([H, H, H, N, N], "replicates in every seed"),  # the unmeasured seeds give no support
    ([F] * 5, "does not replicate"),
    ([F, F, N, N, N], "does not replicate"),
    ([H, H, H, H, F], "depends on the seed"),
    ([H, F, T, N, N], "depends on the seed"),  # decided seeds disagree
    ([H, H, H, H, T], "too close to call"),
    ([F, F, T, T, N], "too close to call"),
    ([T] * 5, "too close to call"),
    ([N] * 5, "could not be measured"),
])
def test_outcome_of_every_combination_of_seed_statuses(statuses, expected):
    from inductionlab.claims.verdicts import outcome

    assert outcome(_card_row(statuses)) == expected


def test_a_family_cell_counts_the_seeds_not_measured_and_never_says_depends_on_none():
    from inductionlab.claims.verdicts import family_comparison

    card = pd.DataFrame([_card_row([H] * 5, "write_up", "[0.6, 0.9]"),
                         _card_row([F, F, F, N, N], "fam", "[−0.336, 0.1]")])
    cells = family_comparison(card, {"write_up": "W", "fam": "F"}).iloc[0]
    assert cells["W"] == "replicates in every seed (holds in 5 of 5 seeds; [0.6, 0.9])"
    # measured in 3 seeds, holds in none: the other 2 give it no support
    assert cells["F"] == "does not replicate (holds in 0 of 5 seeds (fails in 3, 2 not measured); [−0.336, 0.1])"
    assert cells["differs"]
    card = pd.DataFrame([_card_row([H, H, N, N, N], "write_up", "0.6"), _card_row([N] * 5, "fam")])
    cells = family_comparison(card, {"write_up": "W", "fam": "F"}).iloc[0]
    assert cells["W"] == "replicates in every seed (holds in 2 of 5 seeds (3 not measured); 0.6)"
    assert cells["F"] == "could not be measured (not measured in 5 of 5 seeds)"


@pytest.mark.parametrize("compare, threshold, bounds, expected", [
    ("<=", 0.01, (0.0, 0.004), HOLDS),       # an absence, read as equivalence
    ("<=", 0.01, (0.005, 0.016), TOO_CLOSE),  # the interval holds the threshold
    ("<=", 0.01, (0.02, 0.03), FAILS),
    (">=", 0.3, (0.29, 0.33), TOO_CLOSE),
    (">=", 0.3, (0.31, 0.33), HOLDS),
    (">", 0.0, (-0.2, -0.1), FAILS),
    ("==", 2, (2, 2), HOLDS),
    ("==", 2, (1, 2), TOO_CLOSE),
    ("==", 2, (0, 1), FAILS),
])
def test_a_seed_is_decided_by_its_interval(compare, threshold, bounds, expected):
    from inductionlab.claims.metrics import Estimate, decide

    value = sum(bounds) / 2
    assert decide(compare, threshold, Estimate(value, *bounds)) == expected
    # an exact value (from the weights) is decided by the value alone
    assert decide(compare, threshold, Estimate(value)) in (HOLDS, FAILS)


def test_intervals_are_read_beside_their_columns_and_carried_through(tables):
    from inductionlab.claims.metrics import Estimate

    b = tables["behaviour"]
    b["low"], b["high"] = b["value"] - 0.01, b["value"] + 0.01
    est = metric_value(tables, ACC, "one_layer", 0)
    assert isinstance(est, Estimate) and (est.low, est.high) == pytest.approx((0.19, 0.21))
    worst = metric_value(tables, {**REPEATS, "reduce": "max"}, "one_layer", 0)
    assert worst == pytest.approx(0.02) and (worst.low, worst.high) == pytest.approx((0.01, 0.03))
    diff = metric_value(tables, {"derived": "difference", "a": LOSS,
                                 "b": {**LOSS, "variant": "two_layer"}}, "smeared", 0)
    assert diff == pytest.approx(-0.4)
    assert diff.high - diff == pytest.approx(math.hypot(0.01, 0.01))
    # a claim whose interval holds the threshold is too close to call, and says so per seed
    row = evaluate_claim(claim(ACC, "<", 0.205), tables, 0)
    assert row["status"] == TOO_CLOSE
    card = scorecard([claim(ACC, "<", 0.205)], evaluate_claims([claim(ACC, "<", 0.205)], tables, [0]))
    assert card.iloc[0]["values"] == "0: 0.200 [0.190, 0.210] ?"
    assert card.iloc[0]["verdict"] == "holds in 0 of 1 seeds (1 too close to call)"
    # the circuits table has no interval columns: exact
    assert metric_value(tables, {"table": "circuits", "where": {"circuit": "direct"},
                                 "column": "positivity_real"}, "smeared", 0).exact


def test_the_scorecard_gives_the_mean_over_seeds_with_its_interval(tables):
    card = scorecard([claim(ACC, "<", 0.5)], evaluate_claims([claim(ACC, "<", 0.5)], tables,
                                                             [0, 1, 2])).iloc[0]
    values = [0.2, 0.7, 0.5]
    mean, sd = sum(values) / 3, pd.Series(values).std()
    assert card["mean"] == pytest.approx(mean)
    assert card["mean_high"] - card["mean"] == pytest.approx(4.303 * sd / math.sqrt(3), rel=1e-3)
    assert "threshold < 0.5" in card["summary"] and "mean 0.467" in card["summary"]


def test_a_negative_threshold_reads_with_a_true_minus_sign():
    from inductionlab.claims.words import test_text

    negative = claim(LOSS, "<=", -0.9)
    assert test_text(negative, RULE) == "≤ −0.9"
    negative["also"] = [{"label": "and", "compare": ">", "threshold": -2.5}]
    assert test_text(negative, RULE).endswith("> −2.5")


def test_an_absence_is_shown_against_the_data_s_own_rate(tables):
    tables["behaviour"] = pd.concat([tables["behaviour"], pd.DataFrame(
        [{"variant": "one_layer", "seed": 0, "metric": "random_len12_repeat_rate_data", "value": 0.04}])])
    c = {**claim({**REPEATS, "reduce": "max"}, "<=", 0.01),
         "data_rate": {"table": "behaviour", "where": {"metric": "random_len12_repeat_rate_data"},
                       "column": "value"}}
    card = scorecard([c], evaluate_claims([c], tables, [0])).iloc[0]
    assert "0.500 × the data's rate (0.0400)" in card["summary"]
    assert "threshold ≤ 0.0100, +0.0100 from it" in card["summary"]
    exact = claim({"table": "circuits", "where": {"circuit": "direct"}, "column": "positivity_real"},
                  "<=", -0.9, variant="smeared")
    card = scorecard([exact], evaluate_claims([exact], tables, [0])).iloc[0]
    assert "exact in each seed" in card["summary"]


def test_a_required_column_makes_the_claim_not_measured_with_the_row_s_note():
    phase = {"phase_change": _frame(["variant", "seed", "metric", "span", "formed", "note"], [
        ("two_layer", 0, "induction_content", 2.0, 0.0, "no induction head formed: 0.01 (< 0.1)."),
        ("two_layer", 1, "induction_content", 2.0, 1.0, ""),
    ])}
    spec = {"table": "phase_change", "where": {"metric": "induction_content"},
            "require": {"formed": 1}, "column": "span"}
    row = evaluate_claim(claim(spec, "<=", 3, variant="two_layer"), phase, 0)
    assert row["status"] == NOT_MEASURED and row["note"] == "no induction head formed: 0.01 (< 0.1)."
    assert evaluate_claim(claim(spec, "<=", 3, variant="two_layer"), phase, 1)["status"] == HOLDS


# ---------------------------------------------------------------- house style

def test_the_write_up_s_printed_numbers_read_with_a_true_minus_sign(tables):
    from inductionlab.claims.metrics import Estimate
    from inductionlab.claims.words import interval_text

    c = {**claim(ACC, "<", 0.6, id="signs"), "write_up": "-0.712, -0.857", "reference": -0.9996,
         "measure": "heads with OV positivity < -0.5", "quote": "close to -1.0, an anti-copying head"}
    card = scorecard([c], evaluate_claims([c], tables, [0, 1, 2])).iloc[0]
    assert card["write_up"] == "−0.712, −0.857"
    assert card["reference"] == "−0.9996"
    assert card["measure"] == "heads with OV positivity < −0.5"
    assert card["quote"] == "close to -1.0, an anti-copying head"  # a quote stays verbatim
    # a whole negative number too (a count, an exact value), and every interval bound
    assert format_value(-1.0) == "−1"
    assert interval_text(Estimate(-0.233, -0.377, -0.0879)) == "−0.233 [−0.377, −0.088]"
    for column in ("write_up", "reference", "measure", "values", "range", "summary", "test"):
        assert not re.search(r"(?<![\w.])-\.?\d", card[column]), (column, card[column])


@pytest.mark.parametrize("value, low, high, text", [
    (-0.233, -0.377, -0.0879, "−0.233 [−0.377, −0.088]"),  # bounds at the value's decimals
    (0.0110, 0.00596, 0.0160, "0.0110 [0.0060, 0.0160]"),
    (0.0413, -0.0348, 0.1174, "0.0413 [−0.0348, 0.117]"),  # never more than 3 significant
    (0.00012, -0.5, 0.5, "0.000120 [−0.500, 0.500]"),  # a value near 0 pads no bound
    (2.0, 1.2449, 3.0, "2 [1.24, 3]"),  # a count: whole, its bounds to 3 significant digits
    (1.0, 0.9994, 1.0, "1 [0.999, 1]"),
])
def test_an_interval_is_shown_at_its_value_s_precision(value, low, high, text):
    from inductionlab.claims.metrics import Estimate
    from inductionlab.claims.words import interval_text

    assert interval_text(Estimate(value, low, high)) == text


LOSS_DELTA = {"table": "ablations", "where": {"ablation": "smear_off_L0"}, "column": "delta_loss_all"}


@pytest.mark.parametrize("metric, unit", [
    (LOSS_DELTA, "nats"),
    ({"table": "behaviour", "where": {"metric": "loss_all"}, "column": "value"}, "nats"),
    ({"table": "train_log", "column": "val_loss_all"}, "nats"),
    ({"table": "ablations", "column": "induction_L1H2"}, "share of attention"),
    ({"table": "positional_shortcut_offsets", "column": "attention"}, "share of attention"),
    ({"table": "behaviour", "where": {"metric": "icl_score"}, "column": "value"}, "nats"),
    ({"table": "offset_profile", "where": {"component": "direct"}, "column": "value"}, "logits"),
    ({"table": "head_scores", "column": "induction", "reduce": "max"}, "share of attention"),
    ({"table": "ablations", "column": "induction_control_mean_L1"}, "share of attention"),
    (ACC, None),  # an accuracy, a share: no unit
    ({"table": "circuits", "column": "positivity_real"}, None),
    ({"table": "phase_change", "where": {"metric": "loss_pred"}, "column": "span"}, None),
    ({"table": "circuits", "column": "positivity_real", "reduce": "count_above", "above": 0.5}, None),
    ({"derived": "difference", "a": LOSS_DELTA, "b": LOSS_DELTA}, "nats"),
    ({"derived": "difference", "a": LOSS_DELTA, "b": ACC}, None),
    ({"derived": "ratio", "a": LOSS_DELTA, "b": LOSS_DELTA}, None),
    ({"derived": "over_selected_heads", "select": {}, "reduce": "min",
      "measure": {"table": "head_scores", "column": "local"}}, "share of attention"),
    ({"derived": "score_of_composition_head", "column": "previous_token"}, "share of attention"),
    ({**ACC, "unit": "nats"}, "nats"),  # a metric may declare its unit
])
def test_a_claim_s_unit_comes_from_its_table_and_column(metric, unit):
    from inductionlab import experiments
    from inductionlab.claims.words import claim_unit

    experiments.available()  # an experiment's tables are declared when it is loaded

    assert claim_unit(claim(metric)) == unit


def test_the_summary_over_seeds_names_the_unit(tables):
    loss = {"table": "behaviour", "where": {"metric": "loss_all"}, "column": "value"}
    c = claim(loss, "<", 3.0, variant="two_layer")
    card = scorecard([c], evaluate_claims([c], tables, [0, 1])).iloc[0]
    assert card["summary"].startswith("mean 1.25 [−0.66, 3.16] over seeds, in nats")
    shares = scorecard([claim(ACC)], evaluate_claims([claim(ACC)], tables, [0, 1, 2])).iloc[0]
    assert "over seeds (exact" in shares["summary"]  # an accuracy has no unit
    # a claim may declare its unit ("" for none), overriding its table's
    declared = {**c, "unit": "logits"}
    card = scorecard([declared], evaluate_claims([declared], tables, [0, 1])).iloc[0]
    assert "over seeds, in logits " in card["summary"]
    unitless = {**c, "unit": ""}
    card = scorecard([unitless], evaluate_claims([unitless], tables, [0, 1])).iloc[0]
    assert "over seeds (exact" in card["summary"]


def test_a_claim_with_an_unknown_unit_is_refused(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"claims": [{**claim(ACC), "unit": "bits"}]}))
    with pytest.raises(ClaimError, match="unit 'bits'"):
        load_claims(path)
    path.write_text(yaml.safe_dump({"claims": [{**claim(ACC), "unit": "nats"}]}))
    assert load_claims(path)[0]["unit"] == "nats"


def test_every_claim_of_the_write_up_has_a_unit_or_none_on_purpose():
    """The claims of claims.yaml whose quantity is a loss read in nats, an offset-profile
    effect in logits, an attention score as a share of attention."""
    from inductionlab.claims.words import claim_unit

    units = {c["id"]: claim_unit(c) for c in load_claims(ROOT / "workflow" / "claims.yaml")}
    assert units["two_layer.k_composition_matters_for_loss"] == "nats"
    assert units["smeared.beats_two_layer"] == "nats"
    assert units["algorithm_1.direct_path_no_repeat"] == "logits"
    assert units["anthropic.smeared_has_induction_heads"] == "share of attention"
    assert units["one_layer.direct_path_anti_copying"] is None  # a positivity
    assert units["smeared.two_copying_heads"] is None  # a count


def test_content_thresholds_follow_the_role_rule_of_the_config():
    """Every claim on a content part names the role rule's above_chance, so a config with
    another value changes each of them, and only them."""
    from pathlib import Path

    from inductionlab.claims.rules import load_claims, with_rule_thresholds

    claims = load_claims(Path(__file__).resolve().parents[1] / "workflow" / "claims.yaml")

    def is_content_part(metric):  # a score minus its positional control
        column = metric.get("column") or metric.get("measure", {}).get("column", "")
        return column.endswith("_content") or (
            metric.get("derived") == "difference" and "control" in metric["b"]["column"])

    def content_tests(claim):
        tests = [(claim["metric"], claim["threshold"])] + [(e["metric"], e["threshold"])
                                                           for e in claim.get("also", [])]
        return [t for m, t in tests if is_content_part(m)]

    named = [t for c in claims for t in content_tests(c)]
    assert len(named) >= 4 and set(named) == {"above_chance"}, named
    rules = {"times_chance": 2.0, "above_chance": 0.2, "copying_margin": 0.5}
    default = with_rule_thresholds(claims, rules)
    changed = with_rule_thresholds(claims, rules | {"above_chance": 0.35})
    differ = [a["id"] for a, b in zip(default, changed) if a != b]
    assert sorted(differ) == sorted(c["id"] for c in claims if content_tests(c))
    assert all(0.35 in [b["threshold"]] + [e["threshold"] for e in b.get("also", [])]
               for a, b in zip(default, changed) if a["id"] in differ)
