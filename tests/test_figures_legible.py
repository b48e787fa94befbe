"""Every figure of the report reads at print size.

The report shows each PNG at its physical size (pixel width / the dpi stored in the
PNG) on a 7.1-inch text column. Each figure function is drawn here on small inputs
shaped like the pipeline's tables and checked with :func:`figurecheck.legibility_problems`
(width <= 7 in, height <= 9 in, no text under 7 pt, every panel titled, every axis and
colour bar labelled, no title or label running into another), and the saved PNG must
store its dpi.
"""
import json

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib import pyplot as plt

from figurecheck import legibility_problems
from inductionlab.experiments.positional_shortcut import analysis as positional_shortcut
from inductionlab.experiments.positional_shortcut import plots as shortcut_plots
from inductionlab.formatting.figure_registry import declared, write_figure
from inductionlab.formatting import plots
from inductionlab.stages.train import plots as train_plots
from inductionlab.stages.offsets import plots as offset_plots
from inductionlab.stages.ablations import plots as ablation_plots
from inductionlab.stages.behaviour import attention_plots, failure_plots
from inductionlab.stages.circuits import plots as circuit_plots
from inductionlab.stages.dynamics import plots as dynamics_plots
from inductionlab.core.ablation_plan import expand_entries
from inductionlab.stages.ablations.ablations import ablation_table
from inductionlab.stages.behaviour.behaviour import evaluation_samples
from inductionlab.stages.behaviour.failure_modes import pattern_probability, repetition_patterns
from inductionlab.stages.circuits.circuits import composition_table, spectra
from inductionlab.core.data import TaskConfig
from helpers import phase_change_table
from inductionlab.stages.dynamics.dynamics import best_induction_rows, fit_layers, induction_layers
from inductionlab.core.model import ModelConfig, build_model
from inductionlab.formatting.plots import MAX_HEIGHT_IN, MAX_WIDTH_IN, MIN_FONT_PT, png_size
from inductionlab.core.train import checkpoint_steps
from inductionlab.core.weights import model_arrays

TASK = {"vocab_size": 26, "block_len": 6, "n_blocks": 4}
STEPS = np.array(checkpoint_steps(10000, 40))
DYNAMICS = {"eval_size": 8}
ROLES = {"times_chance": 2.0, "above_chance": 0.2}
ENTRIES = [{"kind": k} for k in ("composition_table", "remove_head_from_keys",
                                 "remove_head_from_queries", "values_from_embedding", "zero_heads",
                                 "mean_heads", "zero_heads_frozen_patterns", "smear_off")]


# ------------------------------------------------------------------ inputs


def training_log(seeds=(0, 1, 2), steps=range(0, 10001, 100)):
    """An aggregated train_log table: loss falling from ln 26 around step 1000."""
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for s in steps:
            u = 1 / (1 + np.exp(-(np.log(s + 1) - np.log(1000)) / 0.3))
            rows.append({"variant": "two_layer", "seed": seed, "step": s,
                         "val_loss_all": 3.26 - 1.6 * u + rng.normal(0, 0.01),
                         "val_loss_pred": 3.26 - 2.9 * u + rng.normal(0, 0.01),
                         "val_acc_pred": 0.04 + 0.9 * u})
    return pd.DataFrame(rows)


def _progress(steps, centre):
    return 1 / (1 + np.exp(-(np.log(steps + 1.0) - np.log(centre + 1.0)) / 0.25))


