"""The law of formation time: the exponent α of midpoint ∝ T^α over the context length T.

A formation's midpoint is the step at which its fitted logistic is halfway (docs/methods.md,
"Training dynamics and the phase change"), measured per model: one variant, one context
length T, one seed, for the best last-layer head's content part and for the loss on
predictable targets (:func:`law_midpoints` reads them from the fits, NaN where a curve has
no single change or no head formed). The law is the ordinary least-squares line of
ln(midpoint) on ln(T) over every seed of a variant (:func:`law_fits`), one per quantity and
clock; its slope α is the exponent. docs/methods.md, "The law of formation time", says it in words.

Time has two clocks (:data:`CLOCKS`): optimiser steps, and tokens seen, steps × batch × T
(:func:`tokens_seen`). A batch holds a fixed number of sequences, so a longer context feeds
more copies per step, and with the batch fixed ln(tokens) = ln(steps) + ln(batch) + ln(T):
the slope on tokens is the slope on steps plus 1 exactly (:func:`on_both_clocks` builds
the tokens rows from the steps rows, so the identity holds by construction).

Per fit: α with its standard error and its 95 % Student-t interval on n − 2 degrees of
freedom (:func:`~inductionlab.analysis.uncertainty.t_quantile`), a seed bootstrap interval
as a cross-check (the seeds resampled within each T, from
:func:`~inductionlab.analysis.uncertainty.resample_counts`), the intercept, the residual
spread, and how many points, seeds and context lengths it stands on. A fit needs
:data:`MIN_CONTEXT_LENGTHS` distinct T and :data:`MIN_POINTS` points (two more than its two
parameters), else it is "not measured" with the reason. A midpoint that could not be fitted
(NaN: a flat curve, a head that never formed) or is not positive is dropped and counted.
Points that lie exactly on a line have no residual spread: their interval is the slope
itself, said so, never a t interval of zero width read as a measurement with error.

The verdict compares α's interval with a bound's exponent (:func:`compare_with_bound`, by
default 2: the 2025 analysis "On the Emergence of Induction Heads for In-Context Learning"
bounds the time to emergence as quadratic in the context length, for a minimal two-layer
model on a minimal task, on the clock of gradient updates). It is made only on the clock the
bound speaks of (``bound_clock``, optimiser steps by default); on any other clock the
comparison means nothing and the fit is "not compared". :func:`law_sentence` says it in
words no stronger than the interval; :func:`clocks_sentence` sets the two clocks side by
side; :func:`law_band` gives the fitted line and its 95 % confidence band for a figure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .metrics import Estimate, decide
from ..formatting.numbers import number
from ..analysis.uncertainty import HOLDS, NOT_MEASURED, RESAMPLES, TOO_CLOSE, percentile_interval, \
    resample_counts, t_quantile

STEPS, TOKENS = "steps", "tokens"
CLOCKS = {STEPS: "optimiser steps", TOKENS: "tokens seen"}
# the quantities of the formation study's fits (the dynamics stage's LOSS_FIT and
# INDUCTION_FIT) in words; any other quantity is named as it is
CONTENT, LOSS = "induction_content", "loss_pred"
QUANTITIES = {CONTENT: "the head's content part", LOSS: "the loss on predictable targets"}
# the shapes of a fit (the phase-change detector's) that have one change, hence a midpoint
ONE_CHANGE = ("phase change", "smooth")

# the bound the law is compared with: its exponent, its clock and its words
QUADRATIC = 2.0
BOUND_CLOCK = STEPS
BOUND_WORDS = "the quadratic bound derived for a simplified two-layer model"
# an interval that holds the bound and reaches this far on either side of it (a linear or a
# cubic law against the quadratic one) is too wide to tell
RESOLUTION = 1.0

PARAMETERS = 2                    # intercept and slope
MIN_CONTEXT_LENGTHS = 3           # distinct T a law needs
MIN_POINTS = PARAMETERS + 2       # points a fit needs: two degrees of freedom at least
EXACT = 1e-9                      # residual spread (relative to ln midpoint) read as none

# the comparison of α's interval with the bound's exponent
CONTAINS, BELOW, ABOVE = "contains", "below", "above"
NOT_COMPARED = "not compared"     # a fit on a clock the bound does not speak of

MIDPOINT_COLUMNS = ["variant", "context", "seed", "quantity", "clock", "midpoint"]
LAW_COLUMNS = ["variant", "quantity", "clock", "slope", "slope_se", "slope_low", "slope_high",
               "slope_boot_low", "slope_boot_high", "intercept", "intercept_se", "residual_sd",
               "n_points", "n_seeds", "n_contexts", "contexts", "n_dropped", "dropped",
               "bound", "bound_clock", "verdict", "wide", "note", "sentence"]
BAND_COLUMNS = ["variant", "quantity", "clock", "context", "midpoint", "midpoint_low",
                "midpoint_high"]
NO_MIDPOINT = "no midpoint fitted"
NOT_POSITIVE = "midpoint not positive (no logarithm)"


def law_midpoints(phase: pd.DataFrame) -> pd.DataFrame:
    """The midpoints the law reads, in steps, from the fits of the formation curves:
    ``phase`` has a row per variant, ``context``, seed and fitted ``metric`` (rows of
    phase_change.csv with the model's context length beside them: ``shape``, ``midpoint``;
    optionally ``formed``, 1 where the head-role rule found an induction head, ``last_step``,
    the last checkpoint, and ``note``, kept where a fit has no midpoint). The result has the
    columns of :data:`MIDPOINT_COLUMNS` but ``clock``, ``note`` and ``later_than``, one row
    per fit of a quantity of :data:`QUANTITIES`; the midpoint is NaN, with why in ``note``, where the
    curve has no single change (a flat curve, two drops), where no induction head formed
    (the content part of a positional-only head, or of a head that never forms, times no
    formation), or where the midpoint lies beyond the last checkpoint (the change is not
    over: an extrapolation, not a time; ``later_than`` is then that checkpoint, which the
    midpoint is known to lie beyond, else NaN)."""
    missing = [c for c in ("variant", "context", "seed", "metric", "shape", "midpoint")
               if c not in phase.columns]
    if missing:
        raise ValueError(f"the fits need the columns variant, context, seed, metric, shape and "
                         f"midpoint; missing {missing}")
    rows = []
    for _, r in phase[phase["metric"].isin(list(QUANTITIES))].iterrows():
        midpoint, why, later_than = float(r["midpoint"]), "", math.nan
        formed = r.get("formed", 1.0)
        last = r.get("last_step", math.nan)
        if not isinstance(r["shape"], str):
            why = "no fit"
        elif r["shape"] not in ONE_CHANGE:
            why = f"{r['shape']}: no single change"
        elif r["metric"] == CONTENT and not (pd.notna(formed) and float(formed) == 1.0):
            why = "no induction head formed"
        elif pd.notna(last) and midpoint > float(last):
            why = f"midpoint beyond the last checkpoint (step {float(last):g}): the change is not over"
            later_than = float(last)
        elif math.isnan(midpoint) and isinstance(r.get("note"), str):
            why = r["note"]
        rows.append({"variant": r["variant"], "context": r["context"], "seed": r["seed"],
                     "quantity": r["metric"], "midpoint": math.nan if why else midpoint,
                     "note": why, "later_than": later_than})
    return pd.DataFrame(rows, columns=[c for c in MIDPOINT_COLUMNS if c != "clock"]
                        + ["note", "later_than"])


def tokens_seen(steps, batch_size, context):
    """Tokens seen after ``steps`` optimiser steps of ``batch_size`` sequences of
    ``context`` tokens: steps × batch_size × context."""
    return steps * batch_size * context


def on_both_clocks(frame: pd.DataFrame, batch_size=None) -> pd.DataFrame:
    """The midpoints in steps on both clocks: ``frame`` has the columns of
    :data:`MIDPOINT_COLUMNS` but ``clock`` (its ``midpoint`` in optimiser steps; any other
    column, such as a ``note`` saying why a midpoint is missing, is kept), and a
    ``batch_size`` column or the ``batch_size`` argument (sequences per step); the result
    has its rows once with clock ``steps`` and once with clock ``tokens``, the midpoint
    then in tokens seen (:func:`tokens_seen`), as is a ``later_than`` column where there is one."""
    if batch_size is None and "batch_size" not in frame:
        raise ValueError("the tokens clock needs the batch size: a batch_size column or argument")
    batch = frame["batch_size"] if batch_size is None else batch_size
    steps = frame.assign(clock=STEPS)
    tokens = frame.assign(clock=TOKENS,
                          midpoint=tokens_seen(frame["midpoint"].astype(float), batch,
                                               frame["context"].astype(float)))
    if "later_than" in frame:
        tokens["later_than"] = tokens_seen(frame["later_than"].astype(float), batch,
                                           frame["context"].astype(float))
    return pd.concat([steps, tokens], ignore_index=True)


# ------------------------------------------------------------------ the line


@dataclass(frozen=True)
class Line:
    """The least-squares line y = intercept + slope · x through ``n`` points, with the
    standard errors of its coefficients and the residual standard deviation on n − 2
    degrees of freedom. ``exact``: the points lie on the line (no residual spread), so the
    errors are 0 and an interval is the value itself."""

    slope: float
    intercept: float
    slope_se: float
    intercept_se: float
    residual_sd: float
    n: int
    x_mean: float
    sxx: float
    exact: bool

    @property
    def df(self) -> int:
        return self.n - PARAMETERS

    def slope_interval(self) -> tuple[float, float]:
        """The 95 % Student-t interval of the slope on n − 2 degrees of freedom."""
        half = 0.0 if self.exact else t_quantile(self.df) * self.slope_se
        return self.slope - half, self.slope + half

    def band(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fit, low, high) at ``x``: the line and its 95 % confidence band (of the mean
        y at x, not of a new point): half-width t · s · √(1/n + (x − x̄)² / Sxx)."""
        x = np.asarray(x, dtype=np.float64)
        fit = self.intercept + self.slope * x
        if self.exact:
            return fit, fit.copy(), fit.copy()
        spread = np.sqrt(1.0 / self.n + (x - self.x_mean) ** 2 / self.sxx)
        half = t_quantile(self.df) * self.residual_sd * spread
        return fit, fit - half, fit + half


