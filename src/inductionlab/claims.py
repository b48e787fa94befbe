"""The write-up's claims, evaluated on every seed (workflow/claims.yaml).

A claim is a metric, a comparison and a threshold. The metric is read from the
aggregated per-seed tables (``results/tables/<table>.csv``). A claim whose metric
has no value for a seed (missing table, column or rows) is ``not measured`` for
that seed: it never counts as holding.
"""
from __future__ import annotations

import math
import operator
from pathlib import Path

import pandas as pd
import yaml

HOLDS, FAILS, NOT_MEASURED = "holds", "fails", "not measured"

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq}
REDUCERS = {"min": min, "max": max, "mean": lambda v: sum(v) / len(v)}


class ClaimError(ValueError):
    """A claim in claims.yaml is malformed."""


class NotMeasured(LookupError):
    """The metric has no value for this seed; the message says why."""


def load_claims(path) -> list[dict]:
    claims = yaml.safe_load(Path(path).read_text())["claims"]
    seen = set()
    for k, claim in enumerate(claims):
        for key in ("id", "variant", "quote", "metric", "compare", "threshold"):
            if key not in claim:
                raise ClaimError(f"{path}: claim {k} ({claim.get('id', '?')}) lacks {key!r}")
        if claim["compare"] not in COMPARISONS:
            raise ClaimError(f"{path}: claim {claim['id']}: compare {claim['compare']!r}; "
                             f"allowed: {list(COMPARISONS)}")
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
    if how not in REDUCERS:
        raise ClaimError(f"reduce {how!r}; allowed: {list(REDUCERS)} or count_at_least/count_at_most")
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


def phase_change_gap(tables, spec, variant, seed) -> float:
    """|ln((step_a + 1) / (step_b + 1))| between two detected phase-change steps.

    ``a`` and ``b`` name rows of the phase_change table (its ``metric`` column). A
    detector that found no step ("never") makes the gap infinite: the steps do not
    coincide.
    """
    steps = []
    for name in (spec["a"], spec["b"]):
        rows = _rows(tables, {"table": "phase_change", "where": {"metric": name},
                              "column": "step"}, variant, seed)
        step = str(rows["step"].iloc[0])
        if step == "never":
            return math.inf
        steps.append(float(step))
    return abs(math.log((steps[0] + 1) / (steps[1] + 1)))


def over_selected_heads(tables, spec, variant, seed) -> float:
    """``measure`` reduced over the heads whose ``select`` value passes its comparison."""
    select = spec["select"]
    chosen = _rows(tables, select, variant, seed)
    passes = COMPARISONS[select["compare"]]
    heads = {(int(r.layer), int(r.head)) for r in chosen.itertuples()
             if passes(getattr(r, select["column"]), select["threshold"])}
    if not heads:
        raise NotMeasured("no head passes the selection")
    measure = _rows(tables, spec["measure"], variant, seed)
    values = [getattr(r, spec["measure"]["column"]) for r in measure.itertuples()
              if (int(r.layer), int(r.head)) in heads]
    return _reduce(values, spec)


def composition_with_top_head(tables, spec, variant, seed) -> float:
    """Composition-term positivity of every head of ``layer`` with the top ``by`` head of ``src_layer``."""
    scores = _rows(tables, {"table": "head_scores", "where": {"layer": spec["src_layer"]},
                            "column": spec["by"]}, variant, seed)
    top = int(scores.loc[scores[spec["by"]].idxmax(), "head"])
    terms = _rows(tables, {"table": "composition", "column": "positivity_real",
                           "where": {"kind": spec["kind"], "layer": spec["layer"],
                                     "src_layer": spec["src_layer"], "src_head": top}},
                  variant, seed)
    return _reduce(terms["positivity_real"].tolist(), spec)


DERIVED = {"difference": difference, "ratio": ratio, "phase_change_gap": phase_change_gap,
           "over_selected_heads": over_selected_heads,
           "composition_with_top_head": composition_with_top_head}


def metric_value(tables: dict, spec: dict, variant: str, seed: int) -> float:
    if "derived" in spec:
        if spec["derived"] not in DERIVED:
            raise ClaimError(f"derived metric {spec['derived']!r}; allowed: {list(DERIVED)}")
        return DERIVED[spec["derived"]](tables, spec, variant, seed)
    return table_metric(tables, spec, variant, seed)


# ---------------------------------------------------------------- evaluation

def evaluate_claim(claim: dict, tables: dict, seed: int) -> dict:
    """One row: the claim on one seed, with its value and status."""
    row = {"claim": claim["id"], "variant": claim["variant"], "seed": seed,
           "compare": claim["compare"], "threshold": claim["threshold"]}
    try:
        value = metric_value(tables, claim["metric"], claim["variant"], seed)
    except NotMeasured as why:
        return {**row, "value": math.nan, "status": NOT_MEASURED, "note": str(why)}
    if math.isnan(value):
        return {**row, "value": value, "status": NOT_MEASURED, "note": "value is NaN"}
    holds = COMPARISONS[claim["compare"]](value, claim["threshold"])
    return {**row, "value": value, "status": HOLDS if holds else FAILS, "note": ""}


def evaluate_claims(claims: list[dict], tables: dict, seeds: list[int]) -> pd.DataFrame:
    """Every claim on every seed: one row each."""
    return pd.DataFrame([evaluate_claim(c, tables, s) for c in claims for s in seeds])


def scorecard(claims: list[dict], results: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: holds in k of n seeds, the measured values, the write-up's number."""
    rows = []
    for claim in claims:
        mine = results[results["claim"] == claim["id"]]
        measured = mine[mine["status"] != NOT_MEASURED]
        k = int((mine["status"] == HOLDS).sum())
        rows.append({
            "claim": claim["id"], "variant": claim["variant"], "quote": claim["quote"],
            "test": f"{claim['compare']} {claim['threshold']}",
            "write_up": claim.get("write_up", ""),
            "holds": k, "measured": len(measured), "seeds": len(mine),
            "verdict": (f"holds in {k} of {len(mine)} seeds" if len(measured) == len(mine)
                        else f"holds in {k} of {len(mine)} seeds ({len(mine) - len(measured)} not measured)"),
            "values": ", ".join("–" if pd.isna(v) else f"{v:.3g}" for v in mine["value"]),
        })
    return pd.DataFrame(rows)


def run_claims(claims_yaml, table_paths, claims_csv, scorecard_csv) -> None:
    """Evaluate claims.yaml on the aggregated per-seed tables (named by file stem).

    The seeds are every seed that appears in any table.
    """
    from .atomic import write_csv

    claims = load_claims(claims_yaml)
    tables = {Path(p).stem: pd.read_csv(p) for p in table_paths}
    seeds = sorted({int(s) for t in tables.values() if "seed" in t for s in t["seed"].unique()})
    results = evaluate_claims(claims, tables, seeds)
    write_csv(claims_csv, results)
    write_csv(scorecard_csv, scorecard(claims, results))
