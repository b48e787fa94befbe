"""The write-up's claims, evaluated on every seed (workflow/claims.yaml).

A claim is a metric, a comparison and a threshold. The metric is read from the
aggregated per-seed tables (``results/tables/<table>.csv``). A claim whose metric
has no value for a seed (missing table, column or rows, or a head the claim is
about that no model has) is ``not measured`` for that seed, with the reason: it
never counts as holding.

An attention score is read beside its chance level (a ``chance`` metric, the score
of uniform causal attention on the same queries and keys). ``threshold: role`` is the
head-role rule of the config (``behaviour.roles``): at least ``times_chance`` ×
chance and at least chance + ``above_chance``. A value within ``at_chance_within``
of its chance level is reported as sitting at chance.

A claim names the write-up's model it is about (``variant``: one_layer, one_layer_smeared,
two_layer), its role. A *family* maps roles to trained models: the write-up's own family
(:data:`WRITE_UP`) maps every role to the variant of that name; another (an experiment's)
maps some roles to other models, and the claims of those roles are evaluated on them
(every ``variant:`` inside a metric follows the same map). Each row names its family and
role; :func:`family_comparison` sets the families' outcomes side by side.
"""
from __future__ import annotations

import math
import operator
from pathlib import Path

import pandas as pd
import yaml

from ..analysis.roles import role_threshold

HOLDS, FAILS, NOT_MEASURED = "holds", "fails", "not measured"
WRITE_UP = "write_up"  # the family of the config's variants, each in the role of its name
WRITE_UP_TITLE = "the write-up's models"
MARKS = {HOLDS: "✓", FAILS: "✗", NOT_MEASURED: "–"}
INFINITY_NOTE = {"phase_change_gap": "∞: one of the two steps was never reached in training",
                 "ratio": "∞: division by zero", "chance_excess_ratio": "∞: division by zero"}

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq}
REDUCERS = {"min": min, "max": max, "mean": lambda v: sum(v) / len(v)}
ROLE = "role"
DEFAULT_ROLE_RULES = {"times_chance": 2.0, "above_chance": 0.2}
DEFAULT_AT_CHANCE_WITHIN = 0.05


class Tables(dict):
    """The aggregated tables by name, with the head-role rule the claims read them under."""

    def __init__(self, tables=(), roles: dict | None = None):
        super().__init__(tables)
        self.roles = dict(roles or DEFAULT_ROLE_RULES)


def _roles(tables) -> dict:
    return getattr(tables, "roles", DEFAULT_ROLE_RULES)


class ClaimError(ValueError):
    """A claim in claims.yaml is malformed."""


class NotMeasured(LookupError):
    """The metric has no value for this seed; the message says why."""


SOURCES = {
    "write-up": "quote",     # a sentence of the write-up's text, verbatim
    "reference": "statement",  # a result the text does not print, in our words
    "anthropic": "statement",  # a paraphrase of Anthropic's account
}


def load_claims(path) -> list[dict]:
    data = yaml.safe_load(Path(path).read_text())
    claims, groups = data["claims"], data.get("groups", {})
    seen = set()
    for k, claim in enumerate(claims):
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
        if not isinstance(claim["threshold"], (int, float)) and claim["threshold"] != ROLE:
            raise ClaimError(f"{path}: claim {claim['id']}: threshold {claim['threshold']!r}; "
                             f"give a number or {ROLE!r}")
        for extra in claim.get("also", []):
            if extra.get("compare") not in COMPARISONS or "metric" not in extra or "threshold" not in extra:
                raise ClaimError(f"{path}: claim {claim['id']}: every 'also' entry needs metric, "
                                 f"compare (one of {list(COMPARISONS)}) and threshold")
        if claim["id"] in seen:
            raise ClaimError(f"{path}: claim id {claim['id']!r} appears twice")
        seen.add(claim["id"])
    return claims


# ---------------------------------------------------------------- metrics

def _rows(tables: dict, spec: dict, variant: str, seed: int) -> pd.DataFrame:
    name = spec["table"]
    if name not in tables:
        raise NotMeasured(f"no table {name!r}")
    frame = tables[name]
    variant = spec.get("variant", variant)
    rows = frame[(frame["variant"] == variant) & (frame["seed"] == seed)]
    for column, wanted in (spec.get("where") or {}).items():
        if column not in rows.columns:
            raise NotMeasured(f"table {name!r} has no column {column!r}")
        wanted = wanted if isinstance(wanted, list) else [wanted]
        rows = rows[rows[column].isin(wanted)]
    if spec["column"] not in rows.columns:
        raise NotMeasured(f"table {name!r} has no column {spec['column']!r}")
    rows = rows[rows[spec["column"]].notna()]
    if rows.empty:
        raise NotMeasured(f"no rows of {name!r} for {variant} seed {seed} where {spec.get('where')}")
    return rows


