import json

import numpy as np
import pandas as pd
import pytest

from conftest import tiny_spec
from inductionlab.behaviour import write_behaviour
from inductionlab.circuits import write_circuits
from inductionlab.dynamics import (DYNAMICS_COLUMNS, NEVER, PHASE_COLUMNS, first_crossing,
                                   per_token_loss_pca, phase_change_table, pca, steepest_drop,
                                   write_dynamics, write_per_token_loss_pca,
                                   write_phase_change_table)
from inductionlab.dynamics_plots import write_dynamics_figures
from inductionlab.train import checkpoint_steps, load_model, train
from inductionlab.weights import save_weights

DYNAMICS = {"eval_size": 8, "period_threshold": 0.5, "drop_smoothing": 0.25, "min_drop_rate": 0.1}


def _behaviour_settings(task):
    return {"eval_seed": 11, "n_sequences": 48, "n_random_prompts": 4,
            "random_prompt_lengths": [6, 12], "failure_samples": 1, "failure_prompt_len": 12,
            "prompts": [{"prompt": "ABCDEFABCDEF"}],
            "roles": {"previous_token_min": 0.5, "period_min": 0.3, "prefix_matching_min": 0.3,
                      "local_window": 3, "local_min": 0.6, "copying_margin": 0.5},
            "task": task}


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
    (root / "dynamics.json").write_text(json.dumps({**DYNAMICS, "task": spec["task"]}))
    write_behaviour(folder / "model.pt", root / "behaviour.json", folder / "completions.csv",
                    folder / "failure_modes.csv", folder / "attention.npz",
                    folder / "head_scores.csv", folder / "behaviour.csv", log=lambda msg: None)
    write_dynamics(folder / "model.pt", folder / "checkpoints", root / "behaviour.json",
                   root / "dynamics.json", folder / "dynamics.csv",
                   folder / "per_token_losses.npz", folder / "phase_change.csv",
                   log=lambda msg: None)
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
    # 4 scalars + 23 positions + 5 scores x 8 heads + direct + 8 OV + 2 OV sums + 8 QK
    assert (per_step == 4 + 23 + 5 * 8 + 1 + 8 + 2 + 8).all()
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
    for metric in ("previous_token", "period", "prefix_matching", "local", "copying"):
        ours = final[final["metric"] == metric].set_index(["layer", "head"])["value"].sort_index()
        assert ours.index.equals(heads.index)
        assert (ours.to_numpy() == heads[metric].to_numpy()).all(), metric
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
                   other / "phase_change.csv", log=lambda m: None)
    paths = [folder / "per_token_losses.npz", other / "per_token_losses.npz"]
    table = write_per_token_loss_pca(paths, tmp_path / "pca.csv", tmp_path / "pca.png")
    assert list(table.columns) == ["variant", "seed", "step", "PC1", "PC2",
                                   "explained_variance_PC1", "explained_variance_PC2"]
    assert set(table["variant"]) == {"two_layer", "one_layer"}
    assert len(table) == len(pd.read_csv(folder / "dynamics.csv")["step"].unique()) + len(
        pd.read_csv(other / "dynamics.csv")["step"].unique())
    assert (tmp_path / "pca.png").stat().st_size > 0
    phase = write_phase_change_table([folder / "phase_change.csv", other / "phase_change.csv"],
                                     tmp_path / "phase.csv")
    assert list(phase.columns) == PHASE_COLUMNS and len(phase) == 4


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
    written = write_dynamics_figures(folder / "dynamics.csv", folder / "phase_change.csv",
                                     tmp_path, "two_layer seed 0:", task=spec["task"])
    assert [p.name for p in written] == ["losses.png", "head_scores.png", "per_position_loss.png"]
    assert all(p.stat().st_size > 0 for p in written)


# ------------------------------------------------------------------ phase change


STEPS = np.array(checkpoint_steps(10000, 40))


def _sigmoid_drop(steps, centre, width=0.15, high=3.0, low=1.0):
    """A loss that falls from ``high`` to ``low`` around ``centre``, sharply in ln(step + 1)."""
    u = np.log(steps + 1.0)
    return low + (high - low) / (1 + np.exp((u - np.log(centre + 1.0)) / width))


@pytest.mark.parametrize("centre", [30, 300, 1000, 2500])
def test_steepest_drop_finds_a_known_drop(centre):
    step, rate = steepest_drop(STEPS, _sigmoid_drop(STEPS, centre))
    # within the checkpoints that bracket the drop
    below, above = STEPS[STEPS <= centre].max(), STEPS[STEPS >= centre].min()
    assert below <= step <= above, (step, below, above)
    assert abs(np.log((step + 1) / (centre + 1))) < 0.3
    assert rate > 1.0


def test_steepest_drop_ignores_noise_between_close_checkpoints():
    rng = np.random.default_rng(0)
    loss = _sigmoid_drop(STEPS, 700, width=0.4) + rng.normal(0, 0.02, len(STEPS))
    step, _ = steepest_drop(STEPS, loss)
    assert abs(np.log((step + 1) / 701)) < 0.4


def test_flat_curves_say_never():
    assert steepest_drop(STEPS, np.full(len(STEPS), 2.5))[0] == NEVER
    assert steepest_drop(STEPS, np.linspace(2.0, 2.5, len(STEPS)))[0] == NEVER  # rising
    assert steepest_drop([0], [3.0])[0] == NEVER
    assert first_crossing(STEPS, np.full(len(STEPS), 0.2), 0.5) == (NEVER, None)


def test_first_crossing_is_the_first_checkpoint_above_threshold():
    values = np.where(STEPS >= 1579, 0.9, 0.1)
    step, i = first_crossing(STEPS, values, 0.5)
    assert step == 1579 and STEPS[i] == 1579
    assert first_crossing([0, 10, 20], [0.2, 0.5, 0.51], 0.5)[0] == 20  # strictly above


def test_phase_change_table_of_a_synthetic_model():
    rows = []
    period = np.where(STEPS >= 1053, 0.8, 0.05)
    for s, loss, p in zip(STEPS, _sigmoid_drop(STEPS, 1000), period):
        rows.append({"step": s, "metric": "loss_pred", "layer": -1, "head": -1, "value": loss})
        rows += [{"step": s, "metric": "period", "layer": 1, "head": h,
                  "value": p if h == 2 else 0.1} for h in range(4)]
    frame = pd.DataFrame(rows).assign(variant="v", seed=3, position=-1)
    table = phase_change_table(frame, DYNAMICS, block_len=6)
    assert list(table.columns) == PHASE_COLUMNS
    table = table.set_index("metric")
    assert 886 <= table.loc["steepest_drop_loss_pred", "step"] <= 1053
    crossing = table.loc["period_score_crossing"]
    assert crossing["step"] == 1053 and (crossing["layer"], crossing["head"]) == (1, 2)
    assert "A[i, i - 5]" in crossing["definition"] and "ln(step + 1)" in table.loc[
        "steepest_drop_loss_pred", "definition"]
    flat = frame.assign(value=0.1)
    assert (phase_change_table(flat, DYNAMICS, 6)["step"] == NEVER).all()


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
