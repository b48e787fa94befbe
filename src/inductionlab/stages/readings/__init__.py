"""The readings stage: importing it registers its commands and declares its figures."""
from . import commands  # noqa: F401
