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
    """The task exists in tasks: and position alone does not solve it, every variant
    retrained exists and trains on another task, and no variant has the name of a retrained
    model."""
    where = "experiments.formation"
    tasks = config.get("tasks") or {}
    problems = []
    if settings["task"] not in tasks:
        problems.append(f"{where}.task: {settings['task']!r} is not a task of tasks: "
                        f"{sorted(tasks)}; add it, e.g. tasks: {{{settings['task']}: "
                        "{kind: variable_period}}")
    else:
        problems += _positional_task_problems(where, settings["task"], config)
    return problems + retraining_problems("formation", "formation study", model_names(settings),
                                          config, "task", settings["task"], "write_up")


def _positional_task_problems(where: str, name: str, config: dict) -> list[str]:
    """A line when every sequence of task ``name`` repeats with one period n: looking n
    positions back solves it, so the study would not see a rule that reads content. A task
    that does not resolve is left to the tasks: check, which names it."""
    from ...core.tasks import resolve_task, task_from_dict
    from ...stages.behaviour.period_test import trained_periods

    try:
        task = task_from_dict(resolve_task(config, name))
    except (ValueError, TypeError, KeyError):
        return []
    periods = trained_periods(task)
    if len(periods) > 1:
        return []
    return [f"{where}.task: every sequence of {name!r} ({task.kind}) repeats with period "
            f"{periods[0]}, so looking {periods[0]} positions back solves it by position alone; "
            "retrain on a task whose period varies, e.g. {kind: variable_period, min_period: 3, "
            "max_period: 8}"]
