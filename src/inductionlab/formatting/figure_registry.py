"""Every figure of the workflow, declared once by name beside the code that draws it.

A figure is a function decorated with :func:`figure`: its name, its scope and its named
inputs. The workflow's one ``figure`` rule draws each to
``results/figures/<subject>/<name>.png``, where the subject says the scope:

- a model's name: the figure of that model across its seeds (scope ``model``), drawn as
  ``draw(inputs, model)``;
- ``models``: the write-up's models side by side (scope ``models``), ``draw(inputs, models)``;
- ``study``: a figure of a study (scope ``study``, an experiment's), ``draw(inputs)``.

``inputs`` maps each input's name to its path, or to a list of paths for the kinds that
name one file of several models or seeds. The kinds (each a function here):
:func:`table` (a stacked table of results/tables/), :func:`settings` (a settings file of
results/settings/), :func:`each_seed` (a file of the model in every seed's folder),
:func:`first_seed` (the same in the first seed's) and :func:`each_variant` (a file of
every variant, first seed). The rule's paths, the command line and the drawing function
all use these names: nothing depends on the order the inputs are listed in.

This module is light (no plotting library, no torch): the workflow imports it, and the
modules that declare figures (:mod:`.figures`, an experiment's ``figures.py``, imported
with its package), when it is parsed; a drawing function imports what it draws with when
it runs. Whoever draws a figure imports the declaring modules first (the ``figure``
command, the workflow).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

MODEL, MODELS, STUDY = "model", "models", "study"
SCOPES = (MODEL, MODELS, STUDY)
# the kinds of input whose value is a list of paths
LISTS = ("each_seed", "each_variant")


@dataclass(frozen=True)
class Input:
    """One input of a figure: its ``kind`` and the table, settings or file it names."""
    kind: str
    name: str
    summary: bool = False


def table(name: str, summary: bool = False) -> Input:
    """The stacked table ``name`` (results/tables/<name>.csv), or its summary."""
    return Input("table", name, summary)


def settings(name: str) -> Input:
    """The settings file ``name`` (results/settings/<name>.json)."""
    return Input("settings", name)


def each_seed(file: str) -> Input:
    """``file`` of the figure's model in every seed's folder (a list)."""
    return Input("each_seed", file)


def first_seed(file: str) -> Input:
    """``file`` of the figure's model in its first seed's folder."""
    return Input("first_seed", file)


def each_variant(file: str) -> Input:
    """``file`` of every variant in its first seed's folder (a list, in the variants' order)."""
    return Input("each_variant", file)


@dataclass(frozen=True)
class Figure:
    name: str
    scope: str
    inputs: dict[str, Input] = field(default_factory=dict)
    draw: Callable | None = None


FIGURES: dict[tuple[str, str], Figure] = {}


def figure(name: str, scope: str = MODEL, **inputs: Input):
    """Declare the decorated function as the drawing of figure ``name`` of ``scope``, with
    the named ``inputs``."""
    if scope not in SCOPES:
        raise ValueError(f"figure {name!r}: scope {scope!r} is not one of {', '.join(SCOPES)}")
    bad = [k for k, v in inputs.items() if not isinstance(v, Input)]
    if bad:
        raise ValueError(f"figure {name!r}: inputs {', '.join(bad)} are not declared with "
                         "table(), settings(), each_seed(), first_seed() or each_variant()")

    def register(draw: Callable) -> Callable:
        declared = Figure(name, scope, dict(inputs), draw)
        if FIGURES.setdefault((scope, name), declared) != declared:
            raise ValueError(f"figure {name!r} of scope {scope} is declared twice")
        return draw
    return register


def scope_of(subject: str) -> str:
    """The scope of a figure folder's name: ``models``, ``study``, or a model's name."""
    return subject if subject in (MODELS, STUDY) else MODEL


def declared(subject_or_scope: str, name: str) -> Figure:
    """The figure ``name`` of a scope (or of a figure folder's subject); ValueError naming
    the figures of that scope when there is none."""
    scope = subject_or_scope if subject_or_scope in SCOPES else scope_of(subject_or_scope)
    if (scope, name) not in FIGURES:
        known = sorted(n for s, n in FIGURES if s == scope)
        raise ValueError(f"unknown figure {name!r} of scope {scope}; known: "
                         f"{', '.join(known) or 'none'}")
    return FIGURES[scope, name]


def inputs_from_pairs(figure_: Figure, pairs: list[str]) -> dict:
    """The ``name=path`` pairs of a command line as a figure's inputs: a list for the kinds
    in :data:`LISTS`, one path for the others. ValueError for a pair with no ``=``, a name
    the figure does not declare, one it declares that is missing, or one path given twice
    for a single input."""
    given: dict[str, list[str]] = {}
    for pair in pairs:
        name, sep, path = str(pair).partition("=")
        if not sep or not path:
            raise ValueError(f"input {pair!r} is not name=path")
        if name not in figure_.inputs:
            raise ValueError(f"figure {figure_.name!r} has no input {name!r}; its inputs: "
                             f"{', '.join(figure_.inputs) or 'none'}")
        given.setdefault(name, []).append(path)
    missing = [n for n in figure_.inputs if n not in given]
    if missing:
        raise ValueError(f"figure {figure_.name!r} lacks its input(s) {', '.join(missing)}")
    out = {}
    for name, paths in given.items():
        if figure_.inputs[name].kind in LISTS:
            out[name] = paths
        elif len(paths) > 1:
            raise ValueError(f"figure {figure_.name!r}: input {name!r} is one file, given "
                             f"{len(paths)} times")
        else:
            out[name] = paths[0]
    return out


def draw(name: str, subject: str, pairs: list[str], models: list[str] | None = None):
    """Figure ``name`` of ``subject`` (a model, ``models`` or ``study``) drawn from the
    ``name=path`` ``pairs``; ``models``: the models a ``models`` figure shows, in order."""
    declared_ = declared(subject, name)
    inputs = inputs_from_pairs(declared_, pairs)
    if declared_.scope == MODEL:
        return declared_.draw(inputs, subject)
    if declared_.scope == MODELS:
        return declared_.draw(inputs, list(models or []))
    return declared_.draw(inputs)


def pairs_of(inputs: dict) -> list[str]:
    """A figure's inputs by name (a path or a list of paths each) as ``name=path`` pairs."""
    return [f"{name}={path}" for name, given in inputs.items()
            for path in (given if isinstance(given, (list, tuple)) else [given])]


def write_figure(name: str, subject: str, inputs: dict, out, models: list[str] | None = None):
    """Figure ``name`` of ``subject`` drawn from ``inputs`` (name -> path or paths) and saved
    to ``out`` at print size."""
    from .plots import save

    save(draw(name, subject, pairs_of(inputs), models), out)


def stacked_table(path, name: str, *needed: str):
    """The stacked ``name`` table of every model, checked to hold the key columns of its
    format and the columns ``needed`` (each one the format declares). The module that
    writes the table declares its format (:func:`inductionlab.core.formats.declare_table`)."""
    from ..core.formats import ID_COLUMNS, declared, table_format
    from ..core.loading import read_table

    fmt = table_format(name)
    if fmt is None:
        raise ValueError(f"a figure: no stage writes a table {name!r}; known: "
                         f"{', '.join(sorted(declared()))}")
    columns = [*ID_COLUMNS, *fmt.keys, *fmt.require(*needed)]
    return read_table(path, columns, kind=f"the stacked {name} table (results/tables/{name}.csv)")


def model_rows(path, model: str, name: str, *needed: str):
    """The rows of ``model`` in the stacked ``name`` table (:func:`stacked_table`)."""
    frame = stacked_table(path, name, *needed)
    return frame[frame["variant"] == model]


def task_floor(settings_path) -> float:
    """The loss floor of the task of a settings file (its ``task``)."""
    from ..core.data import TaskConfig, loss_floor
    from ..core.loading import read_json

    document = read_json(settings_path, "the stage settings", ["task"])
    return loss_floor(TaskConfig.from_dict(document["task"]))
