"""The period test across models: the figure of the report's first page."""
from __future__ import annotations

import pandas as pd

from ..readings.readings import PERIOD, trained_lengths
from ...formatting.numbers import ranges_phrase
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


def trained_by_model(behaviour: pd.DataFrame, models: list[str], block_len: int) -> dict[str, list[int]]:
    """Per model, the period-test lengths its own task trains (its ``period{n}_trained``
    rows); the write-up's ``block_len`` for a table that does not mark them."""
    return {m: trained_lengths(behaviour[behaviour["variant"] == m]) or [block_len] for m in models}


# the width of a tick label's character at 6.5 pt, in inches (about half the font size)
CHAR_IN = 0.045


def period_figure(behaviour: pd.DataFrame, models: list[str], block_len: int):
    """The figure of page 1: per model, accuracy of the period test on the periods its own
    task trains and on the untrained ones (mean over seeds, whiskers min–max over seeds and
    lengths), each model's trained periods under its name, and the accuracy of its task's
    Bayes predictor on the untrained blocks (a cross). A model that looks for a copy solves
    every length; one that looks at a position solves only the trained one; the task's own
    predictor, a mixture of the trained periods, solves only those. None without
    period-test rows."""
    import matplotlib.pyplot as plt
    import numpy as np

    rows = behaviour[behaviour["metric"].astype(str).str.match(PERIOD.pattern)]
    rows = rows.assign(n=rows["metric"].str.extract(PERIOD.pattern)[0].astype(int))
    models = [m for m in models if (rows["variant"] == m).any()]
    if not models:
        return None
    trained = trained_by_model(behaviour, models, block_len)
    predictor = behaviour[behaviour["metric"].astype(str).str.match(r"^period\d+_task_acc$")]
    predictor = predictor.assign(n=predictor["metric"].str.extract(r"^period(\d+)_")[0].astype(int))
    with plt.rc_context(STYLE):
        # more models than fit side by side (a study's grid): names turned upright, in one line
        labels = [f"{_wrap_name(m)}\n(trained {ranges_phrase(trained[m])})" for m in models]
        widest = max(len(line) for label in labels for line in label.split("\n"))
        upright = len(models) * widest * CHAR_IN > 0.85 * MAX_WIDTH_IN
        fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, 4.0 if upright else 2.4),
                               constrained_layout=True)
        x = np.arange(len(models))
        for offset, (label, is_trained, colour) in enumerate(
                (("trained periods (its own task's)", True, "#2a5d8f"),
                 ("untrained periods", False, "#d08c2c"))):
            means, lows, highs, marks = [], [], [], []
            for m in models:
                mine = rows[(rows["variant"] == m) & (rows["n"].isin(trained[m]) == is_trained)]
                values = mine["value"].astype(float)
                means.append(values.mean())
                lows.append(values.mean() - values.min())
                highs.append(values.max() - values.mean())
                bayes = predictor[(predictor["variant"] == m)
                                  & (predictor["n"].isin(trained[m]) == is_trained)]
                marks.append(bayes["value"].astype(float).mean() if len(bayes) else np.nan)
            at = x + (offset - 0.5) * 0.38
            ax.bar(at, means, 0.38, yerr=[lows, highs], capsize=2, color=colour, label=label)
            if not is_trained and not np.isnan(marks).all():
                ax.plot(at, marks, "kx", ms=5, label="task's Bayes predictor, untrained")
        if upright:
            ax.set_xticks(x, [f"{m}\n(trained {ranges_phrase(trained[m])})" for m in models],
                          fontsize=6.5, rotation=90)
        else:
            ax.set_xticks(x, labels, fontsize=6.5)
        ax.set_ylim(0, 1.3)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_ylabel("accuracy after\nthe first block")
        ax.set_title("Period test: blocks of the periods each model trained on and of other "
                     "periods (mean over seeds; whiskers min–max)")
        ax.legend(loc="upper center", frameon=False, ncols=3)
    return fig
