"""A value measured on a sample, with what its 95 % interval is computed from: a mean over
sequences or prompts (a percentile bootstrap over them, seeded from ``eval_seed`` and the
metric's name) or a rate of events (the exact binomial interval on events and trials); and
the table of such values (``value``, ``low``, ``high``)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch


from ...analysis.uncertainty import binomial_interval, bootstrap_interval, interval_columns



@dataclass(frozen=True)
class Measure:
    """A value of ``behaviour.csv`` with what its interval is computed from.

    ``units``: the per-unit values (one per sequence or prompt) whose mean the value is;
    its interval is a percentile bootstrap over them. ``events``: (k, n) of a rate k / n;
    its interval is the exact binomial one (NaN when n = 0). Both (a rate of events that
    come in groups, e.g. the letters of one completion): the union of the two intervals,
    since the letters of one prompt are not independent trials and a bootstrap of no
    event is [0, 0]. Neither: a value with no interval (a count, a standard deviation).
    """
    value: float
    units: np.ndarray | None = None
    events: tuple[int, int] | None = None

    def interval(self, seed: int, purpose: str) -> tuple[float, float]:
        """The 95 % interval (low, high); the bootstrap's resamples come from (seed, purpose)."""
        bounds = []
        if self.units is not None:
            bounds.append(bootstrap_interval(self.units, seed=seed, purpose=purpose))
        if self.events is not None and self.events[1] > 0:
            bounds.append(binomial_interval(*self.events))
        if not bounds:
            return math.nan, math.nan
        return min(b[0] for b in bounds), max(b[1] for b in bounds)


def mean_measure(units: torch.Tensor, value: float | None = None) -> Measure:
    """The mean of per-unit values [units] (``value``: the same mean as already computed)."""
    units = units.detach().double().cpu()
    return Measure(units.mean().item() if value is None else float(value), units=units.numpy())


def rate_measure(events: torch.Tensor) -> Measure:
    """The share of True in a bool tensor, every element a trial; rows of a 2-d tensor are
    also units of a bootstrap (the letters of one prompt, say)."""
    units = events.float().mean(-1).double().numpy() if events.dim() == 2 else None
    return Measure(events.float().mean().item(), units=units,
                   events=(int(events.sum()), events.numel()))


def measure_table(measures: dict[str, Measure], seed: int) -> pd.DataFrame:
    """Columns metric, value, low, high: one row per measure. Every bootstrap resamples the
    units with the same draws for a given number of units (seeded from ``seed``), as one
    resampling of the evaluation sample."""
    low, high = interval_columns("value")
    bounds = [m.interval(seed, "behaviour-units") for m in measures.values()]
    return pd.DataFrame({"metric": list(measures), "value": [float(m.value) for m in measures.values()],
                         low: [b[0] for b in bounds], high: [b[1] for b in bounds]})


# ---------------------------------------------------------------- on completed sequences

def completion_accuracy(generated: torch.Tensor, expected: torch.Tensor, start: int) -> torch.Tensor:
    """Per sequence: share of positions >= ``start`` where the two agree: [B]."""
    return (generated[:, start:] == expected[:, start:]).float().mean(-1)


def immediate_repeats(seq: torch.Tensor, start: int) -> torch.Tensor:
    """Bool [B, T - start]: token t equals token t - 1, for the tokens t >= start."""
    return seq[:, start:] == seq[:, start - 1:-1]


def in_prompt(seq: torch.Tensor, start: int) -> torch.Tensor:
    """Bool [B, T - start]: token t occurs somewhere in the prompt seq[:, :start]."""
    return (seq[:, start:, None] == seq[:, None, :start]).any(-1)
