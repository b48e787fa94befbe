"""The positional-shortcut experiment's figures, registered by name: the workflow's
``study_figure`` rule draws them (:mod:`inductionlab.report.study_figures`); :mod:`.plots`
draws them, imported only then."""
from __future__ import annotations

from ...report.study_figures import study_figure
from .tables import OFFSETS, POSITIONS

# one figure per table, named as the table it draws
OFFSETS_FIGURE, POSITIONS_FIGURE = OFFSETS.name, POSITIONS.name


@study_figure(OFFSETS_FIGURE)
def attention_by_offset(inputs, settings):
    """inputs: the stacked offsets table."""
    from .plots import offsets_figure_of

    return offsets_figure_of(inputs[0], settings)


@study_figure(POSITIONS_FIGURE)
def positional_scores(inputs, settings):
    """inputs: the stacked positional table."""
    from .plots import positions_figure_of

    return positions_figure_of(inputs[0], settings)