def least_squares_line(x, y) -> Line:
    """The ordinary least-squares line of ``y`` on ``x`` (at least three points, two
    distinct x)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < PARAMETERS + 1 or len(np.unique(x)) < 2:
        raise ValueError(f"a line with an error needs at least {PARAMETERS + 1} points at two "
                         f"distinct x, got {n} at {len(np.unique(x))}")
    x_mean, y_mean = float(x.mean()), float(y.mean())
    dx = x - x_mean
    sxx = float(dx @ dx)
    slope = float(dx @ (y - y_mean)) / sxx
    intercept = y_mean - slope * x_mean
    residuals = y - (intercept + slope * x)
    residual_sd = math.sqrt(float(residuals @ residuals) / (n - PARAMETERS))
    exact = residual_sd <= EXACT * max(1.0, float(np.abs(y).max()))
    if exact:
        residual_sd = 0.0
    slope_se = residual_sd / math.sqrt(sxx)
    intercept_se = residual_sd * math.sqrt(1.0 / n + x_mean ** 2 / sxx)
    return Line(slope, intercept, slope_se, intercept_se, residual_sd, n, x_mean, sxx, exact)


def bootstrap_slopes(x, y, strata, *, seed: int = 0, purpose: str = "",
                     resamples: int = RESAMPLES) -> np.ndarray:
    """Bootstrap replicates [resamples] of the least-squares slope of ``y`` on ``x`` with
    the points resampled within each stratum (``strata``: a label per point, the context
    length; the points of a stratum are its seeds). Every stratum keeps its size, so every
    replicate has the same distinct x. Stratum s draws from (seed, purpose:s), the
    resamples of :func:`~inductionlab.analysis.uncertainty.resample_counts`: fits with the
    same points per stratum (two clocks of one quantity) draw the same resamples."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    strata = np.asarray(strata)
    weights = np.zeros((resamples, len(x)))
    for label in np.unique(strata):
        where = np.flatnonzero(strata == label)
        weights[:, where] = resample_counts(len(where), seed, f"{purpose}:{label}", resamples)
    x, y = x - x.mean(), y - y.mean()  # centred: the weighted moments lose no digits
    total = weights.sum(axis=1)
    mx, my = weights @ x / total, weights @ y / total
    sxy = weights @ (x * y) / total - mx * my
    sxx = weights @ (x * x) / total - mx * mx
    return sxy / sxx


