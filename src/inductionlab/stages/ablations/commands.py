"""The ablations stage's command: a model's composition, head and smear ablations."""
from __future__ import annotations

from ..commands import THREADS, command, path, say, write_npz
from ..settings import read_settings


@command("ablations", "composition, head and smear ablations of one model",
         model=path("a model.pt"),
         behaviour_settings=path("behaviour settings JSON (evaluation sample, prompts)"),
         settings=path("ablation settings JSON written by the workflow"),
         table=path("ablations.csv to write"), attention=path("ablated_attention.npz to write"),
         threads=THREADS)
def write_ablations(model, behaviour_settings, settings, table, attention, threads=1):
    from .ablations import model_ablations
    from ...atomic import write_csv
    from ...core.loading import load_model

    behaviour = read_settings(behaviour_settings, "behaviour")
    config = read_settings(settings, "ablations")
    loaded, spec = load_model(model)
    frame, arrays = model_ablations(loaded, spec, behaviour, config, log=say)
    write_csv(table, frame)
    write_npz(attention, arrays)
