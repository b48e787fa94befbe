"""Token-space circuits, eigenvalue positivity and composition scores (numpy only).

Definitions follow docs/methods.md, "Circuits". Arrays use TransformerLens shapes and the
row-vector convention: W_E [V, D], W_U [D, V], W_Q/W_K/W_V [L, H, D, d], W_O [L, H, d, D].
A token-space circuit is a V x V matrix whose rows are the source (or query) token.

Every circuit is a product ``left @ right`` with ``left`` [V, k] and ``right`` [k, V].
Each one therefore has two functions:

* a ``*_factors`` function (``ov_factors``, ``k_composition_factors``, ...) returns
  ``(left, right)``; this is where the formula lives;
* the circuit function (``ov_circuit``, ``k_composition_term``, ...) returns the V x V
  matrix ``left @ right``.

The metrics use the factors: the eigenvalues of ``left @ right`` are those of the
k x k matrix ``right @ left`` plus V - k zeros (:func:`eigenvalues_low_rank`). The full
V x V form stays available to check this (:func:`eigenvalues_full`).

Head indices are 0-based everywhere; labels are ``L<layer>H<head>`` (``L0H2``: layer 0,
head 2). In composition, ``h`` is the later-layer head that reads and ``p`` the
earlier-layer head that writes.

This module must not import torch (it runs on the saved ``weights.npz`` alone).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .composition import (COMPOSITION_KINDS, composition_baseline, composition_reader,
                          composition_score, ov_matrix)
from .eigen import _spectrum_order, eigen_positivity, eigenvalues_low_rank, imaginary_share
from ...core.formats import declare_table
from .matrices import _expand, _factor_pair, _matrix, _product


CIRCUIT_COLUMNS = ["variant", "seed", "circuit", "layer", "head",
                   "positivity_real", "positivity_imag", "imaginary_share", "frobenius_norm"]
COMPOSITION_COLUMNS = ["variant", "seed", "kind", "layer", "head", "src_layer", "src_head",
                       "positivity_real", "positivity_imag", "score", "baseline",
                       "score_minus_baseline"]
CIRCUITS = declare_table("circuits", CIRCUIT_COLUMNS, keys=["circuit", "layer", "head"])
COMPOSITION = declare_table("composition", COMPOSITION_COLUMNS,
                            keys=["kind", "layer", "head", "src_layer", "src_head"])


# ------------------------------------------------------------ token-space circuits


def direct_path_factors(W_E, W_U) -> tuple[np.ndarray, np.ndarray]:
    """Factors of the direct path ``W_E W_U``: (W_E [V, D], W_U [D, V])."""
    W_E, W_U = _matrix("W_E", W_E), _matrix("W_U", W_U)
    return _factor_pair("W_E", W_E, "W_U", W_U)


def direct_path(W_E, W_U) -> np.ndarray:
    """Direct path ``W_E W_U`` [V, V]: the logits a token gives without attention."""
    return _expand(direct_path_factors(W_E, W_U))


def ov_factors(W_E, W_V, W_O, W_U) -> tuple[np.ndarray, np.ndarray]:
    """Factors of one head's OV circuit: (W_E W_V [V, d], W_O W_U [d, V])."""
    W_E, W_V, W_O, W_U = (_matrix(n, x) for n, x in
                          (("W_E", W_E), ("W_V", W_V), ("W_O", W_O), ("W_U", W_U)))
    left = _product(("W_E", W_E), ("W_V", W_V))
    right = _product(("W_O", W_O), ("W_U", W_U))
    return _factor_pair("W_E W_V", left, "W_O W_U", right)


def ov_circuit(W_E, W_V, W_O, W_U) -> np.ndarray:
    """OV circuit of one head ``W_E W_V W_O W_U`` [V, V].

    Row s: the logits the head adds when it attends to token s. Arguments are one
    head's matrices: W_V [D, d], W_O [d, D].
    """
    return _expand(ov_factors(W_E, W_V, W_O, W_U))