def _reduce(values: list[float], spec: dict) -> float:
    if not values:
        raise NotMeasured("no value to reduce")
    how = spec.get("reduce")
    if how is None:
        if len(values) != 1:
            raise ClaimError(f"metric {spec} selects {len(values)} rows; give a reduce")
        return float(values[0])
    if how == "count_at_least":
        return float(sum(v >= spec["at_least"] for v in values))
    if how == "count_at_most":
        return float(sum(v <= spec["at_most"] for v in values))
    if how == "count_above":
        return float(sum(v > spec["above"] for v in values))
    if how == "count_below":
        return float(sum(v < spec["below"] for v in values))
    if how not in REDUCERS:
        raise ClaimError(f"reduce {how!r}; allowed: {list(REDUCERS)} or count_at_least, "
                         "count_at_most, count_above, count_below")
    return float(REDUCERS[how](values))


def table_metric(tables: dict, spec: dict, variant: str, seed: int) -> float:
    """The value of a {table, where, column, reduce} spec for one seed."""
    return _reduce(_rows(tables, spec, variant, seed)[spec["column"]].tolist(), spec)


def difference(tables, spec, variant, seed) -> float:
    """a - b."""
    return metric_value(tables, spec["a"], variant, seed) - metric_value(tables, spec["b"], variant, seed)


def ratio(tables, spec, variant, seed) -> float:
    """a / b."""
    b = metric_value(tables, spec["b"], variant, seed)
    if b == 0:
        raise NotMeasured("ratio with a zero denominator")
    return metric_value(tables, spec["a"], variant, seed) / b


def chance_excess_ratio(tables, spec, variant, seed) -> float:
    """(a − chance) / (b − chance): how much of b's excess over chance is left in a.

    Not measured when b's excess over chance is below ``min_excess`` (there is nothing
    above chance to remove).
    """
    chance = metric_value(tables, spec["chance"], variant, seed)
    b = metric_value(tables, spec["b"], variant, seed)
    if b - chance < spec["min_excess"]:
        raise NotMeasured(f"the reference is only {b - chance:.3f} above its chance level "
                          f"{chance:.3f} (< {spec['min_excess']}): nothing to remove")
    return (metric_value(tables, spec["a"], variant, seed) - chance) / (b - chance)


NONE_FORMED = "none formed"


def phase_change_gap(tables, spec, variant, seed) -> float:
    """|ln((step_a + 1) / (step_b + 1))| between two detected phase-change steps.

    ``a`` and ``b`` name rows of the phase_change table (its ``metric`` column). A
    detector that found no step ("never") makes the gap infinite: the steps do not
    coincide. A detector that reports "none formed" (no induction head formed) makes
    the claim not measured, with the detector's note as the reason.
    """
    steps = []
    for name in (spec["a"], spec["b"]):
        rows = _rows(tables, {"table": "phase_change", "where": {"metric": name},
                              "column": "step"}, variant, seed)
        step = str(rows["step"].iloc[0])
        if step == NONE_FORMED:
            note = rows["note"].iloc[0] if "note" in rows and pd.notna(rows["note"].iloc[0]) else ""
            raise NotMeasured(f"{name}: {note or NONE_FORMED}")
        if step == "never":
            return math.inf
        steps.append(float(step))
    return abs(math.log((steps[0] + 1) / (steps[1] + 1)))


def _passes(select: dict, row, tables) -> bool:
    """Does one head's row pass ``select``'s comparison? ``threshold: role`` compares with the
    role threshold of the row's own ``<column>_chance``."""
    value = getattr(row, select["column"])
    threshold = select["threshold"]
    if threshold == ROLE:
        threshold = role_threshold(getattr(row, f"{select['column']}_chance"), _roles(tables))
    return COMPARISONS[select["compare"]](value, threshold)


def _heads_passing(tables, select, variant, seed) -> set[tuple[int, int]]:
    chosen = _rows(tables, select, variant, seed)
    return {(int(r.layer), int(r.head)) for r in chosen.itertuples() if _passes(select, r, tables)}


