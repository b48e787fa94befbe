"""The formation study: the write-up's models retrained on a task where a copy's position
moves (variable period), to find when and how an induction head forms (:mod:`.analysis`;
its settings :mod:`.settings`; its command :mod:`.commands`; rules ``rules.smk``)."""
from . import commands, settings  # noqa: F401 - register the command and the settings check
