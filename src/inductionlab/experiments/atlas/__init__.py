"""The formation atlas: the formation study's models trained over a grid of context lengths,
initialisations and interventions during training, and the law of formation time fitted
across it (:mod:`.settings`: the grid; :mod:`.analysis`: its tables; rules ``rules.smk``)."""
from . import commands, settings  # noqa: F401 - registers the command and the settings check
