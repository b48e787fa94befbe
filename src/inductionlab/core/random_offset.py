"""The random-offset task (task kind ``random_offset``).

Per sequence a prefix of r random letters (r uniform in 0..``max_offset``), then a block
of ``block_len`` letters with replacement repeated to fill the context. The prefix has no
sources; token t >= r + n was copied from t − n, t − 2n, ... >= r. The period is fixed but
where the repeats start moves, so a copy is not at a fixed position from the start.

The floor, exactly. Hypotheses r' in 0..max_offset (uniform prior); given a prefix of
length t, r' is consistent when prefix[s] = prefix[s − n] for r' + n <= s < t, with
likelihood V^−min(t, r' + n); it predicts the letter n back when t >= r' + n, else a
uniform letter. Before token r + n every token is a fresh letter, equal to the letter n
before it by chance (probability 1/V, independently), so at target t, with u = min(t, r +
n), the hypotheses consistent are r' >= u − n − k, k the number of such chance matches
going back from token u − 1. A predictable target (t >= r + n) is the letter n back; any
other is fresh, the letter n back with probability 1/V. The expected loss is a finite sum
over r, t and k. The predictor always puts most mass on the letter n back, which is the
target when it has a source: accuracy 1 on predictable targets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .bayes_predictor import Copying, mixture_probs
from .task_kinds import CONTEXT, Floor, TaskSample, declare_task, periodic_sources, setting


@declare_task
@dataclass(frozen=True)
class RandomOffset:
    kind = "random_offset"
    vocab_size: int = setting(26, 2, 26)
    seq_len: int = setting(24, 2, CONTEXT)
    block_len: int = setting(6, 1, CONTEXT)
    max_offset: int = setting(6, 0, CONTEXT)

    def problems(self) -> list[str]:
        if self.block_len < 1 or self.max_offset < 0:
            return [f"block_len {self.block_len} must be at least 1 and max_offset "
                    f"{self.max_offset} at least 0"]
        if self.max_offset + self.block_len >= self.seq_len:
            return [f"max_offset {self.max_offset} + block_len {self.block_len} is outside the "
                    f"context of {self.seq_len} tokens: the block must repeat at least once"]
        return []

    def _draw(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, each sequence's first repeated position)."""
        T, L = self.seq_len, self.block_len
        starts = torch.randint(0, self.max_offset + 1, (n,), generator=gen)
        prefix = torch.randint(0, self.vocab_size, (n, T), generator=gen)
        blocks = torch.randint(0, self.vocab_size, (n, L), generator=gen)
        t = torch.arange(T)[None, :]
        in_block = (t - starts[:, None]).clamp_min(0) % L
        return torch.where(t < starts[:, None], prefix, blocks.gather(1, in_block)), starts

    def sample_tokens(self, n: int, gen: torch.Generator) -> torch.Tensor:
        return self._draw(n, gen)[0]

    def sample(self, n: int, gen: torch.Generator) -> TaskSample:
        tokens, starts = self._draw(n, gen)
        return TaskSample(tokens, periodic_sources(torch.full((n,), self.block_len), starts,
                                                   self.seq_len))

    @property
    def shortest_context(self) -> int:
        """The fewest tokens that hold two copies of the block after the longest prefix."""
        return self.max_offset + 2 * self.block_len

    def hypotheses(self) -> list[Copying]:
        """Offset r copies the letter ``block_len`` back from token r + block_len on."""
        return [Copying(self.block_len, r + self.block_len) for r in range(self.max_offset + 1)]

    def bayes_probs(self, tokens: torch.Tensor, scored: bool = False) -> torch.Tensor:
        """The Bayes predictor on ``tokens`` [B, T]: float64 [B, T, V], row i the distribution
        of token i + 1 given tokens[:i + 1] (see :mod:`.bayes_predictor`; ``scored``: told also
        that token i + 1 has a source)."""
        return mixture_probs(tokens, self.hypotheses(), self.vocab_size, scored)

    def floor(self) -> Floor:
        """Exact (the module's docstring). Told that the target has a source, every
        hypothesis left predicts the letter n back, the target: loss 0, accuracy 1."""
        R, L, T = self.max_offset, self.block_len, self.seq_len
        losses = [[self.expected_loss(t, r) for t in range(1, T)] for r in range(R + 1)]
        pred = [loss for r, row in enumerate(losses) for t, loss in enumerate(row, 1) if t >= r + L]
        return Floor(sum(pred) / len(pred), 1.0, sum(map(sum, losses)) / ((R + 1) * (T - 1)),
                     0.0, 1.0)

    def expected_loss(self, t: int, r: int) -> float:
        """E[−ln P(token t | the t tokens before)] of the Bayes predictor over sequences of
        offset r: a sum over the number k of chance matches (token s equal to token s − n)
        going back from token min(t, r + n) − 1 to token n."""
        V, L, R = self.vocab_size, self.block_len, self.max_offset
        u = min(t, r + L)  # tokens before u match the letter n back only by chance
        chances = max(0, u - L)
        total = 0.0
        for k in range(chances + 1):
            p_k = V ** -k * ((1 - 1 / V) if k < chances else 1.0)
            weights = {h: V ** -min(t, h + L) for h in range(max(0, u - L - k), R + 1)}
            copy = sum(w for h, w in weights.items() if t >= h + L) / sum(weights.values())
            if t >= r + L:  # the target is the letter n back
                loss = -math.log(copy + (1 - copy) / V)
            else:  # a fresh letter: the letter n back with probability 1 / V
                loss = (-math.log(copy + (1 - copy) / V) / V
                        - (1 - 1 / V) * math.log((1 - copy) / V))
            total += p_k * loss
        return total
