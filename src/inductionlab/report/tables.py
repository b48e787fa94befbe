"""Turning the result tables into the report's HTML tables.

Every number in a cell follows the report's one number format (:mod:`inductionlab.formatting.numbers`: 3
significant digits; a value's companions, its interval or its spread over seeds, at its
decimals): "−0.233 [−0.377, −0.088]", "0.0110 [0.0060, 0.0160]"; a spread below the last
digit shown gets one significant digit. Every minus sign is the true minus U+2212
(:func:`inductionlab.formatting.labels.minus_signs`), text cells included; NaN is an en dash,
infinity ∞. Only the display changes: the tables keep every digit.
"""
from __future__ import annotations

import html

import pandas as pd

from ..formatting.labels import label, value_label
from ..formatting.numbers import companion_places, decimals, fmt, fmt_at

LABELLED_VALUES = {"metric", "kind", "ablation", "roles"}  # cells whose names read in words


def _key(value):
    """A pivot column key as a label shows it: a whole float as an integer (layer 0.0 ->
    0, so "L{}H{}" reads L0H1, never L0.0H1.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if hasattr(value, "item") and not isinstance(value, str):
        return _key(value.item())
    return value


def select(frame: pd.DataFrame, where: dict | None = None,
           variant: str | list[str] | None = None) -> pd.DataFrame:
    """Rows of ``frame`` matching ``where`` (equality; a list means any of) and ``variant``
    (one model, or a list of models)."""
    if variant is not None and "variant" in frame.columns:
        frame = frame[frame["variant"].isin([variant] if isinstance(variant, str) else variant)]
    for column, wanted in (where or {}).items():
        wanted = wanted if isinstance(wanted, list) else [wanted]
        frame = frame[frame[column].isin(wanted)]
    return frame


# columns whose -1 means "not applicable" (a model-level row has layer and head -1)
PLACEHOLDER_COLUMNS = {"layer", "head", "src_layer", "src_head", "position"}

def spread_cell(row) -> str:
    """mean ± std [min, max] of a summary row: the mean to three significant digits, the
    others at its decimals (the spread's, when the mean is 0), none with more than its own
    three significant digits (:func:`companion_places`); just the value for one seed."""
    mean = float(row["mean"])
    if row["n"] <= 1 or pd.isna(row["std"]):
        return fmt(mean)
    std = float(row["std"])
    places = decimals(mean) if mean != 0 else decimals(std)
    low, high = float(row["min"]), float(row["max"])
    if fmt_at(low, places) == fmt_at(high, places):
        return fmt_at(mean, places)  # the same in every seed, to the digits shown
    spread = fmt_at(std, companion_places(mean, std) if mean != 0 else places)
    if std > 0 and float(spread) == 0:  # a spread below the last digit: one significant digit
        spread = fmt_at(std, decimals(std, 1))
    low_text = fmt_at(low, companion_places(mean, low) if mean != 0 else places)
    high_text = fmt_at(high, companion_places(mean, high) if mean != 0 else places)
    return (f"{fmt_at(mean, places)}&nbsp;±&nbsp;{spread} "
            f"<span class='range'>[{low_text},&nbsp;{high_text}]</span>")


SPREAD_HEADER = "mean ± std [min, max] over seeds"


def spread_table(summary: pd.DataFrame, index: list[str], metrics: list[str] | None = None) -> pd.DataFrame:
    """Summary rows pivoted to one row per ``index`` and one column per metric, cells with the spread."""
    if metrics:
        summary = summary[summary["metric"].isin(metrics)]
    summary = summary[summary["n"] > 0]  # rows without a value in any seed (e.g. skipped ablations)
    cells = summary.assign(cell=summary.apply(spread_cell, axis=1))
    if "metric" in index:  # one row per metric: a single column of cells
        return cells[index + ["cell"]].rename(columns={"cell": SPREAD_HEADER})
    wide = cells.pivot_table(index=index, columns="metric", values="cell", aggfunc="first", sort=False)
    if metrics:
        wide = wide[[m for m in metrics if m in wide.columns]]
    return wide.reset_index()


def ranked(frame: pd.DataFrame, within: list[str], by: str, value_columns: list[str],
           name: str = "rank", top: int | None = None) -> pd.DataFrame:
    """Heads aligned by what they do, not by their number: within each group ``within``
    (e.g. seed, kind, layer), rows sorted by ``by`` descending and numbered 1, 2, ... in
    column ``name`` (only ranks 1 .. ``top`` kept, when given); then mean ± std [min, max]
    of ``value_columns`` over the groups, per rank (and per the grouping columns other than
    the seed)."""
    frame = frame.dropna(subset=[by]).copy()
    frame[name] = frame.groupby(within)[by].rank(method="first", ascending=False).astype(int)
    if top is not None:
        frame = frame[frame[name] <= top]
    keys = [c for c in within if c != "seed"] + [name]
    rows = []
    for key, group in frame.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key))
        for col in value_columns:
            v = group[col].astype(float)
            row[col] = spread_cell({"n": v.count(), "mean": v.mean(), "std": v.std(),
                                    "min": v.min(), "max": v.max()})
        rows.append(row)
    return pd.DataFrame(rows, columns=keys + list(value_columns))


def duplicates_of_earlier(frame: pd.DataFrame, index: list[str]) -> list[tuple[str, str]]:
    """(row, earlier row) pairs whose every column outside ``index`` is equal."""
    values = [c for c in frame.columns if c not in index]
    seen, pairs = {}, []
    for _, row in frame.iterrows():
        key = tuple(str(row[c]) for c in values)
        name = " ".join(str(row[c]) for c in index)
        if key in seen:
            pairs.append((name, seen[key]))
        else:
            seen[key] = name
    return pairs


def _header(column) -> str:
    return html.escape(label(column))


def to_html(frame: pd.DataFrame, raw_columns: tuple = (), labelled: bool = True,
            names: tuple = ()) -> str:
    """An HTML table; cells are escaped except the columns in ``raw_columns`` (pre-rendered
    HTML); headers, and the names in a ``metric`` column, are :func:`label`-led, except the
    headers in ``names`` (e.g. models' names), shown as they are."""
    head = "".join(f"<th>{_header(c)}</th>" if labelled and c not in names
                   # a model's name may break after an underscore: a column stays narrow
                   else f"<th>{html.escape(str(c)).replace('_', '_&#8203;')}</th>"
                   for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for col, value in zip(frame.columns, row):
            if col in raw_columns:
                text = value if isinstance(value, str) else "–"
            elif col in PLACEHOLDER_COLUMNS and not isinstance(value, str):
                text = "–" if pd.isna(value) or value == -1 else str(int(value))
            elif col in LABELLED_VALUES and labelled and isinstance(value, str):
                text = html.escape(value_label(col, value))
            else:
                text = fmt(value.item() if hasattr(value, "item") else value)
            cells.append(f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table><thead><tr>{head}</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


# The page's text column (A4, 14 mm margins, the body's padding) in points, and the
# least width a column takes at the tables' 8 pt: its longest unbreakable run of characters
# (a DejaVu Sans digit is 0.64 em, 5.1 pt) plus the cell's padding and borders.
PAGE_WIDTH_PT = 490.0
CHAR_PT = 5.1
CELL_PAD_PT = 9.0
# columns that say which row this is: repeated in every part of a table split by width
KEY_COLUMNS = {"variant", "model", "seed", "layer", "head", "src_layer", "src_head", "metric",
               "rank", "kind", "ablation", "prompt", "position", "pattern", "role", "claim"}


def _unbreakable(text: str) -> int:
    """The longest run of a cell's text that cannot wrap (tags dropped; a non-breaking
    space joins)."""
    import re

    plain = html.unescape(re.sub(r"<[^>]+>", " ", text.replace("&nbsp;", "\u00a0")))
    return max((len(word) for word in re.split(r"[ \t\n\u200b]+", plain)), default=0)


def column_widths(frame: pd.DataFrame, raw_columns: tuple = (), labelled: bool = True,
                  names: tuple = ()) -> list[float]:
    """The least width (points) each column of ``frame`` takes on the page: its header's
    or its widest cell's longest unbreakable run (:func:`_unbreakable`)."""
    widths = []
    for col in frame.columns:
        header = str(col) if (not labelled or col in names) else label(col)
        if not labelled or col in names:
            header = header.replace("_", " ")  # a model's name may break after an underscore
        chars = _unbreakable(header)
        for value in frame[col]:
            text = value if col in raw_columns and isinstance(value, str) else (
                str(value) if isinstance(value, str) else fmt(value.item() if hasattr(value, "item") else value))
            chars = max(chars, _unbreakable(text))
        widths.append(chars * CHAR_PT + CELL_PAD_PT)
    return widths


def split_by_width(frame: pd.DataFrame, keys: list[str], widths: list[float],
                   page_pt: float = PAGE_WIDTH_PT) -> list[pd.DataFrame]:
    """``frame`` as it fits the page: itself when its columns' least widths fit
    ``page_pt``, else parts with the same rows, each the ``keys`` columns (which row this
    is) and as many of the other columns, in order, as fit beside them."""
    if sum(widths) <= page_pt:
        return [frame]
    width = dict(zip(frame.columns, widths))
    keys = [k for k in keys if k in width]
    room = page_pt - sum(width[k] for k in keys)
    parts, current, used = [], [], 0.0
    for col in frame.columns:
        if col in keys:
            continue
        if current and used + width[col] > room:
            parts.append(current)
            current, used = [], 0.0
        current.append(col)
        used += width[col]
    if current:
        parts.append(current)
    return [frame[keys + part] for part in parts]


def leading_keys(frame: pd.DataFrame, spec: dict) -> list[str]:
    """The columns that name a row (repeated in each part of a split table): the leading
    columns that are a pivot's, spread's or rank's index or a known key (model, seed,
    layer, head, ...)."""
    named = set(KEY_COLUMNS)
    for option, key in (("pivot", "index"), ("spread", "index"), ("rank", "within")):
        if option in spec:
            named |= set(spec[option][key])
    if "rank" in spec:
        named.add(spec["rank"].get("name", "rank"))
    keys = []
    for col in frame.columns:
        if col not in named:
            break
        keys.append(col)
    return keys or list(frame.columns[:1])


def to_page_html(frame: pd.DataFrame, keys: list[str], raw_columns: tuple = (),
                 names: tuple = ()) -> str:
    """:func:`to_html`, split by width where the table would run off the page
    (:func:`split_by_width`): each further part says it continues the table."""
    parts = split_by_width(frame, keys, column_widths(frame, raw_columns, names=names))
    if len(parts) == 1:
        return to_html(frame, raw_columns, names=names)
    out = []
    for k, part in enumerate(parts):
        if k:
            out.append(f"<p class='note table-continued'>Continued ({k + 1} of {len(parts)}): "
                       "the same rows, further columns.</p>")
        out.append(to_html(part, raw_columns, names=names))
    return "".join(out)


def across_models(spec: dict) -> dict:
    """A table spec shown for several models at once: the model becomes the first key of
    its spread, rank or pivot rows and its first column, so one table has a row (or rows)
    per model."""
    out = dict(spec)
    for option, key in (("spread", "index"), ("rank", "within"), ("pivot", "index")):
        if option in out and "variant" not in out[option][key]:
            out[option] = {**out[option], key: ["variant", *out[option][key]]}
    if "columns" in out and "variant" not in out["columns"]:
        out["columns"] = ["variant", *out["columns"]]
    return out


def in_model_order(frame: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Rows in the order of ``models``, any other model after them (stable within a model)."""
    if "variant" not in frame.columns:
        return frame
    order = {m: k for k, m in enumerate(models)}
    return frame.sort_values("variant", key=lambda c: c.map(lambda v: order.get(v, len(order))),
                             kind="stable")


def render_table(spec: dict, variant: str | list[str] | None = None) -> str:
    """The HTML of one table spec (see ``report_section`` in workflow/rules/common.smk),
    for one model (``variant``), every model (None) or a list of models side by side
    (:func:`across_models`: a model column, rows in the list's order).

    spec keys: path; where (row filter); spread {index, metrics} (summary tables:
    mean ± std [min, max] per metric); pivot {index, columns, values, label} (e.g.
    seeds as rows and heads as columns; label formats the column key, "L{}H{}");
    sort {by, ascending}; columns (selection and order); max_rows; rank {within, by,
    values} (per-seed rows aligned by rank, :func:`ranked`); dedupe (rows equal to an
    earlier one in every value are left out, and a note says which).
    """
    models = variant if isinstance(variant, list) else None
    if models is not None:
        spec = across_models(spec)
    frame = select(pd.read_csv(spec["path"]), spec.get("where"), variant)
    raw = names = ()
    if "rank" in spec:
        rk = spec["rank"]
        frame = ranked(frame, rk["within"], rk["by"], rk["values"], rk.get("name", "rank"),
                       rk.get("top"))
        raw = tuple(rk["values"])
    if "spread" in spec and models is not None and spec["spread"]["index"] == ["variant", "metric"]:
        # one row per metric, one column per model: the models side by side
        frame = spread_table(frame, ["variant", "metric"], spec["spread"].get("metrics"))
        frame = frame.pivot_table(index="metric", columns="variant", values=SPREAD_HEADER,
                                  aggfunc="first", sort=False)
        frame = frame[[m for m in models if m in frame.columns]].reset_index()
        frame.columns.name = None
        raw = names = tuple(m for m in models if m in frame.columns)
        models = None  # the model is a column now, not a row key
    elif "spread" in spec:
        index = spec["spread"]["index"]
        frame = spread_table(frame, index, spec["spread"].get("metrics"))
        raw = tuple(c for c in frame.columns if c not in index)
    if "pivot" in spec:
        pv = spec["pivot"]
        frame = frame.pivot_table(index=pv["index"], columns=pv["columns"], values=pv["values"],
                                  aggfunc="first", sort=True)
        frame.columns = [pv.get("label", "{}").format(*(_key(k) for k in (c if isinstance(c, tuple)
                                                                           else (c,))))
                         for c in frame.columns]
        frame = frame.reset_index()
    if "sort" in spec:
        frame = frame.sort_values(spec["sort"]["by"], ascending=spec["sort"].get("ascending", True))
    if models is not None:
        frame = in_model_order(frame, models)
    if "columns" in spec:
        frame = frame[[c for c in spec["columns"] if c in frame.columns]]
    elif isinstance(variant, str) and "variant" in frame.columns:
        frame = frame.drop(columns="variant")
    if "max_rows" in spec:
        frame = (frame.groupby("variant", sort=False).head(spec["max_rows"])
                 if models is not None and "variant" in frame.columns and not spec.get("shared")
                 else frame.head(spec["max_rows"]))
    if models is not None and spec.get("shared") and "variant" in frame.columns:
        frame = frame.drop(columns="variant")  # the same for every model: shown once
    if frame.empty:  # a table with nothing to show is left out, unless it says why
        return ("<p class='empty'>" + html.escape(spec["empty"]) + "</p>") if "empty" in spec else ""
    note = ""
    if spec.get("dedupe"):
        index = [c for c in frame.columns if c not in raw] if raw else list(frame.columns[:1])
        pairs = duplicates_of_earlier(frame, index)
        if pairs:
            dropped = {name for name, _ in pairs}
            frame = frame[[" ".join(str(r[c]) for c in index) not in dropped
                           for _, r in frame.iterrows()]]
            note = ("<p class='note'>Left out, identical in every value to an earlier row: "
                    + "; ".join(f"{html.escape(a)} (= {html.escape(b)})" for a, b in pairs) + ".</p>")
    return to_page_html(frame, leading_keys(frame, spec), raw, names=names) + note


def mark_completion(completion: str, expected: str | float | None) -> str:
    """Letters of a completion as spans: right (green) or wrong (red) against ``expected``."""
    if not isinstance(expected, str) or not expected:
        return f"<span class='letters'>{html.escape(completion)}</span>"
    out = []
    for k, ch in enumerate(completion):
        ok = k < len(expected) and expected[k] == ch
        out.append(f"<span class='{'ok' if ok else 'bad'}'>{html.escape(ch)}</span>")
    return "<span class='letters'>" + "".join(out) + "</span>"
