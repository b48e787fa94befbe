"""The positional-shortcut experiment's settings: its settings file, its model's name and
the check of its settings against the rest of the config. Light: the workflow and the
command line import it."""
from __future__ import annotations

from ...config import settings_check
from ...stages.settings import SettingsFile, declare_settings

# results/settings/positional_shortcut.json: the settings its analysis reads, and the task
# (base_variant and compare choose the models when the rules are read: they rerun nothing)
declare_settings("positional_shortcut", SettingsFile(
    "experiments.positional_shortcut",
    ("prompts", "prompt_len", "n_random_prompts", "n_sequences", "eval_seed")))


def learned_model_name(settings: dict) -> str:
    """The experiment's model: its base variant with a learned table, ``<base>_learned``."""
    return f"{settings['base_variant']}_learned"


@settings_check("positional_shortcut")
def check_settings(settings: dict, config: dict) -> list[str]:
    """The experiment's settings against the rest of a validated config; one message per
    problem, naming the key. Compared variants missing from ``variants`` are not errors
    (the experiment skips them); the base variant must exist."""
    from ...core.data import TaskConfig, check_prompt

    where = "experiments.positional_shortcut"
    task = TaskConfig.from_dict(config["task"])
    problems = []
    if learned_model_name(settings) in config["variants"]:
        problems.append(f"variants.{learned_model_name(settings)}: is also the name of the "
                        "positional-shortcut experiment's learned-table model; rename the variant")
    if settings["base_variant"] not in config["variants"]:
        problems.append(f"{where}.base_variant: {settings['base_variant']!r} is not in variants "
                        f"({', '.join(config['variants'])}); the learned-table model is its spec "
                        "with pos_encoding: learned")
    elif config["variants"][settings["base_variant"]].get("pos_encoding") == "learned":
        problems.append(f"{where}.base_variant: {settings['base_variant']!r} already has a learned "
                        "table; choose a fixed-table variant")
    # the study completes the write-up's prompts to its sequence length: a model must read it
    for key, names in (("base_variant", [settings["base_variant"]]), ("compare", settings["compare"])):
        for name in names:
            context = (config["variants"].get(name) or {}).get("context")
            if context is not None and context < task.seq_len:
                problems.append(f"{where}.{key}: variant {name!r} has a context of {context} "
                                f"tokens, shorter than the write-up's {task.seq_len}-token "
                                "sequences the study completes its prompts to; choose a variant "
                                "whose context is at least that long")
    for k, prompt in enumerate(settings["prompts"]):
        try:
            check_prompt(prompt, task)
        except ValueError as err:
            problems.append(f"{where}.prompts.{k}: {err}")
    if not task.block_len <= settings["prompt_len"] < task.seq_len:
        problems.append(f"{where}.prompt_len: {settings['prompt_len']} must be at least "
                        f"task.block_len = {task.block_len} and below the sequence length "
                        f"{task.seq_len}")
    return problems
