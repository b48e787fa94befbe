"""Human names, with units, for the column and metric names of the result tables.

Tables keep their snake_case names (they are files other tools read); the report shows
:func:`label` of each. A name without an entry is shown with its underscores as spaces.
"""
from __future__ import annotations

import re

LABELS = {
    # task metrics
    "loss_all": "loss, all targets (nats)",
    "loss_pred": "loss, predictable targets (nats)",
    "acc_pred": "accuracy, predictable targets",
    "val_loss_all": "validation loss, all targets (nats)",
    "val_loss_pred": "validation loss, predictable targets (nats)",
    "val_acc_pred": "validation accuracy, predictable targets",
    "elapsed_s": "training time (s)",
    "icl_score": "ICL score: last − first position loss (nats)",
    "suite_acc": "greedy accuracy, suite prompts",
    "repeat_when_correct_rate": "predicts a repeat where the target repeats (share)",
    "ood_two_blocks_follows_first": "two-block prompts: letters continuing the first block (share)",
    "ood_two_blocks_follows_second": "two-block prompts: letters continuing the second block (share)",
    "ood_two_blocks_repeat_rate": "two-block prompts: immediate-repeat rate",
    "ood_two_blocks_second_minus_first": "two-block prompts: second minus first block (share)",
    "shared_prefix_follows_first": "shared-prefix prompts: follows the first block (share)",
    "shared_prefix_follows_nearest": "shared-prefix prompts: follows the nearest block (share)",
    "shared_prefix_nearest_minus_first": "shared-prefix prompts: nearest minus first (share)",
    "delta_loss_all": "Δ loss, all targets (nats)",
    "delta_loss_pred": "Δ loss, predictable targets (nats)",
    # circuits
    "positivity_real": "eigenvalue positivity Σλ/Σ|λ|",
    "positivity_imag": "positivity, imaginary part",
    "imaginary_share": "share of the spectrum off the real axis",
    "score": "composition score ‖LR‖/(‖L‖‖R‖)",
    "score_minus_baseline": "composition score − random baseline",
    "src_layer": "earlier layer",
    "src_head": "earlier head",
    # attention scores
    "induction": "induction (all copies)",
    "nearest_copy": "nearest copy (5 back)",
    "first_block": "first-block copy",
    "first_token": "first token (key 0)",
    "previous_token": "previous token",
    "local": "local window",
    "prefix_matching": "prefix matching",
    "copying": "copying score (z-score)",
    "roles": "roles",
    # completions
    "prompt": "prompt",
    "completion": "greedy completion",
    "expected": "correct completion",
    "write_up_completion": "write-up's completion",
    "accuracy": "accuracy (share of letters right)",
    "in_distribution": "in distribution",
    # phase change
    "loss_pred": "loss, predictable targets",
    "induction_content": "induction content part (score − control)",
    "coincidence": "gap |ln ratio| of the midpoints",
    "shape": "shape",
    "midpoint": "midpoint (step)",
    "midpoint_low": "midpoint, 95 % low",
    "midpoint_high": "midpoint, 95 % high",
    "span": "10–90 % span (× steps)",
    "span_low": "span, 95 % low",
    "span_high": "span, 95 % high",
    "r2": "R²",
    "low": "95 % low",
    "high": "95 % high",
    "note": "note",
    # failure modes
    "pattern": "repetition pattern",
    "n_distinct": "distinct letters",
    "adjacent_repeats": "adjacent repeats",
    "teacher_forced_acc": "teacher-forced accuracy",
    # summaries
    "mean": "mean over seeds",
    "std": "std",
    "min": "min",
    "max": "max",
    "n": "n",
}

# name prefix of a head-agnostic ablation (its layer follows as _L{l}) -> words
ABLATION_WORDS = {
    "qk_from_embedding": "layer {l}: Q and K from the embedding",
    "plus_k": "layer {l}: + K from the residual (K-comp.)",
    "plus_q": "layer {l}: + Q from the residual (Q-comp.)",
    "qk_full": "layer {l}: Q and K from the residual (= model)",
    "values_from_embedding": "layer {l}: V from the embedding (no V-comp.)",
    "smear_off": "layer {l}: smear off (raw keys)",
}


def ablation_words(name: str) -> str:
    """An ablation's name in words: ``plus_k_L1`` -> "layer 1: + K from the residual (K-comp.)"."""
    if name == "baseline":
        return "none (the model as trained)"
    prefix, _, layer = name.rpartition("_L")
    if prefix in ABLATION_WORDS and layer.isdigit():
        return ABLATION_WORDS[prefix].format(l=layer)
    return name.replace("_", " ")


# an ablation kind -> what it does to one head
KIND_WORDS = {
    "zero_heads": "head zeroed",
    "mean_heads": "head replaced by its mean",
    "zero_heads_frozen_patterns": "head zeroed, patterns frozen",
    "remove_head_from_keys": "head taken out of the keys",
    "remove_head_from_queries": "head taken out of the queries",
}


def value_label(column: str, value) -> str:
    """How a name in a table cell reads: metrics and ablations in words."""
    if column == "metric":
        return label(value)
    if column == "kind":
        return KIND_WORDS.get(str(value), str(value).replace("_", " "))
    if column == "ablation":
        return ablation_words(str(value))
    return str(value)


_RANDOM = re.compile(r"^random(_distinct)?_len(\d+)_(\w+)$")
_RANDOM_WHAT = {"acc_mean": "greedy accuracy", "exact": "share completed exactly",
                "repeat_rate": "immediate-repeat rate", "repeat_rate_data": "repeat rate of the correct completion",
                "share_in_prompt": "share of letters found in the prompt"}
_OOD = re.compile(r"^ood_len(\d+)_(\w+)$")
_LAYER_SCORE = re.compile(r"^(\w+?)_(mean|max|chance)_L(\d+)$")
_CHANCE = re.compile(r"^(\w+)_chance$")
_SCORE_PART = re.compile(r"^(\w+?)_(control|content|low|high|content_low|content_high)$")
_PERIOD = re.compile(r"^period(\d+)_acc$")
_PARTS = {"control": "on random sequences (control)", "content": "content part (− control)",
          "low": "95 % low", "high": "95 % high", "content_low": "content part, 95 % low",
          "content_high": "content part, 95 % high"}


def label(name) -> str:
    """The report's name for a table column or metric ``name``."""
    name = str(name)
    if name in LABELS:
        return LABELS[name]
    m = _RANDOM.match(name)
    if m:
        kind = "distinct-letter " if m.group(1) else ""
        return f"random {kind}{m.group(2)}-letter prompts: {_RANDOM_WHAT.get(m.group(3), m.group(3))}"
    m = _OOD.match(name)
    if m:
        return f"out-of-distribution {m.group(1)}-letter prompts: {_RANDOM_WHAT.get(m.group(2), m.group(2))}"
    m = _LAYER_SCORE.match(name)
    if m and m.group(1) in LABELS:
        how = {"mean": "mean over heads", "max": "best head", "chance": "chance level"}[m.group(2)]
        return f"layer {m.group(3)} {LABELS[m.group(1)]}, {how}"
    m = _CHANCE.match(name)
    if m and m.group(1) in LABELS:
        return f"{LABELS[m.group(1)]}: chance level"
    m = _SCORE_PART.match(name)
    if m and m.group(1) in LABELS:
        return f"{LABELS[m.group(1)]}: {_PARTS[m.group(2)]}"
    m = _PERIOD.match(name)
    if m:
        return f"period test: accuracy on blocks of {m.group(1)} distinct letters"
    return name.replace("_", " ")
