import json

import numpy as np
import pandas as pd
import pytest
from matplotlib import pyplot as plt

from helpers import phase_change_table, stage_settings, tiny_spec
from inductionlab.stages.aggregate import aggregate
from inductionlab.stages.dynamics.dynamics import (BEST_INDUCTION, BEST_INDUCTION_CONTENT, CHANCE_METRICS,
                                   DYNAMICS_COLUMNS, HEAD_SCORES, NO_LAYER_NOTE, PHASE_COLUMNS,
                                   best_induction_heads, decide_formed, induction_layers,
                                   read_phase_change)
from inductionlab.stages.dynamics.loss_pca import pca, per_token_loss_pca
from inductionlab.analysis.uncertainty import FAILS, HOLDS, NOT_MEASURED, TOO_CLOSE
from inductionlab.stages.dynamics.phase_change import PHASE_CHANGE
from inductionlab.stages.dynamics.plots import (pca_trajectories, phase_change_figure,
                                                write_dynamics_figures)
from inductionlab.formatting.figure_registry import write_figure
from inductionlab.formatting.plots import save
from inductionlab.core.loading import load_model
from inductionlab.core.train import checkpoint_steps, train
from inductionlab.core.weights import save_weights
from inductionlab.stages.behaviour.commands import write_behaviour
from inductionlab.stages.circuits.commands import write_circuits
from inductionlab.stages.dynamics.commands import write_dynamics, write_per_token_loss_pca

DYNAMICS = {"eval_size": 8}
ROLES = {"times_chance": 2.0, "above_chance": 0.2}


