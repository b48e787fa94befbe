"""Positional shortcut: does a learned positional table let one layer attend 5 back?

docs/methods.md, "The model": the sinusoidal table p is added to queries and keys after
projection, so every attention score contains the position–position term
p_i·p_j/√d. With a fixed table that term is fixed, and a 1-layer model cannot
learn "attend block_len − 1 back". With a trained table (``pos_encoding:
learned``) it could: position i predicts token i + 1, which equals token
i − (block_len − 1) once a block has passed, so one head that attends that far
back and copies solves the task with no induction at all.

This module measures, for a model with a learned table and for fixed-table
models: the task metrics on the validation set, greedy completions of a few
prompts and of random prompts, attention by relative offset per head, and the
table's position–position score matrix with its argmax per query row. Functions
take models, tensors and settings and return frames; the experiment's
rules (``rules.smk`` beside this module) only pass paths.

The copy offset is ``k = block_len − 1`` (5 on the default task): token i + 1 equals
token i − k once a block has passed. Every earlier copy of the target (k, k + block_len,
... back) holds the same letter, so a head can also spread its attention over all of
them. The attention measures are the pipeline's own head scores
(:mod:`inductionlab.stages.behaviour.attention`): ``nearest_copy`` (mean A[i, i − k]) and ``induction``
(every earlier copy), each beside its chance level.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ...stages.behaviour.attention import attention_score, offset_profile
from ...stages.behaviour.behaviour import evaluation_samples, prompt_suite, random_prompt_summary
from ...core.data import TaskConfig, validation_set
from ...core.metrics import evaluate
from .tables import COMPLETIONS, METRICS, OFFSETS, POSITIONS, copy_offset

OFFSET_COLUMNS, POSITION_COLUMNS, COMPLETION_COLUMNS = (
    list(t.columns) for t in (OFFSETS, POSITIONS, COMPLETIONS))


# ---------------------------------------------------------------- the positional table

def position_scores(pos: torch.Tensor) -> torch.Tensor:
    """The position–position term of the attention score, p pᵀ / √d: [T, T] (query, key).

    ``pos`` [T, d] is the table added to every head's queries and keys; d is the
    head dimension, so this is exactly the term the model adds to its scores.
    """
    pos = pos.detach().double()
    return pos @ pos.T / math.sqrt(pos.shape[-1])


def row_argmax_offsets(scores: torch.Tensor) -> torch.Tensor:
    """Per query row i, the offset i − j of the key j <= i with the largest score: [T]."""
    T = scores.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    best = scores.masked_fill(~causal, float("-inf")).argmax(-1)
    return torch.arange(T) - best


def position_table(scores: torch.Tensor) -> pd.DataFrame:
    """One row per causal (query i, key j <= i) pair: offset i − j, score, and
    ``is_row_argmax`` (1.0 for the key with the largest score of its row, else 0.0;
    a float, so that its mean over seeds is the share of seeds)."""
    T = scores.shape[-1]
    best = row_argmax_offsets(scores)
    rows = [{"query": i, "key": j, "offset": i - j, "score": float(scores[i, j]),
             "is_row_argmax": float(i - j == int(best[i]))}
            for i in range(T) for j in range(i + 1)]
    return pd.DataFrame(rows, columns=POSITION_COLUMNS[2:])


def position_summary(scores: torch.Tensor, offset: int) -> dict[str, float]:
    """Does the positional term alone point ``offset`` back? Over the query rows i >= offset:

    ``pos_argmax_offset{k}_share``: share of rows whose largest causal score is at i − k;
    ``pos_offset{k}_margin``: mean of score[i, i − k] minus the largest other causal
    score of the row (positive: every such row peaks k back).
    """
    T = scores.shape[-1]
    if not 0 < offset < T:
        raise ValueError(f"offset {offset} must be between 1 and {T - 1}")
    best = row_argmax_offsets(scores)
    margins = []
    for i in range(offset, T):
        others = torch.cat([scores[i, :i - offset], scores[i, i - offset + 1:i + 1]])
        margins.append(float(scores[i, i - offset] - others.max()))
    return {f"pos_argmax_offset{offset}_share": float((best[offset:] == offset).double().mean()),
            f"pos_offset{offset}_margin": float(np.mean(margins))}


# ---------------------------------------------------------------- attention by offset

@torch.no_grad()
def offset_table(model, tokens: torch.Tensor) -> pd.DataFrame:
    """Mean attention from query i to key i − k, per layer, head and offset k = 0..T−1.

    Averaged over the sequences and over every query i >= k. Columns: layer, head,
    offset, attention.
    """
    _, cache = model.run_with_cache(tokens)
    rows = []
    for l, pattern in enumerate(cache.pattern):
        profile = offset_profile(pattern.mean(0))  # [H, T]
        for h in range(profile.shape[0]):
            rows += [{"layer": l, "head": h, "offset": k, "attention": float(profile[h, k])}
                     for k in range(profile.shape[1])]
    return pd.DataFrame(rows, columns=OFFSET_COLUMNS[2:])


@torch.no_grad()
def attention_summary(model, sample) -> dict[str, float]:
    """Largest over every head of every layer of the nearest-copy score (attention on the
    nearest source of the target) and of the induction score (attention on every earlier
    copy of the target), with their chance levels, on a task sample."""
    _, cache = model.run_with_cache(sample.tokens)
    out = {}
    for name in ("nearest_copy", "induction"):
        scores = [attention_score(p, name, sources=sample.sources) for p in cache.pattern]
        out[f"{name}_max"] = max(float(score.max()) for score, _ in scores)
        out[f"{name}_chance"] = scores[0][1]
    return out


# ---------------------------------------------------------------- one model

@torch.no_grad()
def shortcut_metrics(model, task: TaskConfig, val, sample,
                     n_random_prompts: int, prompt_len: int, seed: int) -> dict[str, float]:
    """The headline numbers of one model (names: :func:`metric_names`).

    ``loss_all``, ``loss_pred``, ``acc_pred`` on ``val`` (the training validation set, a
    task sample); greedy accuracy on ``n_random_prompts`` random prompts of
    ``prompt_len`` letters (mean, and share completed exactly); on ``sample``,
    :func:`attention_summary`; and :func:`position_summary` of the model's positional table.
    """
    k = copy_offset(task)
    val = evaluate(model, val)
    random = random_prompt_summary(model, task, n_random_prompts, [prompt_len], seed)
    out = {"loss_all": val["loss_all"], "loss_pred": val["loss_pred"], "acc_pred": val["acc_pred"],
           f"random_len{prompt_len}_acc_mean": random[f"random_len{prompt_len}_acc_mean"],
           f"random_len{prompt_len}_exact": random[f"random_len{prompt_len}_exact"]}
    out.update(attention_summary(model, sample))
    out.update(position_summary(position_scores(model.pos), k))
    return out


def shortcut_tables(model, spec, settings: dict) -> dict[str, pd.DataFrame]:
    """Every table of one model: ``metrics`` (metric, value), ``offsets``, ``completions``
    and ``positions``, each with the model's ``variant`` and ``seed`` first.

    ``settings``: ``eval_seed``, ``n_sequences`` (the attention sample),
    ``n_random_prompts``, ``prompt_len``, ``prompts`` (see the experiment's schema).
    ``spec``: the model's :class:`~inductionlab.core.spec.Spec` (its validation set is
    the one training used).
    """
    task = TaskConfig.from_dict(settings["task"]) if "task" in settings else spec.task
    val = validation_set(spec.train.val_size, spec.task, spec.train.val_seed)
    sample, _ = evaluation_samples(spec.task, settings["n_sequences"], settings["eval_seed"])
    metrics = shortcut_metrics(model, task, val, sample, settings["n_random_prompts"],
                               settings["prompt_len"], settings["eval_seed"])
    completions = prompt_suite(model, settings["prompts"], task)
    ident = {"variant": spec.variant, "seed": spec.seed}

    def tidy(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        return frame.assign(**ident)[columns]

    return {
        "metrics": tidy(pd.DataFrame({"metric": list(metrics), "value": list(metrics.values())}),
                        list(METRICS.columns)),
        "offsets": tidy(offset_table(model, sample.tokens), OFFSET_COLUMNS),
        "completions": tidy(completions, COMPLETION_COLUMNS),
        "positions": tidy(position_table(position_scores(model.pos)), POSITION_COLUMNS),
    }
