import json

import numpy as np
import pytest
import torch

from inductionlab.core.model import ModelConfig, build_model
from inductionlab.core.weights import load_weights, model_from_weights, save_weights

from helpers import spec_document


def _spec(cfg):
    return spec_document("v", 3, cfg.to_dict())


@pytest.mark.parametrize("cfg", [ModelConfig(n_layers=2), ModelConfig(smear_layers=(0,)),
                                 ModelConfig(n_layers=2, smear_layers=(1,), smear_form="per_head",
                                             pos_encoding="standard")])
def test_round_trip_gives_identical_logits(tmp_path, cfg):
    model = build_model(cfg, 3)
    save_weights(tmp_path / "w.npz", model, _spec(cfg))
    arrays, meta = load_weights(tmp_path / "w.npz")
    assert meta["variant"] == "v" and meta["seed"] == 3 and meta["model_config"] == cfg.to_dict()
    L, H, D, d = cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_head
    assert arrays["W_Q"].shape == (L, H, D, d) and arrays["W_O"].shape == (L, H, d, D)
    assert arrays["pos"].shape == (24, d)
    assert {k for k in arrays if k.startswith("smear")} == {f"smear_alpha_{l}" for l in cfg.smear_layers}
    tokens = torch.randint(0, 26, (4, 24), generator=torch.Generator().manual_seed(0))
    assert torch.equal(model_from_weights(tmp_path / "w.npz")(tokens), model(tokens))


def _rewrite(src, dst, drop=None, replace=None):
    with np.load(src) as f:
        arrays = {k: f[k] for k in f.files}
    if drop:
        del arrays[drop]
    if replace:
        arrays.update(replace)
    np.savez(dst, **arrays)


def test_missing_or_misshapen_arrays_are_named(tmp_path):
    cfg = ModelConfig(n_layers=2, smear_layers=(0,))
    save_weights(tmp_path / "w.npz", build_model(cfg, 0), _spec(cfg))
    _rewrite(tmp_path / "w.npz", tmp_path / "missing.npz", drop="W_K")
    with pytest.raises(ValueError, match=r"'W_K' is missing \(expected shape \(2, 4, 32, 8\)\)"):
        load_weights(tmp_path / "missing.npz")
    _rewrite(tmp_path / "w.npz", tmp_path / "shape.npz", replace={"W_O": np.zeros((2, 4, 32, 8))})
    with pytest.raises(ValueError, match=r"'W_O' has shape \(2, 4, 32, 8\), expected \(2, 4, 8, 32\)"):
        load_weights(tmp_path / "shape.npz")
    _rewrite(tmp_path / "w.npz", tmp_path / "alpha.npz", drop="smear_alpha_0")
    with pytest.raises(ValueError, match="smear_alpha_0"):
        load_weights(tmp_path / "alpha.npz")
    np.savez(tmp_path / "nometa.npz", W_E=np.zeros((26, 32)))
    with pytest.raises(ValueError, match="meta"):
        load_weights(tmp_path / "nometa.npz")


def test_meta_is_plain_json(tmp_path):
    cfg = ModelConfig()
    save_weights(tmp_path / "w.npz", build_model(cfg, 0), _spec(cfg))
    with np.load(tmp_path / "w.npz", allow_pickle=False) as f:
        assert json.loads(str(f["meta"]))["spec"]["seed"] == 3