def over_selected_heads(tables, spec, variant, seed) -> float:
    """``measure`` reduced over the heads whose ``select`` value passes its comparison."""
    heads = _heads_passing(tables, spec["select"], variant, seed)
    if not heads:
        sel = spec["select"]
        where = "".join(f", {k} {v}" for k, v in (sel.get("where") or {}).items())
        if sel["threshold"] == ROLE:
            raise NotMeasured(f"no head has the {sel['column']} role{where}")
        raise NotMeasured(f"no head has {sel['column']} {sel['compare']} {sel['threshold']}{where}")
    measure = _rows(tables, spec["measure"], variant, seed)
    values = [getattr(r, spec["measure"]["column"]) for r in measure.itertuples()
              if (int(r.layer), int(r.head)) in heads]
    return _reduce(values, spec)


def role_head(tables, role: str, layer: int, variant, seed) -> int:
    """The head of ``layer`` that has ``role`` (the highest-scoring one if several).

    Not measured when no head of the layer qualifies: a claim about "the previous-token
    head" has nothing to be about.
    """
    scores = _rows(tables, {"table": "head_scores", "where": {"layer": layer}, "column": role},
                   variant, seed)
    rules = _roles(tables)
    qualified = [r for r in scores.itertuples()
                 if getattr(r, role) >= role_threshold(getattr(r, f"{role}_chance"), rules)]
    if not qualified:
        best = scores.loc[scores[role].idxmax()]
        need = role_threshold(float(best[f"{role}_chance"]), rules)
        raise NotMeasured(f"no layer-{layer} head has the {role} role: the best, head "
                          f"{int(best['head'])}, scores {best[role]:.3f}, chance "
                          f"{best[f'{role}_chance']:.3f}, needs {need:.3f}")
    return int(max(qualified, key=lambda r: getattr(r, role)).head)


def _composition(tables, spec, variant, seed) -> pd.DataFrame:
    """Composition-term positivities of ``kind`` of every head of ``layer`` with every
    head of ``src_layer``: a frame indexed by head, one column per source head."""
    rows = _rows(tables, {"table": "composition", "column": "positivity_real",
                          "where": {"kind": spec["kind"], "layer": spec["layer"],
                                    "src_layer": spec["src_layer"]}}, variant, seed)
    return rows.pivot_table(index="head", columns="src_head", values="positivity_real")


def composition_with_role_head(tables, spec, variant, seed) -> float:
    """Composition-term positivity of every head of ``layer`` with the ``role`` head of
    ``src_layer``, reduced over the heads of ``layer``."""
    head = role_head(tables, spec["role"], spec["src_layer"], variant, seed)
    grid = _composition(tables, spec, variant, seed)
    if head not in grid.columns:
        raise NotMeasured(f"no composition rows with source head {head}")
    return _reduce(grid[head].dropna().tolist(), spec)


def composition_margin_of_role_head(tables, spec, variant, seed) -> float:
    """For every head of ``layer``: its composition-term positivity with the ``role`` head
    of ``src_layer`` minus the largest with any other head of ``src_layer``; the least of
    these. Positive: the role head's composition stands above every other's, for every head."""
    head = role_head(tables, spec["role"], spec["src_layer"], variant, seed)
    grid = _composition(tables, spec, variant, seed)
    others = [c for c in grid.columns if c != head]
    if head not in grid.columns or not others:
        raise NotMeasured(f"no other source head to compare head {head} with")
    return float((grid[head] - grid[others].max(axis=1)).min())


DERIVED = {"difference": difference, "ratio": ratio, "chance_excess_ratio": chance_excess_ratio,
           "phase_change_gap": phase_change_gap, "over_selected_heads": over_selected_heads,
           "composition_with_role_head": composition_with_role_head,
           "composition_margin_of_role_head": composition_margin_of_role_head}


def metric_value(tables: dict, spec: dict, variant: str, seed: int) -> float:
    if "derived" in spec:
        if spec["derived"] not in DERIVED:
            raise ClaimError(f"derived metric {spec['derived']!r}; allowed: {list(DERIVED)}")
        return DERIVED[spec["derived"]](tables, spec, variant, seed)
    return table_metric(tables, spec, variant, seed)


# ---------------------------------------------------------------- families


def _remap(spec, models: dict):
    """``spec`` with every nested ``variant:`` mapped through ``models`` (role -> model)."""
    if isinstance(spec, dict):
        return {k: (models.get(v, v) if k == "variant" else _remap(v, models)) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_remap(v, models) for v in spec]
    return spec