def dynamics_frame(variant="two_layer", seeds=(0, 1), n_layers=2, n_heads=4):
    """An aggregated dynamics table (DYNAMICS_COLUMNS) of every metric the figures draw,
    plus each seed's phase-change table."""
    frames, phases = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        u = _progress(STEPS, 600 + 400 * seed)
        rows = []

        def add(metric, values, layer=-1, head=-1, position=-1):
            rows.extend({"step": s, "metric": metric, "layer": layer, "head": head,
                         "position": position, "value": float(v)} for s, v in zip(STEPS, values))

        noise = lambda: rng.normal(0, 0.005, len(STEPS))  # noqa: E731
        add("loss_all", 3.26 - 1.6 * u + noise())
        add("loss_pred", 3.26 - 2.9 * u + noise())
        add("acc_pred", 0.04 + 0.9 * u)
        add("icl_score", -2.6 * u + noise())
        for i in range(23):
            add("loss_pos", 3.26 - (2.9 * u if i >= 5 else 0) + noise(), position=i)
        add("direct_positivity", 0.2 + 0.3 * u)
        for l in range(n_layers):
            add("induction_chance", np.full(len(STEPS), 0.127), layer=l)
            add("previous_token_chance", np.full(len(STEPS), 0.08), layer=l)
            for h in range(n_heads):
                best = l == n_layers - 1 and h == (seed % n_heads)
                add("induction", (0.13 + 0.7 * u if best else 0.1) + noise(), l, h)
                add("induction_control", 0.13 + noise(), l, h)
                add("previous_token", (0.1 + 0.8 * u if l == 0 and h == 1 else 0.08) + noise(), l, h)
                add("ov_positivity", np.clip(-0.1 + (0.9 if best else 0.2) * u + noise(), -1, 1), l, h)
        frame = pd.DataFrame(rows).assign(variant=variant, seed=seed)
        layers = induction_layers({"n_layers": n_layers})
        frame = pd.concat([frame, best_induction_rows(frame, fit_layers(frame, layers)).assign(variant=variant, seed=seed)])
        frames.append(frame[["variant", "seed", "step", "metric", "layer", "head", "position", "value"]])
        phases.append(phase_change_table(frame, ROLES, layers))
    phase = pd.concat(phases, ignore_index=True)
    return pd.concat(frames, ignore_index=True), phase


def _spec(seed, n_layers=2):
    return {"variant": "two_layer", "seed": seed, "task": TASK,
            "model": {"n_layers": n_layers, "d_model": 32, "n_heads": 4}}


def _model(seed, n_layers=2):
    cfg = ModelConfig(n_layers=n_layers, d_model=32, n_heads=4, vocab_size=26, seq_len=24)
    return build_model(cfg, seed)


def _meta(seed):
    return {"variant": "two_layer", "seed": seed}


def failure_table(seeds=(0, 1, 2)):
    patterns = repetition_patterns(6)
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        acc = np.clip(0.9 - 0.15 * rng.random(len(patterns)), 0, 1)
        prob = np.array([pattern_probability(p, 26) for p in patterns])
        rows.append(pd.DataFrame({"variant": "two_layer", "seed": seed, "pattern": patterns,
                                  "n_distinct": [len(set(p)) for p in patterns],
                                  "adjacent_repeats": [sum(a == b for a, b in zip(p, p[1:]))
                                                       for p in patterns],
                                  "probability": prob, "teacher_forced_acc": acc,
                                  "error_mass": prob * (1 - acc)}))
    return pd.concat(rows, ignore_index=True)