# ------------------------------------------------------------------ the verdict


def compare_with_bound(low: float, high: float, bound: float = QUADRATIC) -> str:
    """"below" when the whole interval [low, high] lies below ``bound``, "above" when it
    lies above, "contains" when it holds it (an interval of no width, low = high, holds
    only the bound itself): the claims' reading of an interval against a threshold
    (:func:`~inductionlab.claims.metrics.decide`), where holding the threshold is "too close
    to call"."""
    if math.isnan(low) or math.isnan(high):
        return NOT_MEASURED
    status = decide("<", bound, Estimate((low + high) / 2, low, high))
    if status == HOLDS:
        return BELOW
    if status == TOO_CLOSE or low == bound:
        return CONTAINS
    return ABOVE


def too_wide(low: float, high: float, bound: float = QUADRATIC,
             resolution: float = RESOLUTION) -> bool:
    """Whether an interval that holds ``bound`` also reaches ``resolution`` away from it on
    either side: it cannot tell the bound's exponent from its neighbours (with the default,
    a quadratic law from a linear or a cubic one)."""
    return low <= bound <= high and (low <= bound - resolution or high >= bound + resolution)


# ------------------------------------------------------------------ the fits


def _check(frame: pd.DataFrame) -> None:
    missing = [c for c in MIDPOINT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"the midpoints need the columns {MIDPOINT_COLUMNS}; missing {missing}")


