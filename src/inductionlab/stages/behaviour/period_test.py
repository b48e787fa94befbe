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
from ...core.metrics import chunked_logits
from ...core.seeding import generator

from .measures import Measure, mean_measure, rate_measure
from .failure_modes import blocks_with_pattern


def period_sequences(task: TaskConfig, period: int, n: int, seed: int) -> torch.Tensor:
    """``n`` sequences of ``seq_len`` tokens that repeat a block of ``period`` distinct letters
    (drawn uniformly without replacement; generator (seed, "period-{period}")): [n, T]."""
    blocks = blocks_with_pattern(ALPHABET[:period], n, task.vocab_size,
                                 generator(seed, f"period-{period}"))
    return repeat_blocks(blocks, -(-task.seq_len // period))[:, :task.seq_len]


def trained_periods(task) -> list[int]:
    """The periods a task's sequences repeat with, as its sampler draws them: every period of
    a ``variable_period`` task's range, the block length of any other kind."""
    if hasattr(task, "min_period"):
        return list(range(task.min_period, task.max_period + 1))
    return [int(task.block_len)]


def period_test_lengths(configured, own=None, seq_len: int = 24) -> list[int]:
    """The block lengths of the period test of a model trained on ``own``: the configured
    ones and every period ``own`` trains, and for a task whose period ranges over several
    values the untrained lengths on either side of that range (2 … min − 1 and max + 1 …
    ⌊T/2⌋, a block that repeats at least once in ``seq_len`` tokens), so that what the
    model never saw is tested. A task with one period (the write-up's) is tested on the
    configured lengths and its own."""
    lengths = set(int(p) for p in configured)
    if own is not None:
        trained = trained_periods(own)
        lengths |= set(trained)
        if len(trained) > 1:
            lengths |= set(range(2, min(trained))) | set(range(max(trained) + 1, seq_len // 2 + 1))
    return sorted(lengths)


def split_ties_accuracy(probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Argmax accuracy of next-letter distributions ``probs`` [..., V] on ``targets`` [...],
    ties split evenly: 1 / (number of letters tied at the top) where the target is one of
    them, else 0."""
    top = probs.max(-1, keepdim=True).values
    tied = torch.isclose(probs, top, rtol=0, atol=1e-12)
    hit = tied.gather(-1, targets[..., None])[..., 0]
    return hit.double() / tied.sum(-1).double()


@torch.no_grad()
def period_measures(model, task: TaskConfig, periods, n: int, seed: int,
                    own=None) -> dict[str, Measure]:
    """The period test: ``period{p}_acc``, teacher-forced argmax accuracy on
    :func:`period_sequences` of each period p of :func:`period_test_lengths`, with its
    bootstrap interval over sequences; with the model's own task ``own``, also
    ``period{p}_trained`` (1 when the task's sampler draws period p, else 0: an untrained
    length) and ``period{p}_task_acc``, the accuracy of that task's Bayes-optimal predictor
    on the same blocks and predictions (ties split). A flat curve over the trained periods
    is what that predictor does; only the untrained ones show a rule that holds beyond them.

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
    trained = set(trained_periods(own)) if own is not None else set()
    for p in period_test_lengths(periods, own, task.seq_len):
        seq = period_sequences(task, p, n, seed)
        correct = (chunked_logits(model, seq)[:, p:-1].argmax(-1) == seq[:, p + 1:]).float()
        out[f"period{p}_acc"] = mean_measure(correct.mean(-1), correct.mean().item())
        if own is not None:
            out[f"period{p}_trained"] = Measure(float(p in trained))
            predictor = split_ties_accuracy(own.bayes_probs(seq)[:, p:-1], seq[:, p + 1:])
            out[f"period{p}_task_acc"] = mean_measure(predictor.mean(-1))
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
    predicted = chunked_logits(model, seq)[:, -1].argmax(-1)
    follows_first, follows_nearest = predicted == first, predicted == nearest
    return {"shared_prefix_follows_first": rate_measure(follows_first),
            "shared_prefix_follows_nearest": rate_measure(follows_nearest),
            "shared_prefix_nearest_minus_first": mean_measure(follows_nearest.double()
                                                              - follows_first.double())}
