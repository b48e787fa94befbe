"""Table formats: every table a stage writes is declared once, by the module that writes it.

A :class:`TableFormat` names the table (``results/.../<name>.csv``), the columns every
such table holds, the key columns that identify a row within one model (``variant`` and
``seed`` aside), a pattern for the further columns it may hold (names made from a list,
e.g. one per head score or per layer), and the unit of each quantity. Readers import the
format, or ask for it by name (:func:`table_format`): the stacking of tables takes its
keys, the figures check their columns against it, and the claims refuse a column no
format declares and take the unit of their quantities from it. Plain Python.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

ID_COLUMNS = ("variant", "seed")
# The units a quantity may have (a share, an accuracy, a positivity, a z-score has none).
NATS, LOGITS, SHARE_OF_ATTENTION = "nats", "logits", "share of attention"

_FORMATS: dict[str, "TableFormat"] = {}


@dataclass(frozen=True)
class TableFormat:
    name: str
    columns: tuple[str, ...]          # every column every such table holds, in order
    keys: tuple[str, ...] = ()        # identify a row within one model's table
    more: str = ""                    # regular expression: further columns it may hold
    units: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (pattern, unit)
    long: bool = False                # one quantity per row: its name in ``metric``, its value in ``value``

    def has(self, column: str) -> bool:
        """Does a table of this format hold (or may it hold) ``column``?"""
        return column in self.columns or bool(self.more and re.fullmatch(self.more, column))

    def unit(self, quantity: str) -> str | None:
        """The unit of a column or (in a long table) a metric; None for one without."""
        return next((unit for pattern, unit in self.units if re.fullmatch(pattern, quantity)),
                    None)

    def require(self, *columns: str) -> list[str]:
        """``columns``, each checked to be one this format declares (for a reader's
        column check)."""
        unknown = [c for c in columns if c not in ID_COLUMNS and not self.has(c)]
        if unknown:
            raise KeyError(f"table {self.name!r} has no column(s) {unknown}")
        return list(columns)


def declare_table(name: str, columns, keys=(), more: str = "", units=None,
                  long: bool = False) -> TableFormat:
    """Declare table ``name`` (see :class:`TableFormat`); ``units`` maps a regular
    expression on a quantity's name to its unit. Declaring a name twice differently is an
    error."""
    fmt = TableFormat(name, tuple(columns), tuple(keys), more, tuple((units or {}).items()), long)
    missing = [k for k in fmt.keys if k not in fmt.columns]
    if missing:
        raise ValueError(f"table {name!r}: key column(s) {missing} are not among its columns")
    if _FORMATS.setdefault(name, fmt) != fmt:
        raise ValueError(f"table {name!r} is declared twice, differently")
    return fmt


def table_format(name: str) -> TableFormat | None:
    """The declared format of table ``name``, None for a table nobody declared."""
    return _FORMATS.get(name)


def declared() -> dict[str, TableFormat]:
    """Every table declared so far, by name."""
    return dict(_FORMATS)
