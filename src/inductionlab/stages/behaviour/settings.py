"""The behaviour stage's settings: the settings files it declares (its evaluation, and the
head-role rule apart from it) and the check of its section against the task. Light: the
config check and the workflow import it."""
from __future__ import annotations

from ...analysis.roles import ROLE_RULE
from ...config import settings_check
from ..settings import SettingsFile, declare_settings

# what the analyses of a model measure on: the evaluation sample and its prompts
declare_settings("behaviour", SettingsFile("behaviour", (
    "eval_seed", "n_sequences", "n_random_prompts", "random_prompt_lengths",
    "failure_samples", "failure_prompt_len", "period_lengths", "shared_prefix_len",
    "prompts", "roles.local_window")))
# the head-role rule: applied where results are stacked and read, never by an analysis
declare_settings("roles", SettingsFile("behaviour.roles", ROLE_RULE, task=False))


@settings_check("behaviour")
def check_settings(behaviour: dict, config: dict) -> list[str]:
    """The behaviour settings against the task: every prompt is one of the task's letters
    (and its write-up completions name variants),
    the prompt lengths leave something to complete, and the period test and the shared
    prefix fit (:func:`behaviour_settings_problems`); one line per problem naming the key."""
    from ...core.data import TaskConfig, check_prompt

    task = TaskConfig.from_dict(config["task"])
    problems = []
    for k, item in enumerate(behaviour["prompts"]):
        try:
            check_prompt(item["prompt"], task)
        except ValueError as err:
            problems.append(f"behaviour.prompts.{k}.prompt: {err}")
        for name in item.get("write_up") or {}:
            if name not in config["variants"]:
                problems.append(f"behaviour.prompts.{k}.write_up.{name}: no variant of that name "
                                f"(variants: {', '.join(config['variants'])}); the write-up's "
                                "completion is shown beside the variant it names")
    for key in ("failure_prompt_len",):
        if not task.block_len <= behaviour[key] < task.seq_len:
            problems.append(f"behaviour.{key}: {behaviour[key]} must be at least task.block_len "
                            f"= {task.block_len} and below the sequence length {task.seq_len}")
    for L in behaviour["random_prompt_lengths"]:
        if L >= task.seq_len:
            problems.append(f"behaviour.random_prompt_lengths: {L} leaves nothing to complete "
                            f"(sequence length {task.seq_len})")
    return problems + behaviour_settings_problems(behaviour, task)


def behaviour_settings_problems(settings: dict, task) -> list[str]:
    """What is wrong with ``period_lengths`` and ``shared_prefix_len`` of the behaviour
    settings for ``task``, one line per problem naming the key (none: an empty list).

    A period needs its distinct letters in the vocabulary and a prediction after the
    letter that first repeats: 2 <= p <= min(vocab_size, seq_len - 2). The shared prefix
    leaves each block a letter of its own: 1 <= prefix_len <= block_len - 1.
    """
    problems = []
    top = min(task.vocab_size, task.seq_len - 2)
    for p in settings["period_lengths"]:
        if not 2 <= p <= top:
            problems.append(f"behaviour.period_lengths: {p} must be between 2 and {top} (the "
                            f"block's distinct letters among vocab_size = {task.vocab_size}, and "
                            f"a prediction after its first repeat in {task.seq_len} tokens)")
    prefix = settings["shared_prefix_len"]
    if not 1 <= prefix <= task.block_len - 1:
        problems.append(f"behaviour.shared_prefix_len: {prefix} must be between 1 and "
                        f"task.block_len - 1 = {task.block_len - 1} (each block keeps a letter "
                        "of its own)")
    return problems
