"""Eigenvalue positivity of a token-space circuit (numpy only; docs/methods.md, "Circuits"):
the eigenvalues of a V x V matrix, or of a low-rank product ``left @ right`` from the
k x k matrix ``right @ left`` (plus V − k zeros), and their positivity Σλ/Σ|λ| (+1: the
circuit copies the source token, −1: it suppresses it) and imaginary share."""
from __future__ import annotations

import math

import numpy as np

from .matrices import _matrix


def eigenvalues_full(M) -> np.ndarray:
    """All eigenvalues of the square matrix ``M`` (``np.linalg.eigvals``, in float64)."""
    M = _matrix("M", M)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    return np.linalg.eigvals(M.astype(np.result_type(M, np.float64)))


def eigenvalues_low_rank(left, right) -> np.ndarray:
    """The V eigenvalues of ``left @ right`` (``left`` [V, k], ``right`` [k, V]).

    For k < V they are the eigenvalues of the k x k matrix ``right @ left`` followed by
    V - k zeros (AB and BA share their nonzero eigenvalues): exact and cheaper. For
    k >= V the V x V product is the smaller matrix and is used directly.
    """
    left, right = _matrix("left", left), _matrix("right", right)
    V, k = left.shape
    if right.shape != (k, V):
        raise ValueError(f"right must have shape {(k, V)} to match left {left.shape}, "
                         f"got {right.shape}")
    if k >= V:
        return eigenvalues_full(left @ right)
    small = eigenvalues_full(right @ left)
    return np.concatenate([small, np.zeros(V - k, dtype=small.dtype)])


def eigen_positivity(eigenvalues) -> complex:
    """Eigenvalue positivity ``Σλ / Σ|λ|`` (complex).

    +1: every eigenvalue is positive real (the circuit copies, in the OV case);
    -1: every eigenvalue is negative real. The real part is the reported metric.
    For a real matrix the eigenvalues come in conjugate pairs, so the imaginary part
    is zero up to rounding; it is kept as a check. Zero eigenvalues do not change the
    value, so the k x k and the V x V spectra give the same positivity.

    An all-zero (or empty) spectrum has no direction: the value is defined as
    ``complex(nan, nan)``.
    """
    lam = np.asarray(eigenvalues)
    if lam.ndim != 1:
        raise ValueError(f"eigenvalues must be 1-d, got shape {lam.shape}")
    total_abs = np.abs(lam).sum()
    if total_abs == 0:
        return complex(np.nan, np.nan)
    return complex(lam.sum() / total_abs)


def imaginary_share(eigenvalues) -> float:
    """How far a spectrum is from real: ``Σ|Im λ| / Σ|λ|`` (0: every eigenvalue is real, the
    circuit scales each of its directions; near 1: it mostly rotates them). Unlike the
    imaginary part of :func:`eigen_positivity`, which conjugate pairs cancel, it can be
    large. NaN for an all-zero spectrum."""
    lam = np.asarray(eigenvalues)
    total_abs = np.abs(lam).sum()
    return float(np.abs(lam.imag).sum() / total_abs) if total_abs else math.nan


def _spectrum_order(lam: np.ndarray) -> np.ndarray:
    """``lam`` ordered by decreasing magnitude, then real part, then imaginary part."""
    return lam[np.lexsort((-lam.imag, -lam.real, -np.abs(lam)))]
