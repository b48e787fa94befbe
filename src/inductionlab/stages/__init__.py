"""The pipeline's stages, each one folder here with everything that is its own, found by
the loader the experiments use (:mod:`inductionlab.folders`): its rules (``rules.smk``),
its config section's schema (``schema.yaml``, the section of its name), its words
(``prose.yaml``), what it computes, the figures it declares (``figures.py``) and the
commands its rules run (``commands.py``). Adding a stage is a new folder here.

Beside the folders: the command registry (:mod:`.commands`), the settings files a rule
passes to a command (:mod:`.settings`), the table formats every stage declares
(:mod:`.tables`), the commands of the workflow's own machinery (:mod:`.reporting`: stacking
tables, claims, figures, the report; :mod:`.documents`: JSON files; :mod:`.tools`: what
people type) and the parser of them all (:mod:`.registry`).
"""
from __future__ import annotations

from pathlib import Path

from ..folders import Folder, find

HERE = Path(__file__).resolve().parent


def available(load: bool = True) -> dict[str, Folder]:
    """Every stage folder, by name (each imported when ``load``, so that its commands and
    figures are registered)."""
    return find(HERE, __name__, "stage", load=load, isolate=False)