def _usable(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[float]]]:
    """The rows with a positive, finite midpoint, and the others' context lengths by why (a
    ``note`` column, where there is one, says why a midpoint is missing)."""
    midpoint = pd.to_numeric(rows["midpoint"], errors="coerce").astype(float)
    context = pd.to_numeric(rows["context"], errors="coerce").astype(float)
    if not (np.isfinite(context) & (context > 0)).all():
        bad = rows.loc[~(np.isfinite(context) & (context > 0)), "context"].iloc[0]
        raise ValueError(f"context {bad}: a context length is a positive number of tokens")
    missing = ~np.isfinite(midpoint)
    negative = ~missing & (midpoint <= 0)
    dropped: dict[str, list[float]] = {}  # why -> the context length of each dropped midpoint
    for i in rows.index[missing]:
        note = rows.at[i, "note"] if "note" in rows.columns else None
        why = f"{NO_MIDPOINT}: {note}" if isinstance(note, str) and note else NO_MIDPOINT
        dropped.setdefault(why, []).append(float(context[i]))
    if negative.any():
        dropped[NOT_POSITIVE] = [float(c) for c in context[negative]]
    keep = ~missing & ~negative
    # the kept values only: a Series set on a frame left with no row would bring its rows back
    kept = rows[keep].assign(midpoint=midpoint[keep], context=context[keep])
    return kept, dropped


def _dropped_text(dropped: dict[str, list[float]], total: int) -> str:
    """"3 of 15 midpoints dropped (2 at T = 12, 16: why; 1 at T = 16: why)"."""
    if not dropped:
        return ""
    n = sum(len(at) for at in dropped.values())
    return f"{n} of {total} midpoints dropped (" + "; ".join(
        f"{len(at)} at T = {_contexts_text(set(at))}: {why}" for why, at in dropped.items()) + ")"


def _contexts_text(contexts) -> str:
    return ", ".join(f"{c:g}" for c in sorted(contexts))


