"""Claims (workflow/claims.yaml) evaluated on small hand-made per-seed tables."""
import math

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from inductionlab.claims import (DERIVED, FAILS, HOLDS, NOT_MEASURED, ClaimError,
                                 evaluate_claim, evaluate_claims, load_claims, metric_value,
                                 run_claims, scorecard)

# the aggregated per-seed tables the workflow hands to the claims (results/tables/<name>.csv)
TABLE_NAMES = {"train_log", "circuits", "composition", "head_scores", "behaviour", "completions",
               "failure_modes", "ablations", "dynamics"}
# tables a derived metric reads by itself, without a spec naming them
IMPLICIT_TABLES = {"composition_with_top_head": {"head_scores", "composition"},
                   "phase_change_gap": {"phase_change"}}


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
    head_scores = _frame(["variant", "seed", "layer", "head", "previous_token", "period", "local",
                          "roles"], [
        ("smeared", 0, 0, 0, 0.1, 0.05, 0.8, "local"),
        ("smeared", 0, 0, 1, 0.0, 0.6, 0.1, "induction"),
        ("smeared", 0, 0, 2, 0.1, 0.4, 0.2, "induction"),
        ("smeared", 0, 0, 3, 0.2, 0.1, 0.6, "local"),
        ("smeared", 1, 0, 0, 0.1, 0.1, 0.1, ""),
        ("two_layer", 0, 0, 0, 0.1, 0.0, 0.5, ""),
        ("two_layer", 0, 0, 1, 0.3, 0.0, 0.5, ""),
        ("two_layer", 0, 0, 2, 0.9, 0.0, 0.5, "previous_token"),  # top of layer 0
        ("two_layer", 0, 0, 3, 0.2, 0.0, 0.5, ""),
        ("two_layer", 0, 1, 0, 0.95, 0.7, 0.1, "induction"),  # higher, but in layer 1
        ("two_layer", 0, 1, 1, 0.05, 0.6, 0.1, "induction"),
    ])
    composition = _frame(["variant", "seed", "kind", "layer", "head", "src_layer", "src_head",
                          "positivity_real"], [
        (*key, h, 0, p, value)
        for key, values in {
            ("two_layer", 0, "K", 1): {0: [0.1, 0.2], 1: [0.3, 0.4], 2: [0.97, 0.93], 3: [-0.5, 0.0]},
            ("two_layer", 0, "Q", 1): {0: [0.5, 0.5], 1: [0.5, 0.5], 2: [-0.8, -0.9], 3: [0.5, 0.5]},
        }.items()
        for p, per_head in values.items()
        for h, value in enumerate(per_head)
    ])
    completions = _frame(["variant", "seed", "prompt", "completion", "accuracy"], [
        ("two_layer", 0, "AAABBBAAABBB", "ABABABABABAB", 0.5),
        ("two_layer", 0, "ABCDEF", "ABCDEFABCDEFABCDEF", 1.0),
    ])
    return {"behaviour": behaviour, "circuits": circuits, "head_scores": head_scores,
            "composition": composition, "completions": completions}


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
])
def test_reduce(tables, reduce, extra, expected):
    spec = {**REPEATS, "reduce": reduce, **extra}
    assert metric_value(tables, spec, "one_layer", 0) == pytest.approx(expected)


def test_where_list_means_any_of(tables):
    spec = {**REPEATS, "reduce": "count_at_least", "at_least": -1}
    assert metric_value(tables, spec, "one_layer", 0) == 3


def test_count_reduces_on_the_shipped_style_claims(tables):
    copying = {"table": "circuits", "where": {"circuit": "ov"}, "column": "positivity_real"}
    two_copying = claim({**copying, "reduce": "count_at_least", "at_least": 0.9}, "==", 2,
                        variant="smeared")
    two_anti = claim({**copying, "reduce": "count_at_most", "at_most": -0.5}, "==", 2,
                     variant="smeared")
    assert evaluate_claim(two_copying, tables, 0)["status"] == HOLDS
    assert evaluate_claim(two_copying, tables, 1)["status"] == FAILS
    assert evaluate_claim(two_anti, tables, 0)["status"] == HOLDS


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


def _phase_change(step_a, step_b):
    return {"phase_change": _frame(["variant", "seed", "metric", "step", "value"], [
        ("two_layer", 0, "period_score_crossing", step_a, 0.3),
        ("two_layer", 0, "steepest_drop_loss_pred", step_b, -0.01),
    ])}


