"""The positional-table study: the write-up's models retrained with another q/k table.

The write-up's ``original`` table takes its frequencies from the raw dimension index,
so most of its dimensions turn slowly and the table varies with position almost only
in its first few; the ``standard`` table pairs dimensions as in the usual sinusoid.
The study's models and claim family are declared by its rule file; this module only
checks its settings and measures how the tables differ.
"""
from __future__ import annotations

from ..config import settings_check
from ..core.model import sinusoidal_table


def model_names(settings: dict) -> dict[str, str]:
    """Variant -> the name of its retrained model, ``<variant>_<pos_encoding>``."""
    return {v: f"{v}_{settings['pos_encoding']}" for v in settings["variants"]}


def variance_share(form: str, seq_len: int, d: int, first: int = 3) -> float:
    """Share of the table's variance over positions 1 to seq_len - 1 (summed over
    dimensions) that its ``first`` dimensions hold. Position 0 is left out: the original
    table's row 0 is zero by construction."""
    per_dim = sinusoidal_table(seq_len, d, form)[1:].var(dim=0)
    return float(per_dim[:first].sum() / per_dim.sum())


@settings_check("positional_table")
def check_settings(settings: dict, config: dict) -> list[str]:
    """The study's settings against the rest of a validated config: every variant it
    retrains exists and has another table than the study's, and no variant has the name
    of a retrained model."""
    where = "experiments.positional_table"
    problems = [f"variants.{name}: {name!r} is also the name of the positional-table study's "
                f"retrained {v!r}; rename the variant" for v, name in model_names(settings).items()
                if name in config["variants"]]
    for v in settings["variants"]:
        if v not in config["variants"]:
            problems.append(f"{where}.variants: {v!r} is not in variants {sorted(config['variants'])}")
        elif config["variants"][v].get("pos_encoding", "original") == settings["pos_encoding"]:
            problems.append(f"{where}.pos_encoding: variant {v!r} has pos_encoding "
                            f"{settings['pos_encoding']!r} already; retraining it would change nothing")
    return problems
