"""The variable-period task (task kind ``variable_period``).

Per sequence a period n is drawn uniformly from ``min_period``..``max_period``, a block of
n letters with replacement, tiled and cut to the context. The sources of token t >= n are
t − n, t − 2n, ... >= 0 with that sequence's n, so a copy's position moves with n and a
model must infer n from the prefix: looking a fixed number of positions back does not
solve it.

The floor is the Bayes-optimal predictor's, computed exactly. Given a prefix of length t,
P(m | prefix) ∝ P(m) · V^−min(t, m) over the periods m consistent with it (prefix[s] =
prefix[s − m] for every m <= s < t); the next letter is the mixture over m of "the letter
m back" (t >= m) and uniform (t < m). Everything the predictor does depends on the block
only through which of its positions hold equal letters (its repetition pattern, a set
partition), so the expectation is a finite sum over periods and patterns.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from .task_kinds import Floor, TaskSample, declare_task, periodic_sources

# the exact floor sums over every repetition pattern of a block of max_period letters
MAX_PERIOD = 10  # Bell(10) = 115,975 patterns


@declare_task
@dataclass(frozen=True)
class VariablePeriod:
    kind = "variable_period"
    vocab_size: int = 26
    seq_len: int = 24
    min_period: int = 3
    max_period: int = 8

    def problems(self) -> list[str]:
        if not 1 <= self.min_period <= self.max_period:
            return [f"min_period {self.min_period} and max_period {self.max_period}: need "
                    "1 <= min_period <= max_period"]
        if self.max_period > min(self.seq_len - 2, MAX_PERIOD):
            return [f"max_period {self.max_period} is outside the context: a period must leave "
                    f"a repeat to predict in {self.seq_len} tokens and be at most {MAX_PERIOD} "
                    "(the exact floor sums over every repetition pattern of a block)"]
        return []

    def sample(self, n: int, gen: torch.Generator) -> TaskSample:
        periods = torch.randint(self.min_period, self.max_period + 1, (n,), generator=gen)
        blocks = torch.randint(0, self.vocab_size, (n, self.max_period), generator=gen)
        pos = torch.arange(self.seq_len)[None, :] % periods[:, None]
        tokens = blocks.gather(1, pos)
        return TaskSample(tokens, periodic_sources(periods, torch.zeros(n, dtype=torch.long),
                                                   self.seq_len))

    def floor(self) -> Floor:
        periods = list(range(self.min_period, self.max_period + 1))
        return period_mixture_floor(periods, self.vocab_size, self.seq_len)


@lru_cache(maxsize=None)
def set_partitions(n: int) -> np.ndarray:
    """Every set partition of n positions as restricted growth strings: int [Bell(n), n]
    (position k's class; classes numbered in order of first appearance)."""
    rows = [[0]] if n else [[]]
    for _ in range(1, n):
        rows = [r + [c] for r in rows for c in range(max(r) + 2)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), n)


def pattern_probability(patterns: np.ndarray, vocab: int) -> np.ndarray:
    """P(a block drawn with replacement from ``vocab`` letters has each pattern): the
    falling factorial V (V − 1) ... (V − k + 1) / V^n for a pattern of k classes."""
    k = patterns.max(1) + 1 if patterns.shape[1] else np.zeros(len(patterns), dtype=int)
    n = patterns.shape[1]
    logp = np.array([math.lgamma(vocab + 1) - math.lgamma(vocab - c + 1) if c <= vocab
                     else -np.inf for c in k]) - n * math.log(vocab)
    return np.exp(logp)


def period_mixture_floor(periods: list[int], vocab: int, T: int) -> Floor:
    """The Bayes-optimal predictor of sequences whose period is uniform over ``periods``
    (each a block tiled to T letters), in expectation: see the module's docstring."""
    prior = 1.0 / len(periods)
    num_pred = num_acc = num_all = 0.0
    den_pred = 0.0
    for n in periods:
        patterns = set_partitions(n)
        prob = pattern_probability(patterns, vocab) * prior  # [P]
        x = patterns[:, np.arange(T) % n]  # class of every position [P, T]
        loss, correct = _bayes_predictions(x, periods, vocab, T)  # [P, T] for targets t = 1..T-1
        targets = np.arange(T)
        pred = targets >= n  # token t has a source
        pred[0] = False
        num_pred += float(prob @ loss[:, pred].sum(1))
        num_acc += float(prob @ correct[:, pred].sum(1))
        num_all += float(prob @ loss[:, 1:].sum(1))
        den_pred += prior * pred.sum()
    return Floor(num_pred / den_pred, num_acc / den_pred, num_all / (T - 1))


def _bayes_predictions(x: np.ndarray, periods: list[int], vocab: int, T: int):
    """For every sequence (row of class labels ``x`` [P, T]) and target t: the Bayes
    predictor's loss −ln P(x_t | x_<t) and its argmax accuracy (ties split evenly), [P, T]
    (column 0 unused)."""
    P = x.shape[0]
    labels = int(x.max()) + 1
    loss = np.zeros((P, T))
    correct = np.zeros((P, T))
    # consistent[m][:, t]: x[s] == x[s - m] for every m <= s < t
    consistent = {}
    for m in periods:
        eq = np.ones((P, T + 1), dtype=bool)
        if m < T:
            eq[:, m + 1:] = np.cumprod(x[:, m:] == x[:, :-m], axis=1).astype(bool)
        consistent[m] = eq
    onehot = np.eye(labels)[x]  # [P, T, labels]
    for t in range(1, T):
        weight = np.zeros((P, len(periods)))
        for k, m in enumerate(periods):
            weight[:, k] = consistent[m][:, t] * vocab ** (-min(t, m))
        weight /= weight.sum(1, keepdims=True)
        uniform = sum(weight[:, k] for k, m in enumerate(periods) if t < m) / vocab \
            if any(t < m for m in periods) else np.zeros(P)
        score = np.zeros((P, labels))  # mass on each class's letter beyond the uniform part
        for k, m in enumerate(periods):
            if t >= m:
                score += weight[:, k, None] * onehot[:, t - m]
        truth = x[:, t]
        p_true = uniform + score[np.arange(P), truth]
        loss[:, t] = -np.log(p_true)
        best = score.max(1)
        # letters outside every candidate class tie at `uniform`; they win only when no
        # class has any mass (then V letters tie)
        none = best <= 0
        ties = (np.isclose(score, best[:, None], rtol=0, atol=1e-12) & (score > 0)).sum(1)
        is_best = np.isclose(score[np.arange(P), truth], best, rtol=0, atol=1e-12) & ~none
        correct[:, t] = np.where(none, 1.0 / vocab, np.where(is_best, 1.0 / np.maximum(ties, 1), 0.0))
    return loss, correct
