"""Composition between layers in d_model space (numpy only; docs/methods.md, "Circuits"):
the OV and QK matrices of a head, the matrix a later head reads an earlier head's output
with (K-, Q- or V-composition), the Frobenius composition score and its baseline for
random matrices of the same shapes."""
from __future__ import annotations

import numpy as np

from .matrices import _product, _stack

COMPOSITION_KINDS = ("K", "Q", "V")

# Random baseline of the composition score: samples and seed (fixed so that the
# tables are reproducible; the standard error of the mean is about 0.02 / sqrt(1000)).
BASELINE_SAMPLES = 1000
BASELINE_SEED = 0


def ov_matrix(W_V, W_O) -> np.ndarray:
    """``W_V W_O`` [D, D] (or a stack [..., D, D]): what a head writes, per residual direction."""
    return _product(("W_V", _stack("W_V", W_V)), ("W_O", _stack("W_O", W_O)))


def qk_matrix(W_Q, W_K) -> np.ndarray:
    """``W_Q W_Kᵀ`` [D, D] (or a stack): the bilinear form of the attention score."""
    W_K = _stack("W_K", W_K)
    return _product(("W_Q", _stack("W_Q", W_Q)), ("W_Kᵀ", np.swapaxes(W_K, -1, -2)))


def composition_reader(kind: str, W_Q_h, W_K_h, W_V_h, W_O_h) -> np.ndarray:
    """The right factor R of the composition score of later head h.

    ``K``: ``W_K^h (W_Q^h)ᵀ``; ``Q``: ``W_Q^h (W_K^h)ᵀ``; ``V``: ``W_V^h W_O^h``
    (TransformerLens: QK.T, QK and OV). Works on stacks of heads as well.
    """
    if kind == "K":
        return np.swapaxes(qk_matrix(W_Q_h, W_K_h), -1, -2)
    if kind == "Q":
        return qk_matrix(W_Q_h, W_K_h)
    if kind == "V":
        return ov_matrix(W_V_h, W_O_h)
    raise ValueError(f"kind={kind!r}; allowed: {COMPOSITION_KINDS}")


def composition_score(L, R) -> np.ndarray | float:
    """Composition score ``‖L R‖_F / (‖L‖_F ‖R‖_F)`` in d_model space.

    ``L = W_V^p W_O^p`` (earlier head p, :func:`ov_matrix`) and ``R`` from
    :func:`composition_reader`. Stacks [..., D, D] give one score per matrix.
    """
    L, R = _stack("L", L), _stack("R", R)
    LR = _product(("L", L), ("R", R))
    norm = lambda x: np.linalg.norm(x, axis=(-2, -1))  # noqa: E731  Frobenius, per matrix
    return norm(LR) / (norm(L) * norm(R))


def composition_baseline(D: int, d: int, n_samples: int = BASELINE_SAMPLES,
                         seed: int = BASELINE_SEED, kind: str = "K") -> tuple[float, float]:
    """Mean and standard deviation of the composition score of random heads.

    Draws ``n_samples`` independent Gaussian heads with the model's factor shapes
    (earlier head p: W_V [D, d], W_O [d, D]; later head h: W_Q, W_K, W_V [D, d],
    W_O [d, D]), forms ``L`` and ``R`` exactly as for real heads (``kind`` picks R) and
    scores them. The score is scale-invariant, so the variance does not matter; the
    Gaussian distribution is rotation-invariant, so the three kinds agree in
    distribution (they are separate samples with the same seed).
    """
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2, got {n_samples}")
    rng = np.random.default_rng(seed)
    draw = lambda *shape: rng.standard_normal((n_samples, *shape))  # noqa: E731
    W_V_p, W_O_p = draw(D, d), draw(d, D)
    W_Q_h, W_K_h, W_V_h, W_O_h = draw(D, d), draw(D, d), draw(D, d), draw(d, D)
    scores = composition_score(ov_matrix(W_V_p, W_O_p),
                               composition_reader(kind, W_Q_h, W_K_h, W_V_h, W_O_h))
    return float(scores.mean()), float(scores.std(ddof=1))
