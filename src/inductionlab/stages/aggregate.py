"""Per-seed tables of every model -> one table per kind, with the spread across seeds.

A per-model table has the columns ``variant`` and ``seed``, key columns that identify a
row within a model (``circuit``, ``layer``, ``head``, ``pattern``, ``step``, ...) and value
columns (floats). Keys are declared with each table's format
(:mod:`inductionlab.core.formats`, by the module that writes it); for any other table
every string, boolean and integer column is a key. Columns that are neither keys nor
floats (e.g. the roles of a head, which may differ between seeds) stay in the long table
and are left out of the summary. The head-role rule is applied here, to the stacked head
scores and phase change (:data:`~inductionlab.analysis.roles.RULED_TABLES`). The long
table stacks every model's rows; the summary has one row per (variant, keys..., metric)
with n, mean, std, min and max over seeds.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..atomic import write_csv
from .tables import ID_COLUMNS, table_format
from ..core.loading import MODEL_FILE, BadInput, check_file, read_spec, read_table, retrain
from ..analysis.roles import RULED_TABLES, with_roles

STATS = ("n", "mean", "std", "min", "max")


def key_columns(frame: pd.DataFrame, name: str | None = None) -> list[str]:
    """The columns that identify a row within one model's table ``name``: its declared
    keys (:mod:`inductionlab.core.formats`); for a table nobody declared, every column
    that is not a float."""
    fmt = table_format(name) if name else None
    if fmt is not None:
        return [c for c in fmt.keys if c in frame.columns]
    return [c for c in frame.columns
            if c not in ID_COLUMNS and not pd.api.types.is_float_dtype(frame[c])]


def value_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in ID_COLUMNS and pd.api.types.is_float_dtype(frame[c])]


def stack(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One long table from per-model tables (each must name its variant and seed)."""
    for frame in frames:
        missing = [c for c in ID_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"a per-model table lacks column(s) {missing}")
    long = pd.concat(frames, ignore_index=True)
    float_cols = [c for c in long.columns if c not in ID_COLUMNS
                  and all(pd.api.types.is_float_dtype(f[c]) for f in frames if c in f)]
    long[float_cols] = long[float_cols].astype(float)
    return long


def summarise(long: pd.DataFrame, name: str | None = None) -> pd.DataFrame:
    """Mean, std, min and max across seeds of every value column, per variant and key.

    A table that is already tidy (a ``metric`` key and a ``value`` column) is
    summarised as it is; otherwise every float column becomes a ``metric``. The std
    is the sample standard deviation (ddof=1); it is NaN for a single seed.
    """
    keys = key_columns(long, name)
    if "metric" in keys and "value" in long.columns:
        melted, group = long, ["variant"] + keys
    else:
        # a float column may itself be named "value" (e.g. beside low and high)
        melted = long.melt(id_vars=list(ID_COLUMNS) + keys, value_vars=value_columns(long),
                           var_name="metric", value_name="_value").rename(columns={"_value": "value"})
        group = ["variant"] + keys + ["metric"]
    return (melted.groupby(group, sort=False, dropna=False)["value"]
            .agg(n="count", mean="mean", std="std", min="min", max="max").reset_index())


def read_complete(path, final_step: int | None = None, name: str | None = None) -> pd.DataFrame:
    """A per-model table, refused if it was cut short or lacks a key column.

    Every table the project writes ends with a newline; a truncated one almost never
    does. ``final_step``: the table is a log whose last row must be this step. ``name``:
    the table's name; a declared table must hold the key columns of its format.
    """
    with open(check_file(path, "a CSV table"), "rb") as f:
        f.seek(-1, 2)
        if f.read(1) != b"\n":
            raise BadInput(path, "is truncated (its last line is cut short)")
    fmt = table_format(name) if name else None
    required = ID_COLUMNS + (("step",) if final_step is not None else ())
    frame = read_table(path, required + (fmt.keys if fmt else ()),
                       kind=f"a per-model {name} table" if fmt else None)
    if final_step is not None:
        last = frame["step"].iloc[-1] if len(frame) else None
        if last != final_step or frame.iloc[-1].isna().any():
            raise BadInput(path, f"the log ends at step {last}, not at the final step {final_step}; "
                           "the run it records did not finish or the file is truncated",
                           hint=retrain(Path(path).parent / MODEL_FILE))
    return frame


# Tables with one row per head of the model: every head of the model's spec is in them.
PER_HEAD_TABLES = ("head_scores",)


def check_every_head(path, frame: pd.DataFrame) -> None:
    """``frame`` (read from ``path``) has one row for every (layer, head) of the model
    whose ``spec.json`` is beside it, else :class:`BadInput` naming what is missing; a
    table without a spec beside it is taken as it is."""
    spec_path = Path(path).parent / "spec.json"
    if not spec_path.is_file():
        return
    model = read_spec(spec_path).model
    expected = {(l, h) for l in range(model.n_layers) for h in range(model.n_heads)}
    found = set(zip(frame["layer"].astype(int), frame["head"].astype(int)))
    missing = sorted(expected - found)
    if missing or len(frame) != len(expected):
        shown = ", ".join(f"L{l}H{h}" for l, h in missing[:6]) + (" ..." if len(missing) > 6 else "")
        raise BadInput(path, f"has {len(frame)} row(s) for the {len(expected)} heads of its model"
                       + (f" (missing {shown})" if missing else ""))


def refuse_repeated_models(inputs, frames) -> None:
    """Each (variant, seed) in one input only: a table given twice, or two tables of one
    model and seed, would count that seed twice in every mean."""
    seen = {}
    for k, (path, frame) in enumerate(zip(inputs, frames)):
        for variant, seed in frame[list(ID_COLUMNS)].drop_duplicates().itertuples(index=False):
            first = seen.setdefault((variant, seed), k)
            if first != k:
                raise BadInput(path, f"holds {variant} seed {seed}, as {inputs[first]} does; each "
                               "model and seed is stacked once", hint=None)


def _role_rule():
    """Table name -> how the head-role rule is applied to its stacked rows."""
    from .dynamics.dynamics import decide_formed

    applied = {"head_scores": with_roles, "phase_change": decide_formed}
    assert set(applied) == set(RULED_TABLES)
    return applied


def aggregate(name: str, inputs, long_csv, summary_csv, final_step: int | None = None,
              roles: dict | None = None) -> None:
    """Read the per-model CSVs of table ``name``; write the long and summary tables.

    ``final_step``: every input is a log that must reach this step. ``roles``: the
    head-role rule, applied to the stacked rows of a table it decides
    (:data:`~inductionlab.analysis.roles.RULED_TABLES`) and required for one.
    """
    if name in RULED_TABLES and roles is None:
        raise ValueError(f"the {name} table needs the head-role rule (--roles)")
    frames = [read_complete(path, final_step, name) for path in inputs]
    refuse_repeated_models(inputs, frames)
    if name in PER_HEAD_TABLES:
        for path, frame in zip(inputs, frames):
            check_every_head(path, frame)
    long = stack(frames)
    if name in RULED_TABLES:
        long = _role_rule()[name](long, roles)
    write_csv(long_csv, long)
    write_csv(summary_csv, summarise(long, name))