def family_claims(claims: list[dict], models: dict | None) -> list[dict]:
    """The claims of the roles ``models`` maps (role -> model), each on its model, with its
    ``role`` kept; ``None``: the write-up's family, every claim on the variant it names.
    A claim whose metric reads another role that ``models`` does not map is left out."""
    out = []
    for claim in claims:
        if models is None:
            out.append({**claim, "role": claim["variant"]})
            continue
        roles = {claim["variant"]} | _variants_in({k: v for k, v in claim.items() if k != "variant"})
        if not roles <= set(models):
            continue
        out.append({**_remap(claim, models), "variant": models[claim["variant"]],
                    "role": claim["variant"]})
    return out


def _variants_in(spec) -> set:
    """Every ``variant:`` named inside (nested) metric specs."""
    if isinstance(spec, dict):
        own = {spec["variant"]} if isinstance(spec.get("variant"), str) else set()
        return own.union(*(_variants_in(v) for v in spec.values()))
    if isinstance(spec, list):
        return set().union(*(_variants_in(v) for v in spec))
    return set()


# ---------------------------------------------------------------- evaluation

SYMBOLS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "="}


def format_value(value: float, compare: str | None = None, threshold: float | None = None) -> str:
    """``value`` with 3 significant digits, or more where fewer would print a number that
    reads the other way against ``threshold`` (0.2996 is not "0.3" under "≥ 0.3")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))  # a count, or an exact value
    for digits in range(3, 8):
        text = f"{value:#.{digits}g}".rstrip(".")  # −0.9998 is "−1.00", never "−1"
        if "e" in text:
            text = f"{value:.{digits}g}"
        if compare is None or threshold is None:
            return _minus(text)
        shown = float(text)
        same_side = COMPARISONS[compare](shown, threshold) == COMPARISONS[compare](value, threshold)
        if same_side and (shown != threshold or value == threshold):
            return _minus(text)
    return _minus(repr(value))


def _minus(text: str) -> str:
    """A printed number with the true minus sign the report's tables use (−0.336)."""
    return text.replace("-", "−")


def test_text(claim: dict, rules: dict) -> str:
    """The claim's test in words: comparison and threshold (and any further condition)."""
    symbol = SYMBOLS[claim["compare"]]
    if claim["threshold"] == ROLE:
        text = (f"{symbol} role threshold: max({rules['times_chance']:g} × chance, "
                f"chance + {rules['above_chance']:g})")
    else:
        text = f"{symbol} {_minus(format(claim['threshold'], 'g'))}"
    for extra in claim.get("also", []):
        text += (f"; and {extra.get('label', 'also')} {SYMBOLS[extra['compare']]} "
                 f"{_minus(format(extra['threshold'], 'g'))}")
    return text


def _optional(tables, spec, variant, seed) -> float:
    try:
        return metric_value(tables, spec, variant, seed)
    except NotMeasured:
        return math.nan


