"""The formats of every table the pipeline's stages write (:mod:`inductionlab.core.formats`),
declared by the modules that write them: importing this module imports those, so that a
reader finds every format by the table's name. An experiment's tables are declared when
its package is loaded (:func:`inductionlab.experiments.available`)."""
from __future__ import annotations

from . import (ablations, attention, behaviour, circuits, dynamics,  # noqa: F401
               failure_modes, loss_pca, offset_attribution)
from ..core import train  # noqa: F401
from ..core.formats import ID_COLUMNS, TableFormat, declared, table_format  # noqa: F401


def known_format(name: str, what: str) -> TableFormat:
    """The format of table ``name``; ValueError naming ``what`` asked and the known tables
    when no stage declares one."""
    fmt = table_format(name)
    if fmt is None:
        raise ValueError(f"{what}: no stage writes a table {name!r}; known: "
                         f"{', '.join(sorted(declared()))}")
    return fmt
