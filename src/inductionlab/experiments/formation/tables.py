"""The formation study's table format (formation.csv, one per model)."""
from __future__ import annotations

from ...core.formats import NATS, SHARE_OF_ATTENTION, declare_table

FORMATION = declare_table(
    "formation", ["variant", "seed", "metric", "value", "low", "high", "note"],
    keys=["metric"], long=True,
    units={r"(write_up_|floor_)?loss_pred": NATS,
           r"(previous_token|induction)\w*|ablation_\w+_score": SHARE_OF_ATTENTION})

# formation_answers.csv (run-wide): each retrained model's answers in words, from the stacked
# formation table; metric is a question (answers.QUESTIONS) or "sentence"
FORMATION_ANSWERS = declare_table("formation_answers", ["variant", "base", "metric", "text"],
                                  keys=["metric"])
