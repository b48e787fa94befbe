"""The circuits stage's commands: a model's circuit tables and eigenvalues, and its circuit heatmaps."""
from __future__ import annotations

from ..commands import command, path, text, write_npz, write_tables


@command("circuits-tables", "write circuits.csv, composition.csv and eigenvalues.npz of one model",
         weights=path("a weights.npz"), circuits=path("circuits.csv to write"),
         composition=path("composition.csv to write"), eigenvalues=path("eigenvalues.npz to write"))
def write_circuits(weights, circuits, composition, eigenvalues):
    from .circuits import circuit_table, composition_table, spectra
    from ...core.weights import load_weights

    arrays, meta = load_weights(weights)
    write_tables({"circuits": circuit_table(arrays, meta),
                   "composition": composition_table(arrays, meta)},
                  {"circuits": circuits, "composition": composition})
    write_npz(eigenvalues, spectra(arrays))


@command("circuit-figures", "heatmaps of every head's OV and QK circuit (ov.png, qk.png)",
         weights=path("a weights.npz"), out_dir=path("folder for ov.png and qk.png"),
         title=text("default: the variant and seed in weights.npz"))
def circuit_figures(weights, out_dir, title=None):
    from ...atomic import atomic_dir
    from .plots import write_circuit_figures

    with atomic_dir(out_dir) as tmp:
        write_circuit_figures(weights, tmp, title=title)
