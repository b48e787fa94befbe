"""Turning the result tables into the report's HTML tables."""
from __future__ import annotations

import html
import math

import pandas as pd


def select(frame: pd.DataFrame, where: dict | None = None, variant: str | None = None) -> pd.DataFrame:
    """Rows of ``frame`` matching ``where`` (equality; a list means any of) and ``variant``."""
    if variant is not None and "variant" in frame.columns:
        frame = frame[frame["variant"] == variant]
    for column, wanted in (where or {}).items():
        wanted = wanted if isinstance(wanted, list) else [wanted]
        frame = frame[frame[column].isin(wanted)]
    return frame


def fmt(value) -> str:
    """A cell: floats to 4 significant digits, NaN as an en dash."""
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return html.escape(str(value))


def _short(value: float) -> str:
    """Two significant digits: for a spread, more would be noise."""
    return "–" if math.isnan(value) else f"{value:.2g}"


def spread_cell(row) -> str:
    """mean ± std [min, max] of a summary row (std with two significant digits);
    just the value for one seed."""
    if row["n"] <= 1 or pd.isna(row["std"]):
        return fmt(float(row["mean"]))
    return (f"{fmt(float(row['mean']))}&nbsp;±&nbsp;{_short(float(row['std']))} "
            f"<span class='range'>[{fmt(float(row['min']))},&nbsp;{fmt(float(row['max']))}]</span>")


def spread_table(summary: pd.DataFrame, index: list[str], metrics: list[str] | None = None) -> pd.DataFrame:
    """Summary rows pivoted to one row per ``index`` and one column per metric, cells with the spread."""
    if metrics:
        summary = summary[summary["metric"].isin(metrics)]
    summary = summary[summary["n"] > 0]  # rows without a value in any seed (e.g. skipped ablations)
    cells = summary.assign(cell=summary.apply(spread_cell, axis=1))
    if "metric" in index:  # one row per metric: a single column of cells
        return cells[index + ["cell"]].rename(columns={"cell": "mean ± std [min, max]"})
    wide = cells.pivot_table(index=index, columns="metric", values="cell", aggfunc="first", sort=False)
    if metrics:
        wide = wide[[m for m in metrics if m in wide.columns]]
    return wide.reset_index()


def to_html(frame: pd.DataFrame, raw_columns: tuple = ()) -> str:
    """An HTML table; cells are escaped except the columns in ``raw_columns`` (pre-rendered HTML)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for col, value in zip(frame.columns, row):
            text = (value if isinstance(value, str) else "–") if col in raw_columns else fmt(value)
            cells.append(f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table><thead><tr>{head}</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def render_table(spec: dict, variant: str | None = None) -> str:
    """The HTML of one table spec (see ``report_section`` in workflow/rules/common.smk).

    spec keys: path; where (row filter); spread {index, metrics} (summary tables:
    mean ± std [min, max] per metric); pivot {index, columns, values, label} (e.g.
    seeds as rows and heads as columns; label formats the column key, "L{}H{}");
    sort {by, ascending}; columns (selection and order); max_rows.
    """
    frame = select(pd.read_csv(spec["path"]), spec.get("where"), variant)
    raw = ()
    if "spread" in spec:
        index = spec["spread"]["index"]
        frame = spread_table(frame, index, spec["spread"].get("metrics"))
        raw = tuple(c for c in frame.columns if c not in index)
    if "pivot" in spec:
        pv = spec["pivot"]
        frame = frame.pivot_table(index=pv["index"], columns=pv["columns"], values=pv["values"],
                                  aggfunc="first", sort=True)
        frame.columns = [pv.get("label", "{}").format(*(c if isinstance(c, tuple) else (c,)))
                         for c in frame.columns]
        frame = frame.reset_index()
    if "sort" in spec:
        frame = frame.sort_values(spec["sort"]["by"], ascending=spec["sort"].get("ascending", True))
    if "columns" in spec:
        frame = frame[[c for c in spec["columns"] if c in frame.columns]]
    elif variant is not None and "variant" in frame.columns:
        frame = frame.drop(columns="variant")
    if "max_rows" in spec:
        frame = frame.head(spec["max_rows"])
    if frame.empty:
        return "<p class='empty'>No rows (nothing of this kind applies to this model).</p>"
    return to_html(frame, raw)


def mark_completion(completion: str, expected: str | float | None) -> str:
    """Letters of a completion as spans: right (green) or wrong (red) against ``expected``."""
    if not isinstance(expected, str) or not expected:
        return f"<span class='letters'>{html.escape(completion)}</span>"
    out = []
    for k, ch in enumerate(completion):
        ok = k < len(expected) and expected[k] == ch
        out.append(f"<span class='{'ok' if ok else 'bad'}'>{html.escape(ch)}</span>")
    return "<span class='letters'>" + "".join(out) + "</span>"