@dataclass(frozen=True)
class _Fit:
    """One (variant, quantity, clock): its usable points, what was dropped, and the line
    (None with the reason where the law is not measured)."""

    key: tuple
    points: pd.DataFrame
    total: int
    dropped: dict
    line: Line | None
    reason: str


def _fits(frame: pd.DataFrame):
    _check(frame)
    for key, rows in frame.groupby(["variant", "quantity", "clock"], sort=True):
        points, dropped = _usable(rows)
        contexts = sorted(points["context"].unique())
        reason, line = "", None
        if len(contexts) < MIN_CONTEXT_LENGTHS:
            reason = (f"midpoints at {len(contexts)} context length{'s' if len(contexts) != 1 else ''}"
                      + (f" ({_contexts_text(contexts)})" if contexts else "")
                      + f": a law needs at least {MIN_CONTEXT_LENGTHS}")
        elif len(points) < MIN_POINTS:
            reason = (f"{len(points)} midpoints: a line of {PARAMETERS} parameters with an "
                      f"interval needs at least {MIN_POINTS}")
        else:
            line = least_squares_line(np.log(points["context"]), np.log(points["midpoint"]))
        yield _Fit(key, points, len(rows), dropped, line, reason)


def law_fits(frame: pd.DataFrame, *, bound: float = QUADRATIC, bound_clock: str = BOUND_CLOCK,
             bound_words: str = BOUND_WORDS, resolution: float = RESOLUTION, seed: int = 0,
             resamples: int = RESAMPLES) -> pd.DataFrame:
    """The law per variant, quantity and clock: :data:`LAW_COLUMNS`, one row each.

    ``frame``: the midpoints, :data:`MIDPOINT_COLUMNS` (``context``, the context length T
    in tokens; ``midpoint`` on its row's ``clock``; an optional ``note`` says why a midpoint
    is NaN), one row per variant, context, seed, quantity and clock (:func:`on_both_clocks`
    builds the tokens rows).

    Columns: ``slope`` (α) with ``slope_se`` and its 95 % t interval ``slope_low``/``high``
    (n − 2 degrees of freedom; the slope itself when the points lie on a line), the seed
    bootstrap's interval ``slope_boot_low``/``high`` (NaN with one seed per context length),
    ``intercept`` (of ln midpoint at ln T = 0) and ``intercept_se``, ``residual_sd`` (of ln
    midpoint), ``n_points``, ``n_seeds``, ``n_contexts`` and ``contexts`` (the T used, as
    text), ``n_dropped`` and ``dropped`` (why, counted), ``bound`` and ``bound_clock``,
    ``verdict`` (:func:`compare_with_bound` on the bound's clock; "not compared" on another;
    "not measured"), ``wide`` (:func:`too_wide`), ``note`` (why not measured; a bootstrap
    that reads otherwise) and ``sentence`` (:func:`law_sentence`).

    The bound is compared only on ``bound_clock``: an exponent in steps and one in tokens
    seen differ by 1 when the batch is fixed, so a comparison on another clock than the
    bound's means nothing.
    """
    rows = []
    for fit in _fits(frame):
        variant, quantity, clock = fit.key
        row = {"variant": variant, "quantity": quantity, "clock": clock,
               "n_points": len(fit.points), "n_seeds": int(fit.points["seed"].nunique()),
               "n_contexts": int(fit.points["context"].nunique()),
               "contexts": _contexts_text(fit.points["context"].unique()),
               "n_dropped": sum(len(at) for at in fit.dropped.values()),
               "dropped": _dropped_text(fit.dropped, fit.total),
               "bound": float(bound), "bound_clock": bound_clock, "wide": False, "note": fit.reason}
        line = fit.line
        if line is None:
            row["verdict"] = NOT_MEASURED
        else:
            low, high = line.slope_interval()
            boot_low = boot_high = math.nan
            per_context = fit.points.groupby("context")["seed"].size()
            if per_context.max() >= 2 and not line.exact:
                slopes = bootstrap_slopes(np.log(fit.points["context"]), np.log(fit.points["midpoint"]),
                                          fit.points["context"].to_numpy(), seed=seed,
                                          purpose=f"formation law:{variant}", resamples=resamples)
                boot_low, boot_high = percentile_interval(slopes)
            row.update(slope=line.slope, slope_se=line.slope_se, slope_low=low, slope_high=high,
                       slope_boot_low=boot_low, slope_boot_high=boot_high,
                       intercept=line.intercept, intercept_se=line.intercept_se,
                       residual_sd=line.residual_sd)
            if line.exact:
                row["note"] = "the points lie on a line: no residual spread, no interval"
            elif per_context.max() < 2:
                row["note"] = "one seed per context length: no seed bootstrap"
            if clock != bound_clock:
                row["verdict"] = NOT_COMPARED
            else:
                on_bound = line.exact and abs(line.slope - bound) <= EXACT * max(1.0, abs(bound))
                at = (bound, bound) if on_bound else (low, high)
                row["verdict"] = compare_with_bound(*at, bound)
                row["wide"] = bool(too_wide(low, high, bound, resolution))
                if not math.isnan(boot_low):
                    boot = compare_with_bound(boot_low, boot_high, bound)
                    if boot != row["verdict"]:
                        row["note"] = (f"the seed bootstrap's interval {_interval_text(boot_low, boot_high)} "
                                       f"reads {boot!r}")
        row["sentence"] = law_sentence(row, bound_words=bound_words, resolution=resolution)
        rows.append(row)
    return pd.DataFrame(rows, columns=LAW_COLUMNS)


