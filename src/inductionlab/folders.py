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
what it lacks, never imported.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Folder:
    name: str
    folder: Path
    # what keeps the folder from being one (None: it is one, and is imported)
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


def folders(here: Path) -> list[Path]:
    """The candidate folders of ``here``, by name: never ``__pycache__`` or a hidden one."""
    return sorted(p for p in here.iterdir() if p.is_dir() and p.name.isidentifier()
                  and not p.name.startswith(("_", ".")))


def find(here: Path, package: str, kind: str, load: bool = True) -> dict[str, Folder]:
    """Every folder of ``here`` (the package ``package``) that is a ``kind`` (a package
    with a rules.smk), by name, each imported when ``load``; the others with their
    ``problem``."""
    found = {}
    packages = {info.name for info in pkgutil.iter_modules([str(here)]) if info.ispkg}
    for folder in folders(here):
        name = folder.name
        if name not in packages:
            found[name] = Folder(name, folder, f"the folder {folder} exists but is not a "
                                 "package (no __init__.py); add an __init__.py to it (empty, "
                                 "or importing its settings check and commands)")
        elif not (folder / "rules.smk").is_file():
            a_kind = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            found[name] = Folder(name, folder, f"the folder {folder} has no rules.smk, so it "
                                 f"is not {a_kind}; {a_kind}'s rules are its rules.smk")
        else:
            if load:
                importlib.import_module(f"{package}.{name}")
            found[name] = Folder(name, folder)
    return found