def evaluate_claim(claim: dict, tables: dict, seed: int,
                   at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> dict:
    """One row: the claim on one seed, with its value, chance level, threshold and status."""
    row = {"claim": claim["id"], "variant": claim["variant"],
           "role": claim.get("role", claim["variant"]), "seed": seed,
           "compare": claim["compare"], "threshold": claim["threshold"]}
    chance = (_optional(tables, claim["chance"], claim["variant"], seed) if "chance" in claim
              else math.nan)
    beside = "; ".join(
        f"{b['label']} {format_value(_optional(tables, b['metric'], claim['variant'], seed))}"
        for b in claim.get("beside", []))
    row.update(chance=chance, beside=beside)

    def result(value, status, note="", threshold_value=math.nan):
        at_chance = bool(not math.isnan(chance) and not math.isnan(value) and not math.isinf(value)
                         and abs(value - chance) < at_chance_within)
        return {**row, "value": value, "threshold_value": threshold_value, "status": status,
                "at_chance": at_chance, "note": note}

    try:
        value = metric_value(tables, claim["metric"], claim["variant"], seed)
    except NotMeasured as why:
        return result(math.nan, NOT_MEASURED, str(why))
    if math.isnan(value):
        return result(value, NOT_MEASURED, "value is NaN")
    threshold = claim["threshold"]
    if threshold == ROLE:
        if math.isnan(chance):
            return result(value, NOT_MEASURED, "no chance level to set the role threshold")
        threshold = role_threshold(chance, _roles(tables))
    holds = COMPARISONS[claim["compare"]](value, threshold)
    notes = []
    for extra in claim.get("also", []):
        label = extra.get("label", "also")
        try:
            v = metric_value(tables, extra["metric"], claim["variant"], seed)
        except NotMeasured as why:
            if holds:
                return result(value, NOT_MEASURED, f"{label}: {why}", threshold)
            continue
        ok = COMPARISONS[extra["compare"]](v, extra["threshold"])
        notes.append(f"{label} {format_value(v, extra['compare'], extra['threshold'])}"
                     + ("" if ok else f" (needs {SYMBOLS[extra['compare']]} "
                                  f"{_minus(format(extra['threshold'], 'g'))})"))
        holds = holds and ok
    return result(value, HOLDS if holds else FAILS, "; ".join(notes), threshold)


def evaluate_claims(claims: list[dict], tables: dict, seeds: list[int],
                    at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> pd.DataFrame:
    """Every claim on every seed: one row each."""
    return pd.DataFrame([evaluate_claim(c, tables, s, at_chance_within) for c in claims for s in seeds])


def _chance_text(values) -> str:
    values = [v for v in values if not pd.isna(v)]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return _minus(f"{lo:.3g}" if f"{lo:.3g}" == f"{hi:.3g}" else f"{lo:.3g}–{hi:.3g}")


def scorecard(claims: list[dict], results: pd.DataFrame, rules: dict | None = None,
              at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> pd.DataFrame:
    """One row per claim: the quote, the metric in words, the test, the chance level, the
    per-seed values, holds in k of n seeds, and why any seed is not measured."""
    rules = rules or DEFAULT_ROLE_RULES
    rows = []
    for claim in claims:
        mine = results[results["claim"] == claim["id"]]
        measured = mine[mine["status"] != NOT_MEASURED]
        k, n = int((mine["status"] == HOLDS).sum()), len(mine)
        if len(measured) == 0:
            verdict = f"not measured in {n} of {n} seeds"
        elif len(measured) == n:
            verdict = f"holds in {k} of {n} seeds"
        else:
            verdict = f"holds in {k} of {n} seeds ({n - len(measured)} not measured)"
        values = []
        for r in mine.itertuples():
            compare = r.compare
            threshold = r.threshold_value if not pd.isna(r.threshold_value) else None
            text = format_value(r.value, compare if threshold is not None else None, threshold)
            if r.status == NOT_MEASURED:
                values.append(f"{r.seed}: not measured")
                continue
            values.append(f"{r.seed}: {text} {MARKS[r.status]}" + (" (at chance)" if r.at_chance else ""))
        finite = [(r.value, r) for r in measured.itertuples() if not pd.isna(r.value)]
        if finite:
            lo, hi = min(finite, key=lambda x: x[0]), max(finite, key=lambda x: x[0])
            shown = [format_value(v, r.compare if not pd.isna(r.threshold_value) else None,
                                  None if pd.isna(r.threshold_value) else r.threshold_value)
                     for v, r in (lo, hi)]
            value_range = shown[0] if shown[0] == shown[1] else f"{shown[0]} to {shown[1]}"
        else:
            value_range = ""
        at_chance = int(mine["at_chance"].sum())
        reasons = list(dict.fromkeys(str(r) for r in mine.loc[mine["status"] == NOT_MEASURED, "note"]))
        notes = []
        if any(math.isinf(v) for v in mine["value"] if not pd.isna(v)):
            notes.append(INFINITY_NOTE.get(claim["metric"].get("derived"), "∞: no finite value"))
        if at_chance:
            notes.append(f"at its chance level in {at_chance} of {n} seeds "
                         f"(within {at_chance_within:g})")
        if reasons:
            notes.append("not measured: " + " | ".join(reasons))
        other = list(dict.fromkeys(str(r) for r in mine.loc[(mine["status"] != NOT_MEASURED)
                                                             & (mine["note"] != ""), "note"]))
        if other:
            notes.append(" | ".join(other))
        rows.append({
            "claim": claim["id"], "variant": claim["variant"],
            "role": claim.get("role", claim["variant"]), "group": claim.get("group", ""),
            "source": claim.get("source", "write-up"), "quote": claim.get("quote", ""),
            "statement": claim.get("statement", ""),
            "measure": claim.get("measure", ""), "test": test_text(claim, rules),
            "chance": _chance_text(mine["chance"]),
            "write_up": claim.get("write_up", ""), "reference": claim.get("reference", ""),
            "marks": "".join(MARKS[s] for s in mine["status"]),
            "holds": k, "measured": len(measured), "seeds": n, "verdict": verdict,
            "values": ", ".join(values), "range": value_range,
            "reason": reasons[0] if reasons else "",
            "beside": " | ".join(b for b in mine["beside"] if b),
            "notes": "; ".join(notes),
        })
    return pd.DataFrame(rows)


def load_settings(claims_yaml) -> dict:
    """The file-level settings of claims.yaml (``at_chance_within``)."""
    data = yaml.safe_load(Path(claims_yaml).read_text())
    return {"at_chance_within": float(data.get("at_chance_within", DEFAULT_AT_CHANCE_WITHIN)),
            "groups": dict(data.get("groups", {}))}


ROBUST, SEED_DEPENDENT, NOT_REPLICATED, NOT_MEASURED_ANY = (
    "replicates in every seed", "depends on the seed", "does not replicate", "could not be measured")
OUTCOMES = (ROBUST, SEED_DEPENDENT, NOT_REPLICATED, NOT_MEASURED_ANY)


def outcome(row) -> str:
    """One scorecard row's outcome: robust (holds in every seed), seed-dependent (holds in
    some), not replicated (measured in some seed, holds in none: the seeds where it cannot
    be measured give it no support either) or not measured (in any seed)."""
    holds, measured, seeds = int(row["holds"]), int(row["measured"]), int(row["seeds"])
    if measured == 0:
        return NOT_MEASURED_ANY
    if holds == seeds:
        return ROBUST
    if holds == 0:
        return NOT_REPLICATED
    return SEED_DEPENDENT


def family_comparison(card: pd.DataFrame, families: dict[str, str]) -> pd.DataFrame:
    """One row per claim: its outcome in each family side by side (a column per family,
    named by its title, in ``families`` order: name -> title; the role's model of each
    family is in the scorecard), and ``differs``: whether the families that evaluate it
    disagree."""
    rows = []
    for (role, claim), mine in card.groupby(["role", "claim"], sort=False):
        first = mine.iloc[0]
        row = {"role": role, "claim": claim, "group": first["group"], "measure": first["measure"],
               "test": first["test"]}
        kinds = set()
        for name, title in families.items():
            r = mine[mine["family"] == name]
            if not len(r):
                row[title] = "not evaluated (no model in this role)"
                continue
            r = r.iloc[0]
            kinds.add(outcome(r))
            h, m, n = int(r["holds"]), int(r["measured"]), int(r["seeds"])
            seeds = (f"not measured in {n} of {n} seeds" if m == 0 else f"holds in {h} of {n} seeds"
                     + (f", {n - m} not measured" if m < n else ""))
            row[title] = f"{outcome(r)} ({seeds}" + (f"; {r['range']})" if r["range"] else ")")
        row["differs"] = len(kinds) > 1
        rows.append(row)
    return pd.DataFrame(rows)


def run_claims(claims_yaml, table_paths, claims_csv, scorecard_csv, roles: dict | None = None,
               families: dict | None = None, comparison_csv=None) -> None:
    """Evaluate claims.yaml on the aggregated per-seed tables (named by file stem), for
    the write-up's family and every other family in ``families`` (name -> {title,
    models: role -> model}); ``comparison_csv``: their outcomes side by side.

    ``roles``: the head-role rule (``behaviour.roles`` of the config). The seeds are
    every seed that appears in any table.
    """
    from ..atomic import write_csv
    from ..core.loading import read_table

    claims = load_claims(claims_yaml)
    settings = load_settings(claims_yaml)
    families = {WRITE_UP: {"title": WRITE_UP_TITLE, "models": None},
                **{k: v for k, v in (families or {}).items() if k != WRITE_UP}}
    tables = Tables({Path(p).stem: read_table(p) for p in table_paths}, roles)
    seeds = sorted({int(s) for t in tables.values() if "seed" in t for s in t["seed"].unique()})
    results, cards = [], []
    for name, family in families.items():
        mine = family_claims(claims, family["models"])
        if not mine:
            continue
        rows = evaluate_claims(mine, tables, seeds, settings["at_chance_within"])
        card = scorecard(mine, rows, tables.roles, settings["at_chance_within"])
        for frame in (rows, card):
            frame.insert(0, "family", name)
        results.append(rows)
        cards.append(card)
    results, card = pd.concat(results, ignore_index=True), pd.concat(cards, ignore_index=True)
    write_csv(claims_csv, results)
    card.insert(5, "group_title", [settings["groups"].get(g, g) for g in card["group"]])
    write_csv(scorecard_csv, card)
    if comparison_csv is not None:
        write_csv(comparison_csv, family_comparison(
            card, {k: f["title"] for k, f in families.items()}))