def law_band(frame: pd.DataFrame, contexts=None, points: int = 50) -> pd.DataFrame:
    """The fitted law and its 95 % confidence band on the midpoint's own scale, for a
    figure: :data:`BAND_COLUMNS`, per measured variant, quantity and clock, at ``contexts``
    (default: ``points`` context lengths spaced evenly in ln T over the fitted ones).
    ``midpoint`` = e^(intercept) · T^α; the band is the line's, exponentiated."""
    rows = []
    for fit in _fits(frame):
        if fit.line is None:
            continue
        t = fit.points["context"]
        grid = (np.geomspace(t.min(), t.max(), points) if contexts is None
                else np.asarray(contexts, dtype=np.float64))
        mid, low, high = fit.line.band(np.log(grid))
        variant, quantity, clock = fit.key
        rows.append(pd.DataFrame({"variant": variant, "quantity": quantity, "clock": clock,
                                  "context": grid, "midpoint": np.exp(mid),
                                  "midpoint_low": np.exp(low), "midpoint_high": np.exp(high)}))
    if not rows:
        return pd.DataFrame(columns=BAND_COLUMNS)
    return pd.concat(rows, ignore_index=True)[BAND_COLUMNS]


# ------------------------------------------------------------------ in words


def _slope_text(value: float) -> str:
    return number(value, ".2f")


def _interval_text(low: float, high: float) -> str:
    """"0.95–1.89"; "−0.30 to 0.40" where a dash would read as a minus."""
    lo, hi = _slope_text(low), _slope_text(high)
    return f"{lo}–{hi}" if low >= 0 else f"{lo} to {hi}"


def _points_text(row: dict) -> str:
    n, contexts, seeds = int(row["n_points"]), int(row["n_contexts"]), int(row["n_seeds"])
    by = "×" if n == contexts * seeds else "and"
    return (f"{n} point{'s' if n != 1 else ''} from {contexts} context length"
            f"{'s' if contexts != 1 else ''} {by} {seeds} seed{'s' if seeds != 1 else ''}")


def direction(slope: float, low: float, high: float, clock: str) -> str:
    """Which way the midpoint moves with the context length, as far as α's interval tells:
    "the midpoint comes earlier in optimiser steps the longer the context" (the whole
    interval below 0), "later" (above 0), or that no trend can be told (it holds 0). A line
    through the points exactly (low = high) is read by its sign."""
    if high < 0 or (low == high and slope < 0):
        return f"the midpoint comes earlier in {clock} the longer the context"
    if low > 0 or (low == high and slope > 0):
        return f"the midpoint comes later in {clock} the longer the context"
    return f"no trend with the context length can be told in {clock} (the interval holds 0)"


