"""Positional shortcut: can one layer solve the task with a learned positional table?
(:mod:`.analysis`; tables :mod:`.tables`; figures :mod:`.figures`, drawn by :mod:`.plots`;
command :mod:`.commands`; settings :mod:`.settings`; claims ``claims.yaml``; rules
``rules.smk``.)"""
# registers the command, the settings check and file, the figures; declares the tables
from . import commands, figures, tables  # noqa: F401
