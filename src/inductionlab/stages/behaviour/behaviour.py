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

import numpy as np
import pandas as pd
import torch

from ...core.data import (ALPHABET, TaskConfig, check_prompt, control_sample, decode, encode,
                          repeat_blocks, sample_blocks)
from ...core.bayes_predictor import target_scores
from ...core.task_kinds import TaskSample
from ...core.decoding import greedy_complete
from ...core.seeding import generator
from .settings import behaviour_settings_problems
from ...core.formats import NATS, declare_table
from .failure_modes import FAILURE_MODES, blocks_with_pattern, failure_modes
from .measures import (Measure, completion_accuracy, immediate_repeats, in_prompt, mean_measure,
                       measure_table, rate_measure)
from .period_test import period_measures, shared_prefix_fits, shared_prefix_measures
from ...core.metrics import per_token_loss, pooled_units, task_metrics
from ...core.tasks import WRITE_UP, out_of_context

# completions.csv: one row per prompt of the suite; behaviour.csv: one row per measure
# (:func:`behaviour_results`), its 95 % interval beside it.
COMPLETIONS = declare_table(
    "completions", ["variant", "seed", "prompt", "in_distribution", "completion", "expected",
                    "accuracy", "write_up_completion", "immediate_repeat_rate", "share_in_prompt"],
    keys=["prompt", "in_distribution", "expected", "write_up_completion"])
# ``task``: the task whose sample the metric is measured on (the model's own, by its name
# in the config, or write_up); a model trained on another task is also measured on the
# write-up's, those metrics prefixed ``write_up_``. ``floor_*``: the Bayes predictors of the
# model's own task (no interval: computed exactly; :class:`~inductionlab.core.task_kinds.Floor`);
# ``write_up_floor_*``: the own task's Bayes predictor on the write-up's evaluation sample.
BEHAVIOUR = declare_table("behaviour", ["variant", "seed", "metric", "value", "low", "high", "task"],
                          keys=["metric", "task"], long=True,
                          units={r"(write_up_)?(floor_)?(scored_)?loss_\w+|(write_up_)?icl_score": NATS})
WRITE_UP_PREFIX = "write_up_"
WRITE_UP_METRICS = ("loss_all", "loss_pred", "acc_pred", "icl_score")  # kept with the prefix
FLOOR_PREFIX = "floor_"

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
    return pd.DataFrame(rows, columns=list(COMPLETIONS.columns[2:]))  # variant, seed: the caller's


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


def repeat_when_correct_counts(logits: torch.Tensor, tokens: torch.Tensor,
                               predictable: torch.Tensor) -> tuple[int, int]:
    """Teacher-forced, (k, n): of the n predictable targets that repeat the current letter
    (token[i + 1] == token[i]), the k where the argmax predicts that repeat (``predictable``
    bool [B, T - 1] or [T - 1])."""
    target, current = tokens[:, 1:], tokens[:, :-1]
    repeat = (target == current) & predictable.expand_as(target)
    predicted = logits[:, :-1].argmax(-1) == current
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


# ---------------------------------------------------------------- in-context learning

def icl_score(loss_pos: torch.Tensor) -> float:
    """Loss at the last prediction minus loss at the first (negative: learns in context)."""
    return float(loss_pos[-1] - loss_pos[0])


@torch.no_grad()
def model_summary(model, sample: TaskSample, logits=None) -> dict:
    """Headline numbers of a model on a task sample: loss_all, loss_pred, acc_pred,
    icl_score and loss_pos (the per-prediction loss, a list of T - 1 values).
    ``logits``: the model's logits on the sample's tokens if already computed."""
    tokens = sample.tokens
    metrics = task_metrics(model(tokens) if logits is None else logits, tokens, sample.predictable)
    return {"loss_all": metrics["loss_all"], "loss_pred": metrics["loss_pred"],
            "acc_pred": metrics["acc_pred"], "icl_score": icl_score(torch.tensor(metrics["loss_pos"])),
            "loss_pos": metrics["loss_pos"]}


def sequence_measures(logits: torch.Tensor, sample: TaskSample) -> dict[str, Measure]:
    """:func:`model_summary` of the logits on a task sample, each value with its sequences'
    own values (bootstrap over sequences): loss_all, loss_pred, acc_pred, icl_score and
    loss_pos{i} for every prediction i; then ``repeat_when_correct_rate`` (exact binomial)
    and ``repeat_when_correct_n`` (a count: no interval). Predictable targets are pooled
    over sequences (:func:`~inductionlab.core.metrics.pooled_units`)."""
    tokens, mask = sample.tokens, sample.predictable
    summary = model_summary(None, sample, logits=logits)
    losses = per_token_loss(logits, tokens).double()  # [B, T - 1]
    correct = logits[:, :-1].argmax(-1) == tokens[:, 1:]
    out = {"loss_all": mean_measure(losses.mean(-1), summary["loss_all"]),
           "loss_pred": mean_measure(pooled_units(losses, mask), summary["loss_pred"]),
           "acc_pred": mean_measure(pooled_units(correct, mask), summary["acc_pred"]),
           "icl_score": mean_measure(losses[:, -1] - losses[:, 0], summary["icl_score"])}
    out.update({f"loss_pos{i}": mean_measure(losses[:, i], v) for i, v in enumerate(summary["loss_pos"])})
    k, n = repeat_when_correct_counts(logits, tokens, sample.predictable)
    out["repeat_when_correct_rate"] = Measure(float(k) / n if n else math.nan, events=(k, n))
    out["repeat_when_correct_n"] = Measure(float(n))
    return out


