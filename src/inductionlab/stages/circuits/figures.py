"""The circuits stage's figures (:mod:`inductionlab.formatting.figure_registry`): every
seed's eigenvalue spectra, and the composition scores of a model."""
from __future__ import annotations

from ...formatting.figure_registry import each_seed, figure, model_rows, table


@figure("spectra", eigenvalues=each_seed("eigenvalues.npz"))
def spectra(inputs, model):
    from pathlib import Path

    from ...core.loading import open_npz
    from .plots import spectra_figure

    by_seed = {int(Path(p).parent.name.removeprefix("seed")):
               open_npz(p, "an eigenvalues.npz", ["direct"]) for p in inputs["eigenvalues"]}
    return spectra_figure(by_seed, model)


@figure("composition", composition=table("composition"))
def composition(inputs, model):
    from ...core.seeding import first_seed
    from .plots import composition_figure

    comp = model_rows(inputs["composition"], model, "composition")
    return composition_figure(comp, model, first_seed(comp["seed"]))