def law_sentence(row, *, bound_words: str = BOUND_WORDS, resolution: float = RESOLUTION) -> str:
    """One fit of :func:`law_fits` in words: "α = 1.42 (95 % interval 0.95–1.89, 15 points
    from 5 context lengths × 3 seeds): below 2, the exponent of the quadratic bound derived
    for a simplified two-layer model (on optimiser steps)", then what was dropped. The words
    are the interval's: "holds 2" (too wide to tell where it reaches a neighbouring
    exponent), "below 2", "above 2"; on another clock than the bound's, no comparison."""
    row = dict(row)
    clock = CLOCKS.get(row["clock"], str(row["clock"]))
    dropped = f"; {row['dropped']}" if row.get("dropped") else ""
    if row["verdict"] == NOT_MEASURED:
        return f"α on {clock} not measured: {row['note']}{dropped}"
    slope = _slope_text(row["slope"])
    exact = row["slope_low"] == row["slope_high"]
    evidence = (f"{_points_text(row)} lying on a line, no interval" if exact else
                f"95 % interval {_interval_text(row['slope_low'], row['slope_high'])}, {_points_text(row)}")
    bound = number(row["bound"], "g")
    of_bound = f"{bound}, the exponent of {bound_words}"
    bound_clock = CLOCKS.get(row["bound_clock"], str(row["bound_clock"]))
    verdict = row["verdict"]
    trend = direction(row["slope"], row["slope_low"], row["slope_high"], clock)
    if verdict == NOT_COMPARED:
        words = f"{bound_words} speaks of {bound_clock}, so it is not compared on this clock"
    elif verdict == CONTAINS and row.get("wide"):
        reached = [number(e, "g") for e in (row["bound"] - resolution, row["bound"] + resolution)
                   if row["slope_low"] <= e <= row["slope_high"]]
        words = (f"too wide to tell: the interval holds {of_bound} (on {clock}), but also "
                 f"{' and '.join(reached)}")
    elif verdict == CONTAINS:
        words = f"{'equal to' if exact else 'the interval holds'} {of_bound} (on {clock})"
    else:
        words = f"{verdict} {of_bound} (on {clock})"
    return f"α = {slope} ({evidence}): {trend}; {words}{dropped}"


def clocks_sentence(fits: pd.DataFrame, variant: str, quantity: str) -> str:
    """The two clocks side by side for one variant and quantity of :func:`law_fits`: "the
    head's content part: α = 1.42 (0.95–1.89) on optimiser steps, 2.42 (1.95–2.89) on tokens
    seen", and where the tokens slope is the steps slope + 1 (a fixed batch), that this is
    so by the clocks' definition, not a second finding."""
    mine = fits[(fits["variant"] == variant) & (fits["quantity"] == quantity)].set_index("clock")
    name = QUANTITIES.get(quantity, quantity)
    parts = []
    for clock, words in CLOCKS.items():
        if clock not in mine.index:
            continue
        r = mine.loc[clock]
        if r["verdict"] == NOT_MEASURED:
            parts.append(f"not measured on {words}")
        elif r["slope_low"] == r["slope_high"]:
            parts.append(f"α = {_slope_text(r['slope'])} (no interval) on {words}")
        else:
            interval = _interval_text(r["slope_low"], r["slope_high"])
            parts.append(f"α = {_slope_text(r['slope'])} ({interval}) on {words}")
    text = f"{name}: " + ", ".join(parts)
    if {STEPS, TOKENS} <= set(mine.index) and NOT_MEASURED not in set(mine["verdict"]):
        gap = float(mine.loc[TOKENS, "slope"] - mine.loc[STEPS, "slope"])
        if abs(gap - 1.0) <= 1e-9:
            text += ("; the batch holds a fixed number of sequences, so tokens seen = steps × "
                     "batch × T and the tokens slope is the steps slope + 1 by definition")
        else:
            text += (f"; the tokens slope is the steps slope + {_slope_text(gap)}, not + 1: the "
                     "batch size differs between context lengths")
    return text
