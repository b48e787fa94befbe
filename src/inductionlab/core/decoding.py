"""Greedy decoding one position at a time, each layer's keys and values kept.

A causal model's activations at earlier positions do not change when a token is
appended, so a step needs only the new position: its query, key and value in every
layer, its attention over the kept keys and values, its residual stream and logits.
:func:`greedy_decode` is the forward pass of :class:`~inductionlab.core.model.AttentionOnlyTransformer`
(positions added to queries and keys after projection, smeared keys mixed with the
previous position's raw key) done position by position: the same numbers to float32
rounding, at a fraction of the cost of running the whole sequence for every letter.
It knows no interventions; a model under one is decoded by running the whole sequence.
"""
from __future__ import annotations

import math

import torch

from .model import smear_keys


@torch.no_grad()
def greedy_decode(model, prompts: torch.Tensor, length: int) -> torch.Tensor:
    """Greedy continuation of equal-length prompts [B, P] to ``length`` tokens: [B, length]."""
    cfg = model.cfg
    B, P = prompts.shape
    if not 1 <= P <= length <= cfg.seq_len:
        raise ValueError(f"prompt length {P} and total length {length} must satisfy "
                         f"1 <= {P} <= {length} <= seq_len = {cfg.seq_len}")
    L, H, d = cfg.n_layers, cfg.n_heads, cfg.d_head
    seq = torch.zeros(B, length, dtype=torch.long, device=prompts.device)
    seq[:, :P] = prompts
    keys = torch.zeros(L, B, H, length, d, device=prompts.device)
    values = torch.zeros_like(keys)
    raw_prev = [None] * L  # each layer's unsmeared key at the previous position
    scale = 1.0 / math.sqrt(d)
    qkv = [model.qkv_weight(l) for l in range(L)]  # [D, 3 H d]
    out = [model.W_O[l].reshape(H * d, cfg.d_model) for l in range(L)]
    for t in range(length - 1):
        x = model.W_E[seq[:, t]]  # [B, D]
        pos = model.pos[t]
        for l in range(L):
            q, k, v = (x @ qkv[l]).view(B, 3, H, d).unbind(1)
            k_mixed = k
            if l in cfg.smear_layers and t >= 1:
                # the model's smear on keys t-1 and t: alpha's column for position t
                alpha = model.smear_alpha[str(l)]
                column = alpha[:, min(t - 1, alpha.shape[1] - 1), None]  # [H, 1]
                k_mixed = smear_keys(torch.stack([raw_prev[l], k], dim=2), column)[:, :, 1]
            raw_prev[l] = k
            keys[l, :, :, t] = k_mixed + pos
            values[l, :, :, t] = v
            scores = torch.einsum("bhd,bhjd->bhj", q + pos, keys[l, :, :, :t + 1]) * scale
            z = torch.einsum("bhj,bhjd->bhd", torch.softmax(scores, dim=-1), values[l, :, :, :t + 1])
            x = x + z.reshape(B, H * d) @ out[l]
        if t + 1 >= P:
            seq[:, t + 1] = (x @ model.W_U).argmax(-1)
    return seq


def greedy_complete(model, prompts: torch.Tensor, length: int) -> torch.Tensor:
    """Greedy decoding of equal-length prompts [B, P] to ``length`` tokens: [B, length].

    A plain model decodes one position a step with its keys and values kept
    (:func:`greedy_decode`). Any other (an ablated model, a
    hand-built one with its own pass) runs the sequence so far at each step: the model is
    causal, so the last position's prediction is all that a longer run would add.
    """
    from .model import AttentionOnlyTransformer

    if (isinstance(model, AttentionOnlyTransformer)
            and type(model)._run is AttentionOnlyTransformer._run
            and type(model).forward is AttentionOnlyTransformer.forward):
        return greedy_decode(model, prompts, length)
    B, P = prompts.shape
    seq = torch.zeros(B, length, dtype=torch.long, device=prompts.device)
    seq[:, :P] = prompts
    for t in range(P, length):
        seq[:, t] = model(seq[:, :t])[:, -1].argmax(-1)
    return seq
