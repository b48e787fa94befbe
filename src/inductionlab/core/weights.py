"""Named weight arrays (TransformerLens shapes) in ``weights.npz``, and back to a model.

Arrays (float32):
    W_E [V, D]   W_U [D, V]
    W_Q, W_K, W_V [L, H, D, d]   W_O [L, H, d, D]
    pos [T, d]   positional table added to queries and keys
    smear_alpha_{l} [H, T-1] or [H, 1]   raw smear logits of layer l (sigmoid gives the weight)
plus ``meta``: a JSON string with variant, seed, model config and the full spec.

:mod:`inductionlab.stages.circuits.circuits` reads these arrays with numpy only.
"""
from __future__ import annotations

import json

import numpy as np

from ..atomic import atomic_path

MATRIX_NAMES = ("W_E", "W_U", "W_Q", "W_K", "W_V", "W_O", "pos")


def expected_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """Shape of every array that a model with config ``cfg`` (a ModelConfig dict) has."""
    V, D, H, L, T = cfg["vocab_size"], cfg["d_model"], cfg["n_heads"], cfg["n_layers"], cfg["seq_len"]
    d = D // H
    shapes = {"W_E": (V, D), "W_U": (D, V), "W_Q": (L, H, D, d), "W_K": (L, H, D, d),
              "W_V": (L, H, D, d), "W_O": (L, H, d, D), "pos": (T, d)}
    alpha_len = T - 1 if cfg.get("smear_form", "per_position") == "per_position" else 1
    for l in cfg.get("smear_layers", []):
        shapes[f"smear_alpha_{l}"] = (H, alpha_len)
    return shapes


def model_arrays(model) -> dict[str, np.ndarray]:
    """The named arrays of a model."""
    arrays = {name: getattr(model, name).detach().cpu().numpy().astype(np.float32)
              for name in MATRIX_NAMES}
    for l, alpha in model.smear_alpha.items():
        arrays[f"smear_alpha_{l}"] = alpha.detach().cpu().numpy().astype(np.float32)
    return arrays


def save_weights(path, model, spec) -> None:
    """Write ``weights.npz`` for ``model`` trained from ``spec`` (a Spec or its document)."""
    from .spec import Spec

    spec = Spec.of(spec)
    meta = {"variant": spec.variant, "seed": spec.seed,
            "model_config": model.cfg.to_dict(), "spec": spec.to_dict()}
    with atomic_path(path, suffix=".npz") as tmp:
        np.savez(tmp, meta=np.array(json.dumps(meta)), **model_arrays(model))


def load_weights(path) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and metadata of ``weights.npz``, with every shape checked.

    Raises ``ValueError`` naming the first missing array or the array whose shape
    differs from what the metadata's model config implies.
    """
    from .loading import BadInput, non_finite, open_npz

    arrays = open_npz(path, "a weights.npz")
    if "meta" not in arrays:
        raise BadInput(path, "no 'meta' entry; not a weights.npz written by inductionlab", hint=None)
    try:
        meta = json.loads(str(arrays.pop("meta")))
        shapes = expected_shapes(meta["model_config"])
    except (ValueError, KeyError, TypeError):
        raise BadInput(path, "its 'meta' entry is not inductionlab's model description") from None
    for name, shape in shapes.items():
        if name not in arrays:
            raise BadInput(path, f"array {name!r} is missing (expected shape {shape})")
        if arrays[name].shape != shape:
            raise BadInput(path, f"array {name!r} has shape {arrays[name].shape}, expected {shape}")
    bad = non_finite(arrays)
    if bad:
        raise BadInput(path, f"array(s) {', '.join(bad)} hold NaN or infinite values")
    return arrays, meta


def model_from_weights(path):
    """Rebuild the model stored in ``weights.npz`` (eval mode, CPU)."""
    import torch

    from .model import AttentionOnlyTransformer, ModelConfig

    arrays, meta = load_weights(path)
    model = AttentionOnlyTransformer(ModelConfig.from_dict(meta["model_config"]))
    state = {name: torch.from_numpy(arrays[name]) for name in MATRIX_NAMES}
    state.update({f"smear_alpha.{k.rsplit('_', 1)[1]}": torch.from_numpy(v)
                  for k, v in arrays.items() if k.startswith("smear_alpha_")})
    model.load_state_dict(state)
    return model.eval()
