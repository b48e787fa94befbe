"""The readings stage: importing it registers its commands and declares its figures."""
from . import commands  # noqa: F401

# its modules that declare the tables it writes (imported by inductionlab.stages.tables,
# not here: they import torch)
TABLE_MODULES = ()