def _model_tables(make_model, n_sequences):
    """Spectra, composition and ablation tables of seeds 0 and 1 of ``make_model``, and the
    first seed's ablated patterns."""
    task = TaskConfig.from_dict(TASK)
    tokens, distinct = evaluation_samples(task, n_sequences, 5)
    spectra_by_seed, comps, ablations, first = {}, [], [], None
    for seed in (0, 1):
        model = make_model(seed)
        arrays = model_arrays(model)
        spectra_by_seed[seed] = spectra(arrays)
        comps.append(composition_table(arrays, _meta(seed)))
        frame, patterns = ablation_table(model, expand_entries(ENTRIES, model.cfg), task, tokens,
                                         distinct, ["ABCDEFABCDEF"], 3)
        frame.insert(0, "seed", seed)
        frame.insert(0, "variant", "two_layer")
        ablations.append(frame)
        first = patterns if first is None else first
    return spectra_by_seed, comps, ablations, first


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Tables and arrays of two untrained 2-layer models, as the pipeline writes them."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("figures")
    spectra_by_seed, comps, ablations, patterns = _model_tables(_model, 16)
    np.savez(root / "ablated_attention.npz", names=np.array(list(patterns)), **patterns)
    dynamics, phase = dynamics_frame()
    offsets = pd.DataFrame([{"variant": v, "seed": s, "layer": 0, "head": h, "offset": k,
                             "attention": float(np.exp(-abs(k - (5 if v.endswith("learned") else h))))}
                            for v in ("one_layer_learned", "one_layer", "one_layer_smeared")
                            for s in (0, 1) for h in range(4) for k in range(24)])
    positions = pd.concat(
        [positional_shortcut.position_table(positional_shortcut.position_scores(
            torch.randn(24, 8, generator=torch.Generator().manual_seed(k)))).assign(variant=v, seed=0)
         for k, v in enumerate(("one_layer_learned", "one_layer", "one_layer_smeared"))])
    pca = pd.DataFrame([{"variant": v, "seed": s, "step": st, "PC1": np.log1p(st) * (i + 1) + s,
                         "PC2": np.sin(st / 3000 + i) + 0.1 * s, "explained_variance_PC1": 0.71,
                         "explained_variance_PC2": 0.12}
                        for i, v in enumerate(("one_layer", "one_layer_smeared", "two_layer"))
                        for s in range(3) for st in STEPS])
    return {"root": root, "log": training_log(), "spectra": spectra_by_seed,
            "composition": pd.concat(comps, ignore_index=True),
            "ablations": pd.concat(ablations, ignore_index=True), "failures": failure_table(),
            "dynamics": dynamics, "phase": phase, "offsets": offsets, "positions": positions,
            "pca": pca}


def _seed0(frame):
    return frame[frame["seed"] == 0]


FIGURES = {
    "training_curves": lambda d: train_plots.training_curves(d["log"], "two_layer", 0.843),
    "spectra_figure": lambda d: circuit_plots.spectra_figure(d["spectra"], "two_layer"),
    "composition_figure": lambda d: circuit_plots.composition_figure(d["composition"], "two_layer", 0),
    "failure_chart": lambda d: failure_plots.failure_chart(d["failures"], "two_layer"),
    "ablation_bars": lambda d: ablation_plots.ablation_bars(d["ablations"], "two_layer"),
    "ablated_patterns": lambda d: ablation_plots.ablated_patterns(
        d["root"] / "ablated_attention.npz",
        [(n, 1) for n in ("baseline", "qk_from_embedding_L1", "plus_k_L1", "plus_q_L1")],
        "two_layer seed0"),
    "dynamics_bands": lambda d: dynamics_plots.dynamics_bands(d["dynamics"], "two_layer"),
    "loss_curves": lambda d: dynamics_plots.loss_curves(
        _seed0(d["dynamics"]), _seed0(d["phase"]), "two_layer seed 0: losses over training", 0.843),
    "head_score_curves": lambda d: dynamics_plots.head_score_curves(
        _seed0(d["dynamics"]), _seed0(d["phase"]),
        "two_layer seed 0: circuits and head scores over training"),
    "per_position_heat_strip": lambda d: dynamics_plots.per_position_heat_strip(
        _seed0(d["dynamics"]), _seed0(d["phase"]), "two_layer seed 0:"),
    "phase_change_figure": lambda d: dynamics_plots.phase_change_figure(
        d["dynamics"], d["phase"], "two_layer"),
    "pca_trajectories": lambda d: dynamics_plots.pca_trajectories(d["pca"]),
    "offsets_figure": lambda d: shortcut_plots.offsets_figure(d["offsets"],
                                                                   TaskConfig.from_dict(TASK)),
    "positions_figure": lambda d: shortcut_plots.positions_figure(d["positions"], 0, 5),
}


MODELS = ["one_layer", "one_layer_smeared", "two_layer"]


