"""The failure-mode suite: every repetition pattern of a block (the set partitions of its
positions), its probability under the training distribution, and a model's accuracy on
sampled blocks of each pattern (docs/methods.md, "Behaviour")."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd
import torch

from ...core.data import ALPHABET, TaskConfig, repeat_blocks
from ...core.seeding import generator
from ...analysis.uncertainty import binomial_interval, bootstrap_interval, interval_columns
from ...core.decoding import greedy_complete
from ...core.bounds import EVAL_CHUNK  # sequences through the model at once
from .measures import completion_accuracy
from ...core.formats import declare_table

# failure_modes.csv: one row per repetition pattern; the greedy columns name the prompt
# length (behaviour.failure_prompt_len).
FAILURE_MODES = declare_table(
    "failure_modes", ["variant", "seed", "pattern", "n_distinct", "adjacent_repeats",
                      "probability", "teacher_forced_acc", *interval_columns("teacher_forced_acc"),
                      "error_mass", "error_share"],
    keys=["pattern", "n_distinct", "adjacent_repeats"],
    more=r"greedy_(acc|exact)_prompt\d+(_low|_high)?")



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


# Bell(block_len) patterns are listed up to this many (Bell(7) = 877); beyond, the suite
# samples this many distinct ones (Bell(26) is about 5e19: not to be listed).
MAX_PATTERNS = 1000


def bell(n: int) -> int:
    """The number of set partitions of n positions (the Bell triangle)."""
    row = [1]
    for _ in range(n - 1):
        nxt = [row[-1]]
        for value in row:
            nxt.append(nxt[-1] + value)
        row = nxt
    return row[-1]


def suite_patterns(n: int, vocab_size: int, seed: int) -> tuple[str, ...]:
    """The patterns the suite scores: every one when Bell(n) is at most
    :data:`MAX_PATTERNS`; else the one-letter and all-distinct patterns and the distinct
    patterns of blocks drawn as in training (so the common ones), up to that many, in
    canonical order."""
    if bell(n) <= MAX_PATTERNS:
        return repetition_patterns(n)
    found = {"A" * n, ALPHABET[:n]}
    gen = generator(seed, "failure-mode-patterns")
    for _ in range(64):  # draws of MAX_PATTERNS blocks; repeats grow rare past the first
        blocks = torch.randint(0, vocab_size, (MAX_PATTERNS, n), generator=gen)
        for block in blocks.tolist():
            found.add(pattern_of("".join(ALPHABET[i] for i in block)))
            if len(found) == MAX_PATTERNS:
                return tuple(sorted(found))
    return tuple(sorted(found))


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
    patterns = suite_patterns(task.block_len, task.vocab_size, seed)
    gen = generator(seed, "failure-modes")
    blocks = torch.cat([blocks_with_pattern(p, samples, task.vocab_size, gen) for p in patterns])
    seqs = repeat_blocks(blocks, task.n_blocks)
    start = task.first_predictable
    chunks = [seqs[i:i + EVAL_CHUNK] for i in range(0, len(seqs), EVAL_CHUNK)]  # bounded memory
    correct = torch.cat([(model(c)[:, :-1].argmax(-1) == c[:, 1:])[:, start:].float().mean(-1)
                         for c in chunks])
    greedy = torch.cat([greedy_complete(model, c[:, :prompt_len], task.seq_len) for c in chunks])
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
