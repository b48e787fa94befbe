"""Figures of a study (an experiment's models together), registered by name.

An experiment registers a figure the way it registers a table: in Python, the function
that draws it (:func:`study_figure`, a light module of the experiment's package, imported
when the package is loaded); in its rules, the figure's inputs (the workflow's
``study_figure(name, inputs, settings)``). The workflow's ``study_figure`` rule draws every
registered figure with the ``study-figure`` command to ``results/figures/study/<name>.png``.
A drawing function takes the figure's input paths (in the order the rules list them) and
the path of a settings file, and returns a matplotlib figure. This module imports no
plotting library until a figure is drawn.
"""
from __future__ import annotations

from typing import Callable

STUDY_FIGURES: dict[str, Callable] = {}


def study_figure(name: str):
    """Register the decorated function as the drawing of study figure ``name``."""
    def register(draw: Callable) -> Callable:
        if STUDY_FIGURES.setdefault(name, draw) is not draw:
            raise ValueError(f"study figure {name!r} is registered twice")
        return draw
    return register


def write_study_figure(name: str, settings_path, out, inputs: list) -> None:
    """Study figure ``name`` drawn from ``inputs`` and ``settings_path``, saved to ``out``."""
    from .plots import save

    if name not in STUDY_FIGURES:
        raise ValueError(f"unknown study figure {name!r}; known: {', '.join(STUDY_FIGURES) or 'none'}")
    save(STUDY_FIGURES[name](list(inputs), settings_path), out)
