"""The positional-table study's settings: its models' names and the check of its settings
against the rest of the config. Light: the workflow and the command line import it."""
from __future__ import annotations

from ...config import settings_check
from ..retraining import retraining_problems


def model_names(settings: dict) -> dict[str, str]:
    """Variant -> the name of its retrained model, ``<variant>_<pos_encoding>``."""
    return {v: f"{v}_{settings['pos_encoding']}" for v in settings["variants"]}



@settings_check("positional_table")
def check_settings(settings: dict, config: dict) -> list[str]:
    """The study's settings against the rest of a validated config: every variant it
    retrains exists and has another table than the study's, and no variant has the name
    of a retrained model."""
    return retraining_problems("positional_table", "positional-table study", model_names(settings),
                               config, "pos_encoding", settings["pos_encoding"], "original")