def layer_ov_sum_factors(W_E, W_V, W_O, W_U) -> tuple[np.ndarray, np.ndarray]:
    """Factors of a layer's summed OV circuit ``Σ_h W_E W_V^h W_O^h W_U``.

    ``W_V`` [H, D, d] and ``W_O`` [H, d, D] are one layer's heads. Since
    ``Σ_h W_V^h W_O^h = [W_V^0 ... W_V^{H-1}] [W_O^0; ...; W_O^{H-1}]``, the factors are
    (W_E W_V^cat [V, H d], W_O^cat W_U [H d, V]).
    """
    W_V, W_O = np.asarray(W_V), np.asarray(W_O)
    if W_V.ndim != 3:
        raise ValueError(f"W_V must be one layer's heads [H, D, d], got shape {W_V.shape}")
    if W_O.ndim != 3 or W_O.shape[0] != W_V.shape[0]:
        raise ValueError(f"W_O must be one layer's heads [H, d, D] with H={W_V.shape[0]}, "
                         f"got shape {W_O.shape}")
    H, D, d = W_V.shape
    W_V_cat = W_V.transpose(1, 0, 2).reshape(D, H * d)  # columns: head 0's d, head 1's d, ...
    W_O_cat = W_O.reshape(H * d, W_O.shape[-1])  # rows in the same order
    return ov_factors(W_E, W_V_cat, W_O_cat, W_U)


def layer_ov_sum(W_E, W_V, W_O, W_U) -> np.ndarray:
    """Sum over a layer's heads of the OV circuits, ``Σ_h W_E W_V^h W_O^h W_U`` [V, V]."""
    return _expand(layer_ov_sum_factors(W_E, W_V, W_O, W_U))


def qk_factors(W_E, W_Q, W_K) -> tuple[np.ndarray, np.ndarray]:
    """Factors of one head's QK circuit: (W_E W_Q [V, d], (W_E W_K)ᵀ [d, V])."""
    W_E, W_Q, W_K = _matrix("W_E", W_E), _matrix("W_Q", W_Q), _matrix("W_K", W_K)
    left = _product(("W_E", W_E), ("W_Q", W_Q))
    keys = _product(("W_E", W_E), ("W_K", W_K))
    return _factor_pair("W_E W_Q", left, "(W_E W_K)ᵀ", keys.T)


def qk_circuit(W_E, W_Q, W_K) -> np.ndarray:
    """Content part of one head's QK circuit ``W_E W_Q W_Kᵀ W_Eᵀ`` [V, V].

    Row: query token, column: key token; the positional part of the scores is left out.
    """
    return _expand(qk_factors(W_E, W_Q, W_K))


def _written_embedding(W_E, W_V_p, W_O_p) -> np.ndarray:
    """``W_E W_V^p W_O^p`` [V, D]: what head p writes when it attends to each token."""
    return _product(("W_E", _matrix("W_E", W_E)), ("W_V_p", _matrix("W_V_p", W_V_p)),
                    ("W_O_p", _matrix("W_O_p", W_O_p)))


def k_composition_factors(W_E, W_Q_h, W_K_h, W_V_p, W_O_p) -> tuple[np.ndarray, np.ndarray]:
    """Factors of the K-composition term: (W_E W_Q^h [V, d], (W_K^h)ᵀ (W_E W_V^p W_O^p)ᵀ [d, V])."""
    W_E, W_Q_h, W_K_h = _matrix("W_E", W_E), _matrix("W_Q_h", W_Q_h), _matrix("W_K_h", W_K_h)
    left = _product(("W_E", W_E), ("W_Q_h", W_Q_h))
    right = _product(("W_K_hᵀ", W_K_h.T), ("(W_E W_V_p W_O_p)ᵀ", _written_embedding(W_E, W_V_p, W_O_p).T))
    return _factor_pair("W_E W_Q_h", left, "W_K_hᵀ (W_E W_V_p W_O_p)ᵀ", right)


def k_composition_term(W_E, W_Q_h, W_K_h, W_V_p, W_O_p) -> np.ndarray:
    """K-composition term ``W_E W_Q^h (W_K^h)ᵀ (W_E W_V^p W_O^p)ᵀ`` [V, V].

    Row: the query token of later head h; column: the token that earlier head p
    attended to and wrote into the key position. Positive diagonal: h attends to
    positions where p copied the current query token (prefix matching).
    """
    return _expand(k_composition_factors(W_E, W_Q_h, W_K_h, W_V_p, W_O_p))


