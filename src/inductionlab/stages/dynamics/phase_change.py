"""Phase changes measured as a shape: a logistic fitted in log training steps.

A phase change is not located by the largest drop between two checkpoints; it is a
claim about the shape of a curve over training. A curve ``values`` at checkpoint
``steps`` (step 0 included) is fitted, in u = ln(step + 1), by

    y(u) = y_end + (y_start - y_end) · σ(-(u - m) / w),    σ(z) = 1 / (1 + e^-z), w > 0,

and reported as

- the midpoint, in steps: e^m - 1;
- the 10–90 % span, as a factor in steps: e^(2 ln 9 · w) (the curve covers the middle
  80 % of its change between steps whose (step + 1) differ by this factor);
- R² = 1 - SSE / SST of the fit (0 for a constant curve);
- the drop y_start - y_end (negative for a rising curve), and the residual standard
  deviation sqrt(SSE / (n - 4));
- percentile-bootstrap 95 % intervals on the midpoint and the span, from a residual
  bootstrap widened for autocorrelated residuals (below).

**Fitting.** For fixed (m, w) the model is linear in (a, b) = (y_end, y_start - y_end),
so SSE(m, w) is profiled in closed form: with s = σ(-(u - m)/w), b = cov(s, y) / var(s)
and SSE = SST - b · Σ (s - s̄) y. Every point of a grid of m over
[u_min - 0.5, u_max + 0.5] (step 0.05) and of ln w over [ln 0.02, ln 3] is profiled at
once; the best is refined by successively finer local grids around it (the parameters
stay inside those bounds).

**Intervals.** The residuals of a training curve about its logistic are not independent:
a curve deviates from the logistic smoothly, over many checkpoints at once. Resampling
them independently treats n checkpoints as n independent measurements and gives
intervals far too narrow (on a logistic plus a smooth deviation of 3 % of its drop, the
95 % interval of the midpoint covered the true one in 15 of 40 fits). The residuals are
therefore resampled with replacement (:func:`numpy.random.default_rng` seeded with
``seed``), scaled by the factor c of :func:`residual_scale`, added back to the fitted
curve and refitted; every resample is fitted in the same vectorised pass. With ρ the
lag-1 autocorrelation of the residuals ordered by step (0 when negative), the
checkpoints carry n_eff = n (1 - ρ)/(1 + ρ) effective points (the AR(1) effective
sample size, kept within [p + 1, n], p = 4 parameters), and

    c² = (n / n_eff) / (1 - p / n_eff):

n / n_eff widens the variance of every fitted parameter as n_eff independent points
would, and 1 / (1 - p / n_eff) restores the residual variance that the fit absorbed:
with correlated errors each parameter takes up n / n_eff points' worth of it, not one.
For independent residuals (ρ = 0) c² = n / (n - p), the usual correction of residuals for
the parameters fitted. A moving-block bootstrap of the residuals (blocks of 4 to 10
consecutive checkpoints) was tried and rejected: it covered the midpoint in 22 to 28 of
40 such fits, because the checkpoints are log-spaced early and regular late, so a block
of consecutive residuals is a very different stretch of ln(step + 1) in different parts
of the run, and a block from the dense late checkpoints is nearly constant, which the
fit's asymptote absorbs; the scaled resample covered it in 39 of 40, while on a logistic
plus independent noise its intervals are only about 10 % wider than the independent
bootstrap's.

**Shape** (:func:`classify_shape`), in this order:

- :data:`TWO_DROPS`: a sum of two logistics (each with its own m and w, the same sign of
  drop; linear in (a, b1, b2) for fixed (m1, w1, m2, w2)) has R² ≥ :data:`MIN_R2`, each
  drop is at least a quarter of their sum, both spans are ≤ :data:`MAX_SPAN`, the
  midpoints are more than a factor of 3 apart in steps (m2 - m1 > ln 3) and the two-drop
  fit has at most half the SSE of the single logistic: the curve changes twice, so it
  has no single phase change;
- :data:`FLAT`: R² < 0.5 or |drop| < 4 residual standard deviations: no change that
  can be told from noise;
- :data:`PHASE_CHANGE`: span ≤ :data:`MAX_SPAN` and R² ≥ :data:`MIN_R2` (a single,
  abrupt change that the logistic describes);
- :data:`SMOOTH`: anything else, e.g. an exponential, power-law or linear decline in
  steps, whose fitted span is far wider than a factor of 3.

A rising curve is fitted and classified in the same way; ``direction`` says which way
it goes.

**Verdicts**, judged with the intervals rather than the point estimates
(:func:`phase_change_verdict`): a curve is "a phase change" — :data:`HOLDS` when the
span's whole interval is ≤ :data:`MAX_SPAN` and R² ≥ :data:`MIN_R2`; :data:`FAILS` when
the span's interval lies wholly above :data:`MAX_SPAN`, R² < :data:`MIN_R2` or the shape
is flat or two drops; :data:`NOT_MEASURED` without intervals, or when the change's middle
lies outside the checkpoints (a sharp, well-fitted change that was not seen happen);
:data:`TOO_CLOSE` otherwise (the span's interval contains :data:`MAX_SPAN`). ``shape``
stays the description of the point estimate. :func:`same_time` asks whether two changes
happen at the same time (their midpoints within a factor of 2 in steps), judged with the
bootstrap replicates of both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...core.bounds import MIN_FIT_POINTS
from ...analysis.uncertainty import FAILS, HOLDS, NOT_MEASURED, TOO_CLOSE

PHASE_CHANGE = "phase change"
SMOOTH = "smooth"
TWO_DROPS = "two drops"
FLAT = "flat"

FALLS = "falls"
RISES = "rises"

MAX_SPAN = 3.0            # a phase change covers 10–90 % of its drop within this factor in steps
SAME_TIME_FACTOR = 2.0    # "at the same time": the two midpoints within this factor in steps
MIN_R2 = 0.9              # ... and the logistic explains at least this share of the variance
FLAT_R2 = 0.5             # below this R² the curve is flat (noise)
MIN_DROP_SDS = 4.0        # a real change: |drop| at least this many residual sds
TWO_DROP_SHARE = 0.25     # each of two drops is at least this share of the total drop
TWO_DROP_GAIN = 0.5       # the two-drop fit has at most this share of the single fit's SSE
TWO_DROP_SEPARATION = math.log(3.0)   # two drops' midpoints differ by more than this in u

RESAMPLES = 200
LEVEL = 0.95
PARAMETERS = 4            # the logistic's y_end, y_start - y_end, m and w

_LN9 = math.log(9.0)
_LNW_MIN, _LNW_MAX = math.log(0.02), math.log(3.0)
_M_MARGIN = 0.5
_M_STEP = 0.05            # grid step of m in the single fit
_LNW_POINTS = 40          # grid points of ln w in the single fit
_REFINE_ROUNDS = 6
_REFINE_POINTS = 9        # per parameter, per refinement round
_TWO_M_POINTS = 41        # grid of each logistic of the two-drop fit
_TWO_LNW_POINTS = 8
_TWO_REFINE_ROUNDS = 10
_TWO_REFINE_POINTS = 5
_TINY = 1e-12


@dataclass(frozen=True)
class LogisticFit:
    """A logistic in ln(step + 1) fitted to a curve over training, and its shape.

    ``midpoint`` is the step e^m - 1 at which the fitted curve is halfway between
    ``start`` and ``end``; ``span`` the factor in steps over which it covers 10–90 % of
    its change, e^(2 ln 9 · w). ``*_low``/``*_high`` are percentile-bootstrap 95 %
    intervals (NaN without resamples; the residuals scaled for their autocorrelation). ``start`` and ``end`` are the fitted curve's
    asymptotes y_start and y_end; ``drop`` = start - end, positive for a falling curve.
    ``residual_sd`` is sqrt(SSE / (n - 4)). ``shape`` is one of :data:`PHASE_CHANGE`,
    :data:`SMOOTH`, :data:`TWO_DROPS`, :data:`FLAT`, ``note`` one sentence saying why.
    ``m_replicates`` holds the bootstrap replicates of m = ln(midpoint + 1), used by
    :func:`same_time`.
    """

    midpoint: float
    midpoint_low: float
    midpoint_high: float
    span: float
    span_low: float
    span_high: float
    r2: float
    start: float
    end: float
    drop: float
    residual_sd: float
    shape: str
    direction: str
    m_replicates: np.ndarray = field(compare=False, repr=False)
    note: str

    @property
    def m(self) -> float:
        """The midpoint in u = ln(step + 1)."""
        return float(np.log1p(self.midpoint))

    @property
    def w(self) -> float:
        """The width of the logistic in u (span = e^(2 ln 9 · w))."""
        return float(np.log(self.span) / (2.0 * _LN9))


def span_of_width(w):
    """The 10–90 % span, a factor in steps, of a logistic of width ``w`` in ln(step + 1)."""
    return np.exp(2.0 * _LN9 * np.asarray(w, dtype=float))


MAX_WIDTH = math.log(MAX_SPAN) / (2.0 * _LN9)


def _falling(u, m, lnw):
    """σ(-(u - m)/w) for parameter arrays m, ln w of any shape; u along a new last axis."""
    m = np.asarray(m, dtype=float)[..., None]
    w = np.exp(np.asarray(lnw, dtype=float))[..., None]
    return 0.5 * (1.0 - np.tanh((u - m) / (2.0 * w)))


def _check(steps, values) -> tuple[np.ndarray, np.ndarray]:
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    if steps.ndim != 1 or values.ndim != 1:
        raise ValueError(f"steps and values must be 1-d, got shapes {steps.shape} and "
                         f"{values.shape}")
    if steps.shape != values.shape:
        raise ValueError(f"steps and values differ in length: {steps.shape[0]} steps, "
                         f"{values.shape[0]} values")
    if len(steps) < MIN_FIT_POINTS:
        raise ValueError(f"a logistic fit needs at least {MIN_FIT_POINTS} points, got {len(steps)}")
    if not np.all(np.isfinite(steps)):
        raise ValueError("steps contain non-finite values (NaN or inf)")
    if not np.all(np.isfinite(values)):
        raise ValueError("values contain non-finite values (NaN or inf)")
    if np.any(steps < 0):
        raise ValueError(f"steps must be >= 0, got a minimum of {steps.min():g}")
    if steps.min() == steps.max():
        raise ValueError("steps are all equal: there is no curve over training to fit")
    return steps, values


def _profile(u, yc, m, lnw):
    """Profile the linear parameters for every (m, ln w) of [R, K] arrays and the
    centred curves ``yc`` [R, n]: the explained sum of squares, b and the basis mean."""
    s = _falling(u, m, lnw)                       # [R, K, n]
    mean = s.mean(axis=-1)
    sc = s - mean[..., None]
    sss = np.einsum("rkn,rkn->rk", sc, sc)
    sy = np.einsum("rkn,rn->rk", sc, yc)
    ok = sss > _TINY
    b = np.where(ok, sy / np.where(ok, sss, 1.0), 0.0)
    return b * sy, b, mean


def _fit_many(u, ys):
    """Least-squares logistic fits of every row of ``ys`` [R, n] at u [n].

    Returns m, ln w, a (= y_end), b (= y_start - y_end) and SSE, each [R]."""
    ys = np.atleast_2d(ys)
    r = ys.shape[0]
    ybar = ys.mean(axis=1)
    yc = ys - ybar[:, None]
    sst = np.einsum("rn,rn->r", yc, yc)
    m_lo, m_hi = u.min() - _M_MARGIN, u.max() + _M_MARGIN
    m_grid = np.arange(m_lo, m_hi + _M_STEP / 2, _M_STEP)
    lnw_grid = np.linspace(_LNW_MIN, _LNW_MAX, _LNW_POINTS)
    gm, gl = (g.ravel() for g in np.meshgrid(m_grid, lnw_grid, indexing="ij"))
    s = _falling(u, gm, gl)                       # [G, n]
    sc = s - s.mean(axis=1, keepdims=True)
    sss = np.einsum("gn,gn->g", sc, sc)
    cross = yc @ sc.T                             # [R, G]
    explained = np.where(sss > _TINY, cross ** 2 / np.where(sss > _TINY, sss, 1.0), 0.0)
    best = np.argmax(explained, axis=1)
    m, lnw = gm[best], gl[best]
    half_m, half_l = 1.5 * _M_STEP, 1.5 * (lnw_grid[1] - lnw_grid[0])
    offsets = np.linspace(-1.0, 1.0, _REFINE_POINTS)
    om, ol = (g.ravel() for g in np.meshgrid(offsets, offsets, indexing="ij"))
    rows = np.arange(r)
    for _ in range(_REFINE_ROUNDS):
        cm = np.clip(m[:, None] + half_m * om, m_lo, m_hi)
        cl = np.clip(lnw[:, None] + half_l * ol, _LNW_MIN, _LNW_MAX)
        gained, _, _ = _profile(u, yc, cm, cl)
        pick = np.argmax(gained, axis=1)
        m, lnw = cm[rows, pick], cl[rows, pick]
        shrink = 1.5 * 2.0 / (_REFINE_POINTS - 1)
        half_m, half_l = half_m * shrink, half_l * shrink
    gained, b, mean = _profile(u, yc, m[:, None], lnw[:, None])
    gained, b, mean = gained[:, 0], b[:, 0], mean[:, 0]
    a = ybar - b * mean
    sse = np.maximum(sst - gained, 0.0)
    return m, lnw, a, b, sse


def _two_profile(u, yc, params):
    """Least squares of a sum of two falling logistics for every row of ``params``
    [K, 4] = (m1, ln w1, m2, ln w2) and one centred curve ``yc`` [n]: the explained sum
    of squares, b1, b2 and the basis means; -inf explained where the two bases are
    collinear or the drops differ in sign (the fit looks for two drops the same way)."""
    s1 = _falling(u, params[:, 0], params[:, 1])
    s2 = _falling(u, params[:, 2], params[:, 3])
    mean1, mean2 = s1.mean(axis=1), s2.mean(axis=1)
    c1, c2 = s1 - mean1[:, None], s2 - mean2[:, None]
    g11, g22, g12 = (c1 * c1).sum(1), (c2 * c2).sum(1), (c1 * c2).sum(1)
    r1, r2 = c1 @ yc, c2 @ yc
    det = g11 * g22 - g12 ** 2
    ok = det > 1e-9 * np.maximum(g11 * g22, _TINY)
    safe = np.where(ok, det, 1.0)
    b1 = (g22 * r1 - g12 * r2) / safe
    b2 = (g11 * r2 - g12 * r1) / safe
    explained = np.where(ok & (b1 * b2 > 0), b1 * r1 + b2 * r2, -np.inf)
    return explained, b1, b2, mean1, mean2


def _fit_two(u, y):
    """The best sum of two same-sign logistics in u: a dict of m1 < m2, w1, w2, b1, b2
    and SSE, or None when no pair of logistics fits."""
    ybar = y.mean()
    yc = y - ybar
    sst = float(yc @ yc)
    m_lo, m_hi = u.min() - _M_MARGIN, u.max() + _M_MARGIN
    m_grid = np.linspace(m_lo, m_hi, _TWO_M_POINTS)
    lnw_grid = np.linspace(_LNW_MIN, _LNW_MAX, _TWO_LNW_POINTS)
    gm, gl = (g.ravel() for g in np.meshgrid(m_grid, lnw_grid, indexing="ij"))
    s = _falling(u, gm, gl)
    c = s - s.mean(axis=1, keepdims=True)
    gram = c @ c.T
    rhs = c @ yc
    diag = np.diag(gram)
    g11, g22 = diag[:, None], diag[None, :]       # pair (i, j): logistic i first, j second
    det = g11 * g22 - gram ** 2
    ok = (det > 1e-9 * np.maximum(g11 * g22, _TINY)) & (gm[:, None] < gm[None, :])
    safe = np.where(ok, det, 1.0)
    b1 = (g22 * rhs[:, None] - gram * rhs[None, :]) / safe
    b2 = (g11 * rhs[None, :] - gram * rhs[:, None]) / safe
    explained = np.where(ok & (b1 * b2 > 0), b1 * rhs[:, None] + b2 * rhs[None, :], -np.inf)
    if not np.isfinite(explained.max()):
        return None
    i, j = np.unravel_index(int(np.argmax(explained)), explained.shape)
    p = np.array([gm[i], gl[i], gm[j], gl[j]])
    half = np.array([m_grid[1] - m_grid[0], lnw_grid[1] - lnw_grid[0]] * 2)
    offsets = np.linspace(-1.0, 1.0, _TWO_REFINE_POINTS)
    grid = np.stack([g.ravel() for g in np.meshgrid(*[offsets] * 4, indexing="ij")], axis=1)
    low = np.array([m_lo, _LNW_MIN, m_lo, _LNW_MIN])
    high = np.array([m_hi, _LNW_MAX, m_hi, _LNW_MAX])
    for _ in range(_TWO_REFINE_ROUNDS):
        cand = np.clip(p + grid * half, low, high)
        gained = _two_profile(u, yc, cand)[0]
        p = cand[int(np.argmax(gained))]
        half = half * (2.0 / (_TWO_REFINE_POINTS - 1))
    gained, b1, b2, _, _ = (v[0] for v in _two_profile(u, yc, p[None, :]))
    if not np.isfinite(gained):
        return None
    sse = float(max(sst - gained, 0.0))
    (m1, lnw1, d1), (m2, lnw2, d2) = sorted([(p[0], p[1], b1), (p[2], p[3], b2)])
    return {"m1": float(m1), "w1": float(np.exp(lnw1)), "b1": float(d1),
            "m2": float(m2), "w2": float(np.exp(lnw2)), "b2": float(d2),
            "sse": sse, "r2": 1.0 - sse / sst if sst > 0 else 0.0}


def _step(m: float) -> float:
    return float(np.expm1(m))


def _signed(value: float) -> str:
    """A change with its sign, a true minus for a fall: "+0.1", "−0.52"."""
    return f"{value:+.3g}".replace("-", "\u2212")


def _is_two_drops(two: dict | None, sse_single: float) -> bool:
    if two is None or sse_single <= 0:
        return False
    total = two["b1"] + two["b2"]
    return bool(two["r2"] >= MIN_R2
                and two["b1"] * two["b2"] > 0
                and min(abs(two["b1"]), abs(two["b2"])) >= TWO_DROP_SHARE * abs(total)
                and max(two["w1"], two["w2"]) <= MAX_WIDTH
                and two["m2"] - two["m1"] > TWO_DROP_SEPARATION
                and two["sse"] <= TWO_DROP_GAIN * sse_single)


def classify_shape(r2: float, drop: float, residual_sd: float, span: float, midpoint: float,
                   *, sse: float | None = None, two: dict | None = None,
                   steps: tuple[float, float] | None = None) -> tuple[str, str]:
    """The shape of a fitted curve and one sentence saying why.

    ``steps``: the first and last checkpoint step; a phase change has its midpoint between
    them (a change whose middle lies outside the checkpoints was not seen happen: a drop
    over the last checkpoints only, extrapolated, is smooth).

    ``r2``, ``drop``, ``residual_sd``, ``span`` and ``midpoint`` describe the single
    logistic fit; ``two`` is the two-logistic fit (a dict with m1 < m2, w1, w2, b1, b2,
    sse, r2, as fitted by :func:`fit_logistic`) and ``sse`` the single fit's SSE, both
    needed only to tell :data:`TWO_DROPS`. Rules in the order of the module docstring.
    """
    if two is not None and sse is not None and _is_two_drops(two, sse):
        spans = span_of_width([two["w1"], two["w2"]])
        return TWO_DROPS, (
            f"two drops, {two['b1']:.3g} at step {_step(two['m1']):.3g} and {two['b2']:.3g} "
            f"at step {_step(two['m2']):.3g} (a factor of {math.exp(two['m2'] - two['m1']):.3g} "
            f"apart, spans {spans[0]:.3g} and {spans[1]:.3g}), fit with R² = {two['r2']:.3f} "
            f"and {two['sse'] / sse:.2f} of the single logistic's SSE: no single phase change")
    if r2 < FLAT_R2:
        return FLAT, (f"the logistic explains R² = {r2:.3f} < {FLAT_R2} of the variance: "
                      f"no change distinguishable from noise")
    if abs(drop) < MIN_DROP_SDS * residual_sd:
        return FLAT, (f"the fitted change {_signed(-drop)} is less than {MIN_DROP_SDS:g} residual "
                      f"standard deviations ({residual_sd:.3g}): no change distinguishable "
                      f"from noise")
    inside = steps is None or steps[0] < midpoint < steps[1]
    if span <= MAX_SPAN and r2 >= MIN_R2 and inside:
        return PHASE_CHANGE, (
            f"a single change of {_signed(-drop)} (residual sd {residual_sd:.3g}) centred at step "
            f"{midpoint:.3g}, covering 10–90 % within a factor of {span:.3g} in steps "
            f"(<= {MAX_SPAN:g}), with R² = {r2:.3f} (>= {MIN_R2})")
    reasons = []
    if span > MAX_SPAN:
        reasons.append(f"its 10–90 % span is a factor of {span:.3g} in steps (> {MAX_SPAN:g})")
    if r2 < MIN_R2:
        reasons.append(f"the logistic explains only R² = {r2:.3f} (< {MIN_R2})")
    if not inside:
        reasons.append(f"its midpoint lies outside the checkpoints (steps {steps[0]:.3g}–{steps[1]:.3g})")
    return SMOOTH, (f"a gradual change of {_signed(-drop)} centred at step {midpoint:.3g}: "
                    + " and ".join(reasons) + ", so not a phase change")


def effective_points(residuals) -> float:
    """The effective number of independent points among ``residuals`` (ordered by step):
    n (1 - ρ)/(1 + ρ), ρ their lag-1 autocorrelation (0 when negative), kept within
    [:data:`PARAMETERS` + 1, n]."""
    r = np.asarray(residuals, dtype=float)
    n = len(r)
    r = r - r.mean()
    ss = float(r @ r)
    rho = max(float(r[1:] @ r[:-1]) / ss, 0.0) if ss > _TINY else 0.0
    return float(min(max(n * (1.0 - rho) / (1.0 + rho), PARAMETERS + 1.0), n))


def residual_scale(residuals) -> float:
    """The factor c by which resampled residuals are scaled:
    c² = (n / n_eff) / (1 - p / n_eff), n_eff from :func:`effective_points` (module docstring)."""
    n, n_eff = len(residuals), effective_points(residuals)
    return math.sqrt((n / n_eff) / (1.0 - PARAMETERS / n_eff))


def phase_change_verdict(fit) -> str:
    """Whether a fitted curve is a phase change, judged with its span's interval:
    :data:`HOLDS`, :data:`FAILS`, :data:`TOO_CLOSE` or :data:`NOT_MEASURED` (rules in the
    module docstring). ``fit`` is a :class:`LogisticFit` or a row of a table with its
    shape, span, span_low, span_high and r2 (phase_change.csv)."""
    get = fit.get if hasattr(fit, "get") else lambda k: getattr(fit, k)
    shape, r2 = get("shape"), float(get("r2"))
    span, low, high = (float(get(k)) for k in ("span", "span_low", "span_high"))
    if shape in (FLAT, TWO_DROPS) or r2 < MIN_R2:
        return FAILS
    if math.isnan(low) or math.isnan(high):
        return NOT_MEASURED
    if low > MAX_SPAN:
        return FAILS
    if shape == SMOOTH and span <= MAX_SPAN:
        return NOT_MEASURED      # sharp and well fitted, but its middle lies outside the checkpoints
    return HOLDS if high <= MAX_SPAN else TOO_CLOSE


def _interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    if len(values) == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def fit_logistic(steps, values, *, resamples: int = RESAMPLES, seed: int = 0) -> LogisticFit:
    """Fit a logistic in ln(step + 1) to ``values`` at checkpoint ``steps`` and classify
    the curve's shape (see the module docstring).

    ``resamples`` residual-bootstrap refits (from ``numpy.random.default_rng(seed)``; the
    residuals scaled by :func:`residual_scale` for their autocorrelation) give the 95 %
    intervals of the midpoint and the span; with ``resamples=0`` the
    intervals are NaN. Raises ValueError for fewer than 5 points, steps and values of
    different lengths, non-finite or negative input.
    """
    steps, values = _check(steps, values)
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")
    u = np.log(steps + 1.0)
    n = len(u)
    m, lnw, a, b, sse = (float(v[0]) for v in _fit_many(u, values[None, :]))
    w = math.exp(lnw)
    fitted = a + b * _falling(u, m, lnw)
    residuals = values - fitted
    sst = float(((values - values.mean()) ** 2).sum())
    r2 = 1.0 - sse / sst if sst > 0 else 0.0
    residual_sd = math.sqrt(sse / (n - 4))
    midpoint, span = _step(m), float(span_of_width(w))

    if resamples:
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, n, size=(resamples, n))
        scale = residual_scale(residuals[np.argsort(steps, kind="stable")])
        m_reps, lnw_reps, _, _, _ = _fit_many(u, fitted[None, :] + scale * residuals[draws])
    else:
        m_reps, lnw_reps = np.empty(0), np.empty(0)
    m_low, m_high = _interval(m_reps)
    l_low, l_high = _interval(lnw_reps)

    two = _fit_two(u, values) if sst > 0 else None
    shape, note = classify_shape(r2, b, residual_sd, span, midpoint, sse=sse, two=two,
                                 steps=(float(np.expm1(u.min())), float(np.expm1(u.max()))))
    return LogisticFit(
        midpoint=midpoint, midpoint_low=_step(m_low), midpoint_high=_step(m_high),
        span=span, span_low=float(span_of_width(math.exp(l_low))),
        span_high=float(span_of_width(math.exp(l_high))),
        r2=float(r2), start=a + b, end=a, drop=b, residual_sd=residual_sd,
        shape=shape, direction=FALLS if b >= 0 else RISES,
        m_replicates=np.asarray(m_reps, dtype=float), note=note)


def logistic_curve(steps, fit) -> np.ndarray:
    """The fitted logistic at ``steps`` (for figures): ``fit`` is a :class:`LogisticFit` or
    a row of a table with its midpoint, span, start and end (phase_change.csv)."""
    get = fit.get if hasattr(fit, "get") else lambda k: getattr(fit, k)
    midpoint, span, start, end = (float(get(k)) for k in ("midpoint", "span", "start", "end"))
    u = np.log(np.asarray(steps, dtype=float) + 1.0)
    w = math.log(span) / (2.0 * _LN9)
    return end + (start - end) * _falling(u, math.log1p(midpoint), math.log(w))


def same_time(a: LogisticFit, b: LogisticFit, factor: float = 2.0,
              shapes: tuple[str, ...] = (PHASE_CHANGE,)) -> dict:
    """Whether two changes happen at the same time: their midpoints within
    ``factor`` in steps, i.e. gap = |ln((mid_a + 1)/(mid_b + 1))| = |m_a - m_b| ≤ ln factor.
    ``shapes``: the shapes whose midpoint counts (by default phase changes only; a smooth
    change has a midpoint too, a flat curve or two drops have none).

    The gap's 95 % interval is the percentile interval of |m_a - m_b| over paired
    bootstrap replicates (replicate k of ``a`` with replicate k of ``b``; the two
    bootstraps are independent). Returns a dict with ``status`` — "holds" (the whole
    interval ≤ ln factor), "fails" (the whole interval > ln factor), "too close to call"
    (it straddles) or "not measured" (either curve's shape is not in ``shapes``, or has no
    bootstrap replicates) — ``gap``, ``low`` and ``high`` (in ln steps; NaN when not
    measured) and a ``note``.
    """
    if factor <= 1.0:
        raise ValueError(f"factor must be > 1, got {factor}")
    wanted = " or ".join(shapes) if shapes != (PHASE_CHANGE,) else "a phase change"
    unmeasured = [f"{name} is {fit.shape}, not {wanted}"
                  for name, fit in (("the first curve", a), ("the second curve", b))
                  if fit.shape not in shapes]
    pairs = min(len(a.m_replicates), len(b.m_replicates))
    if not unmeasured and pairs == 0:
        unmeasured.append("the fits have no bootstrap replicates")
    if unmeasured:
        return {"status": NOT_MEASURED, "gap": math.nan, "low": math.nan, "high": math.nan,
                "note": "coincidence not measured: " + "; ".join(unmeasured)}
    gap = abs(a.m - b.m)
    replicate_gaps = np.abs(a.m_replicates[:pairs] - b.m_replicates[:pairs])
    low, high = _interval(replicate_gaps)
    limit = math.log(factor)
    if high <= limit:
        status = HOLDS
    elif low > limit:
        status = FAILS
    else:
        status = TOO_CLOSE
    note = (f"midpoints at steps {a.midpoint:.3g} and {b.midpoint:.3g} are a factor of "
            f"{math.exp(gap):.3g} apart (95 % interval {math.exp(low):.3g}–{math.exp(high):.3g}) "
            f"against {factor:g}: {status}")
    return {"status": status, "gap": gap, "low": low, "high": high, "note": note}
