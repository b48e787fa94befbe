"""The experiments: each one folder here, holding everything that is its own.

An experiment ``<name>/`` is a package with

- ``rules.smk``: its rules, report sections, tables and any models it registers (the
  workflow includes it when ``experiments.<name>`` is in the config);
- ``schema.yaml``: the keys of ``experiments.<name>`` with their defaults;
- ``prose.yaml``: the words of its report section, if it has one;
- ``claims.yaml``: claims on its own tables, if it has any (a ``claims:`` list using the
  groups of workflow/claims.yaml), evaluated with the workflow's when it is switched on;
- its modules: what it computes, draws and the commands its rules run. Importing the
  package (its ``__init__``) registers its commands (:func:`inductionlab.stages.commands.command`),
  its settings check (:func:`inductionlab.config.settings_check`) and its settings file
  (:func:`inductionlab.stages.settings.declare_settings`).

Switching an experiment on is one line in config.yaml (``experiments: {<name>: {}}``);
adding one is a new folder here and edits no other file. This loader finds them. A folder
here that is no experiment (no ``__init__.py``, so not a package, or no ``rules.smk``) is
not loaded: it is listed with what it lacks, so that switching it on says so instead of
"no experiment of that name".
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Experiment:
    name: str
    folder: Path
    # what keeps the folder from being an experiment (None: it is one, and is imported)
    problem: str | None = None

    @property
    def rules(self) -> Path:
        return self.folder / "rules.smk"

    @property
    def schema(self) -> Path:
        return self.folder / "schema.yaml"

    @property
    def claims(self) -> Path:
        return self.folder / "claims.yaml"


def available() -> dict[str, Experiment]:
    """Every experiment folder (a package with a rules.smk), by name; each imported, so
    that its commands and checks are registered. A folder that is not a package (no
    ``__init__.py``) or has no ``rules.smk`` is listed too, never imported, with its
    ``problem`` saying what it lacks: the config check refuses to switch it on, naming it."""
    found = {}
    packages = {info.name for info in pkgutil.iter_modules([str(HERE)]) if info.ispkg}
    for folder in sorted(p for p in HERE.iterdir() if p.is_dir()):
        name = folder.name
        if not name.isidentifier() or name.startswith(("_", ".")):
            continue  # __pycache__, hidden folders: never an experiment's name
        if name not in packages:
            found[name] = Experiment(name, folder, f"the folder {folder} exists but is not a "
                                     "package (no __init__.py); add an __init__.py to it (empty, "
                                     "or importing its settings check and commands)")
        elif not (folder / "rules.smk").is_file():
            found[name] = Experiment(name, folder, f"the folder {folder} has no rules.smk, "
                                     "so it is not an experiment; an experiment's rules are its "
                                     "rules.smk")
        else:
            importlib.import_module(f"{__name__}.{name}")
            found[name] = Experiment(name, folder)
    return found


def claims_files(rule_files) -> list[Path]:
    """The claims file of each experiment whose ``rules.smk`` is among ``rule_files`` (the
    rule files the config check returns: the experiments switched on, in order), for those
    that have one."""
    on = {str(Path(f).resolve()) for f in rule_files}
    return [e.claims for e in available().values()
            if e.problem is None and str(e.rules.resolve()) in on and e.claims.is_file()]