def q_composition_factors(W_E, W_Q_h, W_K_h, W_V_p, W_O_p) -> tuple[np.ndarray, np.ndarray]:
    """Factors of the Q-composition term: ((W_E W_V^p W_O^p) W_Q^h [V, d], (W_E W_K^h)ᵀ [d, V])."""
    W_E, W_Q_h, W_K_h = _matrix("W_E", W_E), _matrix("W_Q_h", W_Q_h), _matrix("W_K_h", W_K_h)
    left = _product(("W_E W_V_p W_O_p", _written_embedding(W_E, W_V_p, W_O_p)), ("W_Q_h", W_Q_h))
    keys = _product(("W_E", W_E), ("W_K_h", W_K_h))
    return _factor_pair("W_E W_V_p W_O_p W_Q_h", left, "(W_E W_K_h)ᵀ", keys.T)


def q_composition_term(W_E, W_Q_h, W_K_h, W_V_p, W_O_p) -> np.ndarray:
    """Q-composition term ``(W_E W_V^p W_O^p) W_Q^h (W_K^h)ᵀ W_Eᵀ`` [V, V].

    Row: the token earlier head p wrote into the query position; column: key token.
    """
    return _expand(q_composition_factors(W_E, W_Q_h, W_K_h, W_V_p, W_O_p))


def v_composition_factors(W_E, W_V_h, W_O_h, W_V_p, W_O_p, W_U) -> tuple[np.ndarray, np.ndarray]:
    """Factors of the V-composition term: (W_E W_V^p [V, d], W_O^p W_V^h W_O^h W_U [d, V])."""
    W_E, W_U = _matrix("W_E", W_E), _matrix("W_U", W_U)
    W_V_h, W_O_h = _matrix("W_V_h", W_V_h), _matrix("W_O_h", W_O_h)
    W_V_p, W_O_p = _matrix("W_V_p", W_V_p), _matrix("W_O_p", W_O_p)
    left = _product(("W_E", W_E), ("W_V_p", W_V_p))
    right = _product(("W_O_p", W_O_p), ("W_V_h", W_V_h), ("W_O_h", W_O_h), ("W_U", W_U))
    return _factor_pair("W_E W_V_p", left, "W_O_p W_V_h W_O_h W_U", right)


def v_composition_term(W_E, W_V_h, W_O_h, W_V_p, W_O_p, W_U) -> np.ndarray:
    """V-composition term ``W_E W_V^p W_O^p W_V^h W_O^h W_U`` [V, V].

    Row: the token earlier head p attended to; column: the logits later head h adds
    when it attends to where p wrote it.
    """
    return _expand(v_composition_factors(W_E, W_V_h, W_O_h, W_V_p, W_O_p, W_U))


# ------------------------------------------------------------------ whole models


def _model_matrices(arrays: dict) -> dict[str, np.ndarray]:
    """The circuit matrices of a model's arrays, in float64, with their ranks checked."""
    ndims = {"W_E": 2, "W_U": 2, "W_Q": 4, "W_K": 4, "W_V": 4, "W_O": 4}
    out = {}
    for name, ndim in ndims.items():
        if name not in arrays:
            raise ValueError(f"arrays: {name!r} is missing")
        x = np.asarray(arrays[name], dtype=np.float64)
        if x.ndim != ndim:
            raise ValueError(f"arrays[{name!r}] must have {ndim} dimensions, got shape {x.shape}")
        out[name] = x
    return out


