"""The formation atlas's figure: the midpoint against the context length T on log–log axes,
every seed a point, the fitted law with its 95 % band and a slope-2 reference line, one
panel per quantity (the head's content part, the loss), on optimiser steps. A change not
over by the last checkpoint is drawn hollow at that checkpoint: its midpoint lies later."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims.formation_law import CONTENT, LOSS, QUADRATIC, QUANTITIES, STEPS


def midpoints_figure(midpoints: pd.DataFrame, band: pd.DataFrame):
    """``midpoints``: the law's midpoints (variant, context, seed, quantity, clock,
    midpoint, and optionally later_than: the last checkpoint of a change that is not over);
    ``band``: :func:`~inductionlab.claims.formation_law.law_band`'s rows."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    from ...formatting.plots import MAX_WIDTH_IN, SMALL_PT, STYLE, model_colour

    midpoints = midpoints[midpoints["clock"] == STEPS]
    later = midpoints["later_than"] if "later_than" in midpoints else pd.Series(np.nan, midpoints.index)
    censored = midpoints.assign(later_than=later)[np.isfinite(later.astype(float))]
    band = band[band["clock"] == STEPS]
    variants = list(dict.fromkeys(midpoints["variant"]))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 4.2), squeeze=False,
                                 constrained_layout=True)
        for ax, quantity in zip(axes[0], (CONTENT, LOSS)):
            shown = midpoints[(midpoints["quantity"] == quantity) & np.isfinite(midpoints["midpoint"])]
            for k, variant in enumerate(variants):
                colour = model_colour(k)
                mine = shown[shown["variant"] == variant]
                ax.scatter(mine["context"], mine["midpoint"], s=14, color=colour, alpha=0.8,
                           label=f"{variant}: each seed")
                late = censored[(censored["quantity"] == quantity) & (censored["variant"] == variant)]
                if len(late):
                    ax.scatter(late["context"], late["later_than"], s=22, marker="^",
                               facecolors="none", edgecolors=colour,
                               label=f"{variant}: not over by the last step (midpoint later)")
                line = band[(band["variant"] == variant) & (band["quantity"] == quantity)]
                if len(line):
                    ax.plot(line["context"], line["midpoint"], color=colour, lw=1.5,
                            label=f"{variant}: fitted law")
                    ax.fill_between(line["context"], line["midpoint_low"], line["midpoint_high"],
                                    color=colour, alpha=0.2, lw=0)
            if len(shown):
                # slope 2 through the points' centre (in ln T, ln midpoint)
                t = np.geomspace(shown["context"].min(), shown["context"].max(), 20)
                x0, y0 = np.log(shown["context"]).mean(), np.log(shown["midpoint"]).mean()
                ax.plot(t, np.exp(y0 + QUADRATIC * (np.log(t) - x0)), color="0.4", ls="--",
                        lw=1, label="slope 2 (reference)")
                ax.set_xscale("log")
                ax.set_yscale("log")
                # every context length of the grid a tick, written as the number it is
                ax.set_xticks(sorted(shown["context"].unique()), minor=False)
                ax.set_xticks([], minor=True)
                ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
            else:  # nothing to put on a log scale
                ax.text(0.5, 0.5, "no midpoint fitted", transform=ax.transAxes, ha="center")
                ax.set_xticks([])
                ax.set_yticks([])
            ax.set_xlabel("context length T (tokens)")
            ax.set_ylabel("midpoint (optimiser steps)")
            ax.set_title(QUANTITIES[quantity])
        # one legend for both panels, under them: inside, it would hide the highest points
        handles = {}
        for ax in axes[0]:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        if handles:
            fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                       ncols=3, fontsize=SMALL_PT, frameon=False)
    return fig
