"""What a model does: greedy completions, the failure-mode suite, habits, ICL score,
the period test and the first-or-nearest prompts.

See docs/methods.md, "Behaviour". Every random sample comes from a generator seeded
with the behaviour settings' ``eval_seed``, so every model sees the same prompts.

Every sampled value of ``behaviour.csv`` carries its 95 % interval (columns ``low`` and
``high``), computed from what the value was measured on (a :class:`Measure`): a mean over
sequences or prompts gets a percentile bootstrap over them
(:func:`~inductionlab.analysis.uncertainty.bootstrap_interval`, seeded from ``eval_seed``
and the metric's name, so every model sees the same resamples); a rate of events (a
repeat rate, a share of letters or prompts) the exact binomial interval on (events,
trials); a count or a standard deviation none (NaN). A rate over letters of greedy
completions counts every letter as a trial, though the letters of one completion are
not independent: its interval can be narrower than a bootstrap over prompts would give.
``failure_modes.csv`` does the same per pattern, over the pattern's sampled blocks.

The period test (:func:`period_measures`) repeats blocks of ``n`` distinct letters for
several ``n``: a model that copies what followed the earlier occurrence of the current
letter (by content) predicts every period, one that copies from a fixed distance back
(by position) only the period it was trained on. The first-or-nearest prompts
(:func:`shared_prefix_measures`) are the write-up's ABCXYZABCDEF made random:
two blocks sharing their first letters, then those letters again; which block's next
letter the model predicts tells whether it follows the first or the nearest occurrence.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import torch

from ..core.data import (ALPHABET, TaskConfig, check_prompt, control_sample, decode, encode,
                         predictable_mask, repeat_blocks, sample_blocks)
from ..core.seeding import generator
from ..config import behaviour_settings_problems
from .uncertainty import binomial_interval, bootstrap_interval, interval_columns

# the schema's defaults, for settings files written before these keys existed
PERIOD_LENGTHS = (4, 5, 6, 7, 8)
SHARED_PREFIX_LEN = 3


# ---------------------------------------------------------------- measured values

@dataclass(frozen=True)
class Measure:
    """A value of ``behaviour.csv`` with what its interval is computed from.

    ``units``: the per-unit values (one per sequence or prompt) whose mean the value is;
    its interval is a percentile bootstrap over them. ``events``: (k, n) of a rate k / n;
    its interval is the exact binomial one (NaN when n = 0). Both (a rate of events that
    come in groups, e.g. the letters of one completion): the union of the two intervals,
    since the letters of one prompt are not independent trials and a bootstrap of no
    event is [0, 0]. Neither: a value with no interval (a count, a standard deviation).
    """
    value: float
    units: np.ndarray | None = None
    events: tuple[int, int] | None = None

    def interval(self, seed: int, purpose: str) -> tuple[float, float]:
        """The 95 % interval (low, high); the bootstrap's resamples come from (seed, purpose)."""
        bounds = []
        if self.units is not None:
            bounds.append(bootstrap_interval(self.units, seed=seed, purpose=purpose))
        if self.events is not None and self.events[1] > 0:
            bounds.append(binomial_interval(*self.events))
        if not bounds:
            return math.nan, math.nan
        return min(b[0] for b in bounds), max(b[1] for b in bounds)


def mean_measure(units: torch.Tensor, value: float | None = None) -> Measure:
    """The mean of per-unit values [units] (``value``: the same mean as already computed)."""
    units = units.detach().double().cpu()
    return Measure(units.mean().item() if value is None else float(value), units=units.numpy())


def rate_measure(events: torch.Tensor) -> Measure:
    """The share of True in a bool tensor, every element a trial; rows of a 2-d tensor are
    also units of a bootstrap (the letters of one prompt, say)."""
    units = events.float().mean(-1).double().numpy() if events.dim() == 2 else None
    return Measure(events.float().mean().item(), units=units,
                   events=(int(events.sum()), events.numel()))


