"""The formation atlas: the formation study's models trained over a grid of context lengths,
initialisations and interventions during training, and the law of formation time fitted
across it (:mod:`.settings`: the grid; :mod:`.analysis`: its tables; :mod:`.cost`: its estimated cost; rules ``rules.smk``)."""
from . import commands, cost, settings  # noqa: F401 - its command, settings check and cost
