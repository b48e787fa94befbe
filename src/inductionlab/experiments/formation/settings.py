"""The formation study's settings: its models' names and the check of its settings against
the rest of the config. Light: the workflow and the command line import it."""
from __future__ import annotations

from ...config import settings_check
from ...stages.settings import SettingsFile, declare_settings
from ..retraining import retraining_problems


# its settings file holds its own keys only: its ``task`` is the name of the task it retrains
# on, which the write-up's task (what other settings files carry as ``task``) would replace
declare_settings("formation", SettingsFile("experiments.formation", ("task", "variants"), task=False))


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
    return problems + retraining_problems("formation", "formation study", model_names(settings),
                                          config, "task", settings["task"], "write_up")
