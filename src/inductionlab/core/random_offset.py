"""The random-offset task (task kind ``random_offset``).

Per sequence a prefix of r random letters (r uniform in 0..``max_offset``), then a block
of ``block_len`` letters with replacement repeated to fill the context. The prefix has no
sources; token t >= r + n was copied from t − n, t − 2n, ... >= r. The period is fixed but
where the repeats start moves, so a copy is not at a fixed position from the start.

The floor, exactly. Hypotheses r' in 0..max_offset (uniform prior); given a prefix of
length t, r' is consistent when prefix[s] = prefix[s − n] for r' + n <= s < t, with
likelihood V^−min(t, r' + n); it predicts the letter n back when t >= r' + n, else a
uniform letter. For a predictable target (t >= r + n) every r' >= r is consistent, and an
r' < r is consistent when the k = r − r' letters before the first repeat each happen to
equal the letter n before them (independent, probability 1/V each), so the expected loss
is a finite sum over r, t and the number of such chance matches. The predictor always
puts most mass on the letter n back, which is the target: accuracy 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .task_kinds import Floor, TaskSample, declare_task, periodic_sources


@declare_task
@dataclass(frozen=True)
class RandomOffset:
    kind = "random_offset"
    vocab_size: int = 26
    seq_len: int = 24
    block_len: int = 6
    max_offset: int = 6

    def problems(self) -> list[str]:
        if self.block_len < 1 or self.max_offset < 0:
            return [f"block_len {self.block_len} must be at least 1 and max_offset "
                    f"{self.max_offset} at least 0"]
        if self.max_offset + self.block_len >= self.seq_len:
            return [f"max_offset {self.max_offset} + block_len {self.block_len} is outside the "
                    f"context of {self.seq_len} tokens: the block must repeat at least once"]
        return []

    def sample(self, n: int, gen: torch.Generator) -> TaskSample:
        T, L = self.seq_len, self.block_len
        starts = torch.randint(0, self.max_offset + 1, (n,), generator=gen)
        prefix = torch.randint(0, self.vocab_size, (n, T), generator=gen)
        blocks = torch.randint(0, self.vocab_size, (n, L), generator=gen)
        t = torch.arange(T)[None, :]
        in_block = (t - starts[:, None]).clamp_min(0) % L
        tokens = torch.where(t < starts[:, None], prefix, blocks.gather(1, in_block))
        return TaskSample(tokens, periodic_sources(torch.full((n,), L), starts, T))

    def floor(self) -> Floor:
        V, L, R, T = self.vocab_size, self.block_len, self.max_offset, self.seq_len
        total = count = 0.0
        for r in range(R + 1):
            for t in range(r + L, T):
                for k in range(r + 1):  # chance matches going back from the first repeat
                    p_k = V ** -k * ((1 - 1 / V) if k < r else 1.0)
                    weights = {h: V ** -min(t, h + L) for h in range(r - k, R + 1)}
                    det = sum(w for h, w in weights.items() if t >= h + L)
                    p_true = (det + (sum(weights.values()) - det) / V) / sum(weights.values())
                    total += p_k * -math.log(p_true) / (R + 1)
                count += 1 / (R + 1)
        return Floor(total / count, 1.0)
