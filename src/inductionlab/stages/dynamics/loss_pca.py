"""One PCA of the per-token loss vectors of every checkpoint of every model (a fixed
evaluation set shared by every model): each model's trajectory through training on the
first two components."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ...core.formats import declare_table
from ...core.loading import BadInput, open_npz


PCA_COLUMNS = ["variant", "seed", "step", "PC1", "PC2",
               "explained_variance_PC1", "explained_variance_PC2"]
PER_TOKEN_LOSS_PCA = declare_table("per_token_loss_pca", PCA_COLUMNS, keys=["step"])


def pca(matrix, n_components: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PCA of the rows of ``matrix`` [n, p] by SVD of the column-centred matrix.

    Returns ``(scores [n, k], explained_variance_ratio [k], components [k, p])``.
    Each component's sign is chosen so that its loadings sum to a positive number
    (for loss vectors: the score grows with the loss). Components beyond the rank
    have zero scores and ratio 0.
    """
    X = np.asarray(matrix, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"matrix must be 2-d with at least two rows, got shape {X.shape}")
    X = X - X.mean(axis=0)
    U, S, Vt = np.linalg.svd(X, full_matrices=False)
    k = n_components
    total = float((S ** 2).sum())
    ratio = (S ** 2) / total if total > 0 else np.zeros_like(S)
    signs = np.sign(Vt.sum(axis=1))
    signs[signs == 0] = 1.0
    U, Vt = U * signs, Vt * signs[:, None]
    scores = np.zeros((X.shape[0], k))
    comps = np.zeros((k, X.shape[1]))
    r = min(k, len(S))
    scores[:, :r] = U[:, :r] * S[:r]
    comps[:r] = Vt[:r]
    out_ratio = np.zeros(k)
    out_ratio[:r] = ratio[:r]
    return scores, out_ratio, comps


def read_losses(path) -> dict:
    out = open_npz(path, "a per_token_losses.npz")
    missing = [k for k in ("meta", "steps", "losses", "tokens") if k not in out]
    if missing:
        raise BadInput(path, f"no {', '.join(missing)}; not a per_token_losses.npz")
    out["meta"] = json.loads(str(out["meta"]))
    return out


def per_token_loss_pca(paths) -> pd.DataFrame:
    """One PCA over the per-token loss vectors of every checkpoint of every model.

    ``paths``: ``per_token_losses.npz`` files. Each checkpoint's vector is its
    flattened [n_seq, T-1] loss matrix; every file must hold the same evaluation set.
    """
    blocks, ids, reference = [], [], None
    for path in paths:
        data = read_losses(path)
        if reference is None:
            reference = (path, data["tokens"])
        elif not np.array_equal(data["tokens"], reference[1]):
            raise ValueError(f"{path}: its per-token evaluation set differs from that of "
                             f"{reference[0]}; rerun the dynamics stage with one config")
        n = len(data["steps"])
        blocks.append(data["losses"].reshape(n, int(np.prod(data["losses"].shape[1:]))))
        ids += [(data["meta"]["variant"], int(data["meta"]["seed"]), int(s)) for s in data["steps"]]
    if not blocks:
        raise ValueError("no per_token_losses.npz given")
    if len(ids) < 2:  # no two checkpoints on the evaluation set (a model of a shorter context has none)
        return pd.DataFrame(ids, columns=["variant", "seed", "step"]).reindex(columns=PCA_COLUMNS)
    scores, ratio, _ = pca(np.concatenate(blocks), 2)
    frame = pd.DataFrame(ids, columns=["variant", "seed", "step"])
    frame["PC1"], frame["PC2"] = scores[:, 0], scores[:, 1]
    frame["explained_variance_PC1"], frame["explained_variance_PC2"] = ratio[0], ratio[1]
    return frame[PCA_COLUMNS]