def test_phase_change_gap():
    metric = {"derived": "phase_change_gap", "a": "period_score_crossing",
              "b": "steepest_drop_loss_pred"}
    gap = metric_value(_phase_change(99, 199), metric, "two_layer", 0)
    assert gap == pytest.approx(math.log(2))
    assert metric_value(_phase_change(199, 99), metric, "two_layer", 0) == pytest.approx(math.log(2))
    # a CSV column holding "never" is read as strings
    assert metric_value(_phase_change("299", "299"), metric, "two_layer", 0) == 0.0
    # a detector that never fired: infinitely far apart, the claim fails (it was measured)
    row = evaluate_claim(claim(metric, "<=", 0.6931, variant="two_layer"),
                         _phase_change("never", "120"), 0)
    assert row["status"] == FAILS and row["value"] == math.inf
    # no phase_change table, or no row for the seed: not measured
    assert evaluate_claim(claim(metric, "<=", 0.6931, variant="two_layer"), {}, 0)["status"] == NOT_MEASURED
    assert evaluate_claim(claim(metric, "<=", 0.6931, variant="two_layer"),
                          _phase_change(99, 199), 1)["status"] == NOT_MEASURED


def _selected(compare, threshold, measure_column, reduce="min", measure_where=None):
    return {"derived": "over_selected_heads",
            "select": {"table": "circuits", "where": {"circuit": "ov"}, "column": "positivity_real",
                       "compare": compare, "threshold": threshold},
            "measure": {"table": "head_scores", "column": measure_column,
                        **({"where": measure_where} if measure_where else {})},
            "reduce": reduce}


def test_over_selected_heads(tables):
    # copying heads (ov >= 0.9): heads 1 and 2, periods 0.6 and 0.4
    assert metric_value(tables, _selected(">=", 0.9, "period"), "smeared", 0) == pytest.approx(0.4)
    assert metric_value(tables, _selected(">=", 0.9, "period", "max"), "smeared", 0) == pytest.approx(0.6)
    # anti-copying heads (ov <= -0.5): heads 0 and 3, local 0.8 and 0.6
    assert metric_value(tables, _selected("<=", -0.5, "local"), "smeared", 0) == pytest.approx(0.6)
    assert metric_value(tables, _selected("<", -0.5, "local"), "smeared", 0) == pytest.approx(0.8)


def test_over_selected_heads_with_no_head_selected_is_not_measured(tables):
    metric = _selected(">=", 0.9, "period")
    with pytest.raises(LookupError, match="no head"):
        metric_value(tables, metric, "smeared", 1)  # seed 1: no ov >= 0.9
    for compare in ("<", ">="):
        row = evaluate_claim(claim(metric, compare, 0.3, variant="smeared"), tables, 1)
        assert row["status"] == NOT_MEASURED and "no head" in row["note"]


def test_over_selected_heads_without_measure_rows_for_the_heads_is_not_measured(tables):
    # heads 1 and 2 of layer 0 are selected; the measure only has rows of layer 1
    metric = _selected(">=", 0.9, "period", measure_where={"layer": 1})
    tables["head_scores"] = pd.concat([tables["head_scores"], _frame(
        ["variant", "seed", "layer", "head", "previous_token", "period", "local", "roles"],
        [("smeared", 0, 1, 0, 0.0, 0.9, 0.0, "")])])
    row = evaluate_claim(claim(metric, ">=", 0.3, variant="smeared"), tables, 0)
    assert row["status"] == NOT_MEASURED


def test_composition_with_top_head_picks_the_top_head_of_src_layer(tables):
    metric = {"derived": "composition_with_top_head", "kind": "K", "layer": 1, "src_layer": 0,
              "by": "previous_token", "reduce": "min"}
    # layer 0's top previous-token head is head 2 (0.9; layer 1 head 0 has 0.95 but is not
    # in src_layer): the K terms of layer 1's heads with it are 0.97 and 0.93
    assert metric_value(tables, metric, "two_layer", 0) == pytest.approx(0.93)
    assert metric_value(tables, {**metric, "reduce": "max"}, "two_layer", 0) == pytest.approx(0.97)
    assert metric_value(tables, {**metric, "kind": "Q"}, "two_layer", 0) == pytest.approx(-0.9)
    row = evaluate_claim(claim(metric, ">=", 0.9, variant="two_layer"), tables, 0)
    assert row["status"] == HOLDS


def test_composition_with_top_head_without_composition_rows_is_not_measured(tables):
    metric = {"derived": "composition_with_top_head", "kind": "V", "layer": 1, "src_layer": 0,
              "by": "previous_token", "reduce": "min"}
    assert evaluate_claim(claim(metric, ">=", 0.9, variant="two_layer"), tables, 0)["status"] == NOT_MEASURED
    del tables["composition"]
    metric["kind"] = "K"
    assert evaluate_claim(claim(metric, ">=", 0.9, variant="two_layer"), tables, 0)["status"] == NOT_MEASURED


