"""The formation study's reading of a model's tables, on a hand-built induction circuit
whose answers are known: a previous-token head in layer 0, an induction head in layer 1
built by K-composition, which loses its excess over chance without the previous-token
head in its keys."""
import math

import pandas as pd
import pytest
import torch

from handbuilt import InductionCircuitModel, ShiftCopyModel
from inductionlab.stages.ablations.ablations import ablation_table
from inductionlab.stages.behaviour.attention import head_score_table
from inductionlab.stages.behaviour.behaviour import evaluation_samples
from inductionlab.stages.circuits.circuits import composition_table
from inductionlab.core.ablation_plan import expand_entries
from inductionlab.core.data import TaskConfig, control_sample
from inductionlab.core.tasks import task_from_dict
from inductionlab.core.weights import model_arrays
from inductionlab.analysis.roles import with_roles
from inductionlab.experiments.formation.analysis import formation_table

RULES = {"times_chance": 2.0, "above_chance": 0.2, "copying_margin": 0.5}
TASK = task_from_dict({"kind": "variable_period", "vocab_size": 26, "seq_len": 24})
BEHAVIOUR = pd.DataFrame({"metric": ["loss_pred", "acc_pred", "period4_acc"],
                          "value": [0.1, 0.9, 1.0], "low": [0.0] * 3, "high": [1.0] * 3})
PHASE = pd.DataFrame({"metric": ["loss_pred", "induction_content", "coincidence"],
                      "shape": ["phase change", "smooth", math.nan],
                      "midpoint": [300.0, 400.0, math.nan], "midpoint_low": [250.0, 300.0, math.nan],
                      "midpoint_high": [350.0, 500.0, math.nan], "span": [2.0, 5.0, math.nan],
                      "span_low": [1.5, 4.0, math.nan], "span_high": [2.5, 6.0, math.nan],
                      "value": [math.nan, math.nan, 0.29], "low": [math.nan, math.nan, 0.1],
                      "high": [math.nan, math.nan, 0.5], "note": ["", "", ""]})


def _tables(model, meta):
    sample, distinct = evaluation_samples(TASK, 128, 0)
    control = control_sample(128, TaskConfig(), 0)
    scores, _ = head_score_table(model, sample, distinct, 3, control_tokens=control, intervals=True)
    scores = with_roles(scores, RULES)  # as the stacked head_scores table holds them
    ablations = ablation_table(model, expand_entries([{"kind": "remove_head_from_keys"}, {"kind": "composition_table"}], model.cfg),
                               TaskConfig(), sample, distinct, ["ABCDEFABCDEF"], 3, control=control)[0]
    composition = composition_table(model_arrays(model), meta)
    return scores, composition, ablations


def test_the_handbuilt_circuit_answers_every_question():
    model = InductionCircuitModel(vocab_size=26)
    scores, composition, ablations = _tables(model, {"variant": "circuit", "seed": 0,
                                                     "model_config": model.cfg.to_dict()})
    frame = formation_table(scores, composition, ablations, BEHAVIOUR, PHASE)
    by = frame.set_index("metric")
    assert by.loc["previous_token", "note"] == "L0H0" and by.loc["previous_token", "value"] > 0.95
    assert by.loc["previous_token_head", "value"] == 1.0
    assert by.loc["induction", "note"] == "L1H0" and by.loc["induction", "value"] > 0.8
    assert by.loc["induction_head", "value"] == 1.0 and by.loc["positional_induction_head", "value"] == 0.0
    assert by.loc["k_composition", "value"] > by.loc["k_composition_baseline", "value"]
    # the previous-token head is needed (its whole interval at most one half), the idle one is not
    assert by.loc["keys_left_L0H0", "high"] <= 0.5
    assert by.loc["keys_left_L0H1", "low"] > 0.5
    assert by.loc["keys_ablation_left", "high"] <= 0.5
    assert by.loc["midpoint_gap", "value"] == pytest.approx(0.29)
    # a model trained on the write-up's task reports its own numbers as the write-up's
    assert by.loc["write_up_loss_pred", "value"] == pytest.approx(0.1)


def test_a_head_looking_five_back_is_no_induction_head_on_a_moving_copy():
    model = ShiftCopyModel(shift=5)
    scores, composition, ablations = _tables(model, {"variant": "shift", "seed": 0,
                                                     "model_config": model.cfg.to_dict()})
    by = formation_table(scores, composition, ablations, BEHAVIOUR, PHASE).set_index("metric")
    assert by.loc["induction_head", "value"] == 0.0
    # one layer: nothing later to compose into, said so
    assert math.isnan(by.loc["keys_ablation_left", "value"])
    assert "one layer" in by.loc["keys_ablation_left", "note"]
    assert not any(str(m).startswith("keys_left_") for m in by.index)


