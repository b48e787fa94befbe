"""The dynamics stage's commands: every checkpoint of a model scored, the joint PCA of every model's per-token losses, and a model's figures over training."""
from __future__ import annotations

from ..commands import (THREADS, command, model_title, optional_path, path, paths, say, text, write_npz)
from ..settings import read_settings


@command("dynamics", "score every checkpoint of one model (training dynamics)",
         model=path("a model.pt"), checkpoints=path("its checkpoints/ folder"),
         behaviour_settings=path("behaviour settings JSON (evaluation sample)"),
         settings=path("dynamics settings JSON written by the workflow"),
         dynamics=path("dynamics.csv to write"), losses=path("per_token_losses.npz to write"),
         phase_change=path("phase_change.csv to write"), threads=THREADS)
def write_dynamics(model, checkpoints, behaviour_settings, settings, dynamics, losses, phase_change,
                   threads=1):
    from .dynamics import dynamics_results
    from ...atomic import write_csv
    from ...core.loading import load_model

    behaviour = read_settings(behaviour_settings, "behaviour")
    config = read_settings(settings, "dynamics")
    loaded, spec = load_model(model)
    frame, arrays, phase = dynamics_results(loaded, spec, checkpoints, behaviour, config, log=say)
    write_csv(dynamics, frame)
    write_csv(phase_change, phase)
    write_npz(losses, arrays)


@command("per-token-loss-pca", "one PCA of the per-token losses of all models",
         losses=paths("per_token_losses.npz files"), table=path("the PCA table to write"),
         figure=optional_path("its figure (PNG) to draw"))
def write_per_token_loss_pca(losses, table, figure=None):
    from .loss_pca import per_token_loss_pca
    from ...atomic import write_csv

    frame = per_token_loss_pca(losses)
    write_csv(table, frame)
    if figure is not None:
        from .plots import pca_trajectories
        from ...formatting.plots import save

        save(pca_trajectories(frame), figure)
    say(f"PCA of {len(frame)} checkpoints: explained variance PC1 "
        f"{frame['explained_variance_PC1'].iloc[0]:.3f}, PC2 "
        f"{frame['explained_variance_PC2'].iloc[0]:.3f}")
    return frame


@command("dynamics-figures", "loss, head-score and per-position figures of one model over training",
         dynamics=path("a dynamics.csv"),
         phase_change=path("the stacked phase_change table (results/tables/phase_change.csv), "
                           "where the head-role rule decided whether induction formed"),
         out_dir=path("folder for the figures"),
         settings=optional_path("dynamics settings JSON (for the task)"),
         title=text("default: the variant and seed of the dynamics.csv's folder"))
def dynamics_figures(dynamics, phase_change, out_dir, settings=None, title=None):
    from ...atomic import atomic_dir
    from ...core.loading import read_json
    from .plots import write_dynamics_figures

    task = read_json(settings, "the dynamics settings").get("task") if settings else None
    with atomic_dir(out_dir) as tmp:
        write_dynamics_figures(dynamics, phase_change, tmp, title=title or model_title(dynamics),
                               task=task)
