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
adding one is a new folder here and edits no other file. This loader finds them.
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
    that its commands and checks are registered."""
    found = {}
    for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda i: i.name):
        folder = HERE / info.name
        if info.ispkg and (folder / "rules.smk").is_file():
            importlib.import_module(f"{__name__}.{info.name}")
            found[info.name] = Experiment(info.name, folder)
    return found


def claims_files(rule_files) -> list[Path]:
    """The claims file of each experiment whose ``rules.smk`` is among ``rule_files`` (the
    rule files the config check returns: the experiments switched on, in order), for those
    that have one."""
    on = {str(Path(f).resolve()) for f in rule_files}
    return [e.claims for e in available().values()
            if str(e.rules.resolve()) in on and e.claims.is_file()]
