"""Shape checks and products of the weight matrices the circuits are built from (numpy only):
a named 2-d matrix or a stack of them, the inner dimensions of a product checked, and a
low-rank pair ``(left, right)`` expanded to ``left @ right``."""
from __future__ import annotations

import numpy as np


def _matrix(name: str, x) -> np.ndarray:
    """``x`` as a 2-d array; ValueError naming ``name`` otherwise."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-d matrix, got shape {x.shape}")
    return x


def _stack(name: str, x) -> np.ndarray:
    """``x`` as an array of matrices (``[..., m, n]``); ValueError naming ``name`` otherwise."""
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{name} must be a matrix or a stack of matrices, got shape {x.shape}")
    return x


def _check_inner(left_name: str, left: np.ndarray, right_name: str, right: np.ndarray) -> None:
    """ValueError naming both factors unless ``left @ right`` is defined."""
    if left.shape[-1] != right.shape[-2]:
        raise ValueError(
            f"cannot multiply {left_name} {left.shape} by {right_name} {right.shape}: "
            f"inner dimensions {left.shape[-1]} and {right.shape[-2]} differ"
        )


def _product(*factors: tuple[str, np.ndarray]) -> np.ndarray:
    """Matrix product of named factors, left to right, with the shapes checked."""
    (name, result), *rest = factors
    for next_name, x in rest:
        _check_inner(name, result, next_name, x)
        result = result @ x
        name = f"{name} {next_name}"
    return result


def _factor_pair(left_name: str, left: np.ndarray, right_name: str, right: np.ndarray):
    """``(left, right)`` after checking that ``left @ right`` is a square V x V matrix."""
    _check_inner(left_name, left, right_name, right)
    if left.shape[0] != right.shape[1]:
        raise ValueError(
            f"{left_name} {left.shape} has {left.shape[0]} rows (tokens) but {right_name} "
            f"{right.shape} has {right.shape[1]} columns (tokens); they must agree"
        )
    return left, right


def _expand(factors: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The V x V circuit ``left @ right`` of a factor pair."""
    left, right = factors
    return left @ right
