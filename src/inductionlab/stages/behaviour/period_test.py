"""Content or position, by behaviour (docs/methods.md, "Behaviour"). The period test repeats
blocks of ``n`` distinct letters for several ``n``: a model that copies what followed the
earlier occurrence of the current letter (by content) predicts every period, one that copies
from a fixed distance back (by position) only the period it was trained on. The
first-or-nearest prompts are the write-up's ABCXYZABCDEF made random: two blocks sharing
their first letters, then those letters again; which block's next letter the model predicts
tells whether it follows the first or the nearest occurrence."""
from __future__ import annotations


import torch

from ...core.data import ALPHABET, TaskConfig, repeat_blocks
from ...core.seeding import generator

from .measures import Measure, _logits, mean_measure, rate_measure
from .failure_modes import blocks_with_pattern


def period_sequences(task: TaskConfig, period: int, n: int, seed: int) -> torch.Tensor:
    """``n`` sequences of ``seq_len`` tokens that repeat a block of ``period`` distinct letters
    (drawn uniformly without replacement; generator (seed, "period-{period}")): [n, T]."""
    blocks = blocks_with_pattern(ALPHABET[:period], n, task.vocab_size,
                                 generator(seed, f"period-{period}"))
    return repeat_blocks(blocks, -(-task.seq_len // period))[:, :task.seq_len]


@torch.no_grad()
def period_measures(model, task: TaskConfig, periods, n: int, seed: int) -> dict[str, Measure]:
    """The period test: ``period{p}_acc``, teacher-forced argmax accuracy on
    :func:`period_sequences` of each period p, with its bootstrap interval over sequences.

    Scored are the predictions made at positions i >= p, where the current letter has
    occurred before (p back); they predict tokens p + 1 .. T - 1. The first letter of the
    second block (token p) is left out: nothing in the context determines it for a model
    that does not already know the period. A model that copies what followed the earlier
    occurrence of the current letter scores 1 at every p. One that copies the letter
    ``s`` back by position (s = block_len - 1 solves the task) predicts token i - s for
    token i + 1: from position s on, right at every prediction where p divides s + 1 and
    at none elsewhere.
    """
    out = {}
    for p in dict.fromkeys(periods):
        seq = period_sequences(task, p, n, seed)
        correct = (_logits(model, seq)[:, p:-1].argmax(-1) == seq[:, p + 1:]).float()
        out[f"period{p}_acc"] = mean_measure(correct.mean(-1), correct.mean().item())
    return out


def shared_prefix_prompts(task: TaskConfig, prefix_len: int, n: int,
                          seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` first-or-nearest prompts P X P D P: [n, 2 * block_len + prefix_len].

    Two blocks of ``block_len`` letters, P+X and P+D, share their first ``prefix_len``
    letters P and no other (2 * block_len - prefix_len distinct letters, drawn uniformly
    without replacement; generator (seed, "shared-prefix-prompts")); P follows them again
    (ABCXYZABCDEF + ABC). Also returns X[0] and D[0] [n]: the next letter after the last
    letter of P in the first block and in the nearest.
    """
    bl, p = task.block_len, prefix_len
    letters = torch.argsort(torch.rand(n, task.vocab_size, generator=generator(seed, "shared-prefix-prompts")),
                            dim=1)[:, :2 * bl - p]
    prefix, first, nearest = letters[:, :p], letters[:, p:bl], letters[:, bl:]
    return torch.cat([prefix, first, prefix, nearest, prefix], dim=1), first[:, 0], nearest[:, 0]


def shared_prefix_fits(task: TaskConfig, prefix_len: int) -> bool:
    """Whether the prompts of :func:`shared_prefix_prompts` fit the task: their letters in the
    vocabulary and their length in the context."""
    bl = task.block_len
    return 2 * bl - prefix_len <= task.vocab_size and 2 * bl + prefix_len <= task.seq_len


@torch.no_grad()
def shared_prefix_measures(model, task: TaskConfig, prefix_len: int, n: int,
                           seed: int) -> dict[str, Measure]:
    """Which block the model continues on :func:`shared_prefix_prompts`, teacher-forced.

    The argmax after the last letter of P either follows the first block (X[0]), the
    nearest (D[0]) or neither: ``shared_prefix_follows_first`` and
    ``shared_prefix_follows_nearest`` are the shares of prompts (exact binomial
    intervals), ``shared_prefix_nearest_minus_first`` the mean over prompts of the
    difference of the two indicators (bootstrap interval over prompts). A model that
    copies what followed the most recent earlier occurrence of the current letter follows
    the nearest; one that copies what followed its first occurrence, the first. None when
    the prompts do not fit the task (:func:`shared_prefix_fits`).
    """
    if not shared_prefix_fits(task, prefix_len):
        return {}
    seq, first, nearest = shared_prefix_prompts(task, prefix_len, n, seed)
    predicted = _logits(model, seq)[:, -1].argmax(-1)
    follows_first, follows_nearest = predicted == first, predicted == nearest
    return {"shared_prefix_follows_first": rate_measure(follows_first),
            "shared_prefix_follows_nearest": rate_measure(follows_nearest),
            "shared_prefix_nearest_minus_first": mean_measure(follows_nearest.double()
                                                              - follows_first.double())}
