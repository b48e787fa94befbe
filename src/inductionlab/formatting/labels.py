"""Human names, with units, for the column and metric names of the result tables.

Tables keep their snake_case names (they are files other tools read); the report shows
:func:`label` of each. A name without an entry is shown with its underscores as spaces.

House style, decided here once for the tables, figures and text:

- a head role has one display form, :func:`role_label` (``anti_copying`` -> "anti-copying",
  ``positional_induction`` -> "positional induction"); a figure panel too narrow for it
  uses :data:`ROLE_ABBREVIATIONS`, each an abbreviation of that form;
- a negative number is printed with the true minus sign U+2212 (:func:`minus_signs`), in
  tables, summaries and figures alike (matplotlib's ``axes.unicode_minus`` for its ticks).
"""
from __future__ import annotations

import re

from ..analysis.roles import (ANTI_COPYING, COPYING, INDUCTION, LOCAL, NO_ROLE, PREFIX_MATCHING,
                              PREVIOUS_TOKEN, positional_role, split_roles)

LABELS = {
    "variant": "model",
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
    # the task's floor and the write-up's task, for a model trained on another
    "floor_loss_pred": "floor: all-target Bayes predictor, loss on predictable targets (nats)",
    "floor_acc_pred": "floor: all-target Bayes predictor, accuracy on predictable targets",
    "floor_loss_all": "floor: all-target Bayes predictor, loss on all targets (nats)",
    "floor_scored_loss_pred": "bound: predictor judged on scored targets only, loss (nats)",
    "floor_scored_acc_pred": "bound: predictor judged on scored targets only, accuracy",
    "write_up_floor_loss_pred": "on the write-up's task: trained task's Bayes predictor, loss on "
                                "predictable targets (nats)",
    "write_up_floor_acc_pred": "on the write-up's task: trained task's Bayes predictor, accuracy "
                               "on predictable targets",
    "write_up_loss_all": "on the write-up's task: loss, all targets (nats)",
    "write_up_loss_pred": "on the write-up's task: loss, predictable targets (nats)",
    "write_up_acc_pred": "on the write-up's task: accuracy, predictable targets",
    "write_up_icl_score": "on the write-up's task: ICL score (nats)",
    # the formation study
    "previous_token_head": "has a previous-token head (1 = yes)",
    "induction_head": "its best head has the induction role (1 = yes)",
    "positional_induction_head": "its best head is a positional induction head (1 = yes)",
    "k_composition": "K-composition, previous-token → induction head",
    "k_composition_baseline": "K-composition of random matrices (baseline)",
    "ablation_induction_score": "induction score without the previous-token head in its keys",
    "ablation_left": "share of its excess left without the previous-token head in its keys",
    "keys_ablation_left": "share of its excess left with keys from the embedding alone",
    "loss_midpoint": "loss: midpoint (step)",
    "loss_span": "loss: 10–90 % span (× steps)",
    "loss_phase_change": "loss: a phase change (1 = yes)",
    "content_midpoint": "induction content part: midpoint (step)",
    "content_span": "induction content part: 10–90 % span (× steps)",
    "content_phase_change": "induction content part: a phase change (1 = yes)",
    "midpoint_gap": "gap |ln ratio| of the two midpoints",
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
    "nearest_copy": "nearest copy of the target",
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


MINUS = "\u2212"
# a hyphen-minus that is a sign: before a digit (or ".5"), not inside a word or a range
# (A-1, 3-5 keep theirs), or in the exponent of a number (1e-5)
_SIGN = re.compile(r"(?<![\w.\-\u2212])-(?=\.?\d)|(?<=\d[eE])-(?=\d)")


def minus_signs(text) -> str:
    """``text`` with every minus sign of a printed number a true minus (U+2212):
    "-0.9996" -> "−0.9996", "ln ratio < -0.5" -> "ln ratio < −0.5", "2.7e-16" -> "2.7e−16";
    hyphens in words and ranges ("anti-copying", "A-1", "3-5") stay."""
    return _SIGN.sub(MINUS, str(text))


# head roles (inductionlab.analysis.roles) -> their one display form
ROLE_LABELS = {
    PREVIOUS_TOKEN: "previous token",
    INDUCTION: "induction",
    PREFIX_MATCHING: "prefix matching",
    positional_role(INDUCTION): "positional induction",
    positional_role(PREFIX_MATCHING): "positional prefix matching",
    LOCAL: "local",
    COPYING: "copying",
    ANTI_COPYING: "anti-copying",
    NO_ROLE: "no role",
}
# the same, abbreviated, where a figure panel has no room for it (explained beside it)
ROLE_ABBREVIATIONS = {
    PREVIOUS_TOKEN: "prev", INDUCTION: "ind", PREFIX_MATCHING: "prefix",
    positional_role(INDUCTION): "pos-ind", positional_role(PREFIX_MATCHING): "pos-prefix",
    LOCAL: "local", COPYING: "copy", ANTI_COPYING: "anti-copy", NO_ROLE: "no role",
}


def role_label(role) -> str:
    """A head role's one display form: ``anti_copying`` -> "anti-copying",
    ``positional_induction`` -> "positional induction"; an unknown role with its
    underscores as spaces."""
    role = str(role)
    if role in ROLE_LABELS:
        return ROLE_LABELS[role]
    if role.startswith(positional_role("")):
        return "positional " + role_label(role[len(positional_role("")):])
    return role.replace("_", " ")


def roles_label(cell, joiner: str = " + ") -> str:
    """A ``roles`` cell (roles joined with "+"; empty, NaN or "none": no role) in words:
    "induction+prefix_matching+copying" -> "induction + prefix matching + copying"."""
    parts = split_roles(cell)
    return joiner.join(role_label(r.strip()) for r in parts) if parts else ROLE_LABELS[NO_ROLE]


def value_label(column: str, value) -> str:
    """How a name in a table cell reads: metrics, ablations and head roles in words."""
    if column == "metric":
        return label(value)
    if column == "roles":  # a head's roles (a "role" column names a write-up model)
        return roles_label(value)
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
_PERIOD_MORE = re.compile(r"^period(\d+)_(trained|task_acc)$")
_PERIOD_WHAT = {"trained": "a trained period (1) or not (0)",
                "task_acc": "accuracy of the trained task's Bayes predictor"}
_BEST = re.compile(r"^(\w+)_max$")
_POS_ARGMAX = re.compile(r"^pos_argmax_offset(\d+)_share$")
_POS_MARGIN = re.compile(r"^pos_offset(\d+)_margin$")
_PARTS = {"control": "on random sequences (control)", "content": "content part (− control)",
          "low": "95 % low", "high": "95 % high", "content_low": "content part, 95 % low",
          "content_high": "content part, 95 % high"}


def _known(key: str, text: str) -> str | None:
    """``text`` when ``key`` has a label (a derived name of a known quantity), else None."""
    return text if key in LABELS else None


# Derived names: (pattern, the label of a match or None); the first that answers wins.
_NAME_RULES = (
    (_RANDOM, lambda m: f"random {'distinct-letter ' if m[1] else ''}{m[2]}-letter prompts: "
                        f"{_RANDOM_WHAT.get(m[3], m[3])}"),
    (_OOD, lambda m: f"out-of-distribution {m[1]}-letter prompts: {_RANDOM_WHAT.get(m[2], m[2])}"),
    (_LAYER_SCORE, lambda m: _known(m[1], f"layer {m[3]} {LABELS.get(m[1])}, " + {
        "mean": "mean over heads", "max": "best head", "chance": "chance level"}[m[2]])),
    (_CHANCE, lambda m: _known(m[1], f"{LABELS.get(m[1])}: chance level")),
    (_SCORE_PART, lambda m: _known(m[1], f"{LABELS.get(m[1])}: {_PARTS[m[2]]}")),
    (_PERIOD, lambda m: f"period test: accuracy on blocks of {m[1]} distinct letters"),
    (_PERIOD_MORE, lambda m: f"period test, blocks of {m[1]}: {_PERIOD_WHAT[m[2]]}"),
    (_BEST, lambda m: _known(m[1], f"{LABELS.get(m[1])}: best head")),
    (_POS_ARGMAX, lambda m: f"position term: share of rows peaking {m[1]} back"),
    (_POS_MARGIN, lambda m: f"position term: margin {m[1]} back"),
)


def label(name) -> str:
    """The report's name for a table column or metric ``name``."""
    name = str(name)
    if name in LABELS:
        return LABELS[name]
    for pattern, words in _NAME_RULES:
        m = pattern.match(name)
        text = words(m) if m else None
        if text is not None:
            return text
    return name.replace("_", " ")
