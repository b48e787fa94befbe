"""The dynamics stage's figures (:mod:`inductionlab.formatting.figure_registry`): the
measures over training across seeds, the phase change of a model, and the variants' phase
changes side by side."""
from __future__ import annotations

from ...formatting.figure_registry import MODELS, figure, model_rows, stacked_table, table


@figure("dynamics", dynamics=table("dynamics"))
def dynamics(inputs, model):
    from .plots import dynamics_bands

    return dynamics_bands(model_rows(inputs["dynamics"], model, "dynamics", "value"), model)


@figure("phase_change", dynamics=table("dynamics"), phase_change=table("phase_change"))
def phase_change(inputs, model):
    from .dynamics import read_phase_change
    from .plots import phase_change_figure

    phase = read_phase_change(inputs["phase_change"])
    return phase_change_figure(model_rows(inputs["dynamics"], model, "dynamics", "value"),
                               phase[phase["variant"] == model], model)


@figure("phase_change", MODELS, dynamics=table("dynamics"), phase_change=table("phase_change"))
def phase_change_side_by_side(inputs, models):
    from .dynamics import read_phase_change
    from .plots import phase_change_models

    return phase_change_models(stacked_table(inputs["dynamics"], "dynamics", "value"),
                               read_phase_change(inputs["phase_change"]), models)
