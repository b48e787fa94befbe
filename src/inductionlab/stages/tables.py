"""The formats of every table the pipeline's stages write (:mod:`inductionlab.core.formats`),
declared by the modules that write them: importing this module imports those (each stage
folder names its own in ``TABLE_MODULES``, in its ``__init__``), so that a reader finds
every format by the table's name. An experiment's tables are declared when its package is
loaded (:func:`inductionlab.experiments.available`)."""
from __future__ import annotations

import importlib

from . import available
from ..core import train  # noqa: F401 - declares the training log
from ..core.formats import ID_COLUMNS, TableFormat, declared, table_format  # noqa: F401

for _stage in available():
    _package = importlib.import_module(f"{__package__}.{_stage}")
    for _module in getattr(_package, "TABLE_MODULES", ()):
        importlib.import_module(f"{_package.__name__}.{_module}")


def known_format(name: str, what: str) -> TableFormat:
    """The format of table ``name``; ValueError naming ``what`` asked and the known tables
    when no stage declares one."""
    fmt = table_format(name)
    if fmt is None:
        raise ValueError(f"{what}: no stage writes a table {name!r}; known: "
                         f"{', '.join(sorted(declared()))}")
    return fmt
