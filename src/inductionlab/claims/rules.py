"""The claims files read and checked: every claim names its model (its role), a metric, a
comparison and a threshold, a source (the write-up's text quoted, or a statement), and
optionally a group, further conditions (``also``) and a unit. Every table a metric reads,
and every column of it a metric names, is one a stage declares
(:mod:`inductionlab.core.formats`).

workflow/claims.yaml holds the groups, the file-level settings and the write-up's claims;
an experiment may bring a claims file of its own (``claims:`` only), whose claims use the
same groups."""
from __future__ import annotations

from ..analysis.roles import ROLE_RULE
from .metrics import COMPARISONS, ROLE, ClaimError
from .words import UNITS
from ..stages.tables import ID_COLUMNS, known_format

DEFAULT_AT_CHANCE_WITHIN = 0.05


SOURCES = {
    "write-up": "quote",     # a sentence of the write-up's text, verbatim
    "reference": "statement",  # a result the text does not print, in our words
    "anthropic": "statement",  # a paraphrase of Anthropic's account
}


def _claims_document(path) -> dict:
    """claims.yaml as a mapping with its ``claims`` list; ClaimError naming the file if it
    is not one (not text, not YAML, another document)."""
    from ..config import ConfigError, read_yaml

    try:
        data = read_yaml(path, "claims file")
    except ConfigError as err:
        raise ClaimError(str(err)) from None
    if not isinstance(data.get("claims"), list):
        raise ClaimError(f"{path}: has no list `claims:`; it is not a claims file "
                         "(workflow/claims.yaml)")
    return data


def metric_tables(spec) -> list[dict]:
    """Every {table, ...} metric spec inside ``spec`` (a claim, a metric, a list of them)."""
    if isinstance(spec, list):
        return [t for item in spec for t in metric_tables(item)]
    if not isinstance(spec, dict):
        return []
    own = [spec] if "table" in spec else []
    return own + [t for key, value in spec.items() if key not in ("where", "require")
                  for t in metric_tables(value)]


def check_columns(path, claim: dict) -> None:
    """Each table a metric of ``claim`` reads is declared, and each column it names (the
    value, the ``where`` and ``require`` columns, the ``key``) is one of its format's."""
    for spec in metric_tables(claim):
        try:
            fmt = known_format(spec["table"], f"{path}: claim {claim['id']}")
        except ValueError as err:
            raise ClaimError(str(err)) from None
        named = [spec.get("column"), spec.get("key"), *(spec.get("where") or {}),
                 *(spec.get("require") or {})]
        unknown = [c for c in named if c is not None and c not in ID_COLUMNS and not fmt.has(c)]
        if unknown:
            raise ClaimError(f"{path}: claim {claim['id']}: table {fmt.name!r} has no column(s) "
                             f"{unknown}")


def load_claims(path, more=()) -> list[dict]:
    """The claims of ``path`` (workflow/claims.yaml), then those of each further claims file
    in ``more``, checked."""
    data = _claims_document(path)
    groups = data.get("groups", {})
    claims = [(path, k, c) for k, c in enumerate(data["claims"])]
    for extra in more:
        claims += [(extra, k, c) for k, c in enumerate(_claims_document(extra)["claims"])]
    seen = set()
    for path, k, claim in claims:
        for key in ("id", "variant", "metric", "compare", "threshold"):
            if key not in claim:
                raise ClaimError(f"{path}: claim {k} ({claim.get('id', '?')}) lacks {key!r}")
        source = claim.setdefault("source", "write-up")
        if source not in SOURCES:
            raise ClaimError(f"{path}: claim {claim['id']}: source {source!r}; allowed: {list(SOURCES)}")
        if SOURCES[source] not in claim:
            raise ClaimError(f"{path}: claim {claim['id']}: source {source!r} needs "
                             f"{SOURCES[source]!r}")
        if source != "write-up" and "quote" in claim:
            raise ClaimError(f"{path}: claim {claim['id']}: only the write-up is quoted; give "
                             f"a source {source!r} claim a 'statement'")
        if groups and claim.get("group") not in groups:
            raise ClaimError(f"{path}: claim {claim['id']}: group {claim.get('group')!r}; "
                             f"allowed: {list(groups)}")
        if claim["compare"] not in COMPARISONS:
            raise ClaimError(f"{path}: claim {claim['id']}: compare {claim['compare']!r}; "
                             f"allowed: {list(COMPARISONS)}")
        if claim["threshold"] == ROLE and "chance" not in claim:
            raise ClaimError(f"{path}: claim {claim['id']}: threshold 'role' needs a chance metric")
        if not _threshold_given(claim["threshold"]) and claim["threshold"] != ROLE:
            raise ClaimError(f"{path}: claim {claim['id']}: threshold {claim['threshold']!r}; "
                             f"give a number, {ROLE!r} or a key of the head-role rule "
                             f"({', '.join(ROLE_RULE)})")
        for extra in claim.get("also", []):
            if extra.get("compare") not in COMPARISONS or "metric" not in extra or "threshold" not in extra:
                raise ClaimError(f"{path}: claim {claim['id']}: every 'also' entry needs metric, "
                                 f"compare (one of {list(COMPARISONS)}) and threshold")
            if not _threshold_given(extra["threshold"]):
                raise ClaimError(f"{path}: claim {claim['id']}: threshold {extra['threshold']!r}; "
                                 f"give a number or a key of the head-role rule "
                                 f"({', '.join(ROLE_RULE)})")
        if claim.get("unit") not in (None, "", *UNITS):
            raise ClaimError(f"{path}: claim {claim['id']}: unit {claim['unit']!r}; allowed: "
                             f"{list(UNITS)} or '' (none)")
        if claim["id"] in seen:
            raise ClaimError(f"{path}: claim id {claim['id']!r} appears twice")
        seen.add(claim["id"])
        check_columns(path, claim)
    return [claim for _, _, claim in claims]


def _threshold_given(threshold) -> bool:
    """A number, or the name of a key of the head-role rule (which follows the config)."""
    return (isinstance(threshold, (int, float)) and not isinstance(threshold, bool)) \
        or threshold in ROLE_RULE


def with_rule_thresholds(claims: list[dict], rules: dict | None) -> list[dict]:
    """``claims`` with every threshold that names a key of the head-role rule
    (``threshold: above_chance``) replaced by that key's value in ``rules`` (the config's
    ``behaviour.roles``), in the claim and in its ``also`` entries."""
    def value(threshold):
        if threshold not in ROLE_RULE:
            return threshold
        if rules is None:
            raise ClaimError(f"threshold {threshold!r} names the head-role rule, which was not given")
        return float(rules[threshold])

    return [{**c, "threshold": value(c["threshold"]),
             **({"also": [{**e, "threshold": value(e["threshold"])} for e in c["also"]]}
                if "also" in c else {})}
            for c in claims]


def load_settings(claims_yaml) -> dict:
    """The file-level settings of claims.yaml (``at_chance_within``)."""
    data = _claims_document(claims_yaml)
    return {"at_chance_within": float(data.get("at_chance_within", DEFAULT_AT_CHANCE_WITHIN)),
            "groups": dict(data.get("groups", {}))}
