"""The readings stage's command: what the summary reads of every model, from the stacked tables."""
from __future__ import annotations

from ..commands import command, path, write_tables


@command("readings", "what the summary reads of every model: its best head's content or "
         "position reading beside the period test, and its algorithm as measured",
         head_scores=path("the stacked head_scores table"),
         behaviour=path("the stacked behaviour table (the period test)"),
         offset_profile=path("the stacked offset_profile table"),
         algorithm_fit=path("the stacked algorithm_fit table"),
         content_or_position=path("content_or_position.csv to write"),
         algorithms=path("algorithm_readings.csv to write"))
def readings(head_scores, behaviour, offset_profile, algorithm_fit, content_or_position, algorithms):
    from . import readings as R
    from ...core.loading import read_table

    scores = read_table(head_scores, ["variant", "seed", "layer", "head", "induction"],
                        kind="the stacked head_scores table")
    period = read_table(behaviour, ["variant", "seed", "metric", "value"],
                        kind="the stacked behaviour table")
    profile = read_table(offset_profile, ["variant", "seed", "component", "sample", "source",
                                          "offset", "value", "low", "high"],
                         kind="the stacked offset_profile table")
    fit = read_table(algorithm_fit, ["variant", "seed", "program", "sample", "metric", "value"],
                     kind="the stacked algorithm_fit table")
    write_tables({"positions": R.content_or_position(scores, period),
                  "algorithms": R.algorithm_table(profile, fit)},
                 {"positions": content_or_position, "algorithms": algorithms})
