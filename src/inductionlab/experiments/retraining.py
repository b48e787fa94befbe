"""What a study that retrains the config's variants with one field changed checks of its
settings (the positional-table and formation studies): every variant it retrains exists
and differs in that field, and no variant already has a retrained model's name."""
from __future__ import annotations


def retraining_problems(study: str, words: str, retrained: dict[str, str], config: dict,
                        field: str, value, default) -> list[str]:
    """One line per problem, naming the key. ``study``: the experiment's name (its settings
    are ``experiments.<study>``); ``words``: what the messages call it; ``retrained``:
    variant -> the name of its retrained model; ``field``: the variant's field the study
    sets to ``value`` (``default`` when a variant does not give it)."""
    where = f"experiments.{study}"
    problems = [f"variants.{name}: {name!r} is also the name of the {words}'s retrained {v!r}; "
                "rename the variant" for v, name in retrained.items() if name in config["variants"]]
    for v in retrained:
        if v not in config["variants"]:
            problems.append(f"{where}.variants: {v!r} is not in variants {sorted(config['variants'])}")
        elif config["variants"][v].get(field, default) == value:
            problems.append(f"{where}.{field}: variant {v!r} has {field} {value!r} already; "
                            "retraining it would change nothing")
    return problems
