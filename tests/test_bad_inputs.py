"""Every command given a bad file says which file and what is wrong, in one line,
with no traceback, and exits non-zero."""
import json
import subprocess
import sys

import pytest
import torch

from conftest import tiny_spec
from inductionlab.cli import main
from inductionlab.core.loading import BadInput, load_model
from inductionlab.core.spec import write_spec
from inductionlab.core.train import train
from inductionlab.core.weights import load_weights, save_weights


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny trained model with its weights, and damaged copies of its files."""
    root = tmp_path_factory.mktemp("bad")
    spec = tiny_spec(steps=10)
    spec["train"]["eval_every"] = 5
    train(spec, root / "model")
    model, _ = load_model(root / "model" / "model.pt")
    save_weights(root / "model" / "weights.npz", model, spec)
    write_spec(root / "model" / "spec.json", spec)
    bad = root / "bad"
    bad.mkdir()
    for name in ("model.pt", "weights.npz", "spec.json", "train_log.csv"):
        data = (root / "model" / name).read_bytes()
        (bad / f"truncated_{name}").write_bytes(data[: len(data) // 2])
        (bad / f"empty_{name}").write_bytes(b"")
        (bad / f"dir_{name}").mkdir()
    (bad / "text.pt").write_text("not a model\n")
    (bad / "text.npz").write_text("not an archive\n")
    payload = torch.load(root / "model" / "model.pt", weights_only=True)
    payload["state_dict"] = {k: torch.full_like(v, float("nan")) for k, v in payload["state_dict"].items()}
    torch.save(payload, bad / "nan_model.pt")
    return root


class _Result:
    def __init__(self, returncode, stderr):
        self.returncode, self.stderr = returncode, stderr


@pytest.fixture
def _run(capsys):
    """``inductionlab ARGS`` in this process (an uncaught exception fails the test)."""
    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        return _Result(code, capsys.readouterr().err)
    return run


def _assert_one_clear_line(proc, path, words):
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.strip().splitlines() if "error" in l]
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and words in lines[0], lines[0]


def test_the_installed_command_prints_one_line(trained):
    path = trained / "bad" / "truncated_model.pt"
    proc = subprocess.run([sys.executable, "-m", "inductionlab.cli", "complete", str(path), "ABCDEF"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and str(path) in proc.stderr


MODEL_CASES = [
    ("bad/missing.pt", "no such file"),
    ("bad/empty_model.pt", "is empty"),
    ("bad/truncated_model.pt", "truncated"),
    ("bad/text.pt", "truncated or not a torch file"),
    ("bad/dir_model.pt", "is a directory"),
    ("model/checkpoints/step000005.pt", "a training checkpoint; give its model.pt"),
    ("bad/nan_model.pt", "hold NaN or infinite values"),
    ("model/weights.npz", "truncated or not a torch file"),
]


@pytest.mark.parametrize("name,words", MODEL_CASES)
@pytest.mark.parametrize("command", ["complete", "extract-weights"])
def test_commands_that_load_a_model(_run, trained, command, name, words):
    path = trained / name
    args = [path, "ABCDEF"] if command == "complete" else ["--model", path, "--out",
                                                           trained / "bad" / "out.npz"]
    _assert_one_clear_line(_run(command, *args), path, words)
    assert not (trained / "bad" / "out.npz").exists()


WEIGHT_CASES = [
    ("bad/missing.npz", "no such file"),
    ("bad/empty_weights.npz", "is empty"),
    ("bad/truncated_weights.npz", "truncated or not an .npz"),
    ("bad/text.npz", "truncated or not an .npz"),
    ("bad/dir_weights.npz", "is a directory"),
    ("model/model.pt", "not a weights.npz"),
]


@pytest.mark.parametrize("name,words", WEIGHT_CASES)
def test_commands_that_read_weights(_run, trained, name, words):
    path = trained / name
    _assert_one_clear_line(_run("circuits", path), path, words)
    out = trained / "bad" / "tables"
    _assert_one_clear_line(_run("circuits-tables", "--weights", path, "--circuits", out / "c.csv",
                                "--composition", out / "k.csv", "--eigenvalues", out / "e.npz"),
                           path, words)
    assert not out.exists() or not list(out.iterdir())


def test_a_damaged_intermediate_says_how_to_rebuild_it(_run, trained):
    proc = _run("circuits", trained / "bad" / "truncated_weights.npz")
    assert "delete it and rerun snakemake to rebuild it" in proc.stderr


def test_non_finite_weights_are_refused(trained, tmp_path):
    import numpy as np

    arrays = dict(np.load(trained / "model" / "weights.npz"))
    arrays["W_Q"] = np.full_like(arrays["W_Q"], np.inf)
    np.savez(tmp_path / "weights.npz", **arrays)
    with pytest.raises(BadInput, match="W_Q hold NaN or infinite"):
        load_weights(tmp_path / "weights.npz")


@pytest.mark.parametrize("name,words", [
    ("bad/missing.json", "no such file"),
    ("bad/empty_spec.json", "is empty"),
    ("bad/truncated_spec.json", "is not valid JSON"),
    ("bad/dir_spec.json", "is a directory"),
])
def test_train_with_a_bad_spec(_run, trained, tmp_path, name, words):
    path = trained / name
    _assert_one_clear_line(_run("train", "--spec", path, "--out-dir", tmp_path / "out"), path, words)


@pytest.mark.parametrize("name,words", [
    ("bad/truncated_train_log.csv", "truncated"),
    ("bad/empty_train_log.csv", "is empty"),
    ("bad/dir_train_log.csv", "is a directory"),
])
def test_aggregate_refuses_a_cut_short_table(_run, trained, tmp_path, name, words):
    path = trained / name
    proc = _run("aggregate", "--name", "train_log", "--long", tmp_path / "l.csv",
                "--summary", tmp_path / "s.csv", "--inputs", trained / "model" / "train_log.csv",
                path, "--final-step", 10)
    _assert_one_clear_line(proc, path, words)
    assert not (tmp_path / "l.csv").exists()


def test_aggregate_refuses_a_log_that_stops_early(_run, trained, tmp_path):
    lines = (trained / "model" / "train_log.csv").read_text().splitlines(keepends=True)
    short = tmp_path / "train_log.csv"
    short.write_text("".join(lines[:-1]))  # whole lines: only the final step is missing
    proc = _run("aggregate", "--name", "train_log", "--long", tmp_path / "l.csv",
                "--summary", tmp_path / "s.csv", "--inputs", short, "--final-step", 10)
    _assert_one_clear_line(proc, short, "ends at step 5, not at the final step 10")


def _dynamics(_run, trained, checkpoints, tmp_path):
    settings = tmp_path / "settings"
    settings.mkdir(exist_ok=True)
    task = tiny_spec()["task"]
    (settings / "behaviour.json").write_text(json.dumps(
        {"eval_seed": 1, "n_sequences": 16, "roles": {"local_window": 3}, "task": task}))
    (settings / "dynamics.json").write_text(json.dumps(
        {"eval_size": 8, "task": task}))
    out = tmp_path / "out"
    return _run("dynamics", "--model", trained / "model" / "model.pt", "--checkpoints", checkpoints,
                "--behaviour-settings", settings / "behaviour.json",
                "--settings", settings / "dynamics.json", "--dynamics", out / "d.csv", "--losses", out / "l.npz",
                "--phase-change", out / "p.csv")


def test_dynamics_checks_every_checkpoint_of_the_schedule(_run, trained, tmp_path):
    import shutil

    ckpts = tmp_path / "checkpoints"
    shutil.copytree(trained / "model" / "checkpoints", ckpts)
    (ckpts / "step000003.pt").unlink()
    _assert_one_clear_line(_dynamics(_run, trained, ckpts, tmp_path), ckpts, "(step 3)")
    shutil.copy(trained / "bad" / "truncated_model.pt", ckpts / "step000003.pt")
    proc = _dynamics(_run, trained, ckpts, tmp_path)
    _assert_one_clear_line(proc, ckpts / "step000003.pt", "truncated")
    # one remedy, whole: retrain the model (deleting the checkpoint alone would not rebuild it)
    assert f"delete {tmp_path / 'model.pt'} and rerun snakemake to retrain" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_an_output_path_that_is_a_directory_is_refused(_run, trained):
    out = trained / "bad" / "dir_weights.npz"
    proc = _run("extract-weights", "--model", trained / "model" / "model.pt", "--out", out)
    _assert_one_clear_line(proc, out, "directory")


@pytest.mark.parametrize("name,words", [
    ("bad/truncated_weights.npz", "truncated or not an .npz"),
    ("bad/dir_weights.npz", "is a directory"),
])
def test_figures_from_a_bad_archive(_run, trained, tmp_path, name, words):
    path = trained / name
    _assert_one_clear_line(_run("attention-figures", "--attention", path, "--out-dir", tmp_path / "figs"), path, words)
    assert not (tmp_path / "figs").exists()