def _as_models(frame):
    """One model's table as three models' (the figures of every model side by side)."""
    return pd.concat([frame.assign(variant=m) for m in MODELS], ignore_index=True)


def offset_profile(seeds=(0, 1)):
    """An aggregated offset_profile table of the whole model (component all): a copy at 5,
    11 and 17 back, suppression at 0."""
    return pd.DataFrame([{"variant": m, "seed": s, "component": "all", "kind": "group",
                          "source": "offset", "sample": sample, "offset": k,
                          "value": (2.0 if k % 6 == 5 and sample == "task" else 0.3) - 3.0 * (k == 0)
                          + 0.1 * s + 0.2 * i}
                         for i, m in enumerate(MODELS) for s in seeds
                         for sample in ("task", "control") for k in range(24)])


def attention_rows():
    """Rows of the attention figure of every model: random mean patterns, head scores."""
    rng = np.random.default_rng(0)
    rows = []
    for m, n_layers in zip(MODELS, (1, 1, 2)):
        means = [np.tril(rng.random((4, 24, 24))) for _ in range(n_layers)]
        scores = pd.DataFrame([{"layer": l, "head": h, "induction": rng.random(),
                                "previous_token": rng.random(), "roles": "induction+copying"}
                               for l in range(n_layers) for h in range(4)])
        rows.append({"label": m, "means": means, "scores": scores,
                     "smear": (0,) if m == "one_layer_smeared" else ()})
    return rows


FIGURES.update({
    "training_models": lambda d: train_plots.training_models(_as_models(d["log"]), MODELS, 0.843),
    "phase_change_models": lambda d: dynamics_plots.phase_change_models(
        _as_models(d["dynamics"]), _as_models(d["phase"]), MODELS),
    "offsets_models": lambda d: offset_plots.offsets_models(offset_profile(), MODELS),
    "attention_models_figure": lambda d: attention_plots.attention_models_figure(attention_rows(), 0),
})


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_reads_at_print_size(inputs, name, tmp_path):
    fig = FIGURES[name](inputs)
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN
    problems = legibility_problems(fig)
    assert not problems, "\n".join(problems)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip()]
    assert min(sizes) >= MIN_FONT_PT
    plots.save(fig, tmp_path / f"{name}.png")
    width, height, dpi = png_size(tmp_path / f"{name}.png")
    assert dpi == pytest.approx(plots.DPI, abs=0.5)  # stored in the PNG (pHYs)
    assert width <= MAX_WIDTH_IN + 0.01 and height <= MAX_HEIGHT_IN + 0.01


# ------------------------------------------------------------------ the check itself


def test_legibility_problems_finds_the_old_defects():
    """What the printed report showed: a 13-inch strip of untitled panels with 5 pt tick
    labels, and a colour bar without a label."""
    with plt.rc_context(plots.STYLE):
        fig, axes = plt.subplots(1, 4, figsize=(13, 2.8), constrained_layout=True)
        for ax in axes:
            ax.plot([1, 10, 100], [3.2, 3.19, 3.21])
            ax.set_xlabel("training step")
            ax.set_ylabel("loss (nats)")
            ax.tick_params(labelsize=5)
        fig.colorbar(axes[0].imshow([[0, 1]]), ax=axes[0])
    problems = legibility_problems(fig)
    assert any("exceeds 7.0" in p for p in problems)
    assert any(p.startswith("5.0 pt text") for p in problems)
    assert sum(p.startswith("panel without a title") for p in problems) == 4
    assert "colour bar without a label" in problems
    plt.close(fig)


def test_legibility_problems_finds_a_title_running_into_a_colour_bar():
    with plt.rc_context(plots.STYLE):
        fig, ax = plt.subplots(figsize=(3, 2.5))
        ax.imshow(np.eye(3))
        ax.set_title("a very long title that runs far to the right of its panel")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        cax = fig.add_axes([0.8, 0.1, 0.05, 0.88])
        fig.colorbar(ax.images[0], cax=cax, label="value")
    assert any("runs into another panel" in p for p in legibility_problems(fig))
    plt.close(fig)


