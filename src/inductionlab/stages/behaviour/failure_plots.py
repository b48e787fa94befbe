"""The failure-mode figure: the repetition patterns of a block that cost a model most, in
the style of :mod:`inductionlab.formatting.plots`."""
from __future__ import annotations

import numpy as np

from ...formatting.plots import MAX_HEIGHT_IN, MAX_WIDTH_IN, STYLE, plt, wrap


def failure_chart(failures, title: str, top: int = 15):
    """The patterns with the largest error mass (probability x error rate), mean and min-max over seeds."""
    g = failures.groupby("pattern")
    stats = g.agg(mass=("error_mass", "mean"), lo=("error_mass", "min"), hi=("error_mass", "max"),
                  acc=("teacher_forced_acc", "mean"), prob=("probability", "first"))
    stats = stats.sort_values("mass", ascending=False).head(top)[::-1]
    n = failures["seed"].nunique() if "seed" in failures else 1
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, min(0.22 * len(stats) + 1.4, MAX_HEIGHT_IN)),
                               constrained_layout=True)
        y = np.arange(len(stats))
        ax.barh(y, stats["mass"], xerr=[stats["mass"] - stats["lo"], stats["hi"] - stats["mass"]],
                color="tab:red", alpha=0.7, capsize=2)
        ax.set_yticks(y, [f"{p}  p={pr:.3g}  acc {a:.2f}" for p, pr, a in
                          zip(stats.index, stats["prob"], stats["acc"])], fontfamily="monospace")
        ax.set_xlim(left=0)
        ax.set_xlabel("error mass = pattern probability × teacher-forced error rate")
        ax.set_ylabel("block pattern, its probability and accuracy")
        ax.set_title(f"the {len(stats)} costliest block patterns")
        fig.suptitle(wrap(f"{title}: block patterns with the largest error mass (mean over "
                          f"{n} seed(s), whiskers min–max)", MAX_WIDTH_IN, STYLE["figure.titlesize"]))
    return fig
