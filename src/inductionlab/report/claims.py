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

Uncertainty. A metric's value comes with its 95 % interval (:class:`Estimate`): the
interval columns beside a table's column (``low``/``high`` beside ``value``,
``<column>_low``/``<column>_high`` beside any other; see
:func:`inductionlab.analysis.uncertainty.interval_columns`), carried through reductions
and derived metrics (:func:`reduce_estimates`, :func:`difference`, ...). A value read from
weights alone has no interval: it is exact. Per seed a claim *holds* when its whole
interval lies on the holding side of the threshold, *fails* when its whole interval lies
on the other side, and is *too close to call* when the interval contains the threshold.
A claim of absence ("never repeats", "has no induction head") is read the same way, which
makes it an equivalence test: it holds only when the interval's far end is on the right
side.

Display. Numbers follow the report's one rule for digits (:mod:`.tables`): 3 significant
digits, more only where fewer would read the other way against the threshold
(:func:`format_value`); an interval's bounds at the value's decimals, or at their own 3
significant digits where those are fewer (:func:`bound_text`); a whole number (a count)
printed whole, its bounds at their own 3 significant digits; a threshold in the test
column as claims.yaml writes it. Every minus sign is the true minus U+2212, in the
write-up's printed numbers too (the ``write_up`` and ``reference`` cells, the measure and
statement; a quote stays verbatim). The summary over seeds names the unit of the
claim's quantity (:func:`claim_unit`): nats for losses, logits for offset-profile effects,
share of attention for attention scores; shares, accuracies, positivities, ratios and
counts have none.
"""
from __future__ import annotations

import math
import operator
import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..analysis.roles import content_column, role_threshold
from ..analysis.uncertainty import interval_columns, mean_interval
from .labels import minus_signs
from .tables import companion_places, decimals, fmt_at

HOLDS, FAILS, TOO_CLOSE, NOT_MEASURED = "holds", "fails", "too close to call", "not measured"
WRITE_UP = "write_up"  # the family of the config's variants, each in the role of its name
WRITE_UP_TITLE = "the write-up's models"
MARKS = {HOLDS: "✓", FAILS: "✗", TOO_CLOSE: "?", NOT_MEASURED: "–"}
INFINITY_NOTE = {"ratio": "∞: division by zero", "chance_excess_ratio": "∞: division by zero"}

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


def load_claims(path) -> list[dict]:
    data = _claims_document(path)
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
        if claim.get("unit") not in (None, "", *UNITS):
            raise ClaimError(f"{path}: claim {claim['id']}: unit {claim['unit']!r}; allowed: "
                             f"{list(UNITS)} or '' (none)")
        if claim["id"] in seen:
            raise ClaimError(f"{path}: claim id {claim['id']!r} appears twice")
        seen.add(claim["id"])
    return claims


# ---------------------------------------------------------------- metrics


class Estimate(float):
    """A measured value (it is the float) and its 95 % interval ``low``, ``high``; NaN bounds:
    exact (a value from the weights). Compares and computes as the plain value."""

    def __new__(cls, value, low: float = math.nan, high: float = math.nan):
        obj = super().__new__(cls, value)
        obj.low, obj.high = float(low), float(high)
        return obj

    @property
    def value(self) -> float:
        return float(self)

    @property
    def exact(self) -> bool:
        return math.isnan(self.low) or math.isnan(self.high)

    @property
    def bounds(self) -> tuple[float, float]:
        """(low, high), the value itself twice when exact."""
        return (self.value, self.value) if self.exact else (self.low, self.high)

    def __repr__(self) -> str:
        return f"Estimate({self.value!r}, {self.low!r}, {self.high!r})"


def exact(value: float) -> Estimate:
    return Estimate(float(value))


def decide(compare: str, threshold: float, estimate: Estimate) -> str:
    """HOLDS when every value of the interval passes ``compare threshold``, FAILS when none
    does, TOO_CLOSE when the interval contains the threshold."""
    test = COMPARISONS[compare]
    low, high = estimate.bounds
    if compare == "==":
        if low == high == threshold:
            return HOLDS
        return TOO_CLOSE if low <= threshold <= high else FAILS
    ok_low, ok_high = test(low, threshold), test(high, threshold)
    if ok_low and ok_high:
        return HOLDS
    if not ok_low and not ok_high:
        return FAILS
    return TOO_CLOSE


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
    for column, wanted in (spec.get("require") or {}).items():
        # rows that exist but say the quantity is not there: not measured, with their note
        if column in rows.columns and len(rows) and not rows[column].eq(wanted).all():
            notes = [str(n) for n in rows.get("note", pd.Series(dtype=str)).dropna() if str(n)]
            raise NotMeasured(notes[0] if notes else f"{column} is not {wanted}")
    if rows[spec["column"]].isna().all() and "note" in rows and rows["note"].notna().any():
        notes = [str(n) for n in rows["note"].dropna() if str(n)]
        if notes:  # the stage said why there is no value
            raise NotMeasured(notes[0])
    rows = rows[rows[spec["column"]].notna()]
    if rows.empty:
        raise NotMeasured(f"no rows of {name!r} for {variant} seed {seed} where {spec.get('where')}")
    return rows


def row_estimates(rows: pd.DataFrame, column: str) -> list[Estimate]:
    """The ``column`` of every row with its interval columns when the table has them."""
    low, high = interval_columns(column)
    if low in rows and high in rows:
        return [Estimate(float(v), float(a), float(b))
                for v, a, b in zip(rows[column], rows[low], rows[high])]
    return [exact(v) for v in rows[column]]


COUNTS = {"count_at_least": ("at_least", operator.ge), "count_at_most": ("at_most", operator.le),
          "count_above": ("above", operator.gt), "count_below": ("below", operator.lt)}


def reduce_estimates(values: list[Estimate], spec: dict) -> Estimate:
    """Reduce per-row estimates by ``spec['reduce']``. min / max / mean act on the values and
    on each bound; a count counts the rows whose value passes, and its interval the rows
    whose worst and best bound pass. Exact when every row is exact."""
    if not values:
        raise NotMeasured("no value to reduce")
    how = spec.get("reduce")
    if how is None:
        if len(values) != 1:
            raise ClaimError(f"metric {spec} selects {len(values)} rows; give a reduce")
        return values[0]
    every_exact = all(v.exact for v in values)
    lows, highs = [v.bounds[0] for v in values], [v.bounds[1] for v in values]
    if how in COUNTS:
        key, test = COUNTS[how]
        x = spec[key]
        value = float(sum(test(v.value, x) for v in values))
        if every_exact:
            return exact(value)
        sure = float(sum(test(a, x) and test(b, x) for a, b in zip(lows, highs)))
        maybe = float(sum(test(a, x) or test(b, x) for a, b in zip(lows, highs)))
        return Estimate(value, sure, maybe)
    if how not in REDUCERS:
        raise ClaimError(f"reduce {how!r}; allowed: {list(REDUCERS)} or {', '.join(COUNTS)}")
    reducer = REDUCERS[how]
    value = float(reducer([v.value for v in values]))
    return exact(value) if every_exact else Estimate(value, float(reducer(lows)), float(reducer(highs)))


def _reduce(values: list[float], spec: dict) -> float:
    """:func:`reduce_estimates` of exact values: the value alone."""
    return reduce_estimates([exact(v) for v in values], spec).value


def table_metric(tables: dict, spec: dict, variant: str, seed: int) -> Estimate:
    """The value of a {table, where, column, reduce} spec for one seed, with its interval."""
    return reduce_estimates(row_estimates(_rows(tables, spec, variant, seed), spec["column"]), spec)


def difference(tables, spec, variant, seed) -> Estimate:
    """a - b; its interval adds the two half-widths in quadrature on each side (the two
    taken as independent)."""
    a = metric_value(tables, spec["a"], variant, seed)
    b = metric_value(tables, spec["b"], variant, seed)
    value = a.value - b.value
    if a.exact and b.exact:
        return exact(value)
    (al, ah), (bl, bh) = a.bounds, b.bounds
    return Estimate(value, value - math.hypot(a.value - al, bh - b.value),
                    value + math.hypot(ah - a.value, b.value - bl))


def _divide(a: Estimate, b: Estimate, value: float) -> Estimate:
    """a / b with interval arithmetic on the bounds (NaN bounds when b's interval holds 0)."""
    if a.exact and b.exact:
        return exact(value)
    (al, ah), (bl, bh) = a.bounds, b.bounds
    if bl <= 0 <= bh:
        return Estimate(value, -math.inf, math.inf)
    corners = [al / bl, al / bh, ah / bl, ah / bh]
    return Estimate(value, min(corners), max(corners))


def ratio(tables, spec, variant, seed) -> Estimate:
    """a / b."""
    a, b = metric_value(tables, spec["a"], variant, seed), metric_value(tables, spec["b"], variant, seed)
    if b.value == 0:
        raise NotMeasured("ratio with a zero denominator")
    return _divide(a, b, a.value / b.value)


def chance_excess_ratio(tables, spec, variant, seed) -> float:
    """(a − chance) / (b − chance): how much of b's excess over chance is left in a.

    Not measured when b's excess over chance is below ``min_excess`` (there is nothing
    above chance to remove).
    """
    chance = metric_value(tables, spec["chance"], variant, seed).value
    b = metric_value(tables, spec["b"], variant, seed)
    if b.value - chance < spec["min_excess"]:
        raise NotMeasured(f"the reference is only {format_value(b.value - chance)} above its "
                          f"chance level {format_value(chance)} "
                          f"(< {_minus(format(spec['min_excess'], 'g'))}): nothing to remove")
    a = metric_value(tables, spec["a"], variant, seed)
    shift = lambda e: Estimate(e.value - chance, e.low - chance, e.high - chance)  # noqa: E731
    return _divide(shift(a), shift(b), (a.value - chance) / (b.value - chance))


def _passes(select: dict, row, tables) -> bool:
    """Does one head's row pass ``select``'s comparison? ``threshold: role`` compares with the
    role threshold of the row's own ``<column>_chance``; ``content: true`` also asks the
    column's content part (score − positional control) to reach the role rule's
    ``above_chance``, as a copy-seeking role does."""
    value = getattr(row, select["column"])
    threshold = select["threshold"]
    if threshold == ROLE:
        threshold = role_threshold(getattr(row, f"{select['column']}_chance"), _roles(tables))
    if select.get("content") and not getattr(row, content_column(select["column"])) >= \
            _roles(tables)["above_chance"]:
        return False
    return COMPARISONS[select["compare"]](value, threshold)


def _heads_passing(tables, select, variant, seed) -> set[tuple[int, int]]:
    chosen = _rows(tables, select, variant, seed)
    return {(int(r.layer), int(r.head)) for r in chosen.itertuples() if _passes(select, r, tables)}


def over_selected_heads(tables, spec, variant, seed) -> Estimate:
    """``measure`` reduced over the heads whose ``select`` value passes its comparison."""
    heads = _heads_passing(tables, spec["select"], variant, seed)
    if not heads:
        sel = spec["select"]
        where = "".join(f", {k} {v}" for k, v in (sel.get("where") or {}).items())
        if sel["threshold"] == ROLE:
            content = " (with its content part)" if sel.get("content") else ""
            raise NotMeasured(f"no head has the {sel['column']} role{content}{where}")
        raise NotMeasured(minus_signs(f"no head has {sel['column']} {sel['compare']} "
                                      f"{sel['threshold']}{where}"))
    measure = _rows(tables, spec["measure"], variant, seed)
    chosen = measure[[(int(l), int(h)) in heads for l, h in zip(measure["layer"], measure["head"])]]
    return reduce_estimates(row_estimates(chosen, spec["measure"]["column"]), spec)


def _composition(tables, spec, variant, seed) -> pd.DataFrame:
    """Composition-term positivities of ``kind`` of every head of ``layer`` with every
    head of ``src_layer``: a frame indexed by head, one column per source head."""
    rows = _rows(tables, {"table": "composition", "column": "positivity_real",
                          "where": {"kind": spec["kind"], "layer": spec["layer"],
                                    "src_layer": spec["src_layer"]}}, variant, seed)
    return rows.pivot_table(index="head", columns="src_head", values="positivity_real")


def composition_head(tables, spec, variant, seed) -> int:
    """The head of ``src_layer`` picked by its composition: the one whose term positivities
    with the heads of ``layer``, reduced by ``reduce`` (min: with every head), are largest.
    This is how a sentence that names a head by its composition picks it."""
    grid = _composition(tables, spec, variant, seed)
    reduced = {int(c): _reduce(grid[c].dropna().tolist(), spec) for c in grid.columns}
    return max(reduced, key=reduced.get)


def best_composition(tables, spec, variant, seed) -> Estimate:
    """Composition-term positivity of the :func:`composition_head` with every head of
    ``layer``, reduced by ``reduce`` (exact: from the weights)."""
    grid = _composition(tables, spec, variant, seed)
    head = composition_head(tables, spec, variant, seed)
    return exact(_reduce(grid[head].dropna().tolist(), spec))


def composition_margin(tables, spec, variant, seed) -> Estimate:
    """For every head of ``layer``: its composition-term positivity with the
    :func:`composition_head` minus the largest with any other head of ``src_layer``; the
    least of these. Positive: that head's composition stands above every other's."""
    head = composition_head(tables, spec, variant, seed)
    grid = _composition(tables, spec, variant, seed)
    others = [c for c in grid.columns if c != head]
    if not others:
        raise NotMeasured(f"no other source head to compare head {head} with")
    return exact(float((grid[head] - grid[others].max(axis=1)).min()))


def score_of_composition_head(tables, spec, variant, seed) -> Estimate:
    """``column`` of head_scores for the :func:`composition_head`: the second property of a
    head named by two, tested on the head the first one picks."""
    head = composition_head(tables, spec, variant, seed)
    rows = _rows(tables, {"table": "head_scores", "column": spec["column"],
                          "where": {"layer": spec["src_layer"], "head": head}}, variant, seed)
    return row_estimates(rows, spec["column"])[0]


def profile_overlap(tables, spec, variant, seed) -> Estimate:
    """How alike the heads of a layer attend: every head's profile (``column`` over ``key``,
    e.g. mean attention by offset), each scaled to sum 1; for every pair of heads of the
    same layer, the attention they have in common, Σ_k min(p_k, q_k) (1: the same profile;
    0: no key in common); these overlaps reduced by ``reduce``. Exact: the profile table
    carries no interval."""
    rows = _rows(tables, spec, variant, seed)
    for column in ("layer", "head", spec["key"]):
        if column not in rows.columns:
            raise NotMeasured(f"table {spec['table']!r} has no column {column!r}")
    overlaps = []
    for layer, group in rows.groupby("layer"):
        grid = group.pivot_table(index="head", columns=spec["key"], values=spec["column"],
                                 aggfunc="mean").fillna(0.0)
        totals = grid.sum(axis=1)
        if (grid < 0).any().any() or (totals <= 0).any():
            raise NotMeasured(f"layer {layer}: a head's {spec['column']} profile is not a "
                              f"non-negative profile with some mass")
        shares = grid.div(totals, axis=0).to_numpy()
        overlaps += [float(np.minimum(shares[a], shares[b]).sum())
                     for a in range(len(shares)) for b in range(a + 1, len(shares))]
    if not overlaps:
        raise NotMeasured("no layer has two heads to compare")
    return reduce_estimates([exact(v) for v in overlaps], spec)


DERIVED = {"difference": difference, "ratio": ratio, "chance_excess_ratio": chance_excess_ratio,
           "over_selected_heads": over_selected_heads, "best_composition": best_composition,
           "composition_margin": composition_margin,
           "score_of_composition_head": score_of_composition_head,
           "profile_overlap": profile_overlap}


def metric_value(tables: dict, spec: dict, variant: str, seed: int) -> Estimate:
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

# the unit of a claim's quantity -> how the summary over seeds names it
UNITS = {"nats": "in nats", "logits": "in logits", "share of attention": "as a share of attention"}
# attention scores (head_scores columns, and their per-layer forms in the ablations table)
ATTENTION_SCORES = ("induction", "nearest_copy", "first_block", "first_token", "previous_token",
                    "local", "prefix_matching")
_ATTENTION = re.compile(r"^(%s)(_(control|content|low|high|content_low|content_high))?"
                        r"(_(mean|max|chance)_L\d+)?$" % "|".join(ATTENTION_SCORES))
_NATS = re.compile(r"^(val_)?(delta_)?loss(_|$)|^icl_score$")
UNITLESS = {"ratio", "chance_excess_ratio", "profile_overlap", "best_composition",
            "composition_margin"}


def quantity_unit(table: str, column: str, where: dict | None = None) -> str | None:
    """The unit of ``column`` of ``table`` (a key of :data:`UNITS`), None for a quantity
    without one (a share, an accuracy, a positivity, a z-score). In a long table (a
    ``value`` column) the ``metric`` of ``where`` names the quantity."""
    if table == "phase_change":  # spans (a factor in steps), |ln| ratios, R²: no unit
        return None
    metric = (where or {}).get("metric")
    if column in ("value", "mean") and isinstance(metric, str):
        column = metric
    if table == "offset_profile":
        return "logits"
    if _NATS.search(str(column)):
        return "nats"
    if _ATTENTION.match(str(column)) or (table == "positional_shortcut_offsets"
                                         and column == "attention"):
        return "share of attention"
    return None


def metric_unit(spec: dict) -> str | None:
    """The unit of a metric spec's value: its ``unit`` when it names one; a count (reduce
    count_*) and the unitless derived metrics (ratios, positivities, overlaps) none; a
    difference the unit of its two sides when they share it; else the unit of the table
    column it reads (:func:`quantity_unit`)."""
    if "unit" in spec:
        return spec["unit"] or None
    if spec.get("reduce") in COUNTS:
        return None
    derived = spec.get("derived")
    if derived in UNITLESS:
        return None
    if derived == "difference":
        a, b = metric_unit(spec["a"]), metric_unit(spec["b"])
        return a if a == b else None
    if derived == "over_selected_heads":
        return metric_unit(spec["measure"])
    if derived == "score_of_composition_head":
        return quantity_unit("head_scores", spec["column"])
    if "table" in spec and "column" in spec:
        return quantity_unit(spec["table"], spec["column"], spec.get("where"))
    return None


def claim_unit(claim: dict) -> str | None:
    """The unit of a claim's quantity: the claim's ``unit`` (a key of :data:`UNITS`, or ""
    for none) when it declares one, else the unit of its metric (:func:`metric_unit`)."""
    if "unit" in claim:
        return claim["unit"] or None
    return metric_unit(claim["metric"])


def format_value(value: float, compare: str | None = None, threshold: float | None = None) -> str:
    """``value`` to 3 significant digits (:func:`inductionlab.report.tables.decimals`, as
    every table shows it), or more where fewer would print a number that reads the other
    way against ``threshold`` (0.2996 is not "0.300" under "≥ 0.3"); a whole number (a
    count) whole; minus signs true."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if float(value).is_integer() and abs(value) < 1e6:
        return _minus(str(int(value)))  # a count, or an exact value
    places = decimals(value)
    for extra in range(0, 5):
        text = fmt_at(value, places + extra)
        if compare is None or threshold is None:
            return text
        shown = float(_plain(text))
        same_side = COMPARISONS[compare](shown, threshold) == COMPARISONS[compare](value, threshold)
        if same_side and (shown != threshold or value == threshold):
            return text
    return _minus(repr(value))


def _plain(text: str) -> str:
    """A printed number back in Python's spelling (hyphen-minus)."""
    return text.replace("−", "-")


def bound_text(value: float, bound: float) -> str:
    """An interval bound of ``value`` at the value's decimals, or at its own 3 significant
    digits where those are fewer (:func:`inductionlab.report.tables.companion_places`);
    the bound of a whole value (a count, printed whole) as :func:`format_value` prints it:
    "2 [1.24, 3]", "1 [0.999, 1]"."""
    if bound is None or math.isnan(bound) or math.isinf(bound) or float(value).is_integer():
        return format_value(bound)
    return fmt_at(bound, companion_places(float(value), float(bound)))


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


def _optional(tables, spec, variant, seed) -> Estimate:
    try:
        return metric_value(tables, spec, variant, seed)
    except NotMeasured:
        return exact(math.nan)


def interval_text(estimate: Estimate, compare: str | None = None,
                  threshold: float | None = None) -> str:
    """'0.31 [0.29, 0.33]', or the value alone when it is exact."""
    text = format_value(estimate.value, compare, threshold)
    if estimate.exact or math.isnan(estimate.value):
        return text
    return (f"{text} [{bound_text(estimate.value, estimate.low)}, "
            f"{bound_text(estimate.value, estimate.high)}]")


def combine(statuses: list[str]) -> str:
    """The status of a claim whose conditions all must hold: FAILS if any fails, else
    TOO_CLOSE if any is too close, else HOLDS."""
    if FAILS in statuses:
        return FAILS
    return TOO_CLOSE if TOO_CLOSE in statuses else HOLDS


def evaluate_claim(claim: dict, tables: dict, seed: int,
                   at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> dict:
    """One row: the claim on one seed, with its value and 95 % interval (``low``, ``high``;
    NaN: exact), chance level, threshold and status (holds, fails, too close to call or
    not measured)."""
    row = {"claim": claim["id"], "variant": claim["variant"],
           "role": claim.get("role", claim["variant"]), "seed": seed,
           "compare": claim["compare"], "threshold": claim["threshold"]}
    chance = (_optional(tables, claim["chance"], claim["variant"], seed).value if "chance" in claim
              else math.nan)
    data_rate = (_optional(tables, claim["data_rate"], claim["variant"], seed).value
                 if "data_rate" in claim else math.nan)
    beside = "; ".join(
        f"{b['label']} {interval_text(_optional(tables, b['metric'], claim['variant'], seed))}"
        for b in claim.get("beside", []))
    row.update(chance=chance, data_rate=data_rate, beside=beside)

    def result(estimate, status, note="", threshold_value=math.nan):
        value = estimate.value
        at_chance = bool(not math.isnan(chance) and not math.isnan(value) and not math.isinf(value)
                         and abs(value - chance) < at_chance_within)
        return {**row, "value": value, "low": estimate.low, "high": estimate.high,
                "threshold_value": threshold_value, "status": status, "at_chance": at_chance,
                "note": note}

    try:
        estimate = metric_value(tables, claim["metric"], claim["variant"], seed)
    except NotMeasured as why:
        return result(exact(math.nan), NOT_MEASURED, str(why))
    if math.isnan(estimate.value):
        return result(estimate, NOT_MEASURED, "value is NaN")
    threshold = claim["threshold"]
    if threshold == ROLE:
        if math.isnan(chance):
            return result(estimate, NOT_MEASURED, "no chance level to set the role threshold")
        threshold = role_threshold(chance, _roles(tables))
    statuses = [decide(claim["compare"], threshold, estimate)]
    notes = []
    for extra in claim.get("also", []):
        label = extra.get("label", "also")
        try:
            e = metric_value(tables, extra["metric"], claim["variant"], seed)
        except NotMeasured as why:
            if statuses[0] != FAILS:
                return result(estimate, NOT_MEASURED, f"{label}: {why}", threshold)
            continue
        status = decide(extra["compare"], extra["threshold"], e)
        statuses.append(status)
        notes.append(f"{label} {interval_text(e, extra['compare'], extra['threshold'])}"
                     + ("" if status == HOLDS else
                        f" ({'too close to' if status == TOO_CLOSE else 'needs'} "
                        f"{SYMBOLS[extra['compare']]} {_minus(format(extra['threshold'], 'g'))})"))
    return result(estimate, combine(statuses), "; ".join(notes), threshold)


def evaluate_claims(claims: list[dict], tables: dict, seeds: list[int],
                    at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> pd.DataFrame:
    """Every claim on every seed: one row each."""
    return pd.DataFrame([evaluate_claim(c, tables, s, at_chance_within) for c in claims for s in seeds])


def _chance_text(values) -> str:
    values = [v for v in values if not pd.isna(v)]
    if not values:
        return ""
    lo, hi = format_value(min(values)), format_value(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def _seed_text(r) -> str:
    """One seed's value as the scorecard prints it: '0: 0.31 [0.29, 0.33] ✓'."""
    if r.status == NOT_MEASURED:
        return f"{r.seed}: not measured"
    threshold = None if pd.isna(r.threshold_value) else r.threshold_value
    text = interval_text(Estimate(r.value, r.low, r.high), r.compare if threshold is not None
                         else None, threshold)
    return f"{r.seed}: {text} {MARKS[r.status]}" + (" (at chance)" if r.at_chance else "")


def verdict_text(statuses: list[str]) -> str:
    """'holds in 3 of 5 seeds (fails in 1, 1 too close to call)': the failing seeds are
    counted apart only when some seed is neither holding nor failing."""
    n = len(statuses)
    measured = [s for s in statuses if s != NOT_MEASURED]
    if not measured:
        return f"not measured in {n} of {n} seeds"
    extra = [f"{statuses.count(s)} {s}" for s in (TOO_CLOSE, NOT_MEASURED) if s in statuses]
    if extra and FAILS in statuses:
        extra.insert(0, f"fails in {statuses.count(FAILS)}")
    return f"holds in {statuses.count(HOLDS)} of {n} seeds" + (f" ({', '.join(extra)})" if extra else "")


def summary_line(mean: float, low: float, high: float, threshold: float | None, compare: str,
                 chance: float | None, data_rate: float | None = None, exact: bool = False,
                 unit: str | None = None) -> str:
    """The claim's quantity over seeds: mean with its 95 % interval over seeds and its
    ``unit`` (:data:`UNITS`), × chance or × the data's own rate, and its distance to the
    threshold."""
    if math.isnan(mean):
        return ""
    text = f"mean {format_value(mean)}"
    if not math.isnan(low):
        text += f" [{bound_text(mean, low)}, {bound_text(mean, high)}] over seeds"
    if unit:
        text += f", {UNITS[unit]}"
    if exact:
        text += " (exact in each seed: from the weights)"
    if chance is not None and not math.isnan(chance) and chance > 0:
        text += f"; {format_value(round(mean / chance, 2))} × chance"
    if data_rate is not None and not math.isnan(data_rate) and data_rate > 0:
        text += f"; {format_value(round(mean / data_rate, 2))} × the data's rate ({format_value(data_rate)})"
    if threshold is not None and not math.isnan(threshold) and not math.isinf(mean):
        distance = mean - threshold
        text += (f"; threshold {SYMBOLS[compare]} {format_value(threshold)}, "
                 f"{'+' if distance >= 0 else '−'}{format_value(abs(distance))} from it")
    return text


def scorecard(claims: list[dict], results: pd.DataFrame, rules: dict | None = None,
              at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> pd.DataFrame:
    """One row per claim: the quote, the metric in words, the test, the chance level, the
    per-seed values with their intervals and status, the counts of each status, the mean over
    seeds with its 95 % interval, and why any seed is not measured."""
    rules = rules or DEFAULT_ROLE_RULES
    rows = []
    for claim in claims:
        mine = results[results["claim"] == claim["id"]]
        statuses = list(mine["status"])
        measured = mine[mine["status"] != NOT_MEASURED]
        k, n = statuses.count(HOLDS), len(mine)
        values = [_seed_text(r) for r in mine.itertuples()]
        finite = [(r.value, r) for r in measured.itertuples()
                  if not pd.isna(r.value) and not math.isinf(r.value)]
        if finite:
            lo, hi = min(finite, key=lambda x: x[0]), max(finite, key=lambda x: x[0])
            shown = [format_value(v, r.compare if not pd.isna(r.threshold_value) else None,
                                  None if pd.isna(r.threshold_value) else r.threshold_value)
                     for v, r in (lo, hi)]
            value_range = shown[0] if shown[0] == shown[1] else f"{shown[0]} to {shown[1]}"
        else:
            value_range = ""
        mean, mean_low, mean_high = mean_interval(measured["value"])
        thresholds = measured["threshold_value"].dropna()
        threshold = float(thresholds.mean()) if len(thresholds) else math.nan
        chances = mine["chance"].dropna()
        rates = mine["data_rate"].dropna() if "data_rate" in mine else pd.Series(dtype=float)
        exact_values = bool(len(measured)) and bool(measured["low"].isna().all())
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
            "statement": minus_signs(claim.get("statement", "")),
            "measure": minus_signs(claim.get("measure", "")), "test": test_text(claim, rules),
            "chance": _chance_text(mine["chance"]),
            # the write-up's printed numbers, with true minus signs (a quote stays verbatim)
            "write_up": minus_signs(claim.get("write_up", "")),
            "reference": minus_signs(claim.get("reference", "")),
            "marks": "".join(MARKS[s] for s in statuses),
            "holds": k, "fails": statuses.count(FAILS), "too_close": statuses.count(TOO_CLOSE),
            "measured": len(measured), "seeds": n, "verdict": verdict_text(statuses),
            "values": ", ".join(values), "range": value_range,
            "mean": mean, "mean_low": mean_low, "mean_high": mean_high,
            "summary": summary_line(mean, mean_low, mean_high, threshold, claim["compare"],
                                    float(chances.mean()) if len(chances) else None,
                                    float(rates.mean()) if len(rates) else None, exact_values,
                                    claim_unit(claim)),
            "reason": minus_signs(reasons[0]) if reasons else "",
            "beside": " | ".join(b for b in mine["beside"] if b),
            "notes": minus_signs("; ".join(notes)),
        })
    return pd.DataFrame(rows)


def load_settings(claims_yaml) -> dict:
    """The file-level settings of claims.yaml (``at_chance_within``)."""
    data = _claims_document(claims_yaml)
    return {"at_chance_within": float(data.get("at_chance_within", DEFAULT_AT_CHANCE_WITHIN)),
            "groups": dict(data.get("groups", {}))}


ROBUST, SEED_DEPENDENT, NOT_REPLICATED, TOO_CLOSE_ANY, NOT_MEASURED_ANY = (
    "replicates in every seed", "depends on the seed", "does not replicate", "too close to call",
    "could not be measured")
OUTCOMES = (ROBUST, SEED_DEPENDENT, NOT_REPLICATED, TOO_CLOSE_ANY, NOT_MEASURED_ANY)
# The words of the outcomes, as the report defines them.
OUTCOME_WORDS = {
    ROBUST: "holds in every seed where it can be measured, each seed's interval on the holding "
            "side of the threshold",
    SEED_DEPENDENT: "holds in some seeds and fails in others, each decided by its interval",
    NOT_REPLICATED: "fails in every seed where it can be measured, each seed's interval on the "
                    "failing side",
    TOO_CLOSE_ANY: "no seed contradicts another, but in at least one seed the 95 % interval "
                   "contains the threshold: the sample cannot decide",
    NOT_MEASURED_ANY: "no seed has a value (the reason is given)",
}


def outcome(row) -> str:
    """One scorecard row's outcome over seeds. Seeds that cannot be measured give no
    support either way and are counted apart (the verdict says how many):

    - no seed measured: could not be measured;
    - some seeds hold and some fail: depends on the seed;
    - otherwise, any seed too close to call: too close to call;
    - every measured seed holds: replicates in every seed;
    - every measured seed fails: does not replicate.
    """
    def count(name, default):
        value = row.get(name, default)
        return int(default if value is None or pd.isna(value) else value)

    holds, measured = int(row["holds"]), int(row["measured"])
    too_close = count("too_close", 0)
    fails = count("fails", measured - holds - too_close)
    if measured == 0:
        return NOT_MEASURED_ANY
    if holds and fails:
        return SEED_DEPENDENT
    if too_close:
        return TOO_CLOSE_ANY
    return ROBUST if holds == measured else NOT_REPLICATED


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
            row[title] = f"{outcome(r)} ({r['verdict']}" + (f"; {r['range']})" if r["range"] else ")")
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
