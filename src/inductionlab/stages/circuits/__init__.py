"""The circuits stage: importing it registers its commands and declares its figures."""
from . import commands, figures  # noqa: F401
