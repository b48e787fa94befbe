"""Page 1 of the report: the answer.

Per model of the write-up: the tally of its claims, in words that agree in number ("24
replicate in every seed, 1 depends on the seed"), and one sentence on the mechanism found,
generated from the tables: whether its best copy-seeking head looks for a copy or at a
position (the positional control, :mod:`.content_or_position`), the period test, and the
offsets its logits copy and suppress (:mod:`.algorithm_readings`). Every other model of the
run is listed too: a model of a registered family with that family and its tally there, any
other with :data:`NO_CLAIMS`. Then, per family, the verdicts that change on it, the family
named by what it changes (its title), each claim in words grouped by model and claim group
(:func:`claims_in_words`); the verdicts too close to call, likewise; and the caveats every
reading needs. Nothing is typed in: every number comes from a table.
"""
from __future__ import annotations


import pandas as pd

from ..core.tasks import WRITE_UP as WRITE_UP_TASK
from ..stages.readings.readings import PERIOD, split_offsets
from ..claims.verdicts import (NOT_MEASURED_ANY, NOT_REPLICATED, OUTCOMES, ROBUST, SEED_DEPENDENT,
                               TOO_CLOSE_ANY, outcome)
from ..formatting.numbers import number, ranges_phrase

# outcome -> (singular, plural) verb phrases of the tally
VERBS = {ROBUST: ("replicates in every seed", "replicate in every seed"),
         SEED_DEPENDENT: ("depends on the seed", "depend on the seed"),
         NOT_REPLICATED: ("does not replicate", "do not replicate"),
         TOO_CLOSE_ANY: ("is too close to call", "are too close to call"),
         NOT_MEASURED_ANY: ("could not be measured", "could not be measured")}


def outcome_verb(outcome_name: str, count: int) -> str:
    """The outcome as a verb phrase agreeing with ``count``: 1 "replicates in every seed",
    24 "replicate in every seed"."""
    singular, plural = VERBS[outcome_name]
    return singular if count == 1 else plural


def tally_words(counts: dict[str, int]) -> str:
    """{"replicates in every seed": 24, "depends on the seed": 1} -> "24 replicate in every
    seed and 1 depends on the seed" (zero counts left out)."""
    parts = [f"{n} {outcome_verb(o, n)}" for o, n in counts.items() if n]
    if not parts:
        return "no claims"
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def model_tallies(card: pd.DataFrame, variants: list[str]) -> dict[str, str]:
    """Per variant (the claims' ``variant``), :func:`tally_words` of its claims."""
    out = {}
    for v in variants:
        mine = card[card["variant"] == v]
        if len(mine):
            counts = mine.apply(outcome, axis=1).value_counts()
            out[v] = tally_words({o: int(counts.get(o, 0)) for o in VERBS})
    return out


def _fmt(value: float) -> str:
    return number(value, ".2f")


def copy_offsets(block_len: int, n_blocks: int) -> list[int]:
    """How far back the copies of the letter to predict sit in a task sequence, nearest
    first: block_len − 1, 2·block_len − 1, … (5, 11, 17 for four blocks of 6)."""
    return [k * block_len - 1 for k in range(1, n_blocks)]


def trained_of(reading: pd.Series, block_len: int) -> list[int]:
    """The periods a model's own task trains, from its readings row; the write-up's
    ``block_len`` where the row does not say."""
    return split_offsets(reading.get("trained_periods")) or [block_len]


def task_words(reading: pd.Series | None, block_len: int) -> str:
    """"trained on variable_period, periods 3–8": the model's own task and the periods it
    draws ("" without a reading)."""
    if reading is None:
        return ""
    task = str(reading.get("task") or "") if not pd.isna(reading.get("task")) else ""
    if task and task != WRITE_UP_TASK and not split_offsets(reading.get("trained_periods")):
        return f"trained on {task}"  # no period tested: its context is shorter than the test's
    what = periods_phrase(trained_of(reading, block_len))
    return f"trained on {task}, {what}" if task else f"trained on {what}"