# ---------------------------------------------------------------- scorecard

def test_scorecard_holds_in_k_of_n_seeds(tables):
    claims = [claim(ACC, "<", 0.6, id="acc_low"), claim(ACC, ">", 0.9, id="acc_high")]
    results = evaluate_claims(claims, tables, [0, 1, 2])
    assert len(results) == 6
    card = scorecard(claims, results).set_index("claim")
    assert card.loc["acc_low", "verdict"] == "holds in 2 of 3 seeds"
    assert card.loc["acc_high", "verdict"] == "holds in 0 of 3 seeds"
    assert card.loc["acc_low", ["holds", "measured", "seeds"]].tolist() == [2, 3, 3]
    assert card.loc["acc_low", "values"] == "0.2, 0.7, 0.5"
    assert card.loc["acc_low", "test"] == "< 0.6"
    assert card.loc["acc_low", "quote"] == "q"


def test_scorecard_counts_not_measured_seeds(tables):
    claims = [{**claim(ACC, "<", 0.6, id="acc_low"), "write_up": "0.25"}]
    results = evaluate_claims(claims, tables, [0, 1, 2, 3])  # seed 3 has no rows
    card = scorecard(claims, results).iloc[0]
    assert card["verdict"] == "holds in 2 of 4 seeds (1 not measured)"
    assert (card["holds"], card["measured"], card["seeds"]) == (2, 3, 4)
    assert card["values"] == "0.2, 0.7, 0.5, –"
    assert card["write_up"] == "0.25"


def test_scorecard_with_no_seed_measured(tables):
    claims = [claim({"table": "ablations", "column": "value"}, ">", 0.0, id="absent")]
    card = scorecard(claims, evaluate_claims(claims, tables, [0, 1])).iloc[0]
    assert card["verdict"] == "holds in 0 of 2 seeds (2 not measured)"
    assert card["values"] == "–, –"


def test_run_claims_reads_tables_by_file_stem(tmp_path, tables):
    paths = []
    for name in ("behaviour", "circuits"):
        paths.append(tmp_path / f"{name}.csv")
        tables[name].to_csv(paths[-1], index=False)
    claims_yaml = tmp_path / "claims.yaml"
    claims_yaml.write_text(yaml.safe_dump({"claims": [
        claim(ACC, "<", 0.5, id="acc"),
        claim({"table": "head_scores", "column": "period", "reduce": "max"}, ">=", 0.3, id="period"),
    ]}))
    run_claims(claims_yaml, paths, tmp_path / "claims.csv", tmp_path / "scorecard.csv")
    results = pd.read_csv(tmp_path / "claims.csv")
    assert sorted(results["seed"].unique()) == [0, 1, 2]  # every seed of any table
    acc = results[results["claim"] == "acc"].set_index("seed")["status"]
    assert acc.to_dict() == {0: HOLDS, 1: FAILS, 2: FAILS}
    assert set(results.loc[results["claim"] == "period", "status"]) == {NOT_MEASURED}
    card = pd.read_csv(tmp_path / "scorecard.csv").set_index("claim")
    assert card.loc["acc", "verdict"] == "holds in 1 of 3 seeds"
    assert card.loc["period", "verdict"] == "holds in 0 of 3 seeds (3 not measured)"


# ---------------------------------------------------------------- claims.yaml

def _write_claims(tmp_path, claims):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"claims": claims}))
    return path


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
    assert load_claims(_write_claims(tmp_path, claims)) == claims


def _metric_tables(spec):
    """Every table a metric spec reads (derived metrics: their parts and implicit tables)."""
    if "derived" in spec:
        assert spec["derived"] in DERIVED, spec
        found = set(IMPLICIT_TABLES.get(spec["derived"], set()))
        for part in ("a", "b", "select", "measure"):
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
        allowed = TABLE_NAMES | IMPLICIT_TABLES.get(metric.get("derived"), set())
        assert tables and tables <= allowed, (c["id"], tables)
        reduce = metric.get("reduce")
        assert reduce in (None, "min", "max", "mean", "count_at_least", "count_at_most"), c["id"]
        if reduce == "count_at_least":
            assert "at_least" in metric, c["id"]
        if reduce == "count_at_most":
            assert "at_most" in metric, c["id"]
        assert isinstance(c["threshold"], (int, float)), c["id"]
