"""The formation study's table formats (formation.csv, one per model; the run-wide verdicts
and answers)."""
from __future__ import annotations

from ...core.formats import NATS, SHARE_OF_ATTENTION, declare_table

FORMATION = declare_table(
    "formation", ["variant", "seed", "metric", "value", "low", "high", "note"],
    keys=["metric"], long=True,
    units={r"(write_up_)?(floor_)?(scored_)?loss_\w+": NATS,
           r"(previous_token|induction)\w*": SHARE_OF_ATTENTION})

# formation_verdicts.csv (run-wide): per retrained model, seed and question (answers.py) the
# verdict, the value it was read from with its interval, and the head or the reason
FORMATION_VERDICTS = declare_table(
    "formation_verdicts", ["variant", "seed", "question", "status", "value", "low", "high", "note"],
    keys=["question"])

# formation_answers.csv (run-wide): each retrained model's answers in words, from the
# verdicts; metric is a question (answers.QUESTIONS) or "sentence"
FORMATION_ANSWERS = declare_table("formation_answers", ["variant", "base", "metric", "text"],
                                  keys=["metric"])