def _label(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def _circuit_records(arrays: dict):
    """``(key, circuit, layer, head, factors)`` of every single-model circuit.

    The direct path has layer = head = -1; a layer's OV sum has head = -1.
    """
    m = _model_matrices(arrays)
    W_E, W_U = m["W_E"], m["W_U"]
    n_layers, n_heads = m["W_Q"].shape[:2]
    yield "direct", "direct", -1, -1, direct_path_factors(W_E, W_U)
    for l in range(n_layers):
        for h in range(n_heads):
            yield (f"ov_{_label(l, h)}", "ov", l, h,
                   ov_factors(W_E, m["W_V"][l, h], m["W_O"][l, h], W_U))
    for l in range(n_layers):
        yield f"ov_sum_L{l}", "ov_sum", l, -1, layer_ov_sum_factors(W_E, m["W_V"][l], m["W_O"][l], W_U)
    for l in range(n_layers):
        for h in range(n_heads):
            yield f"qk_{_label(l, h)}", "qk", l, h, qk_factors(W_E, m["W_Q"][l, h], m["W_K"][l, h])


def _composition_records(arrays: dict):
    """``(key, kind, layer, head, src_layer, src_head, factors, L, R)`` of every pair.

    Later head h = (layer, head) reads from earlier head p = (src_layer, src_head), for
    every src_layer < layer.
    """
    m = _model_matrices(arrays)
    W_E, W_U = m["W_E"], m["W_U"]
    n_layers, n_heads = m["W_Q"].shape[:2]
    for kind in COMPOSITION_KINDS:
        for l2 in range(1, n_layers):
            for h in range(n_heads):
                Q, K, Vh, Oh = (m[n][l2, h] for n in ("W_Q", "W_K", "W_V", "W_O"))
                R = composition_reader(kind, Q, K, Vh, Oh)
                for l1 in range(l2):
                    for p in range(n_heads):
                        Vp, Op = m["W_V"][l1, p], m["W_O"][l1, p]
                        if kind == "K":
                            factors = k_composition_factors(W_E, Q, K, Vp, Op)
                        elif kind == "Q":
                            factors = q_composition_factors(W_E, Q, K, Vp, Op)
                        else:
                            factors = v_composition_factors(W_E, Vh, Oh, Vp, Op, W_U)
                        key = f"{kind.lower()}comp_{_label(l2, h)}_{_label(l1, p)}"
                        yield key, kind, l2, h, l1, p, factors, ov_matrix(Vp, Op), R


def circuit_table(arrays: dict, meta: dict) -> pd.DataFrame:
    """One row per circuit: direct path, each head's OV, each layer's OV sum, each head's QK.

    Columns: :data:`CIRCUIT_COLUMNS`. ``layer`` and ``head`` are 0-based; -1 marks "not
    applicable" (the direct path has layer = head = -1, an OV sum has head = -1), which
    keeps both columns integer. ``imaginary_share``: :func:`imaginary_share` of the
    spectrum. ``frobenius_norm`` is that of the V x V circuit.
    """
    rows = []
    for _key, circuit, layer, head, (left, right) in _circuit_records(arrays):
        lam = eigenvalues_low_rank(left, right)
        z = eigen_positivity(lam)
        rows.append({"variant": meta["variant"], "seed": meta["seed"], "circuit": circuit,
                     "layer": layer, "head": head, "positivity_real": z.real,
                     "positivity_imag": z.imag, "imaginary_share": imaginary_share(lam),
                     "frobenius_norm": float(np.linalg.norm(left @ right))})
    return pd.DataFrame(rows, columns=CIRCUIT_COLUMNS)


def composition_table(arrays: dict, meta: dict) -> pd.DataFrame:
    """One row per (kind, later head, earlier head): positivity of the composition term
    and the composition score against the random baseline of the same shapes.

    Columns: :data:`COMPOSITION_COLUMNS`; (layer, head) is the later head h and
    (src_layer, src_head) the earlier head p, all 0-based. A 1-layer model gives an
    empty table with the same columns.
    """
    _, _, D, d = _model_matrices(arrays)["W_Q"].shape
    baselines = {}
    rows = []
    for _key, kind, l2, h, l1, p, (left, right), L, R in _composition_records(arrays):
        if kind not in baselines:
            baselines[kind] = composition_baseline(D, d, kind=kind)[0]
        z = eigen_positivity(eigenvalues_low_rank(left, right))
        score = float(composition_score(L, R))
        rows.append({"variant": meta["variant"], "seed": meta["seed"], "kind": kind,
                     "layer": l2, "head": h, "src_layer": l1, "src_head": p,
                     "positivity_real": z.real, "positivity_imag": z.imag, "score": score,
                     "baseline": baselines[kind], "score_minus_baseline": score - baselines[kind]})
    return pd.DataFrame(rows, columns=COMPOSITION_COLUMNS)


def spectra(arrays: dict) -> dict[str, np.ndarray]:
    """Every circuit's V eigenvalues (complex), ordered by decreasing magnitude.

    Keys: ``direct``; ``ov_L{l}H{h}``; ``ov_sum_L{l}``; ``qk_L{l}H{h}``; and
    ``{k,q,v}comp_L{l2}H{h}_L{l1}H{p}`` (later head h first, earlier head p second).
    """
    out = {key: _spectrum_order(eigenvalues_low_rank(*factors))
           for key, _c, _l, _h, factors in _circuit_records(arrays)}
    for key, *_ignored, factors, _L, _R in _composition_records(arrays):
        out[key] = _spectrum_order(eigenvalues_low_rank(*factors))
    return out


# ----------------------------------------------------------------------- report


def _complex_cell(re: float, im: float) -> str:
    return f"{re:+.4f}{im:+.4f}i"


def _grid(frame: pd.DataFrame, rows: str, cols: str, value, row_label, col_label) -> str:
    """``frame`` pivoted to a text grid: one row per ``frame[rows]``, one column per
    ``frame[cols]`` (indices ascending, -1 = "not applicable" last), cells ``value(row)``."""
    grid = frame.assign(_cell=frame.apply(value, axis=1)).pivot(index=rows, columns=cols,
                                                                values="_cell")
    order = lambda ids: sorted(ids, key=lambda i: (i < 0, i))  # noqa: E731
    grid = grid.loc[order(grid.index), order(grid.columns)]
    grid.index = [row_label(i) for i in grid.index]
    grid.columns = [col_label(i) for i in grid.columns]
    return grid.to_string()


def format_circuits_report(arrays: dict, meta: dict) -> str:
    """Plain-text summary of one model's circuits, for the write-up.

    Direct-path positivity; each head's OV positivity per layer and each layer's OV
    sum; for models with two or more layers, the K-composition positivity grid (rows:
    earlier-layer head p, columns: later-layer head h) and the composition scores
    minus their random baseline for K, Q and V.
    """
    circuits = circuit_table(arrays, meta)
    n_layers, n_heads, D, d = np.shape(arrays["W_Q"])
    V = np.shape(arrays["W_E"])[0]
    cell = lambda r: _complex_cell(r["positivity_real"], r["positivity_imag"])  # noqa: E731
    lines = [
        f"Circuits of {meta['variant']}, seed {meta['seed']} "
        f"({n_layers} layer(s) x {n_heads} heads, V={V}, D={D}, d={d})",
        "Eigenvalue positivity sum(lambda)/sum(|lambda|) as real+imag i "
        "(+1 copies the token, -1 suppresses it). Heads are 0-based: L0H2 = layer 0, head 2.",
        "",
        "Direct path W_E W_U: " + cell(circuits[circuits["circuit"] == "direct"].iloc[0]),
        "",
        "OV circuits W_E W_V W_O W_U per head, and summed over each layer's heads:",
    ]
    ov = circuits[circuits["circuit"].isin(["ov", "ov_sum"])]
    lines.append(_grid(ov, "layer", "head", cell, lambda l: f"L{l}",
                       lambda h: "sum" if h < 0 else f"H{h}"))
    if n_layers < 2:
        return "\n".join(lines) + "\n"

    comp = composition_table(arrays, meta)
    for l2 in range(1, n_layers):
        for l1 in range(l2):
            pair = comp[(comp["layer"] == l2) & (comp["src_layer"] == l1)]
            k = pair[pair["kind"] == "K"]
            lines += ["", f"K-composition positivity, W_E W_Q^h (W_K^h)^T (W_E W_V^p W_O^p)^T "
                          f"(rows: L{l1} head p, columns: L{l2} head h):",
                      _grid(k, "src_head", "head", cell, lambda p, l1=l1: _label(l1, p),
                            lambda h, l2=l2: _label(l2, h))]
            for kind in COMPOSITION_KINDS:
                part = pair[pair["kind"] == kind]
                lines += ["", f"{kind}-composition score minus random baseline "
                              f"{part['baseline'].iloc[0]:.3f} (rows: L{l1} head p, columns: L{l2} head h):",
                          _grid(part, "src_head", "head", lambda r: f"{r['score_minus_baseline']:+.3f}",
                                lambda p, l1=l1: _label(l1, p), lambda h, l2=l2: _label(l2, h))]
    return "\n".join(lines) + "\n"
