"""The behaviour stage's figures (:mod:`inductionlab.formatting.figure_registry`): the
failure modes and every seed's attention of a model, the variants' attention side by side,
and the period test of every model (the report's first page)."""
from __future__ import annotations

from ...formatting.figure_registry import (MODELS, each_seed, each_variant, figure, first_seed,
                                           model_rows, settings, table)


@figure("failure_modes", failure_modes=table("failure_modes"))
def failure_modes(inputs, model):
    from .failure_plots import failure_chart

    return failure_chart(model_rows(inputs["failure_modes"], model, "failure_modes"), model)


@figure("attention_seeds", attention=each_seed("attention.npz"),
        head_scores=table("head_scores"), spec=first_seed("spec.json"))
def attention_seeds(inputs, model):
    """Every seed's mean patterns, the head scores that order them, the spec (smeared layers)."""
    from .attention_plots import attention_seeds_from_files

    return attention_seeds_from_files(
        model, [*inputs["attention"], inputs["head_scores"], inputs["spec"]])


@figure("attention", MODELS, attention=each_variant("attention.npz"),
        head_scores=table("head_scores"), specs=each_variant("spec.json"))
def attention_side_by_side(inputs, models):
    """The first seed's mean patterns, the head scores that order them, the specs."""
    from .attention_plots import attention_models_from_files

    return attention_models_from_files(
        models, [*inputs["attention"], inputs["head_scores"], *inputs["specs"]])


@figure("period_test", MODELS, behaviour=table("behaviour"), settings=settings("behaviour"))
def period_test(inputs, models):
    """Page 1's figure: the variants, then every other model of the behaviour table."""
    from ...core.loading import read_json, read_table
    from .period_plots import period_figure

    behaviour = read_table(inputs["behaviour"], ["variant", "seed", "metric", "value"],
                           kind="the stacked behaviour table")
    task = read_json(inputs["settings"], "the stage settings", ["task"])["task"]
    shown = [*models, *[m for m in behaviour["variant"].unique() if m not in models]]
    fig = period_figure(behaviour, shown, int(task["block_len"]))
    if fig is None:
        raise ValueError(f"{inputs['behaviour']}: has no period-test rows (period<n>_acc); "
                         "the period test needs behaviour.period_lengths")
    return fig
