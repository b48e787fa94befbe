"""The write-up's claims, evaluated on every seed (workflow/claims.yaml).


A claim is a metric (:mod:`.metrics`), a comparison and a threshold, read from
claims.yaml (:mod:`.rules`) and shown in words (:mod:`.words`). Here each claim
is evaluated on every seed and the seeds' verdicts combined into the scorecard, the outcome
over seeds and the families side by side.

An attention score is read beside its chance level (a ``chance`` metric, the score of
uniform causal attention on the same queries and keys). ``threshold: role`` is the head-role
rule of the config (``behaviour.roles``): at least ``times_chance`` × chance and at least
chance + ``above_chance``. A value within ``at_chance_within`` of its chance level is
reported as sitting at chance. A claim of absence ("never repeats", "has no induction
head") is read as any other, which makes it an equivalence test: it holds only when the
interval's far end is on the right side.

A claim names the write-up's model it is about (``variant``), its role. A *family* maps
roles to trained models: the write-up's own family (:data:`WRITE_UP`) maps every role to
the variant of that name; another (an experiment's) maps some roles to other models.
:func:`family_comparison` sets the families' outcomes side by side.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..analysis.roles import role_threshold
from ..analysis.uncertainty import mean_interval
from .metrics import (FAILS, HOLDS, NOT_MEASURED, ROLE, TOO_CLOSE, NotMeasured, Tables, _optional,
                      _roles, decide, exact, family_claims, metric_value)
from .rules import DEFAULT_AT_CHANCE_WITHIN, load_claims, load_settings, with_rule_thresholds
from .words import (INFINITY_NOTE, MARKS, SYMBOLS, _chance_text, _seed_text, claim_unit,
                    interval_text, summary_line, test_text, verdict_text)
from ..formatting.numbers import _minus, format_value
from ..formatting.labels import minus_signs
from ..atomic import write_csv
from ..core.loading import check_stacked_tables, read_table, run_specs

WRITE_UP = "write_up"  # the family of the config's variants, each in the role of its name
WRITE_UP_TITLE = "the write-up's models"


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


def scorecard(claims: list[dict], results: pd.DataFrame, rules: dict | None = None,
              at_chance_within: float = DEFAULT_AT_CHANCE_WITHIN) -> pd.DataFrame:
    """One row per claim: the quote, the metric in words, the test, the chance level, the
    per-seed values with their intervals and status, the counts of each status, the mean over
    seeds with its 95 % interval, and why any seed is not measured. ``rules``: the
    head-role rule, for a claim with a role threshold."""
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
            value_range = shown[0] if shown[0] == shown[1] else f"[{shown[0]}, {shown[1]}]"
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
               families: dict | None = None, comparison_csv=None, specs=None) -> None:
    """Evaluate claims.yaml (``claims_yaml``: its path, or a list of it and any experiment's
    claims files) on the aggregated per-seed tables (named by file stem), for
    the write-up's family and every other family in ``families`` (name -> {title,
    models: role -> model}); ``comparison_csv``: their outcomes side by side.

    ``roles``: the head-role rule (``behaviour.roles`` of the config). The seeds are
    every seed that appears in any table. ``specs``: the spec.json of every model of this
    run; the tables must be this run's stacked tables of exactly those models
    (:func:`~inductionlab.core.loading.check_stacked_tables`).
    """
    main, *more = [claims_yaml] if isinstance(claims_yaml, (str, Path)) else list(claims_yaml)
    claims = with_rule_thresholds(load_claims(main, more), roles)
    settings = load_settings(main)
    families = {WRITE_UP: {"title": WRITE_UP_TITLE, "models": None},
                **{k: v for k, v in (families or {}).items() if k != WRITE_UP}}
    frames = [read_table(p) for p in table_paths]
    if specs is not None:
        check_stacked_tables(list(table_paths), frames, run_specs(specs))
    tables = Tables({Path(p).stem: frame for p, frame in zip(table_paths, frames)}, roles)
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
