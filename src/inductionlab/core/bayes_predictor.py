"""The Bayes-optimal predictor of a copying task, run on given sequences.

Every task kind shipped is a mixture of copying hypotheses drawn with a uniform prior:
under hypothesis h, token s is the letter ``lag_h`` positions back for every s >=
``start_h`` (``start_h >= lag_h``), and every earlier token is a fresh letter drawn
uniformly from V. Given a prefix of length t, h is consistent when prefix[s] =
prefix[s − lag_h] for every start_h <= s < t; then P(h | prefix) ∝ V^−min(t, start_h)
(the fresh letters it needs) over the consistent hypotheses, and the next letter is the
mixture over h of "the letter lag_h back" (t >= start_h) and a uniform letter (t <
start_h). A sequence that no hypothesis explains (outside the task's support, e.g. a
block of 10 distinct letters for periods 3..8) gets a uniform letter.

``scored``: the same predictor told also that the next token has a source (t >= the true
start): only the hypotheses with start_h <= t count. It is the bound of a predictor
judged only where targets are scored (have a source); on a target without a source its
assumption is false and its distribution means nothing (it may give the target
probability 0).

The exact floors of the kinds are expectations of this predictor's loss and accuracy
(:class:`~.task_kinds.Floor`); :func:`target_scores` scores it on a sample.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Copying:
    """One hypothesis: token s is the letter ``lag`` back for every s >= ``start``."""

    lag: int
    start: int


def posterior(tokens: torch.Tensor, hypotheses: list[Copying], vocab: int,
              scored: bool = False) -> torch.Tensor:
    """P(h | tokens[:i + 1]) for every prefix: float64 [B, T, H] (row i: prefix length i + 1);
    a row of zeros where no hypothesis is consistent."""
    B, T = tokens.shape
    t = torch.arange(1, T + 1)  # prefix lengths
    logw = []
    for h in hypotheses:
        s = torch.arange(T)
        match = (s < h.start) | (tokens == tokens[:, (s - h.lag).clamp_min(0)])  # [B, T]
        consistent = match.long().cumprod(1).bool()[:, t - 1]  # every s < t matches
        if scored:
            consistent = consistent & (h.start <= t)
        loglik = -torch.minimum(t, torch.tensor(h.start)).double() * math.log(vocab)
        logw.append(torch.where(consistent, loglik, -math.inf))
    logw = torch.stack(logw, -1)  # [B, T, H]
    top = logw.amax(-1, keepdim=True)
    w = (logw - torch.where(torch.isfinite(top), top, 0.0)).exp()  # exp(−inf) = 0
    return w / w.sum(-1, keepdim=True).clamp_min(1e-300)


def mixture_probs(tokens: torch.Tensor, hypotheses: list[Copying], vocab: int,
                  scored: bool = False) -> torch.Tensor:
    """The predictor's distribution of token i + 1 given tokens[:i + 1]: float64 [B, T, V]
    (row T − 1: the continuation); uniform where no hypothesis is consistent."""
    tokens = tokens.long().cpu()
    B, T = tokens.shape
    w = posterior(tokens, hypotheses, vocab, scored)
    t = torch.arange(1, T + 1)
    unexplained = w.sum(-1) == 0
    uniform = torch.stack([w[..., k] * (t < h.start) for k, h in enumerate(hypotheses)], -1).sum(-1)
    probs = (uniform + unexplained.double())[..., None].expand(B, T, vocab) / vocab
    probs = probs.contiguous()
    for k, h in enumerate(hypotheses):
        back = tokens[:, (t - h.lag).clamp(0, T - 1)]  # the letter lag back from token t
        probs.scatter_add_(-1, back[..., None], (w[..., k] * (t >= h.start))[..., None])
    return probs


def target_scores(probs: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss −ln p(token i + 1) and argmax accuracy, ties split evenly, of every prediction
    i < T − 1 of ``probs`` [B, T, V]: float64 [B, T − 1] each."""
    pred, target = probs[:, :-1].double(), tokens[:, 1:, None].long().to(probs.device)
    p_true = pred.gather(-1, target)[..., 0]
    best = pred >= pred.amax(-1, keepdim=True) - 1e-12
    correct = best.gather(-1, target)[..., 0] / best.sum(-1)
    return -p_true.log(), correct.double()
