"""The content-or-position reading of a model in words, from its row of the
content_or_position table (:mod:`inductionlab.stages.readings.readings` computes it)."""
from __future__ import annotations

import pandas as pd

from ..stages.readings.readings import CONTENT, NONE, PERIOD, POSITION
from ..analysis.roles import POSITIONAL
from ..formatting.numbers import number
from .front_page import trained_of, untrained_against_trained


def _num(value: float, places: int = 2) -> str:
    """A number at ``places`` decimals with a true minus sign and no negative zero."""
    return number(value, f".{places}f")


def sentence(row, block_len: int) -> str:
    """The reading of one model in words, every number from ``row``."""
    n = int(row["seeds"])
    parts = [f"best layer-{int(row['layer'])} head: induction score {_num(row['induction'])} "
             f"(chance {_num(row['chance'], 3)}, {_num(row['induction'] / row['chance'], 1)} × chance), "
             f"{_num(row['control'])} on random sequences, content part {_num(row['content'])}"]
    counts = [f"{int(row[f'seeds_{r}'])} of {n} seeds {w}" for r, w in (
        (CONTENT, "look for a copy"), (POSITION, f"look at a position ({POSITIONAL} head)"),
        (NONE, "have no induction head")) if int(row[f"seeds_{r}"])]
    parts.append("; ".join(counts))
    period = [(int(m.group(1)), row[k]) for k in row.index
              if (m := PERIOD.match(str(k))) and not pd.isna(row[k])]
    if period:
        # trained and untrained periods apart where both were tested (every length's value:
        # the period figure and the behaviour appendix), else every length
        split = untrained_against_trained(dict(period), trained_of(row, block_len))
        text = (f"period test {split}" if split else
                "period test " + ", ".join(f"n = {k}: {_num(v)}" for k, v in period))
        parts.append(text)
    return "; ".join(parts) + "."
