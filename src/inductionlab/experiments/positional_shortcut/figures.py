"""The positional-shortcut experiment's figures, each declared with its named inputs
(:mod:`inductionlab.formatting.figure_registry`) and drawn by the workflow's ``figure`` rule to
results/figures/study/; :mod:`.plots` draws them, imported only then."""
from __future__ import annotations

from ...formatting.figure_registry import STUDY, figure, settings, table
from .tables import OFFSETS, POSITIONS

# one figure per table, named as the table it draws
OFFSETS_FIGURE, POSITIONS_FIGURE = OFFSETS.name, POSITIONS.name
STUDY_SETTINGS = settings("positional_shortcut")


@figure(OFFSETS_FIGURE, STUDY, offsets=table(OFFSETS.name), settings=STUDY_SETTINGS)
def attention_by_offset(inputs):
    from .plots import offsets_figure_of

    return offsets_figure_of(inputs["offsets"], inputs["settings"])


@figure(POSITIONS_FIGURE, STUDY, positions=table(POSITIONS.name), settings=STUDY_SETTINGS)
def positional_scores(inputs):
    from .plots import positions_figure_of

    return positions_figure_of(inputs["positions"], inputs["settings"])
