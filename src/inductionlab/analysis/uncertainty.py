"""Sampling uncertainty: 95 % intervals for every value measured on an evaluation sample.

Three kinds of interval, one function each:

- :func:`bootstrap_interval`: a percentile bootstrap over the sampled units (sequences,
  prompts). A value is a ratio Σ_b num_b / Σ_b den_b over the units b (a mean when every
  den_b = 1), so one resample is a vector of multinomial counts w and its value
  Σ w·num / Σ w·den: every resample of every head at once is one matrix product.
  :func:`paired_bootstrap_interval` does the same for a function of several samples
  resampled independently (a score minus its control).
- :func:`binomial_interval`: the exact (Clopper–Pearson) interval of a rate k / n, which
  stays honest at k = 0 (a bootstrap of no event is [0, 0]).
- :func:`mean_interval`: the mean of a few per-seed values with its Student-t interval.

Values computed from weights alone (eigenvalue positivity, composition) have no
sampling error and no interval; tables leave their interval columns empty (NaN).
Interval columns are named by :func:`interval_columns`: ``low``/``high`` beside a tidy
``value`` column, ``<column>_low``/``<column>_high`` beside any other.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..core.seeding import derive_seed

LEVEL = 0.95
RESAMPLES = 1000
# The outcome of a test of an interval against a threshold (a claim, the coincidence of two
# phase changes): the whole interval passes, none of it does, it contains the threshold,
# or there is no value.
HOLDS, FAILS, TOO_CLOSE, NOT_MEASURED = "holds", "fails", "too close to call", "not measured"


def interval_columns(column: str) -> tuple[str, str]:
    """The names of the interval columns of ``column``."""
    if column == "value":
        return "low", "high"
    return f"{column}_low", f"{column}_high"


def _rng(seed: int, purpose: str) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, f"bootstrap:{purpose}"))


@lru_cache(maxsize=16)
def resample_counts(n: int, seed: int, purpose: str, resamples: int = RESAMPLES) -> np.ndarray:
    """Multinomial counts [resamples, n]: how often each of ``n`` units is drawn in each
    bootstrap resample (seeded from (seed, purpose): the same resamples for every model).
    Cached and read-only: every score of one sample shares its resamples."""
    if n < 1:
        raise ValueError("a bootstrap needs at least one unit")
    counts = _rng(seed, purpose).multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    counts.flags.writeable = False
    return counts


def _percentiles(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - level) / 2.0 * 100.0
    percentile = np.nanpercentile if np.isnan(values).any() else np.percentile
    low, high = percentile(values, [tail, 100.0 - tail], axis=0)
    return low, high


def bootstrap_replicates(numerator, denominator=None, *, seed: int = 0, purpose: str = "",
                         resamples: int = RESAMPLES) -> np.ndarray:
    """Bootstrap replicates [resamples, ...] of Σ num / Σ den over the first axis of
    ``numerator`` (units; any trailing axes are values measured on the same units, e.g.
    heads) with ``denominator`` [units] (None: every unit counts 1, a mean)."""
    num = np.asarray(numerator, dtype=np.float64)
    n = num.shape[0]
    den = np.ones(n) if denominator is None else np.asarray(denominator, dtype=np.float64)
    if den.shape != (n,):
        raise ValueError(f"denominator has shape {den.shape}, expected ({n},)")
    counts = resample_counts(n, seed, purpose, resamples)
    flat = num.reshape(n, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (counts @ flat) / (counts @ den)[:, None]
    return reps.reshape((resamples,) + num.shape[1:])


def bootstrap_interval(numerator, denominator=None, *, seed: int = 0, purpose: str = "",
                       resamples: int = RESAMPLES, level: float = LEVEL):
    """95 % percentile-bootstrap interval (low, high) of Σ num / Σ den over the units
    (first axis); arrays shaped like the trailing axes of ``numerator`` (floats for 1-d)."""
    return percentile_interval(bootstrap_replicates(numerator, denominator, seed=seed,
                                                    purpose=purpose, resamples=resamples), level)


def percentile_interval(replicates, level: float = LEVEL):
    """95 % percentile interval (low, high) of bootstrap replicates [resamples, ...] (NaN
    replicates left out); arrays shaped like the trailing axes (floats for 1-d)."""
    low, high = _percentiles(np.asarray(replicates, dtype=np.float64), level)
    if np.ndim(low) == 0:
        return float(low), float(high)
    return low, high


def paired_bootstrap_replicates(function, samples, *, seed: int = 0, purpose: str = "",
                                resamples: int = RESAMPLES) -> np.ndarray:
    """Bootstrap replicates of ``function(*ratios)``, each ratio Σ num / Σ den of one
    sample, the samples resampled independently (sample k from (seed, purpose:k): two
    calls with samples of the same sizes resample the same units, so their replicates
    are paired). ``samples``: a list of (numerator, denominator)."""
    reps = [bootstrap_replicates(num, den, seed=seed, purpose=f"{purpose}:{k}",
                                 resamples=resamples)
            for k, (num, den) in enumerate(samples)]
    return function(*reps)


def paired_bootstrap_interval(function, samples, *, seed: int = 0, purpose: str = "",
                              resamples: int = RESAMPLES, level: float = LEVEL):
    """Interval of ``function(*ratios)``, each ratio Σ num / Σ den of one sample, the
    samples resampled independently. ``samples``: a list of (numerator, denominator)."""
    return percentile_interval(paired_bootstrap_replicates(function, samples, seed=seed,
                                                           purpose=purpose,
                                                           resamples=resamples), level)


# ---------------------------------------------------------------- exact binomial


def _log_binom_cdf(k: int, n: int, p: float) -> float:
    """ln P(X <= k) for X ~ Binomial(n, p)."""
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 0.0 if k >= n else -math.inf
    return float(_log_sum_exp(_log_choose(n, k) + _I(k) * math.log(p) + (n - _I(k)) * math.log1p(-p)))


@lru_cache(maxsize=64)
def _log_choose(n: int, k: int) -> np.ndarray:
    """ln C(n, j) for j = 0 .. k (read-only)."""
    j = np.arange(1, k + 1, dtype=np.float64)
    out = np.concatenate([[0.0], np.cumsum(np.log(n - j + 1) - np.log(j))])
    out.flags.writeable = False
    return out


def _I(k: int) -> np.ndarray:
    return np.arange(0, k + 1, dtype=np.float64)


def _log_sum_exp(logs: np.ndarray) -> float:
    top = logs.max()
    return top + math.log(np.exp(logs - top).sum())


def _solve(f, target: float) -> float:
    """p in [0, 1] where the decreasing function f(p) crosses ``target`` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def binomial_interval(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact (Clopper–Pearson) interval of the rate ``k`` / ``n``: (low, high)."""
    k, n = int(k), int(n)
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"a rate needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    alpha = 1.0 - level
    # upper: P(X <= k | p) = alpha / 2; lower: P(X >= k | p) = alpha / 2
    high = 1.0 if k == n else _solve(lambda p: _log_binom_cdf(k, n, p), math.log(alpha / 2))
    if k == 0:
        low = 0.0
    else:
        low = 1.0 - _solve(lambda q: _log_binom_cdf(n - k, n, q), math.log(alpha / 2))
    return low, high


# ---------------------------------------------------------------- over seeds

# two-sided 95 % Student-t quantiles t_{0.975, df} for df = 1 .. 30
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile(df: int) -> float:
    """The two-sided 95 % Student-t quantile for ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("a t interval needs at least two values")
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df


def mean_interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the mean of ``values`` (NaN and ±inf left out) with its 95 %
    Student-t interval; one value gives NaN bounds, none gives NaN throughout."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=np.float64)
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan
    half = t_quantile(len(v) - 1) * float(v.std(ddof=1)) / math.sqrt(len(v))
    return mean, mean - half, mean + half