# ---------------------------------------------------------------- the stage

def evaluation_samples(task, n: int, seed: int) -> tuple[TaskSample, torch.Tensor]:
    """The fixed samples a model is scored on, of ``task`` (any kind): a task sample (tokens
    and sources), and task sequences whose fresh letters are distinct (for prefix
    matching: each letter that is no copy is new, so the target of a match is unambiguous).
    """
    sample = task.sample(n, generator(seed, "behaviour-sample"))
    shape = task.sample(n, generator(seed, "distinct-shape"))
    return sample, distinct_letters(shape, task.vocab_size, generator(seed, "distinct-sample"))


def distinct_letters(sample: TaskSample, vocab_size: int, gen: torch.Generator) -> torch.Tensor:
    """The sequences of ``sample`` with their letters redrawn so that every token without a
    source is a letter not seen before in its sequence (drawn uniformly without
    replacement) and every copy is its source's letter: [B, T]. On the write-up's task:
    blocks of distinct letters, repeated."""
    tokens, sources = sample.tokens, sample.sources[:, :-1]
    B, T = tokens.shape
    fresh = ~sources.any(-1)  # [B, T]
    k = int(fresh.sum(-1).max())
    if k > vocab_size:
        raise ValueError(f"a sequence of the task has {k} letters that are no copy, more than "
                         f"the {vocab_size} letters: no sample with distinct letters")
    letters = torch.argsort(torch.rand(B, vocab_size, generator=gen), dim=1)[:, :k]
    rank = fresh.long().cumsum(-1) - 1
    earliest = sources.float().argmax(-1)  # the first source of a copy
    out = torch.zeros_like(tokens)
    for t in range(T):
        from_source = out.gather(1, earliest[:, t:t + 1]).squeeze(1)
        new = letters.gather(1, rank[:, t:t + 1].clamp_min(0)).squeeze(1)
        out[:, t] = torch.where(fresh[:, t], new, from_source)
    return out


def write_up_measures(model, own, task: TaskConfig, settings: dict, on_write_up: bool,
                      log=lambda msg: None, name: str = "") -> dict[str, Measure]:
    """What :func:`behaviour_results` measures on the write-up's ``task`` besides the prompt
    suite and the failure modes: a model trained on another task (``own``) on the write-up's
    sample (``write_up_*``, with ``own``'s Bayes predictor on it), then
    :func:`random_prompt_measures`, :func:`period_measures` and
    :func:`shared_prefix_measures`."""
    measures, seed = {}, settings["eval_seed"]
    prefix_len = settings["shared_prefix_len"]
    if not on_write_up:  # the same model on the write-up's task
        write_up, _ = evaluation_samples(task, settings["n_sequences"], settings["eval_seed"])
        with torch.no_grad():
            on_task = sequence_measures(model(write_up.tokens), write_up)
        measures.update({f"{WRITE_UP_PREFIX}{k}": on_task[k] for k in WRITE_UP_METRICS})
        # the trained task's Bayes predictor on the same sample, on its predictable targets
        losses, correct = target_scores(own.bayes_probs(write_up.tokens), write_up.tokens)
        mask = write_up.predictable
        measures.update({f"{WRITE_UP_PREFIX}{FLOOR_PREFIX}{k}": mean_measure(pooled_units(v, mask))
                         for k, v in (("loss_pred", losses), ("acc_pred", correct))})
    measures.update(random_prompt_measures(model, task, settings["n_random_prompts"],
                                           settings["random_prompt_lengths"], seed))
    measures.update(period_measures(model, task, settings["period_lengths"],
                                    settings["n_sequences"], seed, own=own))
    if not shared_prefix_fits(task, prefix_len):
        log(f"[{name}] no first-or-nearest prompts: {2 * task.block_len - prefix_len} letters "
            f"and {2 * task.block_len + prefix_len} tokens do not fit the task")
    measures.update(shared_prefix_measures(model, task, prefix_len, settings["n_random_prompts"], seed))
    return measures


