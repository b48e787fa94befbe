"""The offsets stage's figures (:mod:`inductionlab.formatting.figure_registry`): a model's
offset profile across seeds, and the variants' whole-model profiles side by side."""
from __future__ import annotations

from ...formatting.figure_registry import MODELS, figure, model_rows, stacked_table, table


@figure("offset_profile", offset_profile=table("offset_profile"))
def offset_profile(inputs, model):
    from .plots import offset_profile_figure

    return offset_profile_figure(model_rows(inputs["offset_profile"], model, "offset_profile"), model)


@figure("offset_profile", MODELS, offset_profile=table("offset_profile"))
def offset_profile_side_by_side(inputs, models):
    from .plots import offsets_models

    return offsets_models(stacked_table(inputs["offset_profile"], "offset_profile"), models)
