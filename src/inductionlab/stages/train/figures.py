"""The training stage's figures (:mod:`inductionlab.formatting.figure_registry`): the
training curves of a model across its seeds, and of the variants side by side."""
from __future__ import annotations

from ...formatting.figure_registry import (MODELS, figure, model_rows, settings, stacked_table,
                                           table, task_floor)


@figure("training", train_log=table("train_log"), settings=settings("behaviour"))
def training(inputs, model):
    from .plots import training_curves

    return training_curves(model_rows(inputs["train_log"], model, "train_log", "val_loss_all"),
                           model, task_floor(inputs["settings"]))


@figure("training", MODELS, train_log=table("train_log"), settings=settings("behaviour"))
def training_side_by_side(inputs, models):
    from .plots import training_models

    return training_models(stacked_table(inputs["train_log"], "train_log", "val_loss_all"), models,
                           task_floor(inputs["settings"]))
