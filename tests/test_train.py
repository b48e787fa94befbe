import pandas as pd
import pytest
import torch

from conftest import tiny_spec
from inductionlab.train import (TrainingDiverged, checkpoint_steps, eval_steps, load_model,
                                train)


def _weights(path):
    return torch.load(path, weights_only=True)["state_dict"]


def test_training_writes_log_checkpoints_and_model(tmp_path):
    last = train(tiny_spec(steps=30), tmp_path)
    log = pd.read_csv(tmp_path / "train_log.csv")
    assert log["step"].tolist() == [0, 10, 20, 30]
    assert {"val_loss_all", "val_loss_pred", "val_acc_pred", "val_loss_pos0",
            "val_loss_pos22"} <= set(log.columns)
    assert "val_loss_pos23" not in log.columns
    assert log["val_loss_all"].iloc[-1] == pytest.approx(last["val_loss_all"])
    saved = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert saved[0] == "step000000.pt" and saved[-1] == "step000030.pt"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    final = _weights(tmp_path / "checkpoints" / "step000030.pt")
    model, spec = load_model(tmp_path / "model.pt")
    assert spec["variant"] == "two_layer"
    for name, value in model.state_dict().items():
        assert torch.equal(value, final[name])
    # the untrained checkpoint is the seed's initialisation, and training moved the weights
    assert not torch.equal(_weights(tmp_path / "checkpoints" / "step000000.pt")["W_Q"], final["W_Q"])


def test_same_seed_same_weights_different_seed_different(tmp_path):
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        train(tiny_spec(seed=seed, steps=12, smear_layers=[1]), tmp_path / name)
    a, b, c = (_weights(tmp_path / n / "model.pt") for n in "abc")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["W_Q"], c["W_Q"])


def test_non_finite_loss_stops_with_a_clear_error(tmp_path):
    spec = tiny_spec(steps=50)
    spec["train"]["lr"] = 1e30
    with pytest.raises(TrainingDiverged, match="training loss is (nan|inf)"):
        train(spec, tmp_path)
    assert not (tmp_path / "model.pt").exists()
    assert not (tmp_path / "checkpoints").exists()


def test_checkpoint_schedule():
    steps = checkpoint_steps(10000, 40)
    assert steps[0] == 0 and steps[-1] == 10000 and 30 <= len(steps) <= 41
    assert steps == sorted(set(steps))
    assert {1, 2, 3} <= set(steps)  # dense early
    assert sum(s >= 5000 for s in steps) >= 8  # regular later
    assert checkpoint_steps(5, 40) == [0, 1, 2, 3, 4, 5]
    assert eval_steps(25, 10) == [0, 10, 20, 25]
