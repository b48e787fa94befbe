"""The repeated-block letter task (the write-up's; task kind ``repeated_block``).

A sequence is a block of ``block_len`` letters drawn uniformly with replacement
from ``vocab_size`` letters, repeated ``n_blocks`` times. Position ``i`` predicts
token ``i + 1``; targets inside the first block are unpredictable, every later
target is a copy of the token ``block_len`` positions earlier.
"""
from __future__ import annotations

import math
import string
from dataclasses import dataclass

import torch

from .bayes_predictor import Copying, mixture_probs
from .seeding import generator
from .task_kinds import Floor, TaskSample, declare_task, periodic_sources, setting


@declare_task
@dataclass(frozen=True)
class TaskConfig:
    """A block of ``block_len`` letters drawn with replacement, repeated ``n_blocks``
    times; the sources of token t >= n are t − n, t − 2n, ... >= 0."""

    kind = "repeated_block"
    vocab_size: int = setting(26, 2, 26)
    block_len: int = setting(6, 1, 128)
    n_blocks: int = setting(4, 2, 64)

    def sample_tokens(self, n: int, gen: torch.Generator) -> torch.Tensor:
        return sample_sequences(n, self, gen)

    def sample(self, n: int, gen: torch.Generator) -> TaskSample:
        tokens = self.sample_tokens(n, gen)
        periods = torch.full((n,), self.block_len)
        return TaskSample(tokens, periodic_sources(periods, torch.zeros(n, dtype=torch.long),
                                                   self.seq_len))

    def bayes_probs(self, tokens: torch.Tensor, scored: bool = False) -> torch.Tensor:
        """The Bayes predictor on ``tokens`` [B, T]: float64 [B, T, V], row i the distribution
        of token i + 1 given tokens[:i + 1]: the letter n back from token n on, uniform before
        and from where a sequence breaks the repeat on (see :mod:`.bayes_predictor`)."""
        return mixture_probs(tokens, [Copying(self.block_len, self.block_len)], self.vocab_size,
                             scored)

    def floor(self) -> Floor:
        """Every predictable target is the letter n back: loss 0 and accuracy 1 on them,
        whether or not the predictor is told which they are; the first block's n − 1
        predicted letters cost ln V each."""
        return Floor(0.0, 1.0, loss_floor(self), 0.0, 1.0)

    def problems(self) -> list[str]:
        return [] if self.block_len >= 1 and self.n_blocks >= 2 else [
            f"block_len {self.block_len} and n_blocks {self.n_blocks}: a block must repeat"]

    @property
    def seq_len(self) -> int:
        return self.block_len * self.n_blocks

    @property
    def first_predictable(self) -> int:
        """Index (into the ``seq_len - 1`` predictions) of the first predictable target.

        Prediction ``i`` is made at position ``i`` for token ``i + 1``; token
        ``block_len`` is the first one that repeats an earlier token.
        """
        return self.block_len - 1

    @classmethod
    def from_dict(cls, d: dict) -> "TaskConfig":
        return cls(**{k: d[k] for k in ("vocab_size", "block_len", "n_blocks") if k in d})


def sample_blocks(n: int, task: TaskConfig, gen: torch.Generator) -> torch.Tensor:
    """``n`` blocks of letters drawn uniformly with replacement: int64 [n, block_len]."""
    return torch.randint(0, task.vocab_size, (n, task.block_len), generator=gen, device=gen.device)


def repeat_blocks(blocks: torch.Tensor, n_blocks: int) -> torch.Tensor:
    """Repeat each block ``n_blocks`` times along the sequence axis."""
    return blocks.repeat(1, n_blocks)


def sample_sequences(n: int, task: TaskConfig, gen: torch.Generator) -> torch.Tensor:
    """``n`` task sequences: int64 [n, seq_len]."""
    return repeat_blocks(sample_blocks(n, task, gen), task.n_blocks)


def control_sample(n: int, task, seed: int) -> torch.Tensor:
    """The positional control: ``n`` sequences of ``seq_len`` letters drawn uniformly and
    independently (no repeated block), from the generator (seed, "control-sample");
    ``task``: any kind (its letters and context are read), the model's own task where the
    control is paired with the model's task sample."""
    return torch.randint(0, task.vocab_size, (n, task.seq_len), generator=generator(seed, "control-sample"))


def validation_set(n: int, task, seed: int) -> TaskSample:
    """A fixed validation set of ``task`` (any kind); depends only on ``(n, task, seed)``."""
    return task.sample(n, generator(seed, "validation"))


def loss_floor(task: TaskConfig) -> float:
    """Lowest achievable mean loss over all predictions: the unpredictable ones cost ln V."""
    n_pred = task.seq_len - 1
    return task.first_predictable / n_pred * math.log(task.vocab_size)


ALPHABET = string.ascii_uppercase


def _letter(ch: str) -> str:
    """The character ``ch`` upper-cased when it is ASCII, else ``ch`` itself (no task letter):
    Unicode upper-cases the dotless ``ı`` to ``I``, the long ``ſ`` to ``S`` and ``ﬆ`` to the
    two letters ``ST``, none of which was typed."""
    return ch.upper() if ch.isascii() else ch


def encode(text: str, vocab_size: int = 26) -> torch.Tensor:
    """Letters to token ids; raises ``ValueError`` naming the first bad character."""
    letters = ALPHABET[:vocab_size]
    ids = []
    for pos, ch in enumerate(text):
        up = _letter(ch)
        if up not in letters:
            raise ValueError(
                f"prompt {text!r}: character {ch!r} at position {pos} is not one of the "
                f"{vocab_size} letters {letters[0]}-{letters[-1]}"
            )
        ids.append(letters.index(up))
    return torch.tensor(ids, dtype=torch.long)


def decode(ids) -> str:
    return "".join(ALPHABET[int(i)] for i in ids)


def check_prompt(prompt: str, task: TaskConfig) -> torch.Tensor:
    """Token ids of ``prompt``; ``ValueError`` naming the prompt if it cannot be completed.

    Letters are case-insensitive. A prompt must be non-empty, use only the task's
    letters and be shorter than the context (something is left to complete).
    """
    letters = ALPHABET[:task.vocab_size]
    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"prompt {prompt!r}: empty; give at least one letter")
    bad = sorted({ch for ch in prompt if _letter(ch) not in letters})
    if bad:
        raise ValueError(f"prompt {prompt!r}: character(s) {bad} are not among the "
                         f"{task.vocab_size} letters {letters[0]}-{letters[-1]}")
    if len(prompt) >= task.seq_len:
        raise ValueError(f"prompt {prompt!r}: {len(prompt)} letters; it must be shorter than "
                         f"the context of {task.seq_len} tokens")
    return encode(prompt, task.vocab_size)
