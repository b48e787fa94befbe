"""What every task kind is made of: a sample with the sources of its tokens, the floor of
the task, and the declaration of a kind (see :mod:`.tasks` for the kinds and how a task
is named in a config). Kinds import this module; it imports none of them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_KINDS: dict[str, type] = {}


@dataclass(frozen=True)
class TaskSample:
    """Sequences and the sources of their tokens.

    ``tokens`` int64 [B, T]; ``sources`` bool [B, T + 1, T] (token, earlier position;
    token T is the continuation after the sequence)."""

    tokens: torch.Tensor
    sources: torch.Tensor

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def to(self, device) -> "TaskSample":
        return TaskSample(self.tokens.to(device), self.sources.to(device))

    def __getitem__(self, index) -> "TaskSample":
        return TaskSample(self.tokens[index], self.sources[index])

    @property
    def predictable(self) -> torch.Tensor:
        """Bool [B, T - 1]: prediction ``i`` is for a token that has a source."""
        return predictable_targets(self.sources)


def predictable_targets(sources: torch.Tensor) -> torch.Tensor:
    """Bool [B, T - 1] from sources [B, T + 1, T]: does token ``i + 1`` have a source?"""
    return sources[:, 1:-1].any(-1)


def query_sources(sources: torch.Tensor) -> torch.Tensor:
    """The sources of each query's target: bool [B, T, T] (query i, key j) = sources of
    token i + 1 (for the last query, the continuation's)."""
    return sources[:, 1:]


def periodic_sources(periods: torch.Tensor, starts: torch.Tensor, T: int) -> torch.Tensor:
    """Sources of sequences that repeat with period ``periods[b]`` from position
    ``starts[b]`` on: token t (0..T, T the continuation) was copied from every j with
    starts[b] <= j < t and t − j a multiple of the period. Bool [B, T + 1, T]."""
    t = torch.arange(T + 1)[None, :, None]
    j = torch.arange(T)[None, None, :]
    n, r = periods[:, None, None], starts[:, None, None]
    return (j < t) & (j >= r) & ((t - j) % n == 0)


@dataclass(frozen=True)
class Floor:
    """What the task's Bayes predictors reach, in expectation over the task (argmax
    accuracy with ties split; a statistic over predictable targets pools them over
    sequences).

    ``loss_pred``, ``acc_pred``: the all-target Bayes predictor (the best distribution of
    every next token given its prefix, the predictor whose loss over every target is
    lowest), judged on the predictable targets. ``loss_all``: its mean loss over every
    target, the lowest any predictor can reach there. ``scored_loss_pred``,
    ``scored_acc_pred``: the predictor told also that the target has a source, judged on
    the predictable targets: the best any predictor can do where only those targets are
    scored (it may spend nothing on the others). NaN where not computed."""

    loss_pred: float
    acc_pred: float
    loss_all: float = math.nan
    scored_loss_pred: float = math.nan
    scored_acc_pred: float = math.nan


def declare_task(cls):
    """Class decorator: declare a task kind (a frozen dataclass with a ``kind`` class
    attribute, ``vocab_size`` and ``seq_len``, ``sample``, ``floor`` and ``bayes_probs``:
    its Bayes predictor on given sequences, :mod:`.bayes_predictor`; optionally
    ``sample_tokens``, the tokens of ``sample`` from the same draws without the sources,
    which training reads alone). Declaring a kind twice differently is an error."""
    if _KINDS.setdefault(cls.kind, cls) is not cls:
        if _KINDS[cls.kind].__qualname__ != cls.__qualname__:
            raise ValueError(f"task kind {cls.kind!r} is declared twice, differently")
    return cls




def training_tokens(task, n: int, gen: torch.Generator) -> torch.Tensor:
    """A training batch: the tokens of ``task.sample(n, gen)``, without forming the sources
    every step where the kind can (``sample_tokens``: on a CPU the sources of a 256-sequence
    batch cost half a millisecond, a tenth of a 1-layer model's step)."""
    sampler = getattr(task, "sample_tokens", None)
    return sampler(n, gen) if sampler is not None else task.sample(n, gen).tokens