def test_the_study_s_settings_are_checked_against_the_config():
    from inductionlab.config import SETTINGS_CHECKS

    check = SETTINGS_CHECKS["formation"]
    config = {"tasks": {"vp": {"kind": "variable_period"}},
              "variants": {"two_layer": {"n_layers": 2}, "two_layer_on_vp": {"n_layers": 2, "task": "vp"},
                           "one_layer_vp": {"n_layers": 1}}}
    assert check({"task": "vp", "variants": ["two_layer"]}, config) == []
    problems = check({"task": "missing", "variants": ["two_layer"]}, config)
    assert problems[0].startswith("experiments.formation.task: 'missing' is not a task of tasks")
    problems = check({"task": "vp", "variants": ["two_layer_on_vp", "nope"]}, config)
    assert any("experiments.formation.task: variant 'two_layer_on_vp' has task 'vp' already" in p
               for p in problems)
    assert any("experiments.formation.variants: 'nope' is not in variants" in p for p in problems)
    problems = check({"task": "vp", "variants": ["one_layer"]}, {**config, "variants": {
        **config["variants"], "one_layer": {"n_layers": 1}}})
    assert problems == ["variants.one_layer_vp: 'one_layer_vp' is also the name of the formation "
                        "study's retrained 'one_layer'; rename the variant"]


def test_the_answers_of_the_handbuilt_circuit_follow_its_tables():
    from inductionlab.experiments.formation.answers import QUESTIONS, formation_answers

    model = InductionCircuitModel(vocab_size=26)
    one = formation_table(*_tables(model, {"variant": "circuit", "seed": 0,
                                           "model_config": model.cfg.to_dict()}),
                          BEHAVIOUR, PHASE)
    frame = pd.concat([one.assign(variant="circuit_vp", seed=s) for s in (0, 1)])
    phase = pd.concat([PHASE.assign(variant="circuit_vp", seed=s, formed=1.0,
                                    verdict=["holds", "fails", "holds"]) for s in (0, 1)])
    _, answers = formation_answers(frame, phase, {"circuit": "circuit_vp"}, "vp")
    text = answers.set_index("metric")["text"]
    text.index = [next((k for k, w in QUESTIONS.items() if w == m), m) for m in text.index]
    assert text["previous_token_head"].startswith("in 2 of 2 seeds (the previous-token head: L0H0")
    assert text["induction_head"].startswith("in 2 of 2 seeds")
    assert text["k_composition"].startswith("in 2 of 2 seeds")
    assert text["needed_heads"] == "needs L0H0 in 2 of 2 seeds"
    assert text["abrupt"].startswith("in 0 of 2") and text["same_time"].startswith("in 2 of 2")
    assert text["sentence"].startswith("circuit_vp (trained on vp; 2 seeds): an induction head in 2 of 2")
    # one seed without the role: counted, not rounded away
    mixed = frame.copy()
    mixed.loc[(mixed["seed"] == 1) & (mixed["metric"] == "previous_token_head"), "value"] = 0.0
    _, answers = formation_answers(mixed, phase, {"circuit": "circuit_vp"}, "vp")
    assert answers.set_index("metric")["text"][QUESTIONS["previous_token_head"]].startswith(
        "in 1 of 2 seeds")


def test_a_highlight_reads_words_from_a_table_of_words(tmp_path):
    from inductionlab.report.story import highlight_text

    words = tmp_path / "answers.csv"
    pd.DataFrame({"variant": ["m"], "base": ["b"], "metric": ["sentence"],
                  "text": ["m: an induction head yes"]}).to_csv(words, index=False)
    assert highlight_text({"paths": [str(words)], "text": "Found: {m:sentence}; {x:sentence}."}) \
        == "Found: m: an induction head yes; –."


@pytest.mark.parametrize("entry, period", [
    ({"kind": "variable_period", "min_period": 5, "max_period": 5}, 5),
    ({"kind": "repeated_block", "block_len": 4, "n_blocks": 6}, 4),
    ({"kind": "random_offset", "block_len": 3, "max_offset": 4}, 3),
])
def test_the_study_refuses_a_task_that_position_alone_solves(entry, period):
    from inductionlab.config import SETTINGS_CHECKS

    config = {"task": {"vocab_size": 26, "block_len": 6, "n_blocks": 4},
              "tasks": {"fixed": entry, "vp": {"kind": "variable_period", "min_period": 3, "max_period": 8}},
              "variants": {"two_layer": {"n_layers": 2}}}
    check = SETTINGS_CHECKS["formation"]
    assert check({"task": "vp", "variants": ["two_layer"]}, config) == []
    (problem,) = check({"task": "fixed", "variants": ["two_layer"]}, config)
    assert problem.startswith(f"experiments.formation.task: every sequence of 'fixed' ({entry['kind']}) "
                              f"repeats with period {period}, so looking {period} positions back")
    assert "\n" not in problem
