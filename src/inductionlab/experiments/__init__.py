"""The experiments: each one folder here, holding everything that is its own.

An experiment ``<name>/`` is a package with

- ``rules.smk``: its rules, report sections, tables and any models it registers (the
  workflow includes it when ``experiments.<name>`` is in the config);
- ``schema.yaml``: the keys of ``experiments.<name>`` with their defaults (without one,
  the experiment takes no settings);
- ``prose.yaml``: the words of its report section, if it has one;
- ``claims.yaml``: claims on its own tables, if it has any (a ``claims:`` list using the
  groups of workflow/claims.yaml), evaluated with the workflow's when it is switched on;
- its modules: what it computes, draws and the commands its rules run. Importing the
  package (its ``__init__``) registers its commands (:func:`inductionlab.stages.commands.command`),
  its settings check (:func:`inductionlab.config.settings_check`) and its settings file
  (:func:`inductionlab.stages.settings.declare_settings`).

Switching an experiment on is one line in config.yaml (``experiments: {<name>: {}}``);
adding one is a new folder here and edits no other file. The loader of every folder of
the pipeline, stages and experiments alike (:mod:`inductionlab.folders`), finds them. A folder
here that is no experiment (no ``__init__.py``, so not a package, or no ``rules.smk``) is
not loaded: it is listed with what it lacks, so that switching it on says so instead of
"no experiment of that name". The config check and the workflow import only the
experiments switched on (and every folder only when a task names a kind the core does not
declare); one whose import fails is one line naming it, where it is used, and nowhere else.
"""
from __future__ import annotations

from pathlib import Path

from ..folders import KIND_FOLDERS, Folder, find

HERE = Path(__file__).resolve().parent


def available(load: bool = True) -> dict[str, Folder]:
    """Every experiment folder (a package with a rules.smk), by name; each imported when
    ``load``, so that its commands and checks are registered. A folder that is not a
    package (no ``__init__.py``), has no ``rules.smk`` or whose import fails is listed too,
    with its ``problem`` saying what it lacks or the error's first line: the config check
    refuses to switch it on, naming it, and nothing else stops on it."""
    return find(HERE, __name__, "experiment", load=load)


# an experiment folder may declare a task kind: looked for when a task names one the core lacks
KIND_FOLDERS["experiment"] = lambda: available()


def claims_files(rule_files) -> list[Path]:
    """The claims file of each experiment whose ``rules.smk`` is among ``rule_files`` (the
    rule files the config check returns: the experiments switched on, in order), for those
    that have one."""
    on = {str(Path(f).resolve()) for f in rule_files}
    return [e.claims for e in available(load=False).values()
            if e.problem is None and str(e.rules.resolve()) in on and e.claims.is_file()]
