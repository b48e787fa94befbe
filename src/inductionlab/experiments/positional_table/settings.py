"""The positional-table study's settings: its models' names and the check of its settings
against the rest of the config. Light: the workflow and the command line import it."""
from __future__ import annotations

from ...config import settings_check


def model_names(settings: dict) -> dict[str, str]:
    """Variant -> the name of its retrained model, ``<variant>_<pos_encoding>``."""
    return {v: f"{v}_{settings['pos_encoding']}" for v in settings["variants"]}



@settings_check("positional_table")
def check_settings(settings: dict, config: dict) -> list[str]:
    """The study's settings against the rest of a validated config: every variant it
    retrains exists and has another table than the study's, and no variant has the name
    of a retrained model."""
    where = "experiments.positional_table"
    problems = [f"variants.{name}: {name!r} is also the name of the positional-table study's "
                f"retrained {v!r}; rename the variant" for v, name in model_names(settings).items()
                if name in config["variants"]]
    for v in settings["variants"]:
        if v not in config["variants"]:
            problems.append(f"{where}.variants: {v!r} is not in variants {sorted(config['variants'])}")
        elif config["variants"][v].get("pos_encoding", "original") == settings["pos_encoding"]:
            problems.append(f"{where}.pos_encoding: variant {v!r} has pos_encoding "
                            f"{settings['pos_encoding']!r} already; retraining it would change nothing")
    return problems