def test_png_size_reads_the_stored_dpi(tmp_path):
    with plt.rc_context(plots.STYLE):
        fig, ax = plt.subplots(figsize=(4, 2))
    fig.savefig(tmp_path / "a.png", dpi=150)
    width, height, dpi = png_size(tmp_path / "a.png")
    assert dpi == pytest.approx(150, abs=0.5)
    assert (width, height) == (pytest.approx(4, abs=0.01), pytest.approx(2, abs=0.01))
    plt.close(fig)


# ------------------------------------------------------------------ the reader's defects


def test_training_curves_step_axis_runs_from_step_one_to_the_last(inputs):
    fig = train_plots.training_curves(inputs["log"], "two_layer", 0.843)
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
        assert ax.get_xlim() == pytest.approx((1, 10001))
        assert "step + 1" in ax.get_xlabel()
    loss, acc = fig.axes
    assert loss.get_ylim()[0] == 0 and acc.get_ylim() == (0, 1)
    plt.close(fig)


def test_loss_curves_step_axis_runs_from_step_one_to_the_last(inputs):
    fig = dynamics_plots.loss_curves(_seed0(inputs["dynamics"]), None, "t", None)
    for ax in fig.axes:
        assert ax.get_xlim() == pytest.approx((1, STEPS[-1] + 1))
    loss, acc, icl = fig.axes
    assert loss.get_ylim()[0] == 0 and acc.get_ylim() == (0, 1)
    low, high = icl.get_ylim()
    assert low < -3 and high > 0  # the ICL score on the loss's own scale, 0 included
    plt.close(fig)


def test_dynamics_bands_use_each_quantitys_own_range(inputs):
    flat = inputs["dynamics"].copy()
    flat.loc[flat["metric"] == "icl_score", "value"] = 0.001 * np.sin(flat.loc[
        flat["metric"] == "icl_score", "step"])  # noise only
    fig = dynamics_plots.dynamics_bands(flat, "two_layer")
    loss, icl, induction, previous = fig.axes
    assert all(ax.get_title() for ax in fig.axes)
    assert loss.get_ylim()[0] == 0
    assert icl.get_ylim()[0] < -3  # noise around 0 is not magnified
    assert induction.get_ylim() == previous.get_ylim() == (0, 1)
    strip = dynamics_plots.per_position_heat_strip(_seed0(flat), None, "t")
    assert strip.axes[0].collections[0].norm.vmin == 0
    plt.close("all")


def test_composition_numbers_are_readable_on_their_cells(inputs):
    fig = circuit_plots.composition_figure(inputs["composition"], "two_layer", 0)
    ax = fig.axes[0]
    image = ax.images[0]
    cells = {(t.get_position()[1], t.get_position()[0]): t for t in ax.texts}
    assert cells
    for (i, j), text in cells.items():
        assert len(text.get_text().split(".")[-1]) == 2  # two decimals
        colour = image.cmap(image.norm(image.get_array()[int(i), int(j)]))
        assert text.get_color() == plots.text_colour(colour)
    assert plots.text_colour((0, 0, 0.3, 1)) == "white" and plots.text_colour((1, 1, 0.9, 1)) == "black"
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert all(label[0] == "L" and "H" in label for label in labels)  # "L1H2", "L0H1"
    plt.close(fig)


