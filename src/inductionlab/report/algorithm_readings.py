"""The algorithm each model learned, in words, from its row of the algorithm_readings
table (:mod:`inductionlab.stages.readings.readings` computes it from the offsets stage's tables):
what the whole model copies and suppresses, the part of the model that carries each, and
how much of it the profile and the write-up's algorithm explain as programs."""
from __future__ import annotations

import pandas as pd

from ..stages.offsets.offset_attribution import COMPOSED, DIRECT, EMBEDDING, role_group
from ..stages.readings.readings import LAYER_PART, split_offsets
from ..analysis.roles import ANTI_COPYING, COPYING
from ..formatting.numbers import number, percent, ranges_phrase

_NAMES = {DIRECT: "the direct path", role_group(COPYING): "the copying heads",
          role_group(ANTI_COPYING): "the anti-copying heads"}


def _layers(last: int) -> str:
    """The layers before ``last``: "layer 0", "layers 0 and 1", "layers 0–2"."""
    if last == 1:
        return "layer 0"
    return "layers 0 and 1" if last == 2 else f"layers 0–{last - 1}"


def part_name(part: str) -> str | None:
    """A component group in words, its layer by number: "L0" -> "layer 0's heads",
    "L2:embedding" -> "layer 2's heads from the embedding", "L1:composed" -> "layer 1's
    heads reading the output of layer 0", "L2:composed" -> "... of layers 0 and 1"."""
    if part in _NAMES:
        return _NAMES[part]
    match = LAYER_PART.match(part)
    if not match:
        return None
    layer, how = int(match[1]), match[2]
    words = f"layer {layer}'s heads"
    if how == EMBEDDING:
        return f"{words} from the embedding"
    if how == COMPOSED:
        return f"{words} reading the output of {_layers(layer)}"
    return words


def letters_phrase(offsets: list[int]) -> str:
    """[0] -> "the current letter", [5] -> "the letter 5 back", else the
    letters' offsets as :func:`~inductionlab.formatting.numbers.ranges_phrase`."""
    if offsets == [0]:
        return "the current letter"
    if len(offsets) == 1:
        return f"the letter {offsets[0]} back"
    return f"the letters {ranges_phrase(offsets)} back"


def _share(row, program: str, metric: str) -> str | None:
    """``metric`` of ``program``: mean over seeds as a percentage, [min, max] when they differ."""
    mean = row.get(f"{program}_{metric}")
    if mean is None or pd.isna(mean):
        return None
    low = number(100 * row[f"{program}_{metric}_min"], ".0f")
    high = number(100 * row[f"{program}_{metric}_max"], ".0f")
    if low == high:
        return percent(mean)
    return f"{percent(mean)} [{low}, {high}]"  # as every range in the report: [min, max]


def sentence(row) -> str:
    """One model's algorithm as measured, and how much of it each program explains."""
    said = []
    for verb in ("copies", "suppresses"):
        offsets = split_offsets(row[verb])
        if offsets:
            part = row.get(f"{verb}_part")
            who = part_name(str(part)) if isinstance(part, str) and part else None
            said.append(f"{verb} {letters_phrase(offsets)}" + (f" (mostly {who})" if who else ""))
    what = " and ".join(said) if said else "neither copies nor suppresses any offset in every seed"
    parts = [f"as measured, the model {what}"]
    for program, label in (("profile", "the profile as a program"),
                           ("write_up", "the write-up's algorithm")):
        explained, agreement = _share(row, program, "kl_explained"), _share(row, program, "agreement")
        if explained:
            parts.append(f"{label} removes {explained} of its KL from uniform and agrees with "
                         f"its argmax on {agreement} of task queries")
    if not int(row["has_write_up"]):
        parts.append("the write-up gives no algorithm for this architecture")
    return "; ".join(parts) + "."


def algorithm_readings(table: pd.DataFrame, order: list[str]) -> list[dict]:
    """Per model of the algorithm_readings ``table`` (``order`` first, then the rest as they
    appear), its :func:`sentence`."""
    models = list(dict.fromkeys([v for v in order if v in set(table["variant"])]
                                + list(table["variant"].unique())))
    by = table.set_index("variant")
    return [{"variant": v, "text": sentence(by.loc[v])} for v in models]
