"""The period test across models: the figure of the report's first page."""
from __future__ import annotations

import pandas as pd

from ..readings.readings import PERIOD
from ...formatting.plots import MAX_WIDTH_IN, STYLE


def _wrap_name(name: str, width: int = 12) -> str:
    """A model name broken at underscores into lines of about ``width`` characters."""
    lines, line = [], ""
    for part in name.split("_"):
        word = part if not line else "_" + part
        if line and len(line) + len(word) > width:
            lines.append(line + "_")
            line = part
        else:
            line += word
    return "\n".join(lines + [line])


def period_figure(behaviour: pd.DataFrame, models: list[str], block_len: int):
    """The figure of page 1: per model, accuracy of the period test on the trained block
    length and on the other lengths (mean over seeds, whiskers min–max over seeds and
    lengths). A model that looks for a copy solves every length; one that looks at a
    position solves only the trained one. None without period-test rows."""
    import matplotlib.pyplot as plt
    import numpy as np


    rows = behaviour[behaviour["metric"].astype(str).str.match(PERIOD.pattern)]
    rows = rows.assign(n=rows["metric"].str.extract(PERIOD.pattern)[0].astype(int))
    models = [m for m in models if (rows["variant"] == m).any()]
    if not models:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, 2.3), constrained_layout=True)
        x = np.arange(len(models))
        for offset, (label, trained, colour) in enumerate(
                ((f"trained length ({block_len})", True, "#2a5d8f"),
                 ("other lengths", False, "#d08c2c"))):
            means, lows, highs = [], [], []
            for m in models:
                mine = rows[(rows["variant"] == m) & ((rows["n"] == block_len) == trained)]
                values = mine["value"].astype(float)
                means.append(values.mean())
                lows.append(values.mean() - values.min())
                highs.append(values.max() - values.mean())
            ax.bar(x + (offset - 0.5) * 0.38, means, 0.38, yerr=[lows, highs], capsize=2,
                   color=colour, label=label)
        ax.set_xticks(x, [_wrap_name(m) for m in models], fontsize=7)
        ax.set_ylim(0, 1.3)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_ylabel("accuracy after\nthe first block")
        ax.set_title("Period test: blocks of the trained length and of other lengths "
                     "(mean over seeds; whiskers min–max)")
        ax.legend(loc="upper center", frameon=False, ncols=2)
    return fig