def behaviour_results(model, spec, settings: dict, log=lambda msg: None) -> tuple[dict, dict]:
    """The behaviour stage's results for one model: ``(tables, arrays)``.

    ``tables``: ``completions``, ``failure_modes``, ``head_scores`` and ``behaviour`` (metric,
    value, low, high: the value's 95 % interval, NaN where it has none), each with the
    model's variant and seed first; ``arrays``: the mean pattern and offset profile of
    every layer and the patterns on every suite prompt. The behaviour table holds
    :func:`sequence_measures` on the behaviour sample, :func:`random_prompt_measures`,
    :func:`period_measures` (``n_sequences`` sequences per period) and
    :func:`shared_prefix_measures` (``n_random_prompts`` prompts).
    ``spec``: the model's :class:`~inductionlab.core.spec.Spec`; ``settings``: the
    behaviour settings file (every key, as the schema resolves them). Head scores carry
    no roles: the role rule is applied where they are stacked. Raises ValueError on a bad prompt or setting before any model runs.
    """
    from .attention import head_score_table, offset_profile

    task, own, name = TaskConfig.from_dict(settings["task"]), spec.task, spec.name
    on_write_up = spec.task_name == WRITE_UP
    ident = {"variant": spec.variant, "seed": spec.seed}
    prompts = [p["prompt"] for p in settings["prompts"]]
    for p in prompts:  # every prompt and setting is checked before any model runs
        check_prompt(p, task)
    problems = behaviour_settings_problems(settings, task)
    if problems:
        raise ValueError("; ".join(problems))
    seed = settings["eval_seed"]

    log(f"[{name}] scoring heads on {settings['n_sequences']} sequences of its task "
        f"({spec.task_name})")
    sample, distinct = evaluation_samples(own, settings["n_sequences"], settings["eval_seed"])
    control = control_sample(settings["n_sequences"], own, settings["eval_seed"])
    scores, means, logits = head_score_table(model, sample, distinct,
                                             settings["roles"]["local_window"], return_logits=True,
                                             control_tokens=control, intervals=True,
                                             seed=settings["eval_seed"])

    # the write-up's prompts and sequences are task.seq_len tokens: a model with a shorter
    # context is measured on its own task only (the rest is left out, not measured)
    unread = out_of_context(model.cfg.seq_len, task)
    if unread:
        log(f"[{name}] prompt suite, write-up's task, random prompts, period test, "
            f"first-or-nearest prompts and failure modes {unread}")
        completions = prompt_suite(model, [], task)
        # the suite's prompts, each figure saying why it has no pattern
        prompt_arrays = {"prompts": np.array([p.upper() for p in prompts]),
                         "prompts_not_measured": np.array(unread)}
    else:
        log(f"[{name}] prompt suite")
        completions = prompt_suite(model, prompts, task,
                                   [p.get("write_up", {}) for p in settings["prompts"]],
                                   spec.variant)
        prompt_arrays = prompt_attention(model, list(completions["prompt"]),
                                         list(completions["completion"]), task)

    if not unread:
        log(f"[{name}] random prompts, period test, first-or-nearest prompts and failure modes")
    measures = sequence_measures(logits, sample)
    # the own task's floors, exact; the bound of a predictor judged on the scored targets
    # only where it differs from the all-target Bayes predictor's
    floor = own.floor()
    floors = {"loss_pred": floor.loss_pred, "acc_pred": floor.acc_pred, "loss_all": floor.loss_all}
    scored = {"scored_loss_pred": floor.scored_loss_pred, "scored_acc_pred": floor.scored_acc_pred}
    if not np.allclose([floor.scored_loss_pred, floor.scored_acc_pred],
                       [floor.loss_pred, floor.acc_pred], rtol=0, atol=1e-9, equal_nan=True):
        floors.update(scored)
    measures.update({f"{FLOOR_PREFIX}{k}": Measure(float(v)) for k, v in floors.items()})
    own_metrics = list(measures)
    if unread:
        failures = pd.DataFrame(columns=list(FAILURE_MODES.columns[2:]))  # variant, seed: tidy's
    else:
        measures.update(write_up_measures(model, own, task, settings, on_write_up, log, name))
        failures = failure_modes(model, task, settings["failure_samples"],
                                 settings["failure_prompt_len"], seed)
    arrays = dict(prompt_arrays)
    for l, mean in enumerate(means):
        arrays[f"mean_pattern_L{l}"] = mean.numpy()
        arrays[f"offset_profile_L{l}"] = offset_profile(mean).numpy()

    def tidy(frame):
        if frame.empty:
            return pd.DataFrame(columns=[*ident, *frame.columns])
        return pd.concat([pd.DataFrame([ident] * len(frame)), frame.reset_index(drop=True)], axis=1)

    worst = failures.sort_values("error_mass", ascending=False).head(3)
    log(f"[{name}] acc_pred {measures['acc_pred'].value:.3f}; worst patterns: "
        + ", ".join(f"{r.pattern} ({r.teacher_forced_acc:.2f})" for r in worst.itertuples()))
    tables = {"completions": tidy(completions), "failure_modes": tidy(failures),
              "head_scores": tidy(scores),
              "behaviour": tidy(measure_table(measures, seed).assign(
                  task=[spec.task_name if m in own_metrics else WRITE_UP for m in measures]))}
    return tables, arrays
