"""The positional-table study: the write-up's models retrained with another q/k table.

The write-up's ``original`` table takes its frequencies from the raw dimension index,
so most of its dimensions turn slowly and the table varies with position almost only
in its first few; the ``standard`` table pairs dimensions as in the usual sinusoid.
The study's models and claim family are declared by its rule file, its settings checked
in :mod:`.settings`; this module measures how the tables differ.
"""
from __future__ import annotations

from ...core.model import sinusoidal_table


def variance_share(form: str, seq_len: int, d: int, first: int = 3) -> float:
    """Share of the table's variance over positions 1 to seq_len - 1 (summed over
    dimensions) that its ``first`` dimensions hold. Position 0 is left out: the original
    table's row 0 is zero by construction."""
    per_dim = sinusoidal_table(seq_len, d, form)[1:].var(dim=0)
    return float(per_dim[:first].sum() / per_dim.sum())
