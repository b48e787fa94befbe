"""Positional shortcut: can one layer solve the task with a learned positional table?
(:mod:`.analysis`; figures :mod:`.plots`; commands :mod:`.commands`; settings
:mod:`.settings`; rules ``rules.smk``.)"""
from . import commands  # noqa: F401 - registers the commands, the settings check and file
