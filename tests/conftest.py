from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def tiny_spec(variant="two_layer", seed=0, steps=30, **model):
    """A spec for a fast training run."""
    model = {"n_layers": 2, "d_model": 32, "n_heads": 4, "pos_encoding": "original",
             "smear_layers": [], "smear_form": "per_position", **model}
    return {
        "variant": variant, "seed": seed,
        "task": {"vocab_size": 26, "block_len": 6, "n_blocks": 4},
        "model": model,
        "train": {"steps": steps, "batch_size": 32, "lr": 1e-3, "weight_decay": 1.0,
                  "eval_every": 10, "val_size": 64, "val_seed": 7, "n_checkpoints": 6},
        "device": "cpu",
    }
