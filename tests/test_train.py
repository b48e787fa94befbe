import pandas as pd
import pytest
import torch

from helpers import tiny_spec
from inductionlab.core.metrics import mean_loss
from inductionlab.core.loading import load_model
from inductionlab.core.compile_policy import loss_function, should_compile
from inductionlab.core.stacked import StackedModels, train_stacked
from inductionlab.core.train import TrainingDiverged, checkpoint_steps, eval_steps, train
from inductionlab.core.model import ModelConfig, build_model


def _weights(path):
    return torch.load(path, weights_only=True)["state_dict"]


def test_training_writes_log_checkpoints_and_model(tmp_path):
    last = train(tiny_spec(steps=30), tmp_path)
    log = pd.read_csv(tmp_path / "train_log.csv")
    spec = tiny_spec(steps=30)
    assert log["step"].tolist() == eval_steps(30, 10, spec["train"]["n_checkpoints"])
    assert {0, 10, 20, 30} <= set(log["step"])
    assert {"val_loss_all", "val_loss_pred", "val_acc_pred", "val_loss_pos0",
            "val_loss_pos22"} <= set(log.columns)
    assert "val_loss_pos23" not in log.columns
    assert log["val_loss_all"].iloc[-1] == pytest.approx(last["val_loss_all"])
    saved = sorted(p.name for p in (tmp_path / "checkpoints").glob("step*.pt"))
    assert saved[0] == "step000000.pt" and saved[-1] == "step000030.pt"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    final = _weights(tmp_path / "checkpoints" / "step000030.pt")
    model, spec = load_model(tmp_path / "model.pt")
    assert spec.variant == "two_layer" and spec.to_dict() == tiny_spec(steps=30)
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
    with pytest.raises(TrainingDiverged, match="first non-finite at step"):
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
    # validation at every checkpoint as well, so the curve is dense where the loss moves
    assert eval_steps(100, 50, 10) == sorted(set(checkpoint_steps(100, 10)) | {50})


@pytest.mark.parametrize("model", [{}, {"n_layers": 1, "smear_layers": [0]},
                                   {"n_layers": 1, "pos_encoding": "learned"}])
def test_stacked_training_equals_training_each_seed_alone(tmp_path, model):
    seeds = [0, 3, 5]
    specs = [tiny_spec(seed=s, steps=30, **model) for s in seeds]
    train_stacked(specs, [tmp_path / f"stacked{s}" for s in seeds])
    for spec, s in zip(specs, seeds):
        train(spec, tmp_path / f"alone{s}")
        stacked, alone = _weights(tmp_path / f"stacked{s}/model.pt"), _weights(tmp_path / f"alone{s}/model.pt")
        assert stacked.keys() == alone.keys()
        for name in alone:
            assert torch.allclose(stacked[name], alone[name], rtol=1e-4, atol=1e-5), (s, name)
        log_s, log_a = (pd.read_csv(tmp_path / f"{kind}{s}/train_log.csv") for kind in ("stacked", "alone"))
        assert log_s["seed"].tolist() == [s] * len(log_a)
        numeric = ["train_loss", "val_loss_all", "val_loss_pred", "val_acc_pred", "val_loss_pos22"]
        pd.testing.assert_frame_equal(log_s[numeric], log_a[numeric], rtol=1e-4)
        ckpts = sorted(p.name for p in (tmp_path / f"stacked{s}/checkpoints").iterdir())
        assert ckpts == sorted(p.name for p in (tmp_path / f"alone{s}/checkpoints").iterdir())
    # different seeds really are different models in the stack
    a, b = (_weights(tmp_path / f"stacked{s}/model.pt") for s in seeds[:2])
    assert not torch.allclose(a["W_E"], b["W_E"])


def test_stacked_model_runs_each_member_on_its_own_batch():
    cfg = ModelConfig(n_layers=2, smear_layers=(1,))
    models = [build_model(cfg, s) for s in (1, 2)]
    stack = StackedModels(models)
    assert stack.weights["W_Q"].shape == (2, *models[0].W_Q.shape)
    tokens = torch.randint(0, 26, (2, 5, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = stack(tokens)
        for i, m in enumerate(models):
            assert torch.allclose(logits[i], m(tokens[i]), atol=1e-5)
            assert torch.equal(stack.member(i).W_E, m.W_E)


def test_stacked_training_refuses_specs_that_differ_beyond_the_seed(tmp_path):
    with pytest.raises(ValueError, match="differ only in their seed"):
        train_stacked([tiny_spec(seed=0), tiny_spec(seed=1, n_layers=1)], [tmp_path / "a", tmp_path / "b"])


def test_compile_only_where_it_pays():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert should_compile("auto", 10_000, cpu) and not should_compile("auto", 100, cpu)
    assert not should_compile("auto", 10_000, cuda)
    assert should_compile("always", 10, cpu) and not should_compile("never", 10_000, cpu)


def test_failed_compile_falls_back_to_eager(monkeypatch):
    def broken_compile(fn):
        def fail(*args):
            raise RuntimeError("no C++ compiler")
        return fail

    monkeypatch.setattr(torch, "compile", broken_compile)
    model, said = build_model(ModelConfig(), 0), []
    loss_fn = loss_function(model, compiled=True, log=said.append)
    tokens = torch.randint(0, 26, (4, 24), generator=torch.Generator().manual_seed(0))
    assert torch.equal(loss_fn(tokens), mean_loss(model(tokens), tokens))
    assert "training eagerly" in said[0]


def test_compiled_training_follows_eager_training(tmp_path):
    spec = tiny_spec(steps=20, n_layers=1, smear_layers=[0])
    runs = {}
    for setting in ("always", "never"):
        spec["train"]["compile"] = setting
        train(spec, tmp_path / setting)
        runs[setting] = _weights(tmp_path / setting / "model.pt")
    for name, value in runs["never"].items():
        assert torch.allclose(runs["always"][name], value, atol=1e-5), name
