"""The dynamics stage's settings file: the keys of ``dynamics:`` its jobs read. Light: the
workflow imports it."""
from __future__ import annotations

from ..settings import SettingsFile, declare_settings

declare_settings("dynamics", SettingsFile("dynamics", ("n_sequences", "eval_size")))
