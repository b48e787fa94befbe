"""The ablations stage's figures (:mod:`inductionlab.formatting.figure_registry`): every
ablation's effect across seeds, and the attention patterns of the first seed ablated."""
from __future__ import annotations

from ...formatting.figure_registry import figure, first_seed, model_rows, table


@figure("ablations", ablations=table("ablations"))
def ablations(inputs, model):
    from .plots import ablation_bars

    return ablation_bars(model_rows(inputs["ablations"], model, "ablations"), model)


@figure("ablated_attention", patterns=first_seed("ablated_attention.npz"))
def ablated_attention(inputs, model):
    from pathlib import Path

    from ...core.loading import open_npz
    from .plots import ablated_patterns

    path = inputs["patterns"]
    n_layers = open_npz(path, "an ablated_attention.npz", ["baseline"])["baseline"].shape[0]
    rows = [(name, l) for l in range(1, n_layers)  # every later layer: clean, then ablated
            for name in ("baseline", f"qk_from_embedding_L{l}", f"plus_k_L{l}", f"plus_q_L{l}")]
    return ablated_patterns(path, rows, f"{model} {Path(path).parent.name}")
