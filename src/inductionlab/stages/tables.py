"""The formats of every table the pipeline's stages write (:mod:`inductionlab.core.formats`),
declared by the modules that write them: importing this module imports those, so that a
reader finds every format by the table's name. An experiment's tables are declared when
its package is loaded (:func:`inductionlab.experiments.available`)."""
from __future__ import annotations

from .ablations import ablations  # noqa: F401 - importing a module declares its tables
from .behaviour import attention, behaviour, failure_modes  # noqa: F401
from .circuits import circuits  # noqa: F401
from .dynamics import dynamics, loss_pca  # noqa: F401
from .offsets import offset_attribution  # noqa: F401
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
