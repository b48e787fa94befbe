"""The dynamics stage: importing it registers its commands, declares its figures and
its settings file (:mod:`.settings`)."""
from . import commands, figures, settings  # noqa: F401

# its modules that declare the tables it writes (imported by inductionlab.stages.tables,
# not here: they import torch)
TABLE_MODULES = ("dynamics", "loss_pca")
