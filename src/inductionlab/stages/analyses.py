"""Stages that measure a model: each reads its model and settings, runs one analysis and
writes every table and array it produces (each file atomically: all or nothing)."""
from __future__ import annotations

from .commands import THREADS, command, optional_path, path, paths, say, write_tables
from .settings import read_settings


def _write_npz(path, arrays: dict) -> None:
    import numpy as np

    from ..atomic import atomic_path

    with atomic_path(path, suffix=".npz") as tmp:
        np.savez(tmp, **arrays)


@command("circuits-tables", "write circuits.csv, composition.csv and eigenvalues.npz of one model",
         weights=path("a weights.npz"), circuits=path("circuits.csv to write"),
         composition=path("composition.csv to write"), eigenvalues=path("eigenvalues.npz to write"))
def write_circuits(weights, circuits, composition, eigenvalues):
    from ..analysis.circuits import circuit_table, composition_table, spectra
    from ..core.weights import load_weights

    arrays, meta = load_weights(weights)
    write_tables({"circuits": circuit_table(arrays, meta),
                   "composition": composition_table(arrays, meta)},
                  {"circuits": circuits, "composition": composition})
    _write_npz(eigenvalues, spectra(arrays))


@command("behaviour", "prompt and failure-mode suites, attention scores and head roles of one model",
         model=path("a model.pt"), settings=path("behaviour settings JSON written by the workflow"),
         completions=path(), failure_modes=path(), attention=path("attention.npz to write"),
         head_scores=path(), summary=path("behaviour.csv to write"), threads=THREADS)
def write_behaviour(model, settings, completions, failure_modes, attention, head_scores, summary,
                    threads=1):
    from ..analysis.behaviour import behaviour_results
    from ..core.loading import load_model

    config = read_settings(settings, "behaviour")
    loaded, spec = load_model(model)
    tables, arrays = behaviour_results(loaded, spec, config, log=say)
    write_tables(tables, {"completions": completions, "failure_modes": failure_modes,
                           "head_scores": head_scores, "summary": summary})
    _write_npz(attention, arrays)


@command("ablations", "composition, head and smear ablations of one model",
         model=path("a model.pt"),
         behaviour_settings=path("behaviour settings JSON (evaluation sample, prompts)"),
         settings=path("ablation settings JSON written by the workflow"),
         table=path("ablations.csv to write"), attention=path("ablated_attention.npz to write"),
         threads=THREADS)
def write_ablations(model, behaviour_settings, settings, table, attention, threads=1):
    from ..analysis.ablations import model_ablations
    from ..atomic import write_csv
    from ..core.loading import load_model

    behaviour = read_settings(behaviour_settings, "behaviour")
    config = read_settings(settings, "ablations")
    loaded, spec = load_model(model)
    frame, arrays = model_ablations(loaded, spec, behaviour, config, log=say)
    write_csv(table, frame)
    _write_npz(attention, arrays)


@command("dynamics", "score every checkpoint of one model (training dynamics)",
         model=path("a model.pt"), checkpoints=path("its checkpoints/ folder"),
         behaviour_settings=path("behaviour settings JSON (evaluation sample)"),
         settings=path("dynamics settings JSON written by the workflow"),
         dynamics=path("dynamics.csv to write"), losses=path("per_token_losses.npz to write"),
         phase_change=path("phase_change.csv to write"), threads=THREADS)
def write_dynamics(model, checkpoints, behaviour_settings, settings, dynamics, losses, phase_change,
                   threads=1):
    from ..analysis.dynamics import dynamics_results
    from ..atomic import write_csv
    from ..core.loading import load_model

    behaviour = read_settings(behaviour_settings, "behaviour")
    config = read_settings(settings, "dynamics")
    loaded, spec = load_model(model)
    frame, arrays, phase = dynamics_results(loaded, spec, checkpoints, behaviour, config, log=say)
    write_csv(dynamics, frame)
    write_csv(phase_change, phase)
    _write_npz(losses, arrays)


@command("per-token-loss-pca", "one PCA of the per-token losses of all models",
         losses=paths("per_token_losses.npz files"), table=path("the PCA table to write"),
         figure=optional_path("its figure (PNG) to draw"))
def write_per_token_loss_pca(losses, table, figure=None):
    from ..analysis.loss_pca import per_token_loss_pca
    from ..atomic import write_csv

    frame = per_token_loss_pca(losses)
    write_csv(table, frame)
    if figure is not None:
        from ..report.dynamics_plots import pca_trajectories
        from ..report.plots import save

        save(pca_trajectories(frame), figure)
    say(f"PCA of {len(frame)} checkpoints: explained variance PC1 "
        f"{frame['explained_variance_PC1'].iloc[0]:.3f}, PC2 "
        f"{frame['explained_variance_PC2'].iloc[0]:.3f}")
    return frame


@command("offsets", "offset attribution of one model: every path's effect on the letters k "
         "back, and the write-up's algorithm as a program",
         model=path("a model.pt"),
         behaviour_settings=path("behaviour settings JSON (evaluation sample)"),
         head_scores=path("the stacked head_scores table (results/tables/head_scores.csv), "
                          "whose roles name the paths"),
         algorithms=path("algorithms.yaml (the write-up's algorithms as programs)"),
         profile=path("offset_profile.csv to write"), programs=path("algorithm_fit.csv to write"),
         threads=THREADS)
def write_offsets(model, behaviour_settings, head_scores, algorithms, profile, programs, threads=1):
    from ..analysis.offset_attribution import offset_results, roles_by_head
    from ..analysis.roles import ROLES_COLUMN
    from ..core.loading import load_model, read_table

    behaviour = read_settings(behaviour_settings, "behaviour")
    table = read_algorithms(algorithms)
    loaded, spec = load_model(model)
    roles = roles_by_head(read_table(head_scores, ["variant", "seed", "layer", "head", ROLES_COLUMN],
                                     kind="the stacked head_scores table"), spec.variant, spec.seed)
    frames = offset_results(loaded, spec, behaviour, table, roles, log=say)
    write_tables(dict(zip(("profile", "programs"), frames)),
                  {"profile": profile, "programs": programs})


def read_algorithms(path) -> dict:
    """The ``algorithms`` mapping of an algorithms.yaml; ValueError naming the file if it
    has none or an entry lacks ``title``, ``applies_to`` or ``program``."""
    from ..config import read_yaml

    document = read_yaml(path)
    algorithms = document.get("algorithms") if isinstance(document, dict) else None
    if not isinstance(algorithms, dict) or not algorithms:
        raise ValueError(f"{path}: expected a mapping `algorithms:` of algorithm name -> "
                         f"title, applies_to, program")
    for name, entry in algorithms.items():
        missing = [k for k in ("title", "applies_to", "program")
                   if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise ValueError(f"{path}: algorithm {name!r} lacks {', '.join(missing)}")
    return algorithms
