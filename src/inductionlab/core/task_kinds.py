"""What every task kind is made of: a sample with the sources of its tokens, the floor of
the task, and the declaration of a kind (see :mod:`.tasks` for the kinds and how a task
is named in a config). Kinds import this module; it imports none of them."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

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


# the longest context a task's settings may ask for: the write-up's task at its largest
# (task.block_len 128 x task.n_blocks 64, the config schema's bounds)
CONTEXT = 128 * 64

# every task shares the letters and the context of the write-up's task (``task:``)
SHARED = ("vocab_size", "seq_len")


def setting(default: int, minimum: int, maximum: int):
    """A task kind's setting: an integer from ``minimum`` to ``maximum``, ``default`` when
    not given (a dataclass field; :func:`setting_problems` checks a given value)."""
    return field(default=default, metadata={"minimum": minimum, "maximum": maximum})


def _integer_problem(value, minimum: int, maximum: int) -> str | None:
    """What keeps ``value`` from being an integer from ``minimum`` to ``maximum``, or None."""
    if isinstance(value, bool):
        return f"{str(value).lower()} is a boolean, not an integer"
    if isinstance(value, float):
        return (f"{value!r} is a float; write an integer ({value:.0f})" if value.is_integer()
                else f"{value!r} is not an integer")
    if isinstance(value, str):
        return f"{value!r} is text, not an integer" + (
            f"; write {value.strip()} without quotes" if value.strip().lstrip("+-").isdigit() else "")
    if not isinstance(value, int):
        return f"{value!r} is a {type(value).__name__}, not an integer"
    if not minimum <= value <= maximum:
        return f"{value} is outside {minimum}..{maximum}"
    return None


def setting_problems(cls, document: dict) -> list[tuple[str, str]]:
    """(key, what is wrong) for every setting of ``document`` that task kind ``cls`` does
    not take or that is not an integer within the setting's bounds (:func:`setting`)."""
    declared = {f.name: f for f in fields(cls)}
    own = [name for name in declared if name not in SHARED]
    shared = [name for name in SHARED if name in declared]
    problems = []
    for key, value in document.items():
        if key not in declared:
            problems.append((key, f"task kind {cls.kind!r} has no setting {key!r}; it takes "
                                  f"{', '.join(own)}, besides the letters and context every "
                                  f"task shares ({', '.join(shared)})"))
            continue
        meta = declared[key].metadata
        problem = _integer_problem(value, meta.get("minimum", -2**63), meta.get("maximum", 2**63))
        if problem:
            problems.append((key, problem))
    return problems


class TaskSettingsError(ValueError):
    """Settings a task kind does not take, each named: ``problems`` holds (key, what is
    wrong); the message is one line."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{key}: {why}" for key, why in problems))


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