def _spread(values: list[float]) -> str:
    low, high = _fmt(min(values)), _fmt(max(values))
    return low if low == high else f"{low}–{high}"


def periods_phrase(periods: list[int]) -> str:
    """"period 4" or "periods 4 and 8"."""
    return f"period{'s' if len(periods) > 1 else ''} {ranges_phrase(periods)}"


def untrained_against_trained(periods: dict[int, float], trained: list[int]) -> str:
    """"0.71–0.80 on blocks of its untrained periods 2 and 9 against 0.94 on its trained
    3–8": the period test's accuracies, split by whether the model's task draws the period
    ("" unless both kinds were tested)."""
    seen = [v for k, v in periods.items() if k in trained]
    unseen = [k for k in periods if k not in trained]
    if not (seen and unseen):
        return ""
    return (f"{_spread([periods[k] for k in unseen])} on blocks of its untrained "
            f"{periods_phrase(unseen)} against {_spread(seen)} on its trained "
            f"{ranges_phrase(trained)}")


def mechanism(reading: pd.Series | None, offsets: dict[str, list[int]] | None,
              block_len: int) -> str:
    """One sentence: how the model finds what to copy (content or position, from the best
    head's positional control and the period test) and what its logits copy and suppress."""
    from .algorithm_readings import letters_phrase

    parts = []
    if reading is not None:
        n = int(reading["seeds"])
        content, position = int(reading["seeds_content"]), int(reading["seeds_position"])
        if content == n:
            how = "looks for a copy"
        elif position == n:
            how = "looks at positions, not for a copy"
        elif content or position:
            rest = n - content - position  # seeds whose best head does neither
            said = [f"looks for a copy in {content} of {n} seeds" if content else
                    f"looks for a copy in none of {n} seeds",
                    f"at positions in {position}" if position else "",
                    f"with no head that looks back for the target in {rest}" if rest else ""]
            how = ", ".join(part for part in said if part)
        else:
            how = "has no head that looks back for the target"
        periods = {int(m.group(1)): reading[k] for k in reading.index
                   if (m := PERIOD.match(str(k))) and not pd.isna(reading[k])}
        split = untrained_against_trained(periods, trained_of(reading, block_len))
        if split:
            how += f" (content part {_fmt(reading['content'])}; accuracy {split})"
        parts.append(how)
    if offsets:
        verbs = {"copies": "copy", "suppresses": "suppress"}  # the logits: plural
        said = [f"{verbs.get(verb, verb)} {letters_phrase(ks)}" for verb, ks in offsets.items() if ks]
        if said:
            parts.append("its logits " + " and ".join(said))
    return "; ".join(parts)


NO_CLAIMS = "no claims: the write-up's claims are about its three models"
# At most this many models without claims get a bullet of their own on page 1; more (a
# study's grid) are named there in one bullet, and their readings are listed in the summary.
FRONT_UNCLAIMED = 4


def split_unclaimed(others: list[dict], limit: int = FRONT_UNCLAIMED) -> tuple[list[dict], list[dict]]:
    """``(on page 1, in the summary)`` of :func:`other_models`' list: a model of a family
    always stays on page 1; the models without claims too, unless there are more than
    ``limit`` of them, then all of them go to the summary (page 1 names them)."""
    unclaimed = [m for m in others if not m.get("family")]
    if len(unclaimed) <= limit:
        return others, []
    return [m for m in others if m.get("family")], unclaimed


def outcome_of(cell) -> str | None:
    """A family comparison cell's outcome: "does not replicate (holds in 0 of 5 seeds;
    …)" -> "does not replicate"; None where the family does not evaluate the claim ("not
    evaluated (no model in this role)", empty)."""
    if not isinstance(cell, str):
        return None
    for name in sorted(OUTCOMES, key=len, reverse=True):
        if cell.startswith(name):
            return name
    return None


