"""Head roles from head scores and their chance levels (docs/methods.md, "The head-role rule").

A head has an attention role only when its score is well above what uniform causal
attention would get on the same queries and keys: at least ``times_chance`` × chance
and at least chance + ``above_chance`` (both from ``behaviour.roles`` in the config).
Copying and anti-copying come from the empirical copying score and ``copying_margin``.

A score that looks for a copy of a token (:data:`COPY_SEEKING`) gives its role only when
its content part (score − the same score on random sequences, the positional control)
is also at least ``above_chance``: otherwise the head is looking at a position, not for
a copy, and its role is ``positional_<score>`` (e.g. ``positional_induction``).
The rule is applied where results are stacked (:data:`RULED_TABLES`), never by an
analysis: a head_scores.csv of one model holds the scores, their chance levels and
content parts, and the stacked table adds each head's ``roles`` (:func:`with_roles`), so
changing a threshold reruns no analysis. Plain Python, no torch: the claims use the
same rule on aggregated tables.
"""
from __future__ import annotations

# Scores that give a head a role, in the order roles are listed; each is also the role.
PREVIOUS_TOKEN, INDUCTION = "previous_token", "induction"
PREFIX_MATCHING, LOCAL = "prefix_matching", "local"
ROLE_SCORES = (PREVIOUS_TOKEN, INDUCTION, PREFIX_MATCHING, LOCAL)
# Scores that look for a copy of a token: their role needs the content part too.
COPY_SEEKING = (INDUCTION, "nearest_copy", "first_block", PREFIX_MATCHING)
CONTROL, CONTENT = "control", "content"
POSITIONAL = "positional"
COPYING, ANTI_COPYING = "copying", "anti_copying"
OV_ROLES = (COPYING, ANTI_COPYING)
# The column of a head's roles ("+"-joined, in the order above) and its value for none.
ROLES_COLUMN, NO_ROLE = "roles", "none"
# The stacked tables the rule is applied to: the head scores (roles) and the phase change
# (whether an induction head formed).
RULED_TABLES = ("head_scores", "phase_change")
# The keys of the head-role rule (behaviour.roles of the config, results/settings/roles.json);
# a claim may name one as its threshold, which then follows the config.
ROLE_RULE = ("times_chance", "above_chance", "copying_margin")


def control_column(score: str) -> str:
    """The column of ``score`` on the control sample (random sequences)."""
    return f"{score}_{CONTROL}"


def content_column(score: str) -> str:
    """The column of ``score``'s content part (score − control)."""
    return f"{score}_{CONTENT}"


def positional_role(score: str) -> str:
    """The role of a head whose ``score`` passes the role rule by position alone."""
    return f"{POSITIONAL}_{score}"


def role_names() -> tuple[str, ...]:
    """Every role the rule can give, in the order a head's roles are listed: each role
    score's (a copy-seeking one's positional form after it), then the OV roles."""
    return tuple(r for name in ROLE_SCORES
                 for r in ((name, positional_role(name)) if name in COPY_SEEKING else (name,))
                 ) + OV_ROLES


def content_passes(scores: dict, score: str, rules: dict) -> bool:
    """Does ``score``'s content part reach ``above_chance``? True for a score that does not
    seek a copy, or a table without the control."""
    if score not in COPY_SEEKING or content_column(score) not in scores:
        return True
    return scores[content_column(score)] >= rules["above_chance"]


def role_threshold(chance: float, rules: dict) -> float:
    """The least score that qualifies for a role when uniform attention scores ``chance``."""
    return max(rules["times_chance"] * chance, chance + rules["above_chance"])


def has_role(score: float, chance: float, rules: dict) -> bool:
    return score >= role_threshold(chance, rules)


def head_roles(scores: dict, rules: dict) -> list[str]:
    """Roles of one head: each of :data:`ROLE_SCORES` whose score qualifies against its
    ``<score>_chance`` (``positional_<score>`` for a copy-seeking score whose content part
    does not reach ``above_chance``), then copying (copying score > +copying_margin) or anti_copying
    (< −copying_margin)."""
    roles = [name if content_passes(scores, name, rules) else positional_role(name)
             for name in ROLE_SCORES if has_role(scores[name], scores[f"{name}_chance"], rules)]
    return roles + ov_roles(scores["copying"], rules["copying_margin"])


def ov_roles(copying: float, margin: float) -> list[str]:
    """copying (copying score > +``margin``), anti_copying (< −``margin``), or none."""
    return [COPYING] if copying > margin else [ANTI_COPYING] if copying < -margin else []


def joined(roles: list[str]) -> str:
    """A roles cell: the roles joined with "+", :data:`NO_ROLE` for none."""
    return "+".join(roles) or NO_ROLE


def split_roles(cell) -> list[str]:
    """The roles of a roles cell (empty, NaN or :data:`NO_ROLE`: none)."""
    text = "" if cell is None or cell != cell else str(cell).strip()
    return [] if text.lower() in ("", "nan", NO_ROLE) else [r for r in text.split("+") if r]


def with_roles(scores, rules: dict):
    """A head-scores frame with each head's :data:`ROLES_COLUMN` by the rule ``rules``."""
    out = scores.copy()
    out[ROLES_COLUMN] = [joined(head_roles(r, rules)) for r in out.to_dict("records")]
    return out