def test_ablation_bars_rank_heads_within_each_seed():
    """Head 0 matters in seed 0, head 3 in seed 1: the "largest effect" bar is the mean of
    both large effects, never the mean of head 0 over seeds."""
    rows = []
    for seed, big in ((0, 0), (1, 3)):
        rows.append({"seed": seed, "ablation": "baseline", "kind": "baseline", "layer": pd.NA,
                     "source_layer": pd.NA, "status": "ok", "loss_all": 1.0})
        rows.append({"seed": seed, "ablation": "plus_k_L1", "kind": "composition_table", "layer": 1,
                     "source_layer": pd.NA, "status": "ok", "loss_all": 2.0 + seed})
        for h in range(4):
            rows.append({"seed": seed, "ablation": f"zero_L1H{h}", "kind": "zero_heads", "layer": 1,
                         "source_layer": pd.NA, "status": "ok",
                         "loss_all": 3.0 if h == big else 1.1 + 0.01 * h})
    frame = pd.DataFrame(rows).assign(variant="v")
    ranked = ablation_plots.ranked_ablations(frame)
    largest = ranked[ranked["label"] == "zero a layer-1 head: #1 (largest)"]
    assert largest["value"].tolist() == [3.0, 3.0]
    assert set(ranked.loc[~ranked["per_head"], "label"]) == {
        "none (the model as trained)", "layer 1: + K from the residual (K-comp.)"}
    fig = ablation_plots.ablation_bars(frame, "v")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert not any("L1H" in label for label in labels)  # no head index across seeds
    assert labels[-1] == "none (the model as trained)" or labels[0] == "none (the model as trained)"
    assert "ranked within each seed" in fig._suptitle.get_text().replace("\n", " ")
    assert not legibility_problems(fig)
    plt.close(fig)


# ------------------------------------------------------------------ what the workflow calls


@pytest.mark.slow
def test_write_figure_writes_every_figure_at_print_size(inputs, tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"task": TASK}))
    tables = {}
    for name in ("log", "composition", "failures", "ablations", "dynamics", "phase"):
        tables[name] = tmp_path / f"{name}.csv"
        inputs[name].to_csv(tables[name], index=False)
    npz = []
    for seed, arrays in inputs["spectra"].items():
        (tmp_path / f"seed{seed}").mkdir()
        np.savez(tmp_path / f"seed{seed}" / "eigenvalues.npz", **arrays)
        npz.append(tmp_path / f"seed{seed}" / "eigenvalues.npz")
    calls = {"training": {"train_log": tables["log"], "settings": settings},
             "spectra": {"eigenvalues": npz}, "composition": {"composition": tables["composition"]},
             "failure_modes": {"failure_modes": tables["failures"]},
             "ablations": {"ablations": tables["ablations"]},
             "ablated_attention": {"patterns": inputs["root"] / "ablated_attention.npz"},
             "dynamics": {"dynamics": tables["dynamics"]},
             "phase_change": {"dynamics": tables["dynamics"], "phase_change": tables["phase"]}}
    for name, paths in calls.items():
        out = tmp_path / f"{name}.png"
        write_figure(name, "two_layer", paths, out)
        width, height, dpi = png_size(out)
        assert dpi == pytest.approx(plots.DPI, abs=0.5), name
        assert width <= MAX_WIDTH_IN + 0.01 and height <= MAX_HEIGHT_IN + 0.01, name


@pytest.mark.slow
def test_dynamics_and_positional_figures_write_print_sized_pngs(inputs, tmp_path):
    frame, phase = _seed0(inputs["dynamics"]), _seed0(inputs["phase"])
    frame.to_csv(tmp_path / "dynamics.csv", index=False)
    phase.to_csv(tmp_path / "phase.csv", index=False)
    written = dynamics_plots.write_dynamics_figures(tmp_path / "dynamics.csv", tmp_path / "phase.csv",
                                                    tmp_path / "dyn", "two_layer seed 0:", task=TASK)
    inputs["offsets"].to_csv(tmp_path / "offsets.csv", index=False)
    inputs["positions"].to_csv(tmp_path / "positions.csv", index=False)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"task": TASK}))
    for name in ("offsets", "positions"):
        write_figure(f"positional_shortcut_{name}", "study",
                     {name: tmp_path / f"{name}.csv", "settings": settings}, tmp_path / f"{name}.png")
    for path in written + [tmp_path / "offsets.png", tmp_path / "positions.png"]:
        width, height, dpi = png_size(path)
        assert dpi == pytest.approx(plots.DPI, abs=0.5), path.name
        assert width <= MAX_WIDTH_IN + 0.01 and height <= MAX_HEIGHT_IN + 0.01, path.name


