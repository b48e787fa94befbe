"""Attention-pattern scores per head (docs/methods.md, "Attention scores").

Patterns are ``[B, H, T, T]`` tensors (query, key). Every attention score is one
definition, :func:`attention_mass`: the attention that each query puts on a set of
keys, averaged over sequences and over the queries where the score is defined. A
score is therefore a pair of masks (which keys, which queries), and its chance level
is the same function applied to uniform causal attention (A[i, j] = 1/(i + 1)) with
the same masks (:func:`chance_level`): never a hard-coded number.

The scores. The copy-seeking ones are read from where each copy actually is: the
sources of the target token i + 1 that the task's sampler returns, sequence by sequence
(:func:`copy_masks`); the others are positional or token-defined:

    previous_token   key i − 1; queries i >= 1
    local            keys i − window + 1 .. i; queries i >= window − 1
    induction        every source j >= 1 of the target (key 0 left out, as a possible
                     sink); queries whose target has one. On the write-up's task (block n):
                     keys 1 <= j <= i with j ≡ i + 1 (mod n), queries i >= n
    nearest_copy     only the nearest source (write-up's task: key i − (n − 1)); queries
                     whose nearest source is >= 1
    first_block      the earliest source unless it is key 0 (left out as for induction);
                     queries whose target has at least two sources >= 1 (write-up's task:
                     key (i + 1) mod n, queries i >= 2n; the queries whose copy is key 0
                     count with no key, so a head that does exactly this scores (n − 1)/n)
    first_token      key 0 itself (a possible attention sink); queries i >= 1
    prefix_matching  keys j < i with token[j − 1] == token[i]; queries that have one
                     (on blocks of distinct letters, so the target is unambiguous)

The positional control. On the task every copy of the target sits at a fixed position,
so a head that looks at a position whatever it holds scores like one that looks for a
copy. Every score is therefore also taken on a control sample of random sequences (no
repeated block), with the same queries and keys (control sequence b takes task sequence
b's masks; for prefix matching: the keys that the distinct-letter sample's matches select,
sequence by sequence): ``<score>_control``. The
content part, ``<score>_content`` = score − control, is what a copy-seeking role reads:
a pure induction head scores about chance on the control; a head that attends to
positions 0–5 whatever they hold scores on the control what it scores on the task.

Intervals. Every score is a ratio Σ_b num_b / Σ_b den_b over the sequences b of its
sample (:func:`attention_mass_per_sequence`), so its 95 % interval is a bootstrap over
sequences (:mod:`.uncertainty`); the content part's resamples the task and the control
sample independently.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ...analysis.roles import (INDUCTION, LOCAL, PREFIX_MATCHING, PREVIOUS_TOKEN, ROLES_COLUMN,
                               content_column, control_column)

# every head score (the role scores' names are the roles', .roles)
ATTENTION_SCORES = (INDUCTION, "nearest_copy", "first_block", "first_token", PREVIOUS_TOKEN,
                    LOCAL, PREFIX_MATCHING)
from ...analysis.uncertainty import (bootstrap_interval, interval_columns,
                                     paired_bootstrap_replicates, percentile_interval)
from ...core.formats import SHARE_OF_ATTENTION, declare_table
from ...core.task_kinds import query_sources
from ...core.model import NO_INTERVENTION


def mean_pattern(pattern: torch.Tensor) -> torch.Tensor:
    """Average pattern over sequences: [H, T, T]."""
    return pattern.mean(0)


def offset_attention(pattern: torch.Tensor, offset: int, first_query: int | None = None) -> torch.Tensor:
    """Mean attention from query i to key i - offset, over queries i >= first_query: [H].

    ``first_query`` defaults to ``offset`` (every query that has such a key).
    """
    diag = pattern.diagonal(offset=-offset, dim1=-2, dim2=-1)  # [..., H, T - offset], query i = offset + k
    start = (first_query if first_query is not None else offset) - offset
    if start < 0 or start >= diag.shape[-1]:
        raise ValueError(f"no query position >= {first_query} has a key {offset} back")
    per_head = diag[..., start:].mean(-1)  # [B, H] or [H]
    return per_head.mean(0) if pattern.dim() == 4 else per_head


def offset_profile(pattern: torch.Tensor) -> torch.Tensor:
    """Mean attention to each offset k = 0..T-1 (query i to key i - k, over i >= k): [H, T]."""
    T = pattern.shape[-1]
    return torch.stack([offset_attention(pattern, k) for k in range(T)], dim=-1)


# ---------------------------------------------------------------- masks and the one score


def attention_mass(pattern: torch.Tensor, keys: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Attention on ``keys``, mean over sequences and over the ``queries``: [H].

    ``pattern`` [B, H, T, T] (or [H, T, T]); ``keys`` bool [T, T] or per sequence
    [B, T, T] (query, key); ``queries`` bool [T] or [B, T]. Each selected query
    contributes Σ_j A[i, j] over its selected keys.
    """
    if pattern.dim() == 3:
        pattern = pattern[None]
    if keys.dim() == 2 and queries.dim() == 1:
        # the same masks for every sequence: the mean over sequences first (the score is
        # linear in the pattern), so the masks meet one [H, T, T] pattern, not B of them
        pattern = pattern.mean(0, keepdim=True)
    if keys.dim() == 2:
        keys = keys[None]
    if queries.dim() == 1:
        queries = queries[None]
    queries = queries.expand(max(pattern.shape[0], keys.shape[0]), -1)
    if not queries.any():
        raise ValueError("no query position has a key for this score")
    mass = (pattern * keys[:, None].to(pattern.dtype)).sum(-1)  # [B, H, T]
    weights = queries[:, None].to(pattern.dtype)
    return (mass * weights).sum(dim=(0, 2)) / queries.sum()


