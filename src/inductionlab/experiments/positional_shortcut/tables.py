"""The positional-shortcut experiment's tables (written by :mod:`.analysis`), declared once:
their columns, keys and units, and the names of its headline metrics. Plain Python, so
that the rules and the claims can read them without loading a model's code."""
from __future__ import annotations

from ...core.formats import NATS, SHARE_OF_ATTENTION, declare_table

# results/{model}/seed{seed}/<name>.csv, stacked into results/tables/<name>.csv
METRICS = declare_table("positional_shortcut", ["variant", "seed", "metric", "value"],
                        keys=["metric"], long=True,
                        units={r"loss_\w+": NATS,
                               r"(nearest_copy|induction)_\w+": SHARE_OF_ATTENTION})
OFFSETS = declare_table("positional_shortcut_offsets",
                        ["variant", "seed", "layer", "head", "offset", "attention"],
                        keys=["layer", "head", "offset"], units={"attention": SHARE_OF_ATTENTION})
POSITIONS = declare_table("positional_shortcut_positions",
                          ["variant", "seed", "query", "key", "offset", "score", "is_row_argmax"],
                          keys=["query", "key", "offset"])
COMPLETIONS = declare_table("positional_shortcut_completions",
                            ["variant", "seed", "prompt", "in_distribution", "completion",
                             "expected", "accuracy"],
                            keys=["prompt", "in_distribution", "completion", "expected"])


def copy_offset(task) -> int:
    """The offset that solves the task: token i + 1 equals token i − (block_len − 1)."""
    return task.block_len - 1


def metric_names(task, prompt_len: int) -> dict[str, list[str]]:
    """The metrics of :func:`.analysis.shortcut_metrics`, as ``task`` (losses, accuracy,
    random prompts) and ``mechanism`` (the largest nearest-copy and induction score of any
    head with their chance levels, the positional table's peak)."""
    k = copy_offset(task)
    return {"task": ["loss_all", "loss_pred", "acc_pred", f"random_len{prompt_len}_acc_mean",
                     f"random_len{prompt_len}_exact"],
            "mechanism": ["nearest_copy_max", "nearest_copy_chance", "induction_max",
                          "induction_chance", f"pos_argmax_offset{k}_share", f"pos_offset{k}_margin"]}
