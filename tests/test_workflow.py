"""The real ``snakemake`` command on the tiny config, in a temporary folder."""
import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import torch

from conftest import ROOT
from inductionlab.train import load_model
from inductionlab.weights import model_from_weights

VARIANTS = ("one_layer", "one_layer_smeared", "two_layer")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("tiny")
    shutil.copy(ROOT / "tests" / "config.tiny.yaml", work / "config.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "2",
         "-d", str(work)], cwd=work, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_model_has_its_outputs(tiny_run, variant):
    folder = tiny_run / "results" / variant / "seed0"
    for name in ("spec.json", "model.pt", "train_log.csv", "weights.npz", "circuits.csv",
                 "composition.csv", "eigenvalues.npz", "completions.csv", "failure_modes.csv",
                 "attention.npz", "head_scores.csv", "behaviour.csv",
                 "figures/attention/mean.png", "figures/attention/prompt1_ABCDEFABCDEF.png"):
        assert (folder / name).is_file(), name
    assert (folder / "checkpoints" / "step000000.pt").is_file()
    assert (tiny_run / "logs" / "train" / variant / "seed0.log").read_text().strip()
    assert json.loads((folder / "spec.json").read_text())["variant"] == variant
    assert pd.read_csv(folder / "train_log.csv")["step"].iloc[-1] == 60


@pytest.mark.parametrize("variant", VARIANTS)
def test_rebuilt_model_matches_trained_model(tiny_run, variant):
    folder = tiny_run / "results" / variant / "seed0"
    trained, _ = load_model(folder / "model.pt")
    rebuilt = model_from_weights(folder / "weights.npz")
    tokens = torch.randint(0, 26, (8, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(rebuilt(tokens), trained(tokens))


def test_tables_name_their_model(tiny_run):
    folder = tiny_run / "results" / "two_layer" / "seed0"
    for name in ("circuits.csv", "composition.csv", "completions.csv", "failure_modes.csv",
                 "head_scores.csv", "behaviour.csv"):
        frame = pd.read_csv(folder / name)
        assert (frame["variant"] == "two_layer").all() and (frame["seed"] == 0).all(), name
    assert len(pd.read_csv(folder / "failure_modes.csv")) == 203
    assert len(pd.read_csv(folder / "composition.csv")) == 3 * 4 * 4
    assert len(pd.read_csv(folder / "head_scores.csv")) == 8


def test_second_run_has_nothing_to_do(tiny_run):
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "1",
         "-n", "-d", str(tiny_run)], cwd=tiny_run, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr
