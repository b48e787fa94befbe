"""The variable-period task (task kind ``variable_period``).

Per sequence a period n is drawn uniformly from ``min_period``..``max_period``, a block of
n letters with replacement, tiled and cut to the context. The sources of token t >= n are
t − n, t − 2n, ... >= 0 with that sequence's n, so a copy's position moves with n and a
model must infer n from the prefix: looking a fixed number of positions back does not
solve it.

The floors, exactly. The all-target Bayes predictor (:mod:`.bayes_predictor`): given a
prefix of length t, P(m | prefix) ∝ P(m) · V^−min(t, m) over the periods m consistent with
it (prefix[s] = prefix[s − m] for every m <= s < t); the next letter is the mixture over m
of "the letter m back" (t >= m) and uniform (t < m). Told that the target has a source
(the true period is at most t), the predictor keeps only the periods m <= t: the bound of
a predictor judged on the scored targets only. Everything either does depends on the
block only through which of its positions hold equal letters (its repetition pattern, a
set partition), so each expectation is a finite sum over periods and patterns.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from .bayes_predictor import Copying, mixture_probs, target_scores
from .bounds import FLOOR_ROWS
from .task_kinds import CONTEXT, Floor, TaskSample, declare_task, periodic_sources, setting

# the exact floor sums over every repetition pattern of a block of max_period letters
MAX_PERIOD = 10  # Bell(10) = 115,975 patterns


@declare_task
@dataclass(frozen=True)
class VariablePeriod:
    kind = "variable_period"
    vocab_size: int = setting(26, 2, 26)
    seq_len: int = setting(24, 3, CONTEXT)
    min_period: int = setting(3, 1, CONTEXT)
    max_period: int = setting(8, 1, CONTEXT)

    def problems(self) -> list[str]:
        if not 1 <= self.min_period <= self.max_period:
            return [f"min_period {self.min_period} and max_period {self.max_period}: need "
                    "1 <= min_period <= max_period"]
        if self.max_period > min(self.seq_len - 2, MAX_PERIOD):
            return [f"max_period {self.max_period} is outside the context: a period must leave "
                    f"a repeat to predict in {self.seq_len} tokens and be at most {MAX_PERIOD} "
                    "(the exact floor sums over every repetition pattern of a block)"]
        return []

    def _draw(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, each sequence's period)."""
        periods = torch.randint(self.min_period, self.max_period + 1, (n,), generator=gen)
        blocks = torch.randint(0, self.vocab_size, (n, self.max_period), generator=gen)
        pos = torch.arange(self.seq_len)[None, :] % periods[:, None]
        return blocks.gather(1, pos), periods

    def sample_tokens(self, n: int, gen: torch.Generator) -> torch.Tensor:
        return self._draw(n, gen)[0]

    def sample(self, n: int, gen: torch.Generator) -> TaskSample:
        tokens, periods = self._draw(n, gen)
        return TaskSample(tokens, periodic_sources(periods, torch.zeros(n, dtype=torch.long),
                                                   self.seq_len))

    @property
    def periods(self) -> list[int]:
        return list(range(self.min_period, self.max_period + 1))

    @property
    def shortest_context(self) -> int:
        """The fewest tokens that hold two copies of the longest period."""
        return 2 * self.max_period

    def bayes_probs(self, tokens: torch.Tensor, scored: bool = False) -> torch.Tensor:
        """The Bayes predictor on ``tokens`` [B, T]: float64 [B, T, V], row i the distribution
        of token i + 1 given tokens[:i + 1] (see :mod:`.bayes_predictor`; ``scored``: told also
        that token i + 1 has a source)."""
        return mixture_probs(tokens, period_hypotheses(self.periods), self.vocab_size, scored)

    def floor(self) -> Floor:
        """Exact: a finite sum over periods and repetition patterns (the module's docstring)."""
        return period_mixture_floor(self.periods, self.vocab_size, self.seq_len)


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


def period_hypotheses(periods) -> list[Copying]:
    """The Bayes predictor's hypotheses for periods ``periods``: period m copies the letter m
    back from token m on."""
    return [Copying(m, m) for m in periods]


def period_mixture_floor(periods: list[int], vocab: int, T: int,
                         predictor: list[int] | None = None) -> Floor:
    """The Bayes predictor of sequences whose period is uniform over ``predictor`` (default
    ``periods``), in expectation over sequences whose period is uniform over ``periods``
    (each a block tiled to T letters): see the module's docstring. Every statistic is a
    ratio of expectations over the targets it pools."""
    hypotheses = period_hypotheses(periods if predictor is None else predictor)
    prior = 1.0 / len(periods)
    sums = torch.zeros(5, dtype=torch.float64)  # loss and accuracy pred, loss all, scored pair
    n_pred = 0.0
    for n in periods:
        patterns = set_partitions(n)
        prob = pattern_probability(patterns, vocab) * prior
        keep = prob > 0  # a pattern of more classes than letters never occurs
        x = torch.from_numpy(patterns[keep][:, np.arange(T) % n])  # class of every position
        prob = torch.from_numpy(prob[keep])
        pred = torch.arange(1, T) >= n  # target t = i + 1 has a source
        for rows in torch.arange(len(x)).split(FLOOR_ROWS):
            loss, correct = target_scores(mixture_probs(x[rows], hypotheses, vocab), x[rows])
            s_loss, s_correct = target_scores(
                mixture_probs(x[rows], hypotheses, vocab, scored=True), x[rows])
            per_row = torch.stack([loss[:, pred].sum(1), correct[:, pred].sum(1), loss.sum(1),
                                   s_loss[:, pred].sum(1), s_correct[:, pred].sum(1)], 1)
            sums += prob[rows] @ per_row
        n_pred += prior * int(pred.sum())
    loss_pred, acc_pred, loss_all, s_loss, s_acc = sums.tolist()
    return Floor(loss_pred / n_pred, acc_pred / n_pred, loss_all / (T - 1),
                 s_loss / n_pred, s_acc / n_pred)
