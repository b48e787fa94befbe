"""The cross-seed figures of a model, and the figures of several models side by side, by
name: one registry of what each reads and draws.

Each entry of :data:`FIGURES` takes the figure's input paths (in the order the workflow's
``figure`` rule lists them), the model's name and the stage settings file (for the task),
and returns a matplotlib figure; each of :data:`MODELS_FIGURES` the same with a list of
models (the ``models_figure`` rule).
"""
from __future__ import annotations

from pathlib import Path

from ..analysis.dynamics import read_phase_change
from ..core.data import TaskConfig, loss_floor
from ..core.loading import open_npz, read_json, read_table
from ..core.seeding import first_seed
from .attention_plots import attention_models_from_files, attention_seeds_from_files
from .models_plots import offsets_models, phase_change_models, training_models
from .dynamics_plots import phase_change_figure
from .offset_plots import offset_profile_figure
from .ablation_plots import ablated_patterns, ablation_bars
from .circuit_plots import composition_figure, spectra_figure
from .dynamics_plots import dynamics_bands, training_curves
from .failure_plots import failure_chart
from .known_tables import ID_COLUMNS, known_format
from .plots import save


def _table(path, table: str, *needed: str):
    """The stacked ``table`` of every model, checked to hold the key columns of its format
    and the columns ``needed`` (each one the format declares)."""
    fmt = known_format(table, "a figure")
    columns = [*ID_COLUMNS, *fmt.keys, *fmt.require(*needed)]
    return read_table(path, columns, kind=f"the stacked {table} table (results/tables/{table}.csv)")


def _rows(path, model: str, table: str, *needed: str):
    frame = _table(path, table, *needed)
    return frame[frame["variant"] == model]


def _spectra(inputs, model, settings):
    by_seed = {int(Path(p).parent.name.removeprefix("seed")): open_npz(p, "an eigenvalues.npz",
                                                                       ["direct"])
               for p in inputs}
    return spectra_figure(by_seed, model)


def _composition(inputs, model, settings):
    comp = _rows(inputs[0], model, "composition")
    return composition_figure(comp, model, first_seed(comp["seed"]))


def _ablated_attention(inputs, model, settings):
    n_layers = open_npz(inputs[0], "an ablated_attention.npz", ["baseline"])["baseline"].shape[0]
    rows = [(name, l) for l in range(1, n_layers)  # every later layer: clean, then ablated
            for name in ("baseline", f"qk_from_embedding_L{l}", f"plus_k_L{l}", f"plus_q_L{l}")]
    return ablated_patterns(inputs[0], rows, f"{model} {Path(inputs[0]).parent.name}")


def _phase_change(inputs, model, settings):
    phase = read_phase_change(inputs[1])
    return phase_change_figure(_rows(inputs[0], model, "dynamics", "value"), phase[phase["variant"] == model], model)


FIGURES = {
    "training": lambda inputs, model, settings: training_curves(
        _rows(inputs[0], model, "train_log", "val_loss_all"), model, _floor(settings)),
    "spectra": _spectra,
    "composition": _composition,
    "failure_modes": lambda inputs, model, settings: failure_chart(_rows(inputs[0], model, "failure_modes"), model),
    "ablations": lambda inputs, model, settings: ablation_bars(_rows(inputs[0], model, "ablations"), model),
    "ablated_attention": _ablated_attention,
    "dynamics": lambda inputs, model, settings: dynamics_bands(_rows(inputs[0], model, "dynamics", "value"), model),
    "phase_change": _phase_change,
    "attention_seeds": lambda inputs, model, settings: attention_seeds_from_files(model, inputs),
    "offset_profile": lambda inputs, model, settings: offset_profile_figure(
        _rows(inputs[0], model, "offset_profile"), model),
}




def _floor(settings) -> float:
    return loss_floor(TaskConfig.from_dict(read_json(settings, "the stage settings", ["task"])["task"]))


MODELS_FIGURES = {
    "training": lambda inputs, models, settings: training_models(
        _table(inputs[0], "train_log", "val_loss_all"), models, _floor(settings)),
    "phase_change": lambda inputs, models, settings: phase_change_models(
        _table(inputs[0], "dynamics", "value"), read_phase_change(inputs[1]), models),
    "offset_profile": lambda inputs, models, settings: offsets_models(
        _table(inputs[0], "offset_profile"), models),
    "attention": lambda inputs, models, settings: attention_models_from_files(models, inputs),
}


def write_figure(name: str, model: str, settings_path, out, inputs: list) -> None:
    """Figure ``name`` of ``model`` across its seeds, saved to ``out``."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    save(FIGURES[name](list(inputs), model, settings_path), out)


def write_models_figure(name: str, models: list[str], settings_path, out, inputs: list) -> None:
    """Figure ``name`` of ``models`` side by side (:data:`MODELS_FIGURES`), saved to ``out``;
    one model is drawn as such a figure too, never as its per-model figure."""
    if name not in MODELS_FIGURES:
        raise ValueError(f"unknown figure of several models {name!r}; known: "
                         f"{', '.join(MODELS_FIGURES)}")
    save(MODELS_FIGURES[name](list(inputs), list(models), settings_path), out)