def family_changes(comparison: pd.DataFrame | None, families: dict[str, str],
                   write_up_title: str) -> list[dict]:
    """Per registered family (``families``: name -> title, the title saying what the
    family changes, e.g. "pos_encoding: standard"), the claims evaluated on it and on the
    write-up's models (``n``) and those whose outcome differs (``changed``: role, claim,
    the outcome on the write-up's models and on the family's), from the family comparison."""
    out = []
    for name, title in families.items():
        if comparison is None or title not in comparison or write_up_title not in comparison:
            continue
        both, changed = 0, []
        for _, r in comparison.iterrows():
            before, after = outcome_of(r[write_up_title]), outcome_of(r[title])
            if before is None or after is None:
                continue
            both += 1
            if before != after:
                changed.append({"role": str(r["role"]), "claim": str(r["claim"]),
                                "before": before, "after": after})
        out.append({"name": name, "title": title, "n": both, "changed": changed})
    return out


def _short_group(title: str) -> str:
    """A claim group's title up to its colon: "Don't repeat recent letters: the direct
    path and …" -> "Don't repeat recent letters"."""
    return title.split(":")[0].strip() if title else "other claims"


def claims_in_words(items: list[dict], card: pd.DataFrame, order: list[str]) -> list[dict]:
    """Claims (``items``: each with ``role`` and ``claim``, optionally ``before`` and
    ``after`` outcomes) in words a reader can parse, grouped by model (``order`` first)
    and then by the claim's group: [{"model": "two_layer", "groups": [{"title": "Copy
    letters from the prompt", "claims": [{"words": "“Copies the first instance …”", …}]}]}].
    A claim's words are the write-up's (quoted) or its statement (:func:`.story.claim_words`),
    from its scorecard row; a claim without one keeps its id."""
    from .story import claim_words

    rows = {str(r["claim"]): r for _, r in card.iterrows()} if len(card) else {}
    models: dict[str, dict[str, list[dict]]] = {}
    for item in items:
        row = rows.get(item["claim"])
        words = claim_words(row) if row is not None else item["claim"]
        group = _short_group(str(row.get("group_title") or row.get("group") or "")
                             if row is not None else "")
        models.setdefault(item["role"], {}).setdefault(group, []).append({**item, "words": words})
    names = [m for m in order if m in models] + [m for m in models if m not in order]
    return [{"model": m, "groups": [{"title": g, "claims": c} for g, c in models[m].items()]}
            for m in names]


def other_models(models: list[str], claimed: list[str], card: pd.DataFrame,
                 families: dict[str, str]) -> list[dict]:
    """Every model of the run without claims of its own among the write-up's (``claimed``):
    a model of a registered family names its family and the role it plays there (its
    claims are that family's); any other model is said to have no claims
    (:data:`NO_CLAIMS`), never left out in silence."""
    family = card[card["family"].astype(str) != "write_up"] if "family" in card else card.iloc[:0]
    roles = {str(r["variant"]): (str(r["family"]), str(r["role"])) for _, r in family.iterrows()}
    out = []
    for m in models:
        if m in claimed:
            continue
        if m in roles:
            name, role = roles[m]
            mine = family[family["variant"] == m]
            counts = mine.apply(outcome, axis=1).value_counts()
            out.append({"variant": m, "family": families.get(name, name), "family_name": name,
                        "role": role, "n": len(mine),
                        "tally": tally_words({o: int(counts.get(o, 0)) for o in VERBS})})
        else:
            out.append({"variant": m, "family": None, "words": NO_CLAIMS})
    return out


def too_close(card: pd.DataFrame) -> list[str]:
    """The claims too close to call, as ids."""
    return [str(c) for c, o in zip(card["claim"], card.apply(outcome, axis=1)) if o == TOO_CLOSE_ANY]
