"""Task metrics: per-token loss, loss on predictable targets, accuracy."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .bounds import EVAL_CHUNK
from .task_kinds import TaskSample


def per_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy [B, T-1]: prediction i (at position i) for token i+1."""
    pred = logits[:, :-1]
    return F.cross_entropy(pred.reshape(-1, pred.shape[-1]), tokens[:, 1:].reshape(-1),
                           reduction="none").view(tokens.shape[0], -1)


def mean_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss over all predictions (the training objective)."""
    return per_token_loss(logits, tokens).mean()


def task_metrics(logits: torch.Tensor, tokens: torch.Tensor, predictable: torch.Tensor) -> dict:
    """Headline metrics of one batch.

    loss_all: mean loss over all T-1 predictions; loss_pred / acc_pred: mean loss
    and argmax accuracy over the predictable targets (``predictable``, bool [B, T-1]:
    the targets that have a source, :attr:`TaskSample.predictable`), pooled over
    sequences; loss_pos: per-prediction mean loss [T-1].
    """
    losses = per_token_loss(logits, tokens)
    mask = predictable.to(losses.device).expand_as(losses)
    correct = logits[:, :-1].argmax(-1) == tokens[:, 1:]
    return {
        "loss_all": losses.mean().item(),
        "loss_pred": losses[mask].mean().item(),
        "acc_pred": correct[mask].float().mean().item(),
        "loss_pos": losses.mean(0).tolist(),
    }


def pooled_units(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per sequence, the sum of ``values`` [B, T - 1] over its ``mask``ed targets divided by
    the mean number of such targets per sequence: [B] (float64). Their mean is the mean
    over every masked target pooled across sequences, the value :func:`task_metrics`
    reports, so a bootstrap over sequences resamples these units; where every sequence
    has the same targets, each unit is that sequence's own mean."""
    mask = mask.to(values.device).expand_as(values).double()
    return (values.double() * mask).sum(-1) / mask.sum(-1).mean().clamp_min(1e-12)


@torch.no_grad()
def evaluate(model, sample: TaskSample, batch_size: int = EVAL_CHUNK) -> dict:
    """:func:`task_metrics` of ``model`` on a task sample, computed in chunks."""
    logits = chunked_logits(model, sample.tokens, batch_size)
    return task_metrics(logits, sample.tokens, sample.predictable)


@torch.no_grad()
def chunked_logits(model, tokens: torch.Tensor, chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """``model(tokens)`` a chunk at a time: the same logits (every sequence's are its own),
    with each chunk's activations in the core's cache."""
    return torch.cat([model(tokens[i:i + chunk]) for i in range(0, len(tokens), chunk)])
