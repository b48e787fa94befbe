"""The behaviour stage's commands: a model's prompt and failure-mode suites, attention scores and head scores, and its attention heatmaps."""
from __future__ import annotations

from ..commands import THREADS, command, model_title, path, say, text, write_npz, write_tables
from ..settings import read_settings


@command("behaviour", "prompt and failure-mode suites, attention scores and head roles of one model",
         model=path("a model.pt"), settings=path("behaviour settings JSON written by the workflow"),
         completions=path(), failure_modes=path(), attention=path("attention.npz to write"),
         head_scores=path(), behaviour=path("behaviour.csv to write"), threads=THREADS)
def write_behaviour(model, settings, completions, failure_modes, attention, head_scores, behaviour,
                    threads=1):
    from .behaviour import behaviour_results
    from ...core.bounds import spec_behaviour_problem
    from ...core.loading import load_model

    config = read_settings(settings, "behaviour")
    loaded, spec = load_model(model)
    # refused before the samples, the floor or any pass is allocated
    problem = spec_behaviour_problem(spec, config["n_sequences"])
    if problem:
        raise ValueError(f"{model}: {problem}; nothing was written")
    tables, arrays = behaviour_results(loaded, spec, config, log=say)
    write_tables(tables, {"completions": completions, "failure_modes": failure_modes,
                           "head_scores": head_scores, "behaviour": behaviour})
    write_npz(attention, arrays)


@command("attention-figures", "attention heatmaps of one model from its attention.npz",
         attention=path("an attention.npz"), out_dir=path("folder for the figures"),
         title=text("default: the variant and seed of the attention.npz's folder"))
def attention_figures(attention, out_dir, title=None):
    from ...atomic import atomic_dir
    from .attention_plots import write_attention_figures

    with atomic_dir(out_dir) as tmp:
        write_attention_figures(attention, tmp, title=title or model_title(attention))
