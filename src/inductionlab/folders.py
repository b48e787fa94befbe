"""The one loader of the pipeline's folders: the stages (inductionlab/stages/<name>/) and
the experiments (inductionlab/experiments/<name>/) are found alike.

A folder is a package holding everything that is its own:

- ``rules.smk``: its rules, report sections and published files (the Snakefile includes
  every stage's, and an experiment's when the config switches it on);
- ``schema.yaml`` (optional): its config section's keys with their defaults (a stage's
  section is the config key of its name, ``behaviour:``; an experiment's is
  ``experiments.<name>``);
- ``prose.yaml`` (optional): the words of its report section;
- ``claims.yaml`` (optional, experiments): claims on its own tables;
- its modules: what it computes, draws (``figures.py`` declares its figures) and the
  commands its rules run. Importing the package (its ``__init__``) registers its
  commands, figures and checks.

A folder that is no package (no ``__init__.py``) or has no ``rules.smk`` is listed with
what it lacks, never imported. A folder is imported only when something uses it (the
config switches an experiment on, a task names a kind the core lacks, the command line
gathers its commands); one whose import fails is listed with the error's first line, and
stops nothing that does not use it.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Folder:
    name: str
    folder: Path
    # what keeps the folder from being one (None: it is one, and may be imported)
    problem: str | None = None
    # the package it is imported as (``inductionlab.experiments``), with its name
    package: str = ""

    @property
    def rules(self) -> Path:
        return self.folder / "rules.smk"

    @property
    def schema(self) -> Path:
        return self.folder / "schema.yaml"

    @property
    def claims(self) -> Path:
        return self.folder / "claims.yaml"


def folders(here: Path) -> list[Path]:
    """The candidate folders of ``here``, by name: never ``__pycache__`` or a hidden one."""
    return sorted(p for p in here.iterdir() if p.is_dir() and p.name.isidentifier()
                  and not p.name.startswith(("_", ".")))


def find(here: Path, package: str, kind: str, load: bool = True,
         isolate: bool = True) -> dict[str, Folder]:
    """Every folder of ``here`` (the package ``package``) that is a ``kind`` (a package
    with a rules.smk), by name, each imported when ``load`` (see :func:`load_folder`;
    ``isolate`` False: an import that fails raises); the others with their ``problem``."""
    found = {}
    packages = {info.name for info in pkgutil.iter_modules([str(here)]) if info.ispkg}
    for folder in folders(here):
        name = folder.name
        if name not in packages:
            found[name] = Folder(name, folder, f"the folder {folder} exists but is not a "
                                 "package (no __init__.py); add an __init__.py to it (empty, "
                                 "or importing its settings check and commands)", package)
        elif not (folder / "rules.smk").is_file():
            a_kind = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            found[name] = Folder(name, folder, f"the folder {folder} has no rules.smk, so it "
                                 f"is not {a_kind}; {a_kind}'s rules are its rules.smk", package)
        else:
            found[name] = Folder(name, folder, package=package)
            if load and not isolate:
                importlib.import_module(f"{package}.{name}")
            elif load:
                found[name] = load_folder(found[name])
    return found


# Where task kinds beyond the core's may be declared: what the folders are ("experiment")
# -> a function returning them, each imported where it imports. A package of such folders
# adds its own when it is imported (inductionlab.experiments); the core's task lookup reads
# them only when a task names a kind the core lacks.
KIND_FOLDERS: dict[str, Callable[[], dict[str, Folder]]] = {}


# the folders whose import failed, module -> what failed: each is tried once (a second
# try would find half of it registered)
_FAILED: dict[str, str] = {}


def load_folder(folder: Folder) -> Folder:
    """``folder`` imported, so that its commands, figures, checks and task kinds are
    registered: ``folder`` itself, or a copy whose ``problem`` names the folder and the
    first line of the error its import raised. Never raises; a folder with a problem
    already is not imported."""
    if folder.problem is not None:
        return folder
    module = f"{folder.package}.{folder.name}"
    if module not in _FAILED:
        try:
            importlib.import_module(module)
        except (Exception, SystemExit) as err:  # noqa: BLE001 - a folder's own code, isolated
            first = next((line for line in str(err).splitlines() if line.strip()), "")
            _FAILED[module] = (f"the folder {folder.folder} does not import: "
                               f"{type(err).__name__}" + (f": {first.strip()}" if first else ""))
    problem = _FAILED.get(module)
    return replace(folder, problem=problem) if problem else folder