def _behaviour_settings(task):
    return stage_settings("behaviour", task, behaviour={
        "eval_seed": 11, "n_sequences": 48, "n_random_prompts": 4, "random_prompt_lengths": [6, 12],
        "failure_samples": 1, "failure_prompt_len": 12, "prompts": [{"prompt": "ABCDEFABCDEF"}]})


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A tiny trained 2-layer model with the outputs of the circuits, behaviour and
    dynamics stages, each written by its own stage function."""
    root = tmp_path_factory.mktemp("dyn")
    spec = tiny_spec(steps=20)
    folder = root / "two_layer" / "seed0"
    train(spec, folder, log=lambda msg: None)
    model, _ = load_model(folder / "model.pt")
    save_weights(folder / "weights.npz", model, spec)
    write_circuits(folder / "weights.npz", folder / "circuits.csv", folder / "composition.csv",
                   folder / "eigenvalues.npz")
    (root / "behaviour.json").write_text(json.dumps(_behaviour_settings(spec["task"])))
    (root / "dynamics.json").write_text(json.dumps(stage_settings("dynamics", spec["task"], dynamics=DYNAMICS)))
    write_behaviour(folder / "model.pt", root / "behaviour.json", folder / "completions.csv",
                    folder / "failure_modes.csv", folder / "attention.npz",
                    folder / "head_scores.csv", folder / "behaviour.csv")
    write_dynamics(folder / "model.pt", folder / "checkpoints", root / "behaviour.json",
                   root / "dynamics.json", folder / "dynamics.csv",
                   folder / "per_token_losses.npz", folder / "phase_change.csv")
    return root, folder, spec


def _final(folder):
    frame = pd.read_csv(folder / "dynamics.csv")
    return frame[frame["step"] == frame["step"].max()]


def test_dynamics_covers_every_checkpoint(staged):
    _, folder, spec = staged
    frame = pd.read_csv(folder / "dynamics.csv")
    assert list(frame.columns) == DYNAMICS_COLUMNS
    steps = checkpoint_steps(20, spec["train"]["n_checkpoints"])
    assert sorted(frame["step"].unique()) == steps
    per_step = frame.groupby("step").size()
    # 4 scalars + 23 positions + (7 scores, their 7 controls, copying) x 8 heads + 7 chance
    # levels x 2 layers + best induction and its content part + direct + 8 OV + 2 OV sums + 8 QK
    assert len(HEAD_SCORES) == 15 and len(CHANCE_METRICS) == 7
    assert (per_step == 4 + 23 + 15 * 8 + 7 * 2 + 2 + 1 + 8 + 2 + 8).all()
    assert not frame["metric"].str.contains("period").any()
    assert not frame.duplicated(["step", "metric", "layer", "head", "position"]).any()
    assert (frame["variant"] == "two_layer").all() and (frame["seed"] == 0).all()


def test_final_checkpoint_equals_the_circuits_stage(staged):
    _, folder, _ = staged
    final = _final(folder)
    circuits = pd.read_csv(folder / "circuits.csv")
    for circuit, metric in (("ov", "ov_positivity"), ("direct", "direct_positivity"),
                            ("ov_sum", "ov_sum_positivity"), ("qk", "qk_positivity")):
        ours = final[final["metric"] == metric].set_index(["layer", "head"])["value"].sort_index()
        theirs = (circuits[circuits["circuit"] == circuit].set_index(["layer", "head"])
                  ["positivity_real"].sort_index())
        assert len(ours) == len(theirs) > 0
        assert ours.index.equals(theirs.index)
        assert (ours.to_numpy() == theirs.to_numpy()).all(), metric  # exactly: one code path


def test_final_checkpoint_equals_the_behaviour_stage(staged):
    _, folder, _ = staged
    final = _final(folder)
    heads = pd.read_csv(folder / "head_scores.csv").set_index(["layer", "head"]).sort_index()
    scores = {"induction", "nearest_copy", "first_block", "first_token", "previous_token", "local",
              "prefix_matching"}
    assert set(HEAD_SCORES) == scores | {f"{s}_control" for s in scores} | {"copying"}
    for metric in HEAD_SCORES:
        ours = final[final["metric"] == metric].set_index(["layer", "head"])["value"].sort_index()
        assert ours.index.equals(heads.index)
        assert (ours.to_numpy() == heads[metric].to_numpy()).all(), metric
    layer_chance = heads.groupby(level="layer").first()
    for metric in CHANCE_METRICS:
        ours = final[final["metric"] == metric]
        assert (ours["head"] == -1).all() and ours["layer"].tolist() == [0, 1], metric
        assert (ours["value"].to_numpy() == layer_chance[metric].to_numpy()).all(), metric
    assert final.loc[final["metric"] == "induction_chance", "value"].iloc[0] == pytest.approx(
        0.127, abs=5e-4)  # uniform attention on all copies, T = 24
    best = final[final["metric"] == BEST_INDUCTION]
    assert best[["layer", "head"]].values.tolist() == [[-1, -1]]
    assert best["value"].item() == heads.loc[1, "induction"].max()  # layer 1 only
    content = final[final["metric"] == BEST_INDUCTION_CONTENT]
    assert content["value"].item() == pytest.approx(heads.loc[1, "induction_content"].max(), abs=1e-6)
    summary = pd.read_csv(folder / "behaviour.csv").set_index("metric")["value"]
    for metric in ("loss_all", "loss_pred", "acc_pred", "icl_score"):
        assert final.loc[final["metric"] == metric, "value"].item() == summary[metric], metric
    pos = final[final["metric"] == "loss_pos"].sort_values("position")
    assert (pos["value"].to_numpy() == summary[[f"loss_pos{i}" for i in range(23)]].to_numpy()).all()


def test_per_token_losses_are_one_shared_set(staged, tmp_path):
    root, folder, spec = staged
    with np.load(folder / "per_token_losses.npz") as f:
        assert f["losses"].shape == (len(f["steps"]), 8, 23)
        assert f["tokens"].shape == (8, 24)
        assert json.loads(str(f["meta"]))["eval_size"] == 8
        # the first checkpoint is the untrained model: every loss is about ln 26
        assert abs(f["losses"][0].mean() - np.log(26)) < 0.3
    # a second model, same settings: same evaluation set, so the joint PCA accepts both
    other = root / "one_layer" / "seed1"
    train(tiny_spec("one_layer", seed=1, steps=10, n_layers=1), other, log=lambda m: None)
    write_dynamics(other / "model.pt", other / "checkpoints", root / "behaviour.json",
                   root / "dynamics.json", other / "dynamics.csv", other / "per_token_losses.npz",
                   other / "phase_change.csv")
    paths = [folder / "per_token_losses.npz", other / "per_token_losses.npz"]
    table = write_per_token_loss_pca(paths, tmp_path / "pca.csv")
    save(pca_trajectories(table), tmp_path / "pca.png")
    assert list(table.columns) == ["variant", "seed", "step", "PC1", "PC2",
                                   "explained_variance_PC1", "explained_variance_PC2"]
    assert set(table["variant"]) == {"two_layer", "one_layer"}
    assert len(table) == len(pd.read_csv(folder / "dynamics.csv")["step"].unique()) + len(
        pd.read_csv(other / "dynamics.csv")["step"].unique())
    assert (tmp_path / "pca.png").stat().st_size > 0
    # the models' phase-change tables stacked by the generic aggregation, words kept as words
    aggregate("phase_change", [folder / "phase_change.csv", other / "phase_change.csv"],
              tmp_path / "phase.csv", tmp_path / "phase_summary.csv", roles=ROLES)
    phase = read_phase_change(tmp_path / "phase.csv")
    assert list(phase.columns) == PHASE_COLUMNS and len(phase) == 6
    # each model's file leaves "formed" to the role rule; the stacked table has it decided
    induction = read_phase_change(folder / "phase_change.csv").set_index("metric").loc["induction_content"]
    assert np.isnan(induction["formed"]) and induction["best_head"].startswith("L")
    assert set(phase.loc[phase["metric"] == "induction_content", "formed"]) <= {0.0, 1.0}
    summary = pd.read_csv(tmp_path / "phase_summary.csv")
    assert set(summary["variant"]) == {"two_layer", "one_layer"} and "shape" not in summary
    # a 1-layer model without smeared keys has no layer that can form an induction head: its
    # best head of any layer is fitted as the control, and nothing is said to have formed
    control = pd.read_csv(other / "dynamics.csv")
    best = control[control["metric"] == BEST_INDUCTION].set_index("step")["value"]
    heads = control[(control["metric"] == "induction") & (control["layer"] == 0)]
    assert len(best) and best.to_dict() == heads.groupby("step")["value"].max().to_dict()
    fit = phase[(phase["variant"] == "one_layer") & (phase["metric"] == "induction_content")].iloc[0]
    assert NO_LAYER_NOTE in fit["note"] and fit["formed"] == 0.0
    both = phase[(phase["variant"] == "one_layer") & (phase["metric"] == "coincidence")].iloc[0]
    assert np.isnan(both["value"]) and "not measured" in both["note"]
    assert both["verdict"] == NOT_MEASURED
    reread = read_phase_change(tmp_path / "phase.csv")
    assert reread["shape"].dropna().map(type).eq(str).all()
    assert set(reread["verdict"]) <= {HOLDS, FAILS, TOO_CLOSE, NOT_MEASURED}


def test_pca_rejects_different_evaluation_sets(staged, tmp_path):
    _, folder, _ = staged
    with np.load(folder / "per_token_losses.npz") as f:
        data = {k: f[k] for k in f.files}
    data["tokens"] = data["tokens"][::-1].copy()
    np.savez(tmp_path / "other.npz", **data)
    with pytest.raises(ValueError, match="evaluation set differs"):
        per_token_loss_pca([folder / "per_token_losses.npz", tmp_path / "other.npz"])


def test_dynamics_figures(staged, tmp_path):
    _, folder, spec = staged
    # the stacked table, where the rule decided whether induction formed
    stacked = tmp_path / "phase_change.csv"
    decide_formed(read_phase_change(folder / "phase_change.csv"), ROLES).to_csv(stacked, index=False)
    written = write_dynamics_figures(folder / "dynamics.csv", stacked, tmp_path / "figures",
                                     "two_layer seed 0:", task=spec["task"])
    assert [p.name for p in written] == ["losses.png", "head_scores.png", "per_position_loss.png"]
    assert all(p.stat().st_size > 0 for p in written)
    # one model's own file leaves "formed" to the role rule: it is refused, naming the table
    with pytest.raises(ValueError, match="stacked phase_change table"):
        write_dynamics_figures(folder / "dynamics.csv", folder / "phase_change.csv", tmp_path)


# ------------------------------------------------------------------ phase change


STEPS = np.array(checkpoint_steps(10000, 40))


def _sigmoid_drop(steps, centre, width=0.15, high=3.0, low=1.0):
    """A loss that falls from ``high`` to ``low`` around ``centre``, sharply in ln(step + 1)."""
    u = np.log(steps + 1.0)
    return low + (high - low) / (1 + np.exp((u - np.log(centre + 1.0)) / width))


def test_induction_layers():
    assert induction_layers({"n_layers": 1, "smear_layers": []}) == []
    assert induction_layers({"n_layers": 1, "smear_layers": [0]}) == [0]
    assert induction_layers({"n_layers": 2}) == [1]
    assert induction_layers({"n_layers": 3, "smear_layers": [0]}) == [0, 1, 2]


CHANCE = 0.125


def _rising(steps=STEPS, centre=1000, low=CHANCE, high=0.625, width=0.15):
    """An induction score rising from ``low`` to ``high`` in a logistic of ln(step + 1)."""
    return low + (high - low) - _sigmoid_drop(steps, centre, low=0.0, high=high - low, width=width)


def _synthetic(induction, n_layers=2, best=(1, 2), decoy=None, seed=3, variant="v", steps=STEPS,
               loss_centre=1000):
    """A dynamics frame: loss_pred dropping around step ``loss_centre``, the induction score
    ``induction`` (one value per step) on head ``best`` = (layer, head), 0.1 on every other
    head, ``decoy`` = (layer, head, value) a constant score elsewhere; every head's control
    at chance (so the content part is the score minus chance), and the chance level on
    every layer."""
    rows = []
    for k, (s, loss) in enumerate(zip(steps, _sigmoid_drop(steps, loss_centre))):
        rows.append({"step": s, "metric": "loss_pred", "layer": -1, "head": -1, "value": loss})
        for l in range(n_layers):
            rows.append({"step": s, "metric": "induction_chance", "layer": l, "head": -1,
                         "value": CHANCE})
            for h in range(4):
                value = induction[k] if (l, h) == best else 0.1
                if decoy is not None and (l, h) == decoy[:2]:
                    value = decoy[2]
                rows.append({"step": s, "metric": "induction", "layer": l, "head": h, "value": value})
                rows.append({"step": s, "metric": "induction_control", "layer": l, "head": h,
                             "value": CHANCE})
    return pd.DataFrame(rows).assign(variant=variant, seed=seed, position=-1)


def test_phase_change_of_a_two_layer_model_at_the_same_time():
    # a layer-0 head at 0.9 throughout must not count: layer 0 cannot form an induction head
    frame = _synthetic(_rising(), n_layers=2, best=(1, 2), decoy=(0, 1, 0.9))
    table = phase_change_table(frame, ROLES, induction_layers({"n_layers": 2}))
    assert list(table.columns) == PHASE_COLUMNS
    table = table.set_index("metric")
    loss, induction, both = (table.loc[k] for k in ("loss_pred", "induction_content", "coincidence"))
    for fit, direction in ((loss, "falls"), (induction, "rises")):
        assert fit["shape"] == PHASE_CHANGE and fit["direction"] == direction
        assert fit["midpoint"] == pytest.approx(1000, rel=0.1)
        assert fit["midpoint_low"] <= 1000 * 1.05 and fit["midpoint_high"] >= 1000 * 0.95
        assert fit["one_drop"] == 1.0 and fit["r2"] > 0.99
        assert fit["verdict"] == HOLDS      # judged with the span's interval
    assert induction["formed"] == 1.0 and induction["drop"] == pytest.approx(-0.5, abs=0.02)
    assert both["value"] < np.log(2) and both["low"] <= both["value"] <= both["high"]
    assert both["verdict"] == HOLDS
    assert "layer 1" in induction["definition"] and "ln(step + 1)" in loss["definition"]


def test_phase_changes_far_apart_do_not_coincide():
    frame = _synthetic(_rising(centre=30), n_layers=2, best=(1, 2), loss_centre=3000)
    both = phase_change_table(frame, ROLES, [1]).set_index("metric").loc["coincidence"]
    assert both["low"] > np.log(2) and both["verdict"] == FAILS


def test_a_smooth_loss_is_no_phase_change_but_has_a_midpoint_to_compare():
    frame = _synthetic(_rising(), n_layers=2, best=(1, 2))
    loss = frame["metric"] == "loss_pred"
    frame.loc[loss, "value"] = np.exp(-frame.loc[loss, "step"].to_numpy() / 1000.0)
    table = phase_change_table(frame, ROLES, [1]).set_index("metric")
    assert table.loc["loss_pred", "shape"] == "smooth" and table.loc["loss_pred", "verdict"] == FAILS
    assert np.isfinite(table.loc["coincidence", "value"])
    assert table.loc["coincidence", "verdict"] in (HOLDS, TOO_CLOSE, FAILS)
    # a flat loss has no midpoint: nothing to compare
    rng = np.random.default_rng(0)
    frame.loc[loss, "value"] = 2.0 + rng.normal(0, 0.01, loss.sum())
    table = phase_change_table(frame, ROLES, [1]).set_index("metric")
    assert table.loc["loss_pred", "shape"] == "flat"
    assert np.isnan(table.loc["coincidence", "value"]) and "flat" in table.loc["coincidence", "note"]
    assert table.loc["coincidence", "verdict"] == NOT_MEASURED
    assert table.loc["loss_pred", "verdict"] == FAILS


def test_flat_induction_content_says_none_formed():
    flat = np.where(STEPS >= 1053, CHANCE + 0.05, CHANCE)
    frame = _synthetic(flat, n_layers=2, best=(1, 0))
    table = phase_change_table(frame, ROLES, [1]).set_index("metric")
    assert table.loc["induction_content", "formed"] == 0.0
    assert ("no induction head formed: at the last checkpoint the best head by content part, "
            "L1H0, has a content part of 0.050 (needs 0.2)") in table.loc["induction_content", "note"]
    assert np.isnan(table.loc["coincidence", "value"])
    assert table.loc["coincidence", "verdict"] == NOT_MEASURED
    assert "no induction head formed" in table.loc["coincidence", "note"]
    strict = phase_change_table(_synthetic(_rising(), best=(1, 2)), {**ROLES, "above_chance": 0.6}, [1])
    assert strict.set_index("metric").loc["induction_content", "formed"] == 0.0


def test_one_layer_model_is_the_control():
    frame = _synthetic(_rising(), n_layers=1, best=(0, 2))
    table = phase_change_table(frame, ROLES, induction_layers({"n_layers": 1})).set_index("metric")
    fit = table.loc["induction_content"]
    assert NO_LAYER_NOTE in fit["note"] and fit["formed"] == 0.0
    assert fit["shape"] == PHASE_CHANGE  # what the detector says of the control's best head
    assert table.loc["loss_pred", "shape"] == PHASE_CHANGE  # the loss still counts
    assert np.isnan(table.loc["coincidence", "value"])
    assert table.loc["coincidence", "verdict"] == NOT_MEASURED


def test_a_model_without_induction_layers_follows_every_layer():
    from inductionlab.stages.dynamics.dynamics import fit_layers

    one = _synthetic(_rising(), n_layers=1, best=(0, 2))
    assert fit_layers(one, induction_layers({"n_layers": 1})) == [0]
    two = _synthetic(_rising(), n_layers=2, best=(1, 2))
    assert fit_layers(two, induction_layers({"n_layers": 2})) == [1]


def test_best_induction_heads_follow_the_best_head():
    induction = np.where(STEPS >= 1053, 0.8, 0.2)
    frame = _synthetic(induction, n_layers=2, best=(1, 2), decoy=(1, 0, 0.5))
    best = best_induction_heads(frame, [1])
    assert best["step"].tolist() == list(STEPS)
    assert best.loc[best["step"] < 1053, "head"].eq(0).all()
    assert best.loc[best["step"] >= 1053, "head"].eq(2).all()
    assert best_induction_heads(frame, []).empty
    content = best_induction_heads(frame, [1], "induction_content")
    assert content["value"].iloc[-1] == pytest.approx(0.8 - CHANCE)


def _study_tables(tmp_path):
    """Aggregated dynamics and phase_change tables: a 2-layer variant with two seeds
    (one formed an induction head, one did not) and a 1-layer variant."""
    from inductionlab.stages.dynamics.dynamics import best_induction_rows, fit_layers

    frames, phases = [], []
    for variant, seed, curve in (("two_layer", 0, _rising()),
                                 ("two_layer", 1, np.full(len(STEPS), CHANCE)),
                                 ("one_layer", 0, _rising())):
        n_layers = 2 if variant == "two_layer" else 1
        layers = induction_layers({"n_layers": n_layers})
        frame = _synthetic(curve, n_layers=n_layers, best=(n_layers - 1, 2), seed=seed,
                           variant=variant)
        frame = pd.concat([frame, best_induction_rows(frame, fit_layers(frame, layers)).assign(
            variant=variant, seed=seed)])
        frames.append(frame[DYNAMICS_COLUMNS])
        phases.append(phase_change_table(frame, ROLES, layers))
    pd.concat(frames).to_csv(tmp_path / "dynamics.csv", index=False)
    pd.concat(phases).to_csv(tmp_path / "phase_change.csv", index=False)
    return tmp_path / "dynamics.csv", tmp_path / "phase_change.csv"


def test_phase_change_figure(tmp_path):
    dynamics_csv, phase_csv = _study_tables(tmp_path)
    dynamics, phase = pd.read_csv(dynamics_csv), read_phase_change(phase_csv)
    assert phase.set_index(["variant", "seed", "metric"]).loc[
        ("two_layer", 1, "induction_content"), "formed"] == 0.0
    two = lambda f: f[f["variant"] == "two_layer"]  # noqa: E731
    fig = phase_change_figure(two(dynamics), two(phase), "two_layer")
    left, right = fig.axes[:2]
    assert left.get_xscale() == "log" and left.get_xlim() == pytest.approx((1, 10001))
    assert right.get_xlim() == pytest.approx((1, 10001))
    assert left.get_xlabel() and left.get_ylabel() and right.get_ylabel()
    assert "two_layer" in fig._suptitle.get_text()
    labels = left.get_legend_handles_labels()[1]
    assert any(label.startswith("seed 0: loss phase change") for label in labels)
    assert any("seed 1" in label and "no induction head formed" in label for label in labels)
    # seed 0's induction fit is a phase change: a dotted vertical line at its midpoint + 1
    dotted = [line for line in right.get_lines() if line.get_linestyle() == ":"
              and len(set(line.get_xdata())) == 1]
    midpoint = phase.set_index(["variant", "seed", "metric"]).loc[
        ("two_layer", 0, "induction_content"), "midpoint"]
    assert [line.get_xdata()[0] for line in dotted] == [pytest.approx(midpoint + 1)]
    # the fitted curves are drawn over the points
    assert sum(1 for line in right.get_lines() if len(line.get_xdata()) == 200) == 2
    plt.close(fig)
    settings = tmp_path / "behaviour.json"
    settings.write_text(json.dumps({"task": {"vocab_size": 26, "block_len": 6, "n_blocks": 4}}))
    for variant in ("two_layer", "one_layer"):
        out = tmp_path / variant / "phase_change.png"
        write_figure("phase_change", variant, {"dynamics": dynamics_csv, "phase_change": phase_csv}, out)
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ PCA


def test_pca_of_vectors_moving_along_one_direction():
    rng = np.random.default_rng(1)
    direction = rng.normal(size=500)
    t = np.linspace(0, 5, 40)
    X = 2.0 + t[:, None] * direction[None, :] + rng.normal(0, 1e-3, (40, 500))
    scores, ratio, components = pca(X, 2)
    assert ratio[0] == pytest.approx(1.0, abs=1e-4)
    assert ratio.sum() <= 1 + 1e-12
    assert abs(abs(components[0] @ direction) / np.linalg.norm(direction) - 1) < 1e-4
    assert np.all(np.abs(np.diff(np.sign(np.diff(scores[:, 0])))) == 0)  # monotone along t
    assert np.allclose(scores.mean(0), 0, atol=1e-9)


def test_pca_sign_follows_the_loss_level():
    X = np.outer(np.linspace(3, 1, 10), np.ones(20))  # all losses fall together
    scores, ratio, _ = pca(X, 2)
    assert scores[0, 0] > scores[-1, 0] and ratio[0] == pytest.approx(1.0)
    assert ratio[1] == pytest.approx(0.0, abs=1e-12)


def test_checkpoints_are_scored_on_a_prefix_of_the_behaviour_sample(staged, tmp_path):
    from inductionlab.stages.behaviour.attention import head_score_table
    from inductionlab.stages.behaviour.behaviour import evaluation_samples

    root, folder, spec = staged
    settings = tmp_path / "dynamics.json"
    settings.write_text(json.dumps({**DYNAMICS, "n_sequences": 16, "task": spec["task"]}))
    out = tmp_path / "dynamics.csv"
    write_dynamics(folder / "model.pt", folder / "checkpoints", root / "behaviour.json",
                   settings, out, tmp_path / "losses.npz", tmp_path / "phase.csv")
    final = _final(tmp_path)
    model, model_spec = load_model(folder / "model.pt")
    tokens, distinct = evaluation_samples(model_spec.task, 48, 11)  # _behaviour_settings
    expected, _ = head_score_table(model, tokens[:16], distinct[:16], 3)
    for metric in ("induction", "prefix_matching", "copying"):
        ours = final[final["metric"] == metric].sort_values(["layer", "head"])["value"].to_numpy()
        assert (ours == expected.sort_values(["layer", "head"])[metric].to_numpy()).all(), metric
    whole = _final(folder)
    assert not np.array_equal(final[final["metric"] == "induction"]["value"].to_numpy(),
                              whole[whole["metric"] == "induction"]["value"].to_numpy())
    # more than the behaviour sample holds: the whole sample, as without the setting
    settings.write_text(json.dumps({**DYNAMICS, "n_sequences": 4096, "task": spec["task"]}))
    write_dynamics(folder / "model.pt", folder / "checkpoints", root / "behaviour.json",
                   settings, out, tmp_path / "losses.npz", tmp_path / "phase.csv")
    assert pd.read_csv(out).equals(pd.read_csv(folder / "dynamics.csv"))
