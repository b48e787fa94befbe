"""The formation study's settings: its models' names and the check of its settings against
the rest of the config. Light: the workflow and the command line import it."""
from __future__ import annotations

from ...config import settings_check


def model_names(settings: dict) -> dict[str, str]:
    """Variant -> the name of its retrained model, ``<variant>_<task>``."""
    return {v: f"{v}_{settings['task']}" for v in settings["variants"]}


@settings_check("formation")
def check_settings(settings: dict, config: dict) -> list[str]:
    """The task exists in tasks:, every variant retrained exists and trains on another
    task, and no variant has the name of a retrained model."""
    where = "experiments.formation"
    tasks = config.get("tasks") or {}
    problems = []
    if settings["task"] not in tasks:
        problems.append(f"{where}.task: {settings['task']!r} is not a task of tasks: "
                        f"{sorted(tasks)}; add it, e.g. tasks: {{{settings['task']}: "
                        "{kind: variable_period}}")
    problems += [f"variants.{name}: {name!r} is also the name of the formation study's "
                 f"retrained {v!r}; rename the variant" for v, name in model_names(settings).items()
                 if name in config["variants"]]
    for v in settings["variants"]:
        if v not in config["variants"]:
            problems.append(f"{where}.variants: {v!r} is not in variants {sorted(config['variants'])}")
        elif config["variants"][v].get("task", "write_up") == settings["task"]:
            problems.append(f"{where}.task: variant {v!r} trains on {settings['task']!r} already; "
                            "retraining it would change nothing")
    return problems
