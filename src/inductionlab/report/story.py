"""The report's first page: what replicated, from the scorecard and the result tables alone.

Every sentence here is assembled from a table row (the scorecard's verdicts and value
ranges, a summary table's mean and range); nothing is typed in by hand.
"""
from __future__ import annotations

import re

import pandas as pd

from .tables import decimals, fmt_at, select

from ..claims.verdicts import NOT_MEASURED_ANY as NOT_MEASURED
from ..claims.verdicts import OUTCOMES, outcome


def claim_words(row) -> str:
    """The claim as the report shows it: the write-up's words (quoted) or a statement."""
    if row.get("source", "write-up") == "write-up" and row.get("quote"):
        return f"“{row['quote']}”"
    return str(row.get("statement") or row.get("quote") or row["claim"])


def tally(card: pd.DataFrame) -> dict[str, int]:
    """How many claims fall in each outcome, in :data:`OUTCOMES` order."""
    counts = card.apply(outcome, axis=1).value_counts() if len(card) else pd.Series(dtype=int)
    return {o: int(counts.get(o, 0)) for o in OUTCOMES}


def evidence(row) -> str:
    """The numbers that say so, as the summary shows them: what is measured, the mean over
    seeds with its interval, × chance and the distance to the threshold, and the verdict per
    seed (the range and the test stay in the scorecard); a row without a mean gives its
    range and test; a claim not measured, the reason."""
    if outcome(row) == NOT_MEASURED:
        return str(row.get("reason") or row.get("notes") or "no value")
    verdict = row.get("verdict") or f"holds in {int(row['holds'])} of {int(row['seeds'])} seeds"
    summary = row.get("summary") if isinstance(row.get("summary"), str) else ""
    if summary:
        measure = row.get("measure") if isinstance(row.get("measure"), str) else ""
        return f"{measure}: {summary}; {verdict}" if measure else f"{summary}; {verdict}"
    test = f"test {row['test']}" + (f", chance {row['chance']}" if row.get("chance") else "")
    return f"{row['range']} ({test}); {verdict}" if row.get("range") else f"{test}; {verdict}"


def story(card: pd.DataFrame, variants: list[str], groups: dict[str, str] | None = None) -> list[dict]:
    """Per variant: its claims grouped by the write-up's algorithms, each with its outcome,
    words, evidence and scorecard anchor; groups in ``groups`` order, then any others."""
    groups = groups or {}
    out = []
    for variant in variants:
        mine = card[card["variant"] == variant]
        if mine.empty:
            continue
        names = [g for g in groups if g in set(mine["group"])]
        names += [g for g in dict.fromkeys(mine["group"]) if g not in names]
        chapter = {"variant": variant, "tally": tally(mine), "groups": []}
        for g in names:
            rows = mine[mine["group"] == g]
            items = [{"outcome": outcome(r), "claim": r["claim"], "words": claim_words(r),
                      "evidence": evidence(r), "source": r.get("source", "write-up")}
                     for _, r in rows.iterrows()]
            items.sort(key=lambda i: OUTCOMES.index(i["outcome"]))
            chapter["groups"].append({"group": g, "title": groups.get(g, g or "other claims"),
                                      "items": items})
        out.append(chapter)
    return out


def summary_value(summary: pd.DataFrame, variant: str, metric: str, where: dict | None = None) -> str:
    """'mean [min, max]' of one metric of a summary table (three significant digits; a
    comma, not a dash, between the bounds, which may be negative)."""
    rows = select(summary, {"metric": metric, **(where or {})}, variant)
    if rows.empty or pd.isna(rows.iloc[0]["mean"]):
        return "–"
    r = rows.iloc[0]
    places = decimals(float(r["mean"]))
    mean, lo, hi = (fmt_at(float(r[c]), places) for c in ("mean", "min", "max"))
    if r["n"] <= 1 or pd.isna(r["std"]) or lo == hi:
        return mean
    return f"{mean} [{lo}, {hi}]"


def highlight_paths(spec: dict) -> list[str]:
    """The summary tables of a highlight: ``path`` (one) or ``paths`` (in order)."""
    return list(spec.get("paths") or [spec["path"]])


def highlight_text(spec: dict) -> str:
    """A registered finding "beyond the write-up": ``text`` with every ``{variant:metric}``
    replaced by that metric's mean [min, max] in the first of its summary tables (``path``,
    or ``paths`` in order) that has it (by the row's ``text`` in a table of words, one with
    a ``text`` column): a quantity the headline table shows is read from
    the headline's table, so one number has one value."""
    summaries = [pd.read_csv(p) for p in highlight_paths(spec)]

    def value(variant: str, metric: str) -> str:
        for summary in summaries:
            rows = summary[(summary["variant"] == variant) & (summary["metric"] == metric)]
            if len(rows) and "text" in summary.columns:  # a table of words: the words
                return str(rows["text"].iloc[0])
            if len(rows):
                return summary_value(summary, variant, metric)
        if "text" in summaries[-1].columns:
            return "–"
        return summary_value(summaries[-1], variant, metric)

    return re.sub(r"\{([\w.-]+):([\w.-]+)\}", lambda m: value(m.group(1), m.group(2)), spec["text"])


def worst_failure_modes(failure_summary: pd.DataFrame, variants: list[str],
                        metric: str = "teacher_forced_acc") -> list[dict]:
    """Per variant, the repetition pattern with the lowest mean accuracy ``metric``
    (over seeds), its accuracy range, and the accuracy of the all-distinct pattern."""
    out = []
    for v in variants:
        rows = failure_summary[(failure_summary["variant"] == v) & (failure_summary["metric"] == metric)]
        rows = rows.dropna(subset=["mean"])
        if rows.empty:
            continue
        worst = rows.sort_values("mean", kind="stable").iloc[0]
        distinct = rows[rows["n_distinct"] == rows["n_distinct"].max()] if "n_distinct" in rows else rows.iloc[:0]
        out.append({"variant": v, "pattern": worst["pattern"],
                    "value": summary_value(rows, v, metric, {"pattern": worst["pattern"]}),
                    "distinct": (summary_value(rows, v, metric, {"pattern": distinct.iloc[0]["pattern"]})
                                 if len(distinct) else "–"),
                    "distinct_pattern": distinct.iloc[0]["pattern"] if len(distinct) else ""})
    return out
