"""The claims' metric language: a metric read from the aggregated per-seed tables
(``results/tables/<table>.csv``) for one model and seed, as an :class:`Estimate` (its value
with its 95 % interval), and the decision of one seed against a threshold.

A metric with no value for a seed (missing table, column or rows, or a head the claim is
about that no model has) raises :class:`NotMeasured` with the reason. A value read from
weights alone has no interval: it is exact. The interval columns beside a table's column
(``low``/``high`` beside ``value``, ``<column>_low``/``<column>_high`` beside any other;
:func:`inductionlab.analysis.uncertainty.interval_columns`) are carried through
reductions and derived metrics (:func:`reduce_estimates`, :func:`difference`, ...). Per
seed a claim *holds* when its whole interval lies on the holding side of the threshold,
*fails* when its whole interval lies on the other side, and is *too close to call* when the
interval contains the threshold (:func:`decide`).

A *family* maps the write-up's roles (one_layer, one_layer_smeared, two_layer) to trained
models; :func:`family_claims` rewrites the claims of a family (every ``variant:`` inside a
metric follows the map).
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pandas as pd

from ..analysis.roles import content_column, role_threshold
from ..analysis.uncertainty import FAILS, HOLDS, NOT_MEASURED, TOO_CLOSE, interval_columns  # noqa: F401
from ..formatting.labels import minus_signs
from ..formatting.numbers import COMPARISONS, _minus, format_value

REDUCERS = {"min": min, "max": max, "mean": lambda v: sum(v) / len(v)}
ROLE = "role"


class Tables(dict):
    """The aggregated tables by name, with the head-role rule the claims read them under
    (``behaviour.roles`` of the config; its defaults are the schema's)."""

    def __init__(self, tables=(), roles: dict | None = None):
        super().__init__(tables)
        self.roles = dict(roles) if roles is not None else None


def _roles(tables) -> dict:
    """The head-role rule of ``tables``; a claim with a role threshold needs one."""
    rule = getattr(tables, "roles", None)
    if rule is None:
        raise ValueError("a claim with a role threshold needs the head-role rule "
                         "(behaviour.roles)")
    return rule

class NotMeasured(LookupError):
    """The metric has no value for this seed; the message says why."""


class ClaimError(ValueError):
    """A claim in claims.yaml is malformed."""




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


def _optional(tables, spec, variant, seed) -> Estimate:
    try:
        return metric_value(tables, spec, variant, seed)
    except NotMeasured:
        return exact(math.nan)
