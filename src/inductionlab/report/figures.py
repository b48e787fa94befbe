"""The workflow's figures of a model across its seeds, and of the write-up's models side by
side, each declared once with its named inputs (:mod:`.figure_registry`).

A drawing function reads its inputs by name and returns a matplotlib figure; it imports
the plotting code when it runs, so that declaring the figures costs nothing at parse time.
"""
from __future__ import annotations

from .figure_registry import MODELS, each_seed, each_variant, figure, first_seed, settings, table


def _table(path, name: str, *needed: str):
    """The stacked ``name`` table of every model, checked to hold the key columns of its
    format and the columns ``needed`` (each one the format declares)."""
    from ..core.loading import read_table
    from ..analysis.known_tables import ID_COLUMNS, known_format

    fmt = known_format(name, "a figure")
    columns = [*ID_COLUMNS, *fmt.keys, *fmt.require(*needed)]
    return read_table(path, columns, kind=f"the stacked {name} table (results/tables/{name}.csv)")


def _rows(path, model: str, name: str, *needed: str):
    frame = _table(path, name, *needed)
    return frame[frame["variant"] == model]


def _floor(settings_path) -> float:
    from ..core.data import TaskConfig, loss_floor
    from ..core.loading import read_json

    document = read_json(settings_path, "the stage settings", ["task"])
    return loss_floor(TaskConfig.from_dict(document["task"]))


def _phase(path):
    from ..analysis.dynamics import read_phase_change

    return read_phase_change(path)


# ------------------------------------------------------------------ one model, every seed

@figure("training", train_log=table("train_log"), settings=settings("behaviour"))
def training(inputs, model):
    from .dynamics_plots import training_curves

    return training_curves(_rows(inputs["train_log"], model, "train_log", "val_loss_all"), model,
                           _floor(inputs["settings"]))


@figure("spectra", eigenvalues=each_seed("eigenvalues.npz"))
def spectra(inputs, model):
    from pathlib import Path

    from ..core.loading import open_npz
    from .circuit_plots import spectra_figure

    by_seed = {int(Path(p).parent.name.removeprefix("seed")):
               open_npz(p, "an eigenvalues.npz", ["direct"]) for p in inputs["eigenvalues"]}
    return spectra_figure(by_seed, model)


@figure("composition", composition=table("composition"))
def composition(inputs, model):
    from ..core.seeding import first_seed as first
    from .circuit_plots import composition_figure

    comp = _rows(inputs["composition"], model, "composition")
    return composition_figure(comp, model, first(comp["seed"]))


@figure("failure_modes", failure_modes=table("failure_modes"))
def failure_modes(inputs, model):
    from .failure_plots import failure_chart

    return failure_chart(_rows(inputs["failure_modes"], model, "failure_modes"), model)


@figure("ablations", ablations=table("ablations"))
def ablations(inputs, model):
    from .ablation_plots import ablation_bars

    return ablation_bars(_rows(inputs["ablations"], model, "ablations"), model)


@figure("ablated_attention", patterns=first_seed("ablated_attention.npz"))
def ablated_attention(inputs, model):
    from pathlib import Path

    from ..core.loading import open_npz
    from .ablation_plots import ablated_patterns

    path = inputs["patterns"]
    n_layers = open_npz(path, "an ablated_attention.npz", ["baseline"])["baseline"].shape[0]
    rows = [(name, l) for l in range(1, n_layers)  # every later layer: clean, then ablated
            for name in ("baseline", f"qk_from_embedding_L{l}", f"plus_k_L{l}", f"plus_q_L{l}")]
    return ablated_patterns(path, rows, f"{model} {Path(path).parent.name}")


@figure("dynamics", dynamics=table("dynamics"))
def dynamics(inputs, model):
    from .dynamics_plots import dynamics_bands

    return dynamics_bands(_rows(inputs["dynamics"], model, "dynamics", "value"), model)


@figure("phase_change", dynamics=table("dynamics"), phase_change=table("phase_change"))
def phase_change(inputs, model):
    from .dynamics_plots import phase_change_figure

    phase = _phase(inputs["phase_change"])
    return phase_change_figure(_rows(inputs["dynamics"], model, "dynamics", "value"),
                               phase[phase["variant"] == model], model)


@figure("attention_seeds", attention=each_seed("attention.npz"),
        head_scores=table("head_scores"), spec=first_seed("spec.json"))
def attention_seeds(inputs, model):
    """Every seed's mean patterns, the head scores that order them, the spec (smeared layers)."""
    from .attention_plots import attention_seeds_from_files

    return attention_seeds_from_files(
        model, [*inputs["attention"], inputs["head_scores"], inputs["spec"]])


@figure("offset_profile", offset_profile=table("offset_profile"))
def offset_profile(inputs, model):
    from .offset_plots import offset_profile_figure

    return offset_profile_figure(_rows(inputs["offset_profile"], model, "offset_profile"), model)


# ------------------------------------------------------------ the write-up's models side by side

@figure("training", MODELS, train_log=table("train_log"), settings=settings("behaviour"))
def training_side_by_side(inputs, models):
    from .models_plots import training_models

    return training_models(_table(inputs["train_log"], "train_log", "val_loss_all"), models,
                           _floor(inputs["settings"]))


@figure("phase_change", MODELS, dynamics=table("dynamics"), phase_change=table("phase_change"))
def phase_change_side_by_side(inputs, models):
    from .models_plots import phase_change_models

    return phase_change_models(_table(inputs["dynamics"], "dynamics", "value"),
                               _phase(inputs["phase_change"]), models)


@figure("offset_profile", MODELS, offset_profile=table("offset_profile"))
def offset_profile_side_by_side(inputs, models):
    from .models_plots import offsets_models

    return offsets_models(_table(inputs["offset_profile"], "offset_profile"), models)


@figure("attention", MODELS, attention=each_variant("attention.npz"),
        head_scores=table("head_scores"), specs=each_variant("spec.json"))
def attention_side_by_side(inputs, models):
    """The first seed's mean patterns, the head scores that order them, the specs."""
    from .attention_plots import attention_models_from_files

    return attention_models_from_files(
        models, [*inputs["attention"], inputs["head_scores"], *inputs["specs"]])


@figure("period_test", MODELS, behaviour=table("behaviour"), settings=settings("behaviour"))
def period_test(inputs, models):
    """Page 1's figure: the variants, then every other model of the behaviour table."""
    from ..core.loading import read_json, read_table
    from .period_plots import period_figure

    behaviour = read_table(inputs["behaviour"], ["variant", "seed", "metric", "value"],
                           kind="the stacked behaviour table")
    task = read_json(inputs["settings"], "the stage settings", ["task"])["task"]
    shown = [*models, *[m for m in behaviour["variant"].unique() if m not in models]]
    fig = period_figure(behaviour, shown, int(task["block_len"]))
    if fig is None:
        raise ValueError(f"{inputs['behaviour']}: has no period-test rows (period<n>_acc); "
                         "the period test needs behaviour.period_lengths")
    return fig
