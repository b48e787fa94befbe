"""The claims in words and numbers: the test, the unit of a claim's quantity, a value printed
to the digits its threshold needs, its interval, the verdict over seeds and the summary line.

Numbers follow the report's one rule for digits (:mod:`inductionlab.formatting.numbers`): 3 significant digits,
more only where fewer would read the other way against the threshold
(:func:`format_value`); an interval's bounds at the value's decimals, or at their own 3
significant digits where those are fewer (:func:`bound_text`); a whole number (a count)
printed whole, its bounds at their own 3 significant digits; a threshold in the test column
as claims.yaml writes it. Every minus sign is the true minus U+2212. The summary over seeds
names the unit of the claim's quantity (:func:`claim_unit`): nats for losses, logits for
offset-profile effects, share of attention for attention scores; shares, accuracies,
positivities, ratios and counts have none.
"""
from __future__ import annotations

import math

import pandas as pd

from .metrics import COUNTS, FAILS, HOLDS, NOT_MEASURED, ROLE, TOO_CLOSE, Estimate
from ..core.formats import LOGITS, NATS, SHARE_OF_ATTENTION
from ..stages.tables import table_format
from ..formatting.numbers import _minus, bound_text, format_value

# the project's thresholds of its words for a task (docs/methods.md, "Claims and verdicts"):
# "solves" is an accuracy of at least this over the whole interval
SOLVES = 0.95
MARKS = {HOLDS: "✓", FAILS: "✗", TOO_CLOSE: "?", NOT_MEASURED: "–"}
INFINITY_NOTE = {"ratio": "∞: division by zero", "chance_excess_ratio": "∞: division by zero"}

SYMBOLS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "="}

# the unit of a claim's quantity -> how the summary over seeds names it
UNITS = {NATS: "in nats", LOGITS: "in logits", SHARE_OF_ATTENTION: "as a share of attention"}
UNITLESS = {"ratio", "chance_excess_ratio", "profile_overlap", "best_composition",
            "composition_margin"}


def quantity_unit(table: str, column: str, where: dict | None = None) -> str | None:
    """The unit of ``column`` of ``table`` (a key of :data:`UNITS`) as the table's format
    declares it, None for a quantity without one (a share, an accuracy, a positivity, a
    z-score, a span). In a long table (a ``value`` column) the ``metric`` of ``where``
    names the quantity."""
    fmt = table_format(table)
    if fmt is None:
        return None
    metric = (where or {}).get("metric")
    if fmt.long and column in ("value", "mean") and isinstance(metric, str):
        column = metric
    return fmt.unit(str(column))


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


def test_text(claim: dict, rules: dict | None) -> str:
    """The claim's test in words: comparison and threshold (and any further condition)."""
    symbol = SYMBOLS[claim["compare"]]
    if claim["threshold"] == ROLE:
        if rules is None:
            raise ValueError(f"claim {claim.get('id')!r} has a role threshold: it needs the "
                             "head-role rule (behaviour.roles)")
        text = (f"{symbol} role threshold: max({rules['times_chance']:g} × chance, "
                f"chance + {rules['above_chance']:g})")
    else:
        text = f"{symbol} {_minus(format(claim['threshold'], 'g'))}"
    for extra in claim.get("also", []):
        text += (f"; and {extra.get('label', 'also')} {SYMBOLS[extra['compare']]} "
                 f"{_minus(format(extra['threshold'], 'g'))}")
    return text


def interval_text(estimate: Estimate, compare: str | None = None,
                  threshold: float | None = None) -> str:
    """'0.31 [0.29, 0.33]', or the value alone when it is exact."""
    text = format_value(estimate.value, compare, threshold)
    if estimate.exact or math.isnan(estimate.value):
        return text
    return (f"{text} [{bound_text(estimate.value, estimate.low)}, "
            f"{bound_text(estimate.value, estimate.high)}]")


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