def measure_table(measures: dict[str, Measure], seed: int) -> pd.DataFrame:
    """Columns metric, value, low, high: one row per measure. Every bootstrap resamples the
    units with the same draws for a given number of units (seeded from ``seed``), as one
    resampling of the evaluation sample."""
    low, high = interval_columns("value")
    bounds = [m.interval(seed, "behaviour-units") for m in measures.values()]
    return pd.DataFrame({"metric": list(measures), "value": [float(m.value) for m in measures.values()],
                         low: [b[0] for b in bounds], high: [b[1] for b in bounds]})


@torch.no_grad()
def _logits(model, tokens: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    return torch.cat([model(tokens[i:i + batch]) for i in range(0, len(tokens), batch)])


# ---------------------------------------------------------------- prompts

def expected_completion(prompt: str, task: TaskConfig) -> str | None:
    """The task's completion of ``prompt`` to ``seq_len``, or None if no task sequence starts so.

    A prompt is in distribution when it repeats with period ``block_len`` and
    holds at least one whole block (otherwise its continuation is not determined).
    """
    p, n = prompt.upper(), task.block_len
    if len(p) < n or any(p[i] != p[i - n] for i in range(n, len(p))):
        return None
    return "".join(p[i % n] for i in range(len(p), task.seq_len))


@torch.no_grad()
def greedy_complete(model, prompts: torch.Tensor, length: int) -> torch.Tensor:
    """Greedy decoding of equal-length prompts [B, P] to ``length`` tokens: [B, length].

    A plain model decodes one position a step with its keys and values kept
    (:func:`~inductionlab.core.decoding.greedy_decode`). Any other (an ablated model, a
    hand-built one with its own pass) runs the sequence so far at each step: the model is
    causal, so the last position's prediction is all that a longer run would add.
    """
    from ..core.decoding import greedy_decode
    from ..core.model import AttentionOnlyTransformer

    if (isinstance(model, AttentionOnlyTransformer)
            and type(model)._run is AttentionOnlyTransformer._run
            and type(model).forward is AttentionOnlyTransformer.forward):
        return greedy_decode(model, prompts, length)
    B, P = prompts.shape
    seq = torch.zeros(B, length, dtype=torch.long, device=prompts.device)
    seq[:, :P] = prompts
    for t in range(P, length):
        seq[:, t] = model(seq[:, :t])[:, -1].argmax(-1)
    return seq


def completion_accuracy(generated: torch.Tensor, expected: torch.Tensor, start: int) -> torch.Tensor:
    """Per sequence: share of positions >= ``start`` where the two agree: [B]."""
    return (generated[:, start:] == expected[:, start:]).float().mean(-1)


def immediate_repeats(seq: torch.Tensor, start: int) -> torch.Tensor:
    """Bool [B, T - start]: token t equals token t - 1, for the tokens t >= start."""
    return seq[:, start:] == seq[:, start - 1:-1]


def in_prompt(seq: torch.Tensor, start: int) -> torch.Tensor:
    """Bool [B, T - start]: token t occurs somewhere in the prompt seq[:, :start]."""
    return (seq[:, start:, None] == seq[:, None, :start]).any(-1)


def prompt_suite(model, prompts: list[str], task: TaskConfig, write_up: list[dict] | None = None,
                 variant: str | None = None) -> pd.DataFrame:
    """One row per suite prompt: completion, expected completion, accuracy, habits."""
    rows = []
    for k, prompt in enumerate(prompts):
        ids = check_prompt(prompt, task)
        seq = greedy_complete(model, ids[None], task.seq_len)
        completion = decode(seq[0, len(prompt):])
        expected = expected_completion(prompt, task)
        reference = (write_up[k] if write_up else {}).get(variant) if variant else None
        rows.append({
            "prompt": prompt.upper(),
            "in_distribution": expected is not None,
            "completion": completion,
            "expected": expected or "",
            "accuracy": (np.mean([a == b for a, b in zip(completion, expected)])
                         if expected else np.nan),
            "write_up_completion": reference or "",
            "immediate_repeat_rate": immediate_repeats(seq, len(prompt)).float().mean().item(),
            "share_in_prompt": in_prompt(seq, len(prompt)).float().mean().item(),
        })
    return pd.DataFrame(rows)


def random_prompt_summary(model, task: TaskConfig, n: int, lengths: list[int], seed: int) -> dict:
    """The values of :func:`random_prompt_measures` (metric -> float)."""
    return {name: m.value for name, m in random_prompt_measures(model, task, n, lengths, seed).items()}


def random_prompt_measures(model, task: TaskConfig, n: int, lengths: list[int],
                           seed: int) -> dict[str, Measure]:
    """Greedy completion of random in- and out-of-distribution prompts.

    In distribution: the first ``L`` tokens of random task sequences (for each L in
    ``lengths``), ``random_len{L}_*``, and the same on blocks of distinct letters
    (the prompts the write-up tried), ``random_distinct_len{L}_*``: accuracy on the
    completed letters, mean (bootstrap over prompts) and std over prompts, the share
    completed perfectly, and the immediate-repeat rate of the completions against that
    of the correct completions (rates: exact binomial). Out of distribution:
    ``2 * block_len`` letters drawn uniformly (no repetition structure), ``ood_len{2n}_*``;
    and two different blocks of distinct letters (``2 * block_len`` distinct letters in
    all; left out when the vocabulary has fewer), ``ood_two_blocks_*``: the share of
    completed letters that continue the first block and the share that continue the
    second, the nearest (:func:`block_continuation`), each a mean over prompts of the
    prompt's share, and ``ood_two_blocks_second_minus_first``, the mean over prompts of
    the difference.
    """
    out = {}
    n_distinct = min(task.vocab_size, task.block_len)
    for L in lengths:
        samples = {
            f"random_len{L}": sample_blocks(n, task, generator(seed, f"random-prompts-{L}")),
            f"random_distinct_len{L}": blocks_with_pattern(
                ALPHABET[:n_distinct], n, task.vocab_size, generator(seed, f"random-distinct-prompts-{L}")),
        }
        for name, blocks in samples.items():
            target = repeat_blocks(blocks, task.n_blocks)
            seq = greedy_complete(model, target[:, :L], task.seq_len)
            acc = completion_accuracy(seq, target, L)
            out.update({
                f"{name}_acc_mean": mean_measure(acc, acc.mean().item()),
                f"{name}_acc_std": Measure(acc.std().item()),
                f"{name}_exact": rate_measure(acc == 1),
                f"{name}_repeat_rate": rate_measure(immediate_repeats(seq, L)),
                f"{name}_repeat_rate_data": rate_measure(immediate_repeats(target, L)),
                f"{name}_share_in_prompt": rate_measure(in_prompt(seq, L)),
            })
    L = 2 * task.block_len
    ood = torch.randint(0, task.vocab_size, (n, L), generator=generator(seed, "random-ood-prompts"))
    seq = greedy_complete(model, ood, task.seq_len)
    out.update({
        f"ood_len{L}_repeat_rate": rate_measure(immediate_repeats(seq, L)),
        f"ood_len{L}_share_in_prompt": rate_measure(in_prompt(seq, L)),
    })
    if 2 * task.block_len <= task.vocab_size:
        letters = torch.argsort(torch.rand(n, task.vocab_size, generator=generator(seed, "two-block-prompts")),
                                dim=1)[:, :2 * task.block_len]
        blocks = letters.view(n, 2, task.block_len)
        seq = greedy_complete(model, letters, task.seq_len)
        first, second = (f.float() for f in block_continuation(seq, blocks, L))
        out.update({"ood_two_blocks_follows_first": mean_measure(first.mean(-1), first.mean().item()),
                    "ood_two_blocks_follows_second": mean_measure(second.mean(-1), second.mean().item()),
                    "ood_two_blocks_second_minus_first": mean_measure(second.mean(-1) - first.mean(-1)),
                    "ood_two_blocks_repeat_rate": rate_measure(immediate_repeats(seq, L))})
    return out


def block_continuation(seq: torch.Tensor, blocks: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Which prompt block each completed letter continues: bool [B, T - start] per block.

    ``blocks`` [B, 2, n]: the prompt's two blocks, each of distinct letters and none
    shared, so a letter belongs to at most one. Letter t continues block b when the
    letter before it, seq[t − 1], stands in b and seq[t] is the letter after it in b,
    cyclically (b repeated). A model that repeats the nearest block exactly continues
    it at every letter, one that repeats the first block at every letter but the first;
    so does one that copies what followed the nearest earlier occurrence of the current
    letter (the write-up's smeared-key completion ABCDEFXYZRST → FXYZRSTFXYZR continues
    the second block at 8 of 12 letters). Random letters: about 1/V · n/V each.
    """
    prev, cur = seq[:, start - 1:-1, None], seq[:, start:, None]  # [B, L, 1]
    follows = []
    for b in range(blocks.shape[1]):
        block = blocks[:, b, None, :]  # [B, 1, n]
        after = block.roll(-1, dims=-1)
        follows.append(((block == prev) & (after == cur)).any(-1))
    return follows[0], follows[1]


def repeat_when_correct(logits: torch.Tensor, tokens: torch.Tensor, start: int) -> tuple[float, int]:
    """Teacher-forced: at the predictions i >= ``start`` whose correct next letter repeats
    the current one (token[i + 1] == token[i]), the share where the argmax predicts that
    repeat, and the number of such predictions. NaN when there are none."""
    k, n = repeat_when_correct_counts(logits, tokens, start)
    if n == 0:
        return float("nan"), 0
    return float(k) / n, n


def repeat_when_correct_counts(logits: torch.Tensor, tokens: torch.Tensor, start: int) -> tuple[int, int]:
    """(k, n) of :func:`repeat_when_correct`: predicted repeats among the n repeating targets."""
    target, current = tokens[:, start + 1:], tokens[:, start:-1]
    repeat = target == current
    predicted = logits[:, start:-1].argmax(-1) == current
    return int((predicted & repeat).sum()), int(repeat.sum())


@torch.no_grad()
def prompt_attention(model, prompts: list[str], greedy: list[str], task: TaskConfig) -> dict:
    """Attention of every suite prompt, on the sequence that shows what the model should do.

    A prompt with a correct completion (:func:`expected_completion`) is run
    teacher-forced on the correct full sequence (prompt + correct completion), so the
    pattern shows where the model looks when its context is right, not on its own
    (possibly wrong) greedy letters. An out-of-distribution prompt has no correct
    completion: it is run on ``greedy``, the model's greedy completion of it. Returns
    numpy arrays (the keys of ``attention.npz``):

    prompts                  [K] str, upper case
    prompt_length            [K] int, letters in each prompt
    prompt_teacher_forced    [K] bool, True: prompt + correct completion; False: greedy
    prompt_tokens            [K, T] int, the sequence each pattern was computed on
    prompt_greedy_tokens     [K, T] int, prompt + greedy completion (for reference)
    prompt_pattern_L{l}      [K, H, T, T] attention of layer l on prompt_tokens
    """
    if len(prompts) != len(greedy):
        raise ValueError(f"{len(prompts)} prompts but {len(greedy)} greedy completions")
    sequences, greedy_sequences, forced = [], [], []
    for prompt, completion in zip(prompts, greedy):
        prompt = prompt.upper()
        expected = expected_completion(prompt, task)
        greedy_sequences.append(encode(prompt + completion, task.vocab_size))
        forced.append(expected is not None)
        sequences.append(encode(prompt + expected, task.vocab_size) if expected is not None
                         else greedy_sequences[-1])
    for prompt, seq in zip(prompts, greedy_sequences):
        if len(seq) != task.seq_len:
            raise ValueError(f"prompt {prompt!r}: prompt + greedy completion has {len(seq)} "
                             f"letters, expected {task.seq_len}")
    tokens = torch.stack(sequences)
    _, cache = model.run_with_cache(tokens)
    arrays = {"prompts": np.array([p.upper() for p in prompts]),
              "prompt_length": np.array([len(p) for p in prompts], dtype=np.int64),
              "prompt_teacher_forced": np.array(forced, dtype=bool),
              "prompt_tokens": tokens.numpy(),
              "prompt_greedy_tokens": torch.stack(greedy_sequences).numpy()}
    for l, pattern in enumerate(cache.pattern):
        arrays[f"prompt_pattern_L{l}"] = pattern.numpy()
    return arrays


# ---------------------------------------------------------------- failure modes

@lru_cache(maxsize=None)
def repetition_patterns(n: int) -> tuple[str, ...]:
    """Every set partition of n positions, as a canonical letter pattern.

    Restricted growth strings: the first position is A, each later position
    reuses an earlier letter or takes the next new one (AAABBB, ABABAB, ABCDEF...).
    Bell(n) patterns; Bell(6) = 203.
    """
    out = []

    def grow(prefix: list[int], n_used: int):
        if len(prefix) == n:
            out.append("".join(ALPHABET[i] for i in prefix))
            return
        for letter in range(n_used + 1):
            grow(prefix + [letter], max(n_used, letter + 1))

    grow([], 0)
    return tuple(out)


def pattern_of(block: str) -> str:
    """The repetition pattern of a block: ``XXYZZY`` -> ``AABCCB``."""
    first: dict[str, str] = {}
    return "".join(first.setdefault(ch, ALPHABET[len(first)]) for ch in block)


def pattern_probability(pattern: str, vocab_size: int) -> float:
    """Probability that a uniformly drawn block has this pattern: V!/(V-k)! / V^n."""
    k = len(set(pattern))
    return math.perm(vocab_size, k) / vocab_size ** len(pattern)


def adjacent_repeats(pattern: str) -> int:
    """Equal neighbours in the repeated sequence: inside the block and across its wrap."""
    return sum(pattern[i] == pattern[(i + 1) % len(pattern)] for i in range(len(pattern)))


def blocks_with_pattern(pattern: str, n: int, vocab_size: int, gen: torch.Generator) -> torch.Tensor:
    """``n`` blocks realising ``pattern``, their distinct letters drawn uniformly: [n, len]."""
    k = len(set(pattern))
    letters = torch.argsort(torch.rand(n, vocab_size, generator=gen), dim=1)[:, :k]
    index = torch.tensor([ALPHABET.index(ch) for ch in pattern])
    return letters[:, index]


@torch.no_grad()
def failure_modes(model, task: TaskConfig, samples: int, prompt_len: int, seed: int) -> pd.DataFrame:
    """Accuracy on every repetition pattern of a block, weighted by how often it occurs.

    Per pattern: teacher-forced argmax accuracy on the predictable targets, with its
    bootstrap interval over the pattern's ``samples`` blocks (``teacher_forced_acc_low``,
    ``_high``); greedy accuracy on the letters completed from a ``prompt_len``-letter
    prompt and the share of blocks completed perfectly, with its exact binomial interval;
    the pattern's probability under uniform sampling; ``error_mass`` = probability x
    teacher-forced error rate and its share of the total.
    """
    patterns = repetition_patterns(task.block_len)
    gen = generator(seed, "failure-modes")
    blocks = torch.cat([blocks_with_pattern(p, samples, task.vocab_size, gen) for p in patterns])
    seqs = repeat_blocks(blocks, task.n_blocks)
    logits = torch.cat([model(seqs[i:i + 4096]) for i in range(0, len(seqs), 4096)])
    start = task.first_predictable
    correct = (logits[:, :-1].argmax(-1) == seqs[:, 1:])[:, start:].float().mean(-1)
    greedy = torch.cat([greedy_complete(model, seqs[i:i + 4096, :prompt_len], task.seq_len)
                        for i in range(0, len(seqs), 4096)])
    greedy_acc = completion_accuracy(greedy, seqs, prompt_len)
    per_block = correct.view(len(patterns), samples)
    exact = (greedy_acc == 1).view(len(patterns), samples)
    # the blocks are the units: axis 0 of [samples, patterns], every pattern at once
    tf_low, tf_high = bootstrap_interval(per_block.T.double().numpy().reshape(samples, -1),
                                         seed=seed, purpose="teacher_forced_acc")
    exact_bounds = [binomial_interval(int(k), samples) for k in exact.sum(-1)]
    tf, ex = "teacher_forced_acc", f"greedy_exact_prompt{prompt_len}"
    frame = pd.DataFrame({
        "pattern": patterns,
        "n_distinct": [len(set(p)) for p in patterns],
        "adjacent_repeats": [adjacent_repeats(p) for p in patterns],
        "probability": [pattern_probability(p, task.vocab_size) for p in patterns],
        tf: per_block.mean(-1).numpy(),
        interval_columns(tf)[0]: np.atleast_1d(tf_low),
        interval_columns(tf)[1]: np.atleast_1d(tf_high),
        f"greedy_acc_prompt{prompt_len}": greedy_acc.view(len(patterns), samples).mean(-1).numpy(),
        ex: exact.float().mean(-1).numpy(),
        interval_columns(ex)[0]: [b[0] for b in exact_bounds],
        interval_columns(ex)[1]: [b[1] for b in exact_bounds],
    })
    frame["error_mass"] = frame["probability"] * (1 - frame["teacher_forced_acc"])
    total = frame["error_mass"].sum()
    frame["error_share"] = frame["error_mass"] / total if total > 0 else 0.0
    return frame


# ---------------------------------------------------------------- in-context learning

def icl_score(loss_pos: torch.Tensor) -> float:
    """Loss at the last prediction minus loss at the first (negative: learns in context)."""
    return float(loss_pos[-1] - loss_pos[0])


@torch.no_grad()
def model_summary(model, tokens: torch.Tensor, task: TaskConfig, logits=None) -> dict:
    """Headline numbers of a model on ``tokens``: loss_all, loss_pred, acc_pred,
    icl_score and loss_pos (the per-prediction loss, a list of T - 1 values).
    ``logits``: the model's logits on ``tokens`` if already computed."""
    from ..core.metrics import task_metrics

    metrics = task_metrics(model(tokens) if logits is None else logits, tokens, task)
    return {"loss_all": metrics["loss_all"], "loss_pred": metrics["loss_pred"],
            "acc_pred": metrics["acc_pred"], "icl_score": icl_score(torch.tensor(metrics["loss_pos"])),
            "loss_pos": metrics["loss_pos"]}


def sequence_measures(logits: torch.Tensor, tokens: torch.Tensor, task: TaskConfig) -> dict[str, Measure]:
    """:func:`model_summary` of the logits on ``tokens``, each value with its sequences'
    own values (bootstrap over sequences): loss_all, loss_pred, acc_pred, icl_score and
    loss_pos{i} for every prediction i; then ``repeat_when_correct_rate`` (exact binomial)
    and ``repeat_when_correct_n`` (a count: no interval)."""
    from ..core.metrics import per_token_loss

    summary = model_summary(None, tokens, task, logits=logits)
    losses = per_token_loss(logits, tokens).double()  # [B, T - 1]
    mask = predictable_mask(task).to(losses.device)
    correct = (logits[:, :-1].argmax(-1) == tokens[:, 1:])[:, mask].double()
    out = {"loss_all": mean_measure(losses.mean(-1), summary["loss_all"]),
           "loss_pred": mean_measure(losses[:, mask].mean(-1), summary["loss_pred"]),
           "acc_pred": mean_measure(correct.mean(-1), summary["acc_pred"]),
           "icl_score": mean_measure(losses[:, -1] - losses[:, 0], summary["icl_score"])}
    out.update({f"loss_pos{i}": mean_measure(losses[:, i], v) for i, v in enumerate(summary["loss_pos"])})
    k, n = repeat_when_correct_counts(logits, tokens, task.first_predictable)
    out["repeat_when_correct_rate"] = Measure(float(k) / n if n else math.nan, events=(k, n))
    out["repeat_when_correct_n"] = Measure(float(n))
    return out


# ---------------------------------------------------------------- content or position

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


# ---------------------------------------------------------------- the stage

def evaluation_samples(task: TaskConfig, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed samples every model is scored on: random task sequences, and task
    sequences whose blocks have distinct letters (for prefix matching)."""
    random = repeat_blocks(sample_blocks(n, task, generator(seed, "behaviour-sample")), task.n_blocks)
    distinct_pattern = ALPHABET[:task.block_len]
    if task.block_len > task.vocab_size:
        raise ValueError("block_len exceeds vocab_size: no block has distinct letters")
    distinct = repeat_blocks(
        blocks_with_pattern(distinct_pattern, n, task.vocab_size, generator(seed, "distinct-sample")),
        task.n_blocks)
    return random, distinct


def behaviour_results(model, spec, settings: dict, log=lambda msg: None) -> tuple[dict, dict]:
    """The behaviour stage's results for one model: ``(tables, arrays)``.

    ``tables``: ``completions``, ``failure_modes``, ``head_scores`` and ``summary`` (metric,
    value, low, high: the value's 95 % interval, NaN where it has none), each with the
    model's variant and seed first; ``arrays``: the mean pattern and offset profile of
    every layer and the patterns on every suite prompt. The summary holds
    :func:`sequence_measures` on the behaviour sample, :func:`random_prompt_measures`,
    :func:`period_measures` (``n_sequences`` sequences per period) and
    :func:`shared_prefix_measures` (``n_random_prompts`` prompts).
    ``spec``: the model's :class:`~inductionlab.core.spec.Spec`; ``settings``: the
    behaviour settings (``period_lengths`` and ``shared_prefix_len`` take their defaults
    when absent). Raises ValueError on a bad prompt or setting before any model runs.
    """
    from .attention import head_score_table, offset_profile
    from .roles import head_roles

    task, name = spec.task, spec.name
    ident = {"variant": spec.variant, "seed": spec.seed}
    prompts = [p["prompt"] for p in settings["prompts"]]
    for p in prompts:  # every prompt and setting is checked before any model runs
        check_prompt(p, task)
    problems = behaviour_settings_problems(settings, task)
    if problems:
        raise ValueError("; ".join(problems))
    seed = settings["eval_seed"]
    periods = settings.get("period_lengths", PERIOD_LENGTHS)
    prefix_len = settings.get("shared_prefix_len", SHARED_PREFIX_LEN)

    log(f"[{name}] scoring heads on {settings['n_sequences']} sequences")
    tokens, distinct = evaluation_samples(task, settings["n_sequences"], settings["eval_seed"])
    control = control_sample(settings["n_sequences"], task, settings["eval_seed"])
    scores, means, logits = head_score_table(model, tokens, distinct, task.block_len,
                                             settings["roles"]["local_window"], return_logits=True,
                                             control_tokens=control, intervals=True,
                                             seed=settings["eval_seed"])
    scores["roles"] = ["+".join(head_roles(row, settings["roles"])) or "none"
                       for row in scores.to_dict("records")]

    log(f"[{name}] prompt suite")
    completions = prompt_suite(model, prompts, task,
                               [p.get("write_up", {}) for p in settings["prompts"]], spec.variant)
    prompt_arrays = prompt_attention(model, list(completions["prompt"]),
                                     list(completions["completion"]), task)

    log(f"[{name}] random prompts, period test, first-or-nearest prompts and failure modes")
    measures = sequence_measures(logits, tokens, task)
    measures.update(random_prompt_measures(model, task, settings["n_random_prompts"],
                                           settings["random_prompt_lengths"], seed))
    measures.update(period_measures(model, task, periods, settings["n_sequences"], seed))
    if not shared_prefix_fits(task, prefix_len):
        log(f"[{name}] no first-or-nearest prompts: {2 * task.block_len - prefix_len} letters "
            f"and {2 * task.block_len + prefix_len} tokens do not fit the task")
    measures.update(shared_prefix_measures(model, task, prefix_len, settings["n_random_prompts"], seed))
    failures = failure_modes(model, task, settings["failure_samples"],
                             settings["failure_prompt_len"], seed)

    arrays = dict(prompt_arrays)
    for l, mean in enumerate(means):
        arrays[f"mean_pattern_L{l}"] = mean.numpy()
        arrays[f"offset_profile_L{l}"] = offset_profile(mean).numpy()

    def tidy(frame):
        return pd.concat([pd.DataFrame([ident] * len(frame)), frame.reset_index(drop=True)], axis=1)

    worst = failures.sort_values("error_mass", ascending=False).head(3)
    log(f"[{name}] acc_pred {measures['acc_pred'].value:.3f}; worst patterns: "
        + ", ".join(f"{r.pattern} ({r.teacher_forced_acc:.2f})" for r in worst.itertuples()))
    tables = {"completions": tidy(completions), "failure_modes": tidy(failures),
              "head_scores": tidy(scores),
              "summary": tidy(measure_table(measures, seed))}
    return tables, arrays