def attention_mass_per_sequence(pattern: torch.Tensor, keys: torch.Tensor,
                                queries: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence b: the attention its selected queries put on their selected keys,
    summed (``num`` [B, H]), and the number of selected queries (``den`` [B]); the score is
    Σ num / Σ den (:func:`attention_mass`). Masks as for :func:`attention_mass`."""
    B = pattern.shape[0]
    keys = keys if keys.dim() == 3 else keys[None]
    queries = (queries if queries.dim() == 2 else queries[None]).expand(B, -1)
    mass = (pattern * keys[:, None].to(pattern.dtype)).sum(-1)  # [B, H, T]
    num = (mass * queries[:, None].to(pattern.dtype)).sum(-1)  # [B, H]
    return num.double().numpy(), queries.sum(-1).double().numpy()


def uniform_pattern(T: int, dtype=torch.float32) -> torch.Tensor:
    """Uniform causal attention, A[i, j] = 1/(i + 1) for j <= i: [1, 1, T, T]."""
    causal = torch.ones(T, T, dtype=dtype).tril()
    return (causal / causal.sum(-1, keepdim=True))[None, None]


def chance_level(keys: torch.Tensor, queries: torch.Tensor) -> float:
    """The score uniform causal attention gets on the same keys and queries."""
    return float(attention_mass(uniform_pattern(keys.shape[-1], torch.float64), keys, queries)[0])


def _grid(T: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(T)[:, None], torch.arange(T)[None, :]


def previous_token_masks(T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Key i − 1, queries i >= 1."""
    i, j = _grid(T)
    return j == i - 1, torch.arange(T) >= 1


def local_masks(T: int, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys i − window + 1 .. i, queries i >= window − 1."""
    i, j = _grid(T)
    return (i - j >= 0) & (i - j < window), torch.arange(T) >= window - 1


def copy_masks(name: str, sources: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(keys [B, T, T], queries [B, T]) of a copy-seeking score, read from the sources of
    every token (``sources[b, t, j]``: token t was copied from position j,
    :class:`~inductionlab.core.tasks.TaskSample`); query i's target is token i + 1.

    ``induction``: every source j >= 1 of the target, queries whose target has one;
    ``nearest_copy``: the nearest source, queries whose nearest source is >= 1;
    ``first_block``: the earliest source unless it is key 0, queries whose target has at
    least two sources >= 1. Key 0 is left out as a possible attention sink. On the
    write-up's task these are keys j ≡ i + 1 (mod n) with queries i >= n; key i − (n − 1);
    and key (i + 1) mod n with queries i >= 2n.
    """
    q = query_sources(sources)  # [B, T(query), T(key)]
    T = q.shape[-1]
    j = torch.arange(T, device=q.device)
    beyond_sink = q & (j >= 1)
    if name == "induction":
        keys = beyond_sink
        return keys, keys.any(-1)
    has = q.any(-1, keepdim=True)
    if name == "nearest_copy":
        nearest = torch.where(q, j, -1).amax(-1, keepdim=True)
        keys = (j == nearest) & has & (j >= 1)
        return keys, keys.any(-1)
    if name == "first_block":
        earliest = torch.where(q, j, T).amin(-1, keepdim=True)
        keys = (j == earliest) & has & (j >= 1)
        return keys, beyond_sink.sum(-1) >= 2
    raise ValueError(f"{name!r} is not a copy-seeking score")


COPY_SCORES = ("induction", "nearest_copy", "first_block")


def shared_masks(keys: torch.Tensor, queries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence masks that are the same for every sequence as one [T, T], [T] pair
    (what fixed positions give: the mean pattern meets them once); others as they are."""
    if keys.dim() == 3 and bool((keys == keys[:1]).all()) and bool((queries == queries[:1]).all()):
        return keys[0], queries[0]
    return keys, queries


def first_token_masks(T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Key 0 (a possible attention sink); queries i >= 1."""
    i, j = _grid(T)
    return (j == 0) & (i >= 0), torch.arange(T) >= 1


def prefix_match_mask(tokens: torch.Tensor) -> torch.Tensor:
    """Bool [B, T, T]: key j < i with token[j - 1] == token[i] (j >= 1)."""
    T = tokens.shape[1]
    prev = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], dim=1)  # token[j - 1]
    match = prev[:, None, :] == tokens[:, :, None]
    earlier = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(-1)
    return match & earlier


def prefix_matching_masks(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys after earlier copies of the current token; queries that have one: [B, T, T], [B, T]."""
    keys = prefix_match_mask(tokens)
    return keys, keys.any(-1)


def score_masks(name: str, T: int, local_window: int, sources: torch.Tensor | None = None,
                tokens: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(keys, queries) of attention score ``name`` (one of :data:`ATTENTION_SCORES`): the
    copy-seeking scores from the ``sources`` of a task sample (:func:`copy_masks`), prefix
    matching from ``tokens``, the others from positions."""
    if name == "previous_token":
        return previous_token_masks(T)
    if name == "local":
        return local_masks(T, local_window)
    if name in COPY_SCORES:
        if sources is None:
            raise ValueError(f"{name} needs the sources of a task sample")
        return shared_masks(*copy_masks(name, sources))
    if name == "first_token":
        return first_token_masks(T)
    if name == "prefix_matching":
        if tokens is None:
            raise ValueError("prefix_matching needs the tokens")
        return prefix_matching_masks(tokens)
    raise ValueError(f"unknown attention score {name!r}; known: {list(ATTENTION_SCORES)}")


def attention_score(pattern: torch.Tensor, name: str, local_window: int = 3,
                    sources: torch.Tensor | None = None,
                    tokens: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
    """Score ``name`` of every head [H] and its chance level (``sources``: of the
    sequences ``pattern`` was taken on, for the copy-seeking scores)."""
    keys, queries = score_masks(name, pattern.shape[-1], local_window, sources, tokens)
    return attention_mass(pattern, keys, queries), chance_level(keys, queries)


def copying_score(pattern: torch.Tensor, head_out: torch.Tensor, W_U: torch.Tensor,
                  tokens: torch.Tensor, per_sequence: bool = False) -> torch.Tensor:
    """Empirical copying: does a head's direct effect raise the logits of the tokens it attends to? [H].

    The head's direct logit contribution at query i, head_out_i W_U, is
    standardised over the vocabulary (z-scores); the score is the attention-weighted
    z-score of the attended tokens, mean over queries. Positive: copying; negative:
    anti-copying; about 0: neither. ``per_sequence``: the mean over each sequence's
    queries, [B, H] (their mean over sequences is the score).

    Computed as: logits l = head_out W_U; mean and (V-1)-normalised variance over the
    vocabulary by products with a constant vector; the attention-weighted logit of the
    attended tokens, Σ_j A_ij l_i[t_j], from the logits gathered at the key tokens; the
    score at i is (Σ_j A_ij l_i[t_j] - mean_i) / std_i, since the weights sum to 1.
    """
    V = W_U.shape[1]
    logits = head_out @ W_U  # [B, H, T, V]
    ones = torch.ones(V, dtype=logits.dtype, device=logits.device)
    mean = logits @ ones / V
    var = ((logits * logits) @ ones / V - mean * mean) * (V / (V - 1))
    B, H, T, _ = logits.shape
    attended = logits.gather(-1, tokens[:, None, None, :].expand(B, H, T, T))  # l_i[t_j]
    weighted = (pattern * attended).sum(-1)
    per_query = (weighted - mean) / var.clamp_min(0).sqrt().clamp_min(1e-12)  # [B, H, T]
    return per_query.mean(2) if per_sequence else per_query.mean(dim=(0, 2))


def score_columns(name: str, intervals: bool, control: bool) -> list[str]:
    """The columns of attention score ``name`` in a head-score table, in order."""
    cols = [name] + (list(interval_columns(name)) if intervals else []) + [f"{name}_chance"]
    if control:
        cols += [control_column(name), content_column(name)]
        cols += list(interval_columns(content_column(name))) if intervals else []
    return cols


# head_scores.csv (behaviour stage): every score with its interval, chance level, control
# and content part, then the copying score; the stacked table adds each head's roles.
HEAD_SCORES_TABLE = declare_table(
    "head_scores", ["variant", "seed", "layer", "head"]
    + [c for name in ATTENTION_SCORES for c in score_columns(name, True, True)]
    + ["copying", *interval_columns("copying")],
    keys=["layer", "head"], more=ROLES_COLUMN,
    units={"(%s)(_.*)?" % "|".join(ATTENTION_SCORES): SHARE_OF_ATTENTION})

BOOTSTRAP_PURPOSE = "evaluation-sequences"


def content_part_replicates(task: tuple[np.ndarray, np.ndarray],
                            control: tuple[np.ndarray, np.ndarray], seed: int) -> np.ndarray:
    """Bootstrap replicates [R, H] of a score's content part (score − control) from the
    per-sequence masses (num, den) of the task and the control sample, each resampled
    (seeded from ``seed``): every model, and every ablation of one, measured on samples
    of the same sizes gets the same resamples, so their replicates are paired."""
    return paired_bootstrap_replicates(lambda a, b: a - b, [task, control], seed=seed,
                                       purpose=BOOTSTRAP_PURPOSE)


def sample_masks(sample, distinct_tokens: torch.Tensor, local_window: int) -> tuple[dict, dict]:
    """Every score's (keys, queries) masks on a task sample and its distinct-letter sample
    (:func:`score_masks`), and each score's chance level: (masks, chance), by score name."""
    T = sample.tokens.shape[1]
    masks = {name: score_masks(name, T, local_window, sample.sources,
                               distinct_tokens if name == "prefix_matching" else None)
             for name in ATTENTION_SCORES}
    return masks, {name: chance_level(*masks[name]) for name in ATTENTION_SCORES}


@torch.no_grad()
def head_score_table(model, sample, distinct_tokens: torch.Tensor,
                     local_window: int, intervention=None, return_logits: bool = False,
                     copying: bool = True, control_tokens: torch.Tensor | None = None,
                     intervals: bool = False, seed: int = 0, content_replicates: bool = False,
                     masks=None):
    """Scores of every head on a sample, and the mean pattern of every layer.

    ``sample``: a :class:`~inductionlab.core.tasks.TaskSample` of the model's task (every
    score but prefix matching; the copy-seeking scores read its sources);
    ``distinct_tokens``: task sequences whose fresh letters are distinct (prefix matching);
    ``control_tokens``: random sequences without a repeated block, as many as
    ``distinct_tokens`` (the positional control: every score again on them, with the same
    queries and keys; prefix matching with the distinct sample's keys, sequence by
    sequence). Returns (frame with columns layer, head, then for each of
    :data:`ATTENTION_SCORES` its :func:`score_columns`, then copying unless ``copying`` is
    False; list of [H, T, T] mean patterns), and with ``return_logits`` also the logits on
    ``tokens`` (so that callers need no second forward pass). ``intervals``: a 95 %
    bootstrap interval over sequences beside each score, content part and the copying
    score (resamples seeded from ``seed``). Without copying no head's output is formed.
    ``content_replicates`` (needs the control): also, last, the bootstrap replicates of
    the induction content part, one [R, H] array per layer (:func:`content_part_replicates`),
    for ratios of one head's content part under two interventions. ``masks``: the
    samples' :func:`sample_masks`, when the caller scores the same samples many times.
    """
    intervention = intervention or NO_INTERVENTION
    if content_replicates and control_tokens is None:
        raise ValueError("the content part's replicates need the control sample (control_tokens)")
    tokens = sample.tokens
    logits, cache = model.run_with_cache(tokens, intervention, head_out=copying)
    _, distinct = model.run_with_cache(distinct_tokens, intervention, head_out=False)
    control = None
    if control_tokens is not None:
        if not len(control_tokens) == len(distinct_tokens) == len(tokens):
            raise ValueError(f"the control sample has {len(control_tokens)} sequences, the "
                             f"task sample {len(tokens)} and the distinct-letter sample "
                             f"{len(distinct_tokens)}: they are paired")
        _, control = model.run_with_cache(control_tokens, intervention, head_out=False)
    # every layer is scored on the same masks: read once from the samples
    masks, chance = masks or sample_masks(sample, distinct_tokens, local_window)
    rows, means, replicates = [], [], []
    for l, pattern in enumerate(cache.pattern):
        mean = mean_pattern(pattern)
        scores = {}
        for name in ATTENTION_SCORES:
            on_distinct = name == "prefix_matching"
            keys, queries = masks[name]
            source = distinct.pattern[l] if on_distinct else pattern
            scores[name] = attention_mass(source, keys, queries)
            replicated = content_replicates and name == INDUCTION
            if intervals or replicated:
                mass = attention_mass_per_sequence(source, keys, queries)
            if intervals:
                scores.update(zip(interval_columns(name), bootstrap_interval(
                    *mass, seed=seed, purpose=BOOTSTRAP_PURPOSE)))
            scores[f"{name}_chance"] = chance[name]
            if control is not None:
                ctrl = attention_mass(control.pattern[l], keys, queries)
                scores[control_column(name)] = ctrl
                scores[content_column(name)] = scores[name] - ctrl
                if intervals or replicated:
                    reps = content_part_replicates(
                        mass, attention_mass_per_sequence(control.pattern[l], keys, queries), seed)
                if intervals:
                    scores.update(zip(interval_columns(content_column(name)),
                                      percentile_interval(reps)))
                if replicated:
                    replicates.append(reps)
        if copying:
            per_seq = copying_score(pattern, cache.head_out[l], model.W_U, tokens, per_sequence=True)
            scores["copying"] = per_seq.mean(0)
            if intervals:
                scores.update(zip(interval_columns("copying"), bootstrap_interval(
                    per_seq.double().numpy(), seed=seed, purpose=BOOTSTRAP_PURPOSE)))
        for h in range(pattern.shape[1]):
            rows.append({"layer": l, "head": h, **{k: _at(v, h) for k, v in scores.items()}})
        means.append(mean)
    out = (pd.DataFrame(rows), means) + ((logits,) if return_logits else ())
    return out + ((replicates,) if content_replicates else ())


def _at(value, h: int) -> float:
    """Head ``h``'s entry of a per-head score (a tensor or an array), or a shared float."""
    if isinstance(value, float):
        return value
    return float(value[h])
