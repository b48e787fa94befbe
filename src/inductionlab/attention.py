"""Attention-pattern scores per head (SCIENCE.md, "Attention and head scores").

Patterns are ``[B, H, T, T]`` tensors (query, key). Every score returns one value
per head, averaged over sequences and over the query positions where it is defined.
"""
from __future__ import annotations

import pandas as pd
import torch


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


def previous_token_score(pattern: torch.Tensor) -> torch.Tensor:
    """Mean A[i, i-1] over i >= 1: [H]."""
    return offset_attention(pattern, 1)


def period_score(pattern: torch.Tensor, block_len: int) -> torch.Tensor:
    """Mean A[i, i - (block_len - 1)] over i >= block_len: [H].

    For i >= block_len the key block_len - 1 back is the token that followed the
    previous occurrence of the current token: the induction target on this task.
    """
    return offset_attention(pattern, block_len - 1, first_query=block_len)


def local_score(pattern: torch.Tensor, window: int) -> torch.Tensor:
    """Mean attention to the current and the previous window - 1 tokens, over i >= window - 1: [H]."""
    T = pattern.shape[-1]
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    near = ((i - j >= 0) & (i - j < window)).to(pattern.dtype)
    mass = (pattern * near).sum(-1)  # [B, H, T]
    return mass[..., window - 1:].mean(dim=(0, 2))


def prefix_match_mask(tokens: torch.Tensor) -> torch.Tensor:
    """Bool [B, T, T]: key j < i with token[j - 1] == token[i] (j >= 1)."""
    T = tokens.shape[1]
    prev = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], dim=1)  # token[j - 1]
    match = prev[:, None, :] == tokens[:, :, None]
    earlier = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(-1)
    return match & earlier


def prefix_matching_score(pattern: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Attention from i to every key j < i with token[j - 1] == token[i]: [H].

    Averaged over queries that have at least one such key. Meant for sequences
    whose blocks have distinct letters, so the matching keys are unambiguous.
    """
    mask = prefix_match_mask(tokens)  # [B, T, T]
    has_match = mask.any(-1)  # [B, T]
    if not has_match.any():
        raise ValueError("no query position has an earlier prefix match")
    mass = (pattern * mask[:, None].to(pattern.dtype)).sum(-1)  # [B, H, T]
    return (mass * has_match[:, None]).sum(dim=(0, 2)) / has_match.sum()


def copying_score(pattern: torch.Tensor, head_out: torch.Tensor, W_U: torch.Tensor,
                  tokens: torch.Tensor) -> torch.Tensor:
    """Empirical copying: does a head's direct effect raise the logits of the tokens it attends to? [H].

    The head's direct logit contribution at query i, head_out_i W_U, is
    standardised over the vocabulary (z-scores); the score is the attention-weighted
    z-score of the attended tokens, mean over queries. Positive: copying; negative:
    anti-copying; about 0: neither.

    Computed as: logits l = head_out W_U; mean and (V-1)-normalised variance over the
    vocabulary by products with a constant vector; the attention mass that each query
    puts on each vocabulary entry, M_iv = Σ_j A_ij [t_j = v], by a scatter-add; the
    score at i is (Σ_v M_iv l_iv - mean_i) / std_i, since the weights sum to 1.
    """
    V = W_U.shape[1]
    logits = head_out @ W_U  # [B, H, T, V]
    ones = torch.ones(V, dtype=logits.dtype, device=logits.device)
    mean = logits @ ones / V
    var = ((logits * logits) @ ones / V - mean * mean) * (V / (V - 1))
    B, H, T, _ = logits.shape
    mass = torch.zeros_like(logits).scatter_add_(-1, tokens[:, None, None, :].expand(B, H, T, T), pattern)
    weighted = (mass * logits) @ ones
    return ((weighted - mean) / var.clamp_min(0).sqrt().clamp_min(1e-12)).mean(dim=(0, 2))


def head_roles(scores: dict[str, float], thresholds: dict) -> list[str]:
    """Roles of one head from its scores, with every threshold from the config.

    previous_token: previous-token score >= previous_token_min
    period: period score >= period_min; induction: period and copying
    prefix_matching: prefix-matching score >= prefix_matching_min
    local: local score >= local_min
    copying / anti_copying: copying score above +copying_margin / below -copying_margin
    local_anti_copying: local and anti-copying
    """
    roles = []
    copying = scores["copying"] > thresholds["copying_margin"]
    anti = scores["copying"] < -thresholds["copying_margin"]
    if scores["previous_token"] >= thresholds["previous_token_min"]:
        roles.append("previous_token")
    if scores["period"] >= thresholds["period_min"]:
        roles.append("induction" if copying else "period")
    if scores["prefix_matching"] >= thresholds["prefix_matching_min"]:
        roles.append("prefix_matching")
    local = scores["local"] >= thresholds["local_min"]
    if local:
        roles.append("local_anti_copying" if anti else "local")
    if copying:
        roles.append("copying")
    elif anti and not local:
        roles.append("anti_copying")
    return roles


@torch.no_grad()
def head_score_table(model, tokens: torch.Tensor, distinct_tokens: torch.Tensor, block_len: int,
                     local_window: int, intervention=None, return_logits: bool = False):
    """Scores of every head on a sample, and the mean pattern of every layer.

    ``tokens``: task sequences (previous-token, period, local and copying scores);
    ``distinct_tokens``: task sequences whose blocks have distinct letters
    (prefix matching). Returns (frame with columns layer, head, previous_token,
    period, prefix_matching, local, copying; list of [H, T, T] mean patterns), and
    with ``return_logits`` also the logits on ``tokens`` (so that callers need no
    second forward pass).
    """
    from .model import NO_INTERVENTION

    intervention = intervention or NO_INTERVENTION
    logits, cache = model.run_with_cache(tokens, intervention)
    _, distinct = model.run_with_cache(distinct_tokens, intervention)
    rows, means = [], []
    for l, pattern in enumerate(cache.pattern):
        scores = {
            "previous_token": previous_token_score(pattern),
            "period": period_score(pattern, block_len),
            "prefix_matching": prefix_matching_score(distinct.pattern[l], distinct_tokens),
            "local": local_score(pattern, local_window),
            "copying": copying_score(pattern, cache.head_out[l], model.W_U, tokens),
        }
        for h in range(pattern.shape[1]):
            rows.append({"layer": l, "head": h, **{k: v[h].item() for k, v in scores.items()}})
        means.append(mean_pattern(pattern))
    if return_logits:
        return pd.DataFrame(rows), means, logits
    return pd.DataFrame(rows), means
