"""The formation answers on constructed tables whose right words are known: verdicts per
seed, counted over the seeds where the premise holds, never averaged, never read from a
point estimate where an interval exists."""
import math

import pandas as pd

from inductionlab.experiments.formation.answers import QUESTIONS, SENTENCE, formation_answers

SEEDS = range(5)
TRAINED, UNTRAINED = (3, 4, 5, 6, 7, 8), (2, 9, 10)


def _rows(seed, *, formed=True, keys=None, heads=None, acc=1.0, untrained_acc=0.05,
          previous=False):
    """One seed's rows of the stacked formation table (tight intervals of ±0.02)."""
    def row(metric, value, spread=0.02, note=""):
        low, high = (value - spread, value + spread) if spread else (math.nan, math.nan)
        return {"variant": "m_vp", "seed": seed, "metric": metric, "value": float(value),
                "low": low, "high": high, "note": note}

    heads = heads or {h: 0.95 for h in range(4)}
    rows = [row("previous_token", 0.15, note="L0H2"), row("previous_token_chance", 0.121, 0),
            row("previous_token_head", float(previous), 0, "L0H2"),
            row("induction_content", 0.4 if formed else 0.05, note="L1H3"),
            row("induction_head", float(formed), 0, "L1H3"),
            row("keys_ablation_left", 0.1 if keys is None else keys)]
    rows += [row(f"keys_left_L0H{h}", v, note=f"remove_L0H{h}_from_keys_L1: L1H3")
             for h, v in heads.items()]
    for n in TRAINED + UNTRAINED:
        trained = n in TRAINED
        rows += [row(f"period{n}_acc", acc if trained else untrained_acc),
                 row(f"period{n}_trained", float(trained), 0),
                 row(f"period{n}_task_acc", 1.0 if trained else 0.04)]
    return rows


def _phase(seed, *, formed=True, abrupt="fails", same="holds"):
    base = {"variant": "m_vp", "seed": seed, "note": "", "value": math.nan, "low": math.nan,
            "high": math.nan, "formed": math.nan}
    return [
        {**base, "metric": "loss_pred", "verdict": "fails", "span": 12.0, "span_low": 9.0, "span_high": 15.0},
        {**base, "metric": "induction_content", "verdict": abrupt, "formed": float(formed),
         "span": 2.0, "span_low": 1.5, "span_high": 2.5},
        {**base, "metric": "coincidence", "verdict": same if formed else "not measured",
         "value": 0.2 if formed else math.nan, "low": 0.1, "high": 0.3,
         "span": math.nan, "span_low": math.nan, "span_high": math.nan}]


def _answers(rows, phase):
    verdicts, answers = formation_answers(pd.DataFrame(rows), pd.DataFrame(phase),
                                          {"m": "m_vp"}, "variable_period")
    text = answers.set_index("metric")["text"]
    text.index = [next((k for k, w in QUESTIONS.items() if w == m), m) for m in text.index]
    return verdicts, text


def test_an_induction_head_in_one_seed_of_five_times_one_seed_only():
    rows = [r for s in SEEDS for r in _rows(s, formed=s == 0)]
    phase = [r for s in SEEDS for r in _phase(s, formed=s == 0, abrupt="holds")]
    verdicts, text = _answers(rows, phase)
    assert text["induction_head"].startswith("in 1 of 5 seeds")
    for question in ("abrupt", "same_time", "k_composition"):
        assert text[question].startswith("in 1 of 1 seeds; not measured in 4 of 5 seeds: "
                                         "no induction head in this seed"), text[question]
    timing = verdicts[verdicts["question"].isin(["abrupt", "same_time"])]
    assert (timing["status"] == "not measured").sum() == 8
    # the loss's own shape is asked in every seed
    assert text["loss_shape"].startswith("in 0 of 5 seeds")


def test_one_needed_head_in_some_seeds_is_named_and_never_called_unneeded():
    shares = (0.1, 0.1, 0.9, 0.9, 0.3)
    rows = [r for s in SEEDS for r in _rows(s, heads={0: 0.95, 1: shares[s], 2: 0.95, 3: 0.95})]
    phase = [r for s in SEEDS for r in _phase(s)]
    verdicts, text = _answers(rows, phase)
    needs = verdicts[verdicts["question"] == "needs L0H1"].set_index("seed")["status"]
    assert list(needs) == ["holds", "holds", "fails", "fails", "holds"]
    assert "needs L0H1 in 3 of 5 seeds" in text["needed_heads"]
    assert "no single head needed in 2 of 5 seeds" in text["needed_heads"]
    assert "no one of them needed" not in text[SENTENCE]
    # a share whose interval straddles one half is too close to call, not needed or not
    rows = [r for s in SEEDS for r in _rows(s, heads={0: 0.51, 1: 0.95})]
    verdicts, text = _answers(rows, phase)
    assert set(verdicts.loc[verdicts["question"] == "needs L0H0", "status"]) == {"too close to call"}
    assert "no single head needed" not in text["needed_heads"]


def test_accuracy_055_at_every_period_does_not_solve():
    rows = [r for s in SEEDS for r in _rows(s, acc=0.55, untrained_acc=0.55)]
    phase = [r for s in SEEDS for r in _phase(s)]
    _, text = _answers(rows, phase)
    assert text["trained_periods"].startswith("in 0 of 5 seeds")
    assert text["untrained_periods"].startswith("in 0 of 5 seeds")
    # the lowest accuracy and the task predictor's are given beside the count
    assert "lowest 0.55" in text["trained_periods"] and "task predictor 1" in text["trained_periods"]


def test_solving_only_the_trained_periods_is_not_generalising():
    rows = [r for s in SEEDS for r in _rows(s, acc=0.99, untrained_acc=0.05)]
    _, text = _answers(rows, [r for s in SEEDS for r in _phase(s)])
    assert text["trained_periods"].startswith("in 5 of 5 seeds")
    assert text["untrained_periods"].startswith("in 0 of 5 seeds")
    assert "task predictor 0.04" in text["untrained_periods"]


def test_same_time_too_close_to_call_is_not_yes():
    rows = [r for s in SEEDS for r in _rows(s)]
    phase = [r for s in SEEDS for r in _phase(s, same="too close to call")]
    _, text = _answers(rows, phase)
    assert text["same_time"].startswith("in 0 of 5 seeds (5 too close to call)")


def test_the_previous_token_head_is_named_only_with_its_role():
    _, text = _answers(_rows(0), _phase(0))
    assert text["previous_token_head"].startswith("in 0 of 1 seeds")
    assert "the previous-token head" not in text["previous_token_head"]
    assert "chance 0.121" in text["previous_token_head"]
    _, text = _answers(_rows(0, previous=True), _phase(0))
    assert "the previous-token head: L0H2" in text["previous_token_head"]
    assert text[SENTENCE].startswith("m_vp (trained on variable_period, periods 3–8; 1 seed)")


def test_a_one_layer_head_says_why_its_keys_are_not_measured():
    # one layer: no later layer reads a layer-0 head, so no keys row has a value
    why = "one layer: no later layer reads a layer-0 head"
    rows = [{**r, "value": math.nan, "low": math.nan, "high": math.nan, "note": why}
            if r["metric"] == "keys_ablation_left" else r
            for s in SEEDS for r in _rows(s) if not r["metric"].startswith("keys_left_")]
    phase = [r for s in SEEDS for r in _phase(s)]
    _, text = _answers(rows, phase)
    sentence = text[SENTENCE]
    assert f"whether its keys need layer 0 is not measured ({why})" in sentence, sentence
    assert "0 of 0" not in sentence and "its keys need layer 0 not measured" not in sentence
