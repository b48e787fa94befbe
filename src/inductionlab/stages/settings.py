"""The settings files a rule reads (results/settings/<name>.json): each holds only the
config keys its readers use, so a change to a key reruns only the jobs that read it.

A file is declared once, by the folder that owns its section (a stage folder's or an
experiment's ``settings.py``, with :func:`declare_settings`), by the config section it is
cut from and the keys of that section it keeps (a dotted key keeps one nested value:
``roles.local_window``); the workflow writes it and the commands refuse a file that is not
the one they expect. The behaviour stage's evaluation (its samples, prompts and the window
of the local score) is one file, the head-role thresholds another: changing a threshold
reruns the jobs that apply the rule (stacking the head scores and the phase change,
claims, figures, the report), never an analysis. A name no folder declares is an
experiment's settings, whole.

Plain Python: the workflow imports it at parse time.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SettingsFile:
    """``section``: the dotted config path it is cut from; ``keys``: the keys of it kept
    (None: every key); ``task``: with the task's settings under ``task``."""

    section: str
    keys: tuple[str, ...] | None = None
    task: bool = True


# name -> declaration, filled by the folders that own the sections (see declare_settings)
SETTINGS_FILES: dict[str, SettingsFile] = {}


def declared(name: str) -> SettingsFile:
    """The declaration of settings file ``name`` (every stage folder imported first: each
    declares its own); an undeclared name is an experiment's settings
    (``experiments.<name>``), whole."""
    if name not in SETTINGS_FILES:
        from . import available

        available()
    return SETTINGS_FILES.get(name) or SettingsFile(f"experiments.{name}")


def _at(config: dict, dotted: str):
    value = config
    for part in dotted.split("."):
        value = value[part]
    return value


def settings_document(config: dict, name: str) -> dict:
    """The content of settings file ``name`` for a resolved ``config``: the declared keys
    of its section, nested as in the config, and the task when declared."""
    spec = declared(name)
    section = _at(config, spec.section)
    document: dict = {}
    for key in spec.keys if spec.keys is not None else list(section):
        *outer, last = key.split(".")
        place = document
        for part in outer:
            place = place.setdefault(part, {})
        place[last] = _at(section, key)
    if spec.task:
        document["task"] = config["task"]
    return document


def expected_keys(name: str) -> list[str]:
    """The top-level keys every settings file ``name`` holds (what tells it from another)."""
    spec = declared(name)
    keys = sorted({k.split(".")[0] for k in spec.keys}) if spec.keys is not None else []
    return keys + (["task"] if spec.task else [])


def declare_settings(name: str, spec: SettingsFile) -> None:
    """Declare settings file ``name`` (the folder owning its section declares it, in its
    ``settings.py``)."""
    if SETTINGS_FILES.setdefault(name, spec) != spec:
        raise ValueError(f"settings file {name!r} is declared twice, differently")


def read_settings(path, name: str) -> dict:
    """Settings file ``name``; one of another kind is refused, naming the file."""
    from ..core.loading import read_json

    return read_json(path, f"the {name} settings (results/settings/{name}.json)",
                     expected_keys(name))