def test_offsets_models_draws_each_models_mean_over_seeds():
    fig = offset_plots.offsets_models(offset_profile(), MODELS)
    task = fig.axes[0]
    lines = {line.get_label(): line for line in task.get_lines() if line.get_label() in MODELS}
    assert list(lines) == MODELS
    x, y = lines["one_layer"].get_data()
    # the mean of seeds 0 and 1: 2.0 + 0.05 where the task copies (5, 11, 17 back), 0.3 − 3 + 0.05 at 0
    assert y[list(x).index(5)] == pytest.approx(2.05) and y[list(x).index(0)] == pytest.approx(-2.65)
    assert lines["two_layer"].get_data()[1][list(x).index(5)] == pytest.approx(2.45)
    plt.close(fig)


def test_a_figure_of_the_models_is_one_even_for_a_single_model(tmp_path):
    table = tmp_path / "offset_profile.csv"
    offset_profile().to_csv(table, index=False)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"task": TASK}))
    out = tmp_path / "models.png"
    # one model: still the figure of the models (the whole-model profile), not its own
    write_figure("offset_profile", "models", {"offset_profile": table}, out, ["two_layer"])
    assert png_size(out)[0] <= MAX_WIDTH_IN + 0.01
    fig = declared("models", "offset_profile").draw({"offset_profile": table}, ["two_layer"])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["two_layer"]
    plt.close(fig)
    with pytest.raises(ValueError, match="unknown figure 'spectra' of scope models"):
        write_figure("spectra", "models", {"offset_profile": table}, out, ["two_layer"])


# ------------------------------------------------------------------ 3 layers, 8 heads

DEEP = {"n_layers": 3, "n_heads": 8}


def _deep_model(seed):
    cfg = ModelConfig(n_layers=DEEP["n_layers"], d_model=32, n_heads=DEEP["n_heads"],
                      vocab_size=26, seq_len=24)
    return build_model(cfg, seed)


def _head_scores(n_layers, n_heads, rng):
    return pd.DataFrame([{"layer": l, "head": h, "induction": rng.random(),
                          "previous_token": rng.random(), "roles": "induction+copying"}
                         for l in range(n_layers) for h in range(n_heads)])


def deep_attention_rows():
    """The attention figure of the tiny run's models and two more: 3 layers of 4 heads,
    2 layers of 8 heads, 3 layers of 8 heads."""
    rng = np.random.default_rng(1)
    rows = []
    for m, n_layers, n_heads in (("one_layer", 1, 4), ("two_layer", 2, 4), ("three_layer", 3, 4),
                                 ("eight_head", 2, 8), ("deep_wide", 3, 8)):
        rows.append({"label": m, "means": [np.tril(rng.random((n_heads, 24, 24)))
                                           for _ in range(n_layers)],
                     "scores": _head_scores(n_layers, n_heads, rng), "smear": ()})
    return rows


@pytest.fixture(scope="module")
def deep_inputs(inputs):
    """Tables and arrays of two untrained models of 3 layers and 8 heads."""
    spectra_by_seed, comps, ablations, _ = _model_tables(_deep_model, 8)
    dynamics, phase = dynamics_frame(**DEEP)
    rng = np.random.default_rng(0)
    means = {s: [np.tril(rng.random((DEEP["n_heads"], 24, 24))) for _ in range(DEEP["n_layers"])]
             for s in (0, 1)}
    scores = pd.concat([_head_scores(DEEP["n_layers"], DEEP["n_heads"], rng).assign(seed=s)
                        for s in (0, 1)], ignore_index=True)
    return {"spectra": spectra_by_seed, "composition": pd.concat(comps, ignore_index=True),
            "ablations": pd.concat(ablations, ignore_index=True), "dynamics": dynamics,
            "phase": phase, "means": means, "scores": scores}


