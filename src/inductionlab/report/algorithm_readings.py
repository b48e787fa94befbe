"""The algorithm each model learned, in words generated from its offset profile, and how
much of it the write-up's algorithm explains (the offsets stage's tables).

Per model, over its seeds (task sample, the whole model's profile, ``all``):

- it *copies* the letter k back when every seed's 95 % interval at k lies above 0 and the
  mean over seeds is at least :data:`SHARE` of the largest positive mean; it *suppresses*
  the letter k back likewise below 0;
- each named set of offsets is attributed to the part of the model that carries most of
  it: in a model of several layers the direct path, layer 0's heads, and for every later
  layer l its heads from the embedding or through the heads of layers 0 … l−1
  (V-composition), each layer named by its number (:func:`part_name`); the direct path,
  the copying and the anti-copying heads in a 1-layer model;
- the profile as a program and the write-up's algorithm as a program: the share of the
  model's KL from uniform each removes, and how often its argmax agrees with the model's,
  mean over seeds [min, max].
"""
from __future__ import annotations

import pandas as pd

import re

from ..analysis.offset_attribution import (ALL, COMPOSED, DIRECT, EMBEDDING, layer_group,
                                           role_group)
from ..analysis.roles import ANTI_COPYING, COPYING
from ..formatting.numbers import number, percent

SHARE = 0.25
_SHALLOW = (DIRECT, role_group(COPYING), role_group(ANTI_COPYING))
_NAMES = {DIRECT: "the direct path", role_group(COPYING): "the copying heads",
          role_group(ANTI_COPYING): "the anti-copying heads"}
_LAYER_PART = re.compile(rf"^L(\d+)(?::({EMBEDDING}|{COMPOSED}))?$")


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
    match = _LAYER_PART.match(part)
    if not match:
        return None
    layer, how = int(match[1]), match[2]
    words = f"layer {layer}'s heads"
    if how == EMBEDDING:
        return f"{words} from the embedding"
    if how == COMPOSED:
        return f"{words} reading the output of {_layers(layer)}"
    return words


def _deep_parts(profile: pd.DataFrame) -> list[str] | None:
    """The parts of a model of several layers, in order: the direct path, layer 0's heads,
    then per later layer its heads from the embedding and through earlier heads; None for
    a 1-layer model (no composed paths)."""
    layers = sorted({int(m[1]) for c in profile["component"].unique()
                     if (m := _LAYER_PART.match(str(c))) and m[2] == COMPOSED})
    if not layers:
        return None
    parts = [DIRECT, layer_group(0)]
    for l in range(1, max(layers) + 1):
        parts += [layer_group(l, EMBEDDING), layer_group(l, COMPOSED)]
    return parts


def _ranges(offsets: list[int]) -> str:
    """[0, 1, 2, 5, 11] -> "0–2, 5 and 11"."""
    parts, start = [], None
    for k, nxt in zip(offsets, offsets[1:] + [None]):
        start = k if start is None else start
        if nxt != k + 1:
            parts.append(f"{start}–{k}" if k - start >= 2 else
                         f"{start}, {k}" if k > start else str(k))
            start = None
    text = ", ".join(parts)
    head, _, last = text.rpartition(", ")
    return f"{head} and {last}" if head else text


def letters_phrase(offsets: list[int]) -> str:
    """[0] -> "the current letter", [5] -> "the letter 5 back", else the
    letters' offsets as :func:`_ranges`."""
    if offsets == [0]:
        return "the current letter"
    if len(offsets) == 1:
        return f"the letter {offsets[0]} back"
    return f"the letters {_ranges(offsets)} back"


def _offsets(profile: pd.DataFrame, component: str) -> pd.DataFrame:
    return profile[(profile["component"] == component) & (profile["sample"] == "task")
                   & (profile["source"] == "offset")]


def offset_sets(profile: pd.DataFrame) -> dict[str, list[int]]:
    """The offsets the whole model copies and suppresses in every seed (see the module)."""
    rows = _offsets(profile, ALL)
    by = rows.groupby("offset")
    mean = by["value"].mean()
    above, below = by["low"].min() > 0, by["high"].max() < 0
    out = {}
    for name, sure, sign in (("copies", above, 1.0), ("suppresses", below, -1.0)):
        scale = (sign * mean).clip(lower=0).max()
        keep = sure & (sign * mean >= SHARE * scale) if scale > 0 else sure & False
        out[name] = sorted(int(k) for k in keep[keep].index)
    return out


def carrier(profile: pd.DataFrame, offsets: list[int], sign: float) -> str | None:
    """The part of the model (see the module) with the largest mean effect of ``sign`` over
    ``offsets`` and seeds."""
    parts = _deep_parts(profile) or _SHALLOW
    best, size = None, 0.0
    for part in parts:
        rows = _offsets(profile, part)
        rows = rows[rows["offset"].isin(offsets)]
        if rows.empty:
            continue
        value = sign * float(rows["value"].mean())
        if value > size:
            best, size = part, value
    return part_name(best) if best else None


def _share(fit: pd.DataFrame, program: str, metric: str) -> str | None:
    rows = fit[(fit["program"] == program) & (fit["sample"] == "task") & (fit["metric"] == metric)]
    if rows.empty or rows["value"].isna().all():
        return None
    v = rows["value"]  # a program worse than uniform removes a negative share
    low, high = number(100 * v.min(), ".0f"), number(100 * v.max(), ".0f")
    if low == high:
        return percent(v.mean())
    return f"{percent(v.mean())} [{low}, {high}]"  # as every range in the report: [min, max]


def sentence(profile: pd.DataFrame, fit: pd.DataFrame) -> str:
    """One model's algorithm as measured, and how much of it each program explains."""
    sets = offset_sets(profile)
    said = []
    for verb, sign in (("copies", 1.0), ("suppresses", -1.0)):
        if sets[verb]:
            who = carrier(profile, sets[verb], sign)
            said.append(f"{verb} {letters_phrase(sets[verb])}"
                        + (f" (mostly {who})" if who else ""))
    what = " and ".join(said) if said else "neither copies nor suppresses any offset in every seed"
    parts = [f"as measured, the model {what}"]
    for program, label in (("profile", "the profile as a program"),
                           ("write_up", "the write-up's algorithm")):
        explained, agreement = _share(fit, program, "kl_explained"), _share(fit, program, "agreement")
        if explained:
            parts.append(f"{label} removes {explained} of its KL from uniform and agrees with "
                         f"its argmax on {agreement} of task queries")
    if not (fit["program"] == "write_up").any():
        parts.append("the write-up gives no algorithm for this architecture")
    return "; ".join(parts) + "."


def algorithm_readings(profile: pd.DataFrame, fit: pd.DataFrame, order: list[str]) -> list[dict]:
    """Per model (``order`` first, then the rest as they appear), its :func:`sentence`."""
    models = list(dict.fromkeys([v for v in order if v in set(profile["variant"])]
                                + list(profile["variant"].unique())))
    return [{"variant": v, "text": sentence(profile[profile["variant"] == v],
                                            fit[fit["variant"] == v])} for v in models]

