"""Head roles from head scores and their chance levels (SCIENCE.md, "Attention and head scores").

A head has an attention role only when its score is well above what uniform causal
attention would get on the same queries and keys: at least ``times_chance`` × chance
and at least chance + ``above_chance`` (both from ``behaviour.roles`` in the config).
Copying and anti-copying come from the empirical copying score and ``copying_margin``.
Plain Python, no torch: the claims use the same rule on aggregated tables.
"""
from __future__ import annotations

# Scores that give a head a role, in the order roles are listed.
ROLE_SCORES = ("previous_token", "induction", "prefix_matching", "local")


def role_threshold(chance: float, rules: dict) -> float:
    """The least score that qualifies for a role when uniform attention scores ``chance``."""
    return max(rules["times_chance"] * chance, chance + rules["above_chance"])


def has_role(score: float, chance: float, rules: dict) -> bool:
    return score >= role_threshold(chance, rules)


def head_roles(scores: dict, rules: dict) -> list[str]:
    """Roles of one head: each of :data:`ROLE_SCORES` whose score qualifies against its
    ``<score>_chance``, then copying (copying score > +copying_margin) or anti_copying
    (< −copying_margin)."""
    roles = [name for name in ROLE_SCORES
             if has_role(scores[name], scores[f"{name}_chance"], rules)]
    if scores["copying"] > rules["copying_margin"]:
        roles.append("copying")
    elif scores["copying"] < -rules["copying_margin"]:
        roles.append("anti_copying")
    return roles