DEEP_FIGURES = {
    "composition_figure": lambda d: circuit_plots.composition_figure(d["composition"], "deep", 0),
    "spectra_figure": lambda d: circuit_plots.spectra_figure(d["spectra"], "deep"),
    "ablation_bars": lambda d: ablation_plots.ablation_bars(d["ablations"], "deep"),
    "dynamics_bands": lambda d: dynamics_plots.dynamics_bands(d["dynamics"], "deep"),
    "head_score_curves": lambda d: dynamics_plots.head_score_curves(
        _seed0(d["dynamics"]), _seed0(d["phase"]), "deep seed 0: circuits and head scores"),
    "phase_change_figure": lambda d: dynamics_plots.phase_change_figure(
        d["dynamics"], d["phase"], "deep"),
    "attention_grid": lambda d: attention_plots.attention_grid(d["means"][0], "deep seed 0"),
    "attention_seeds_figure": lambda d: attention_plots.attention_seeds_figure(
        d["means"], d["scores"], "deep"),
    "attention_models_figure": lambda d: attention_plots.attention_models_figure(
        deep_attention_rows(), 0),
}


@pytest.mark.parametrize("name", sorted(DEEP_FIGURES))
def test_figure_of_three_layers_and_eight_heads_reads_at_print_size(deep_inputs, name, tmp_path):
    """No label runs into another (head names "L1H0L1H1L1H2" in a row), the figure fits
    the page, every text is at least 7 pt."""
    fig = DEEP_FIGURES[name](deep_inputs)
    problems = legibility_problems(fig)
    assert not problems, "\n".join(problems)
    plots.save(fig, tmp_path / f"{name}.png")
    width, height, _ = png_size(tmp_path / f"{name}.png")
    assert width <= MAX_WIDTH_IN + 0.01 and height <= MAX_HEIGHT_IN + 0.01


def test_composition_of_many_heads_keeps_labels_apart_and_shows_values_or_a_scale(deep_inputs):
    fig = circuit_plots.composition_figure(deep_inputs["composition"], "deep", 0)
    heatmaps = [ax for ax in fig.axes if ax.images and not getattr(ax, "_colorbar", None)]
    bars = [ax for ax in fig.axes if getattr(ax, "_colorbar", None)]
    assert len(heatmaps) == 3 * 3 * 2  # three layer pairs, two measures, K/Q/V
    assert len(bars) == 3 * 2  # one colour scale per row
    for ax in heatmaps:
        n = ax.images[0].get_array().shape[1]
        cell_in = ax.get_window_extent().width / fig.dpi / n
        # a cell too small for its value leaves it to the colour bar, never a clipped number
        assert bool(ax.texts) == (cell_in >= circuit_plots.VALUE_CELL_IN)
    assert "read them on each row's colour bar" in fig._suptitle.get_text().replace("\n", " ")
    plt.close(fig)


def test_mean_attention_grid_puts_every_head_in_a_panel_of_the_same_size():
    """An 8-head model beside 4-head models: no head falls into the narrow gap column
    between another model's layers (the thumbnails L0H5 and L1H3 were)."""
    fig = attention_plots.attention_models_figure(deep_attention_rows(), 0)
    panels = [ax for ax in fig.axes if ax.images and not getattr(ax, "_colorbar", None)]
    assert len(panels) == 4 * (1 + 2 + 3) + 8 * (2 + 3)
    sizes = {(round(ax.get_position().width * fig.get_figwidth(), 3),
              round(ax.get_position().height * fig.get_figheight(), 3)) for ax in panels}
    assert len(sizes) == 1, sizes
    # within a figure row, a layer's heads side by side and the next layer after a gap
    fig.canvas.draw()
    rows = {}
    for ax in panels:
        rows.setdefault(round(ax.get_position().y0, 4), []).append(ax)
    for row in rows.values():
        row.sort(key=lambda ax: ax.get_position().x0)
        layers = [int(ax.get_title(loc="left").split("H")[0].split("L")[-1]) for ax in row]
        assert layers == sorted(layers)
    plt.close(fig)
