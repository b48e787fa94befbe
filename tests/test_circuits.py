import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from inductionlab.stages.circuits import circuits as C
from inductionlab.stages.circuits.eigen import eigenvalues_full
from inductionlab.core.model import ModelConfig, build_model
from inductionlab.core.weights import save_weights
from inductionlab.stages.circuits.commands import write_circuits

from helpers import spec_document


def _positivity_full(M):
    return C.eigen_positivity(eigenvalues_full(M))


def _positivity_low_rank(factors):
    return C.eigen_positivity(C.eigenvalues_low_rank(*factors))


def random_arrays(n_layers=2, n_heads=4, V=26, D=32, T=24, seed=0):
    """A weights.npz-like dict of Gaussian matrices, with the scale of nn.Linear init."""
    rng = np.random.default_rng(seed)
    d = D // n_heads
    g = lambda *shape: (rng.standard_normal(shape) / np.sqrt(D)).astype(np.float32)  # noqa: E731
    return {"W_E": g(V, D), "W_U": g(D, V), "W_Q": g(n_layers, n_heads, D, d),
            "W_K": g(n_layers, n_heads, D, d), "W_V": g(n_layers, n_heads, D, d),
            "W_O": g(n_layers, n_heads, d, D), "pos": g(T, d)}


META = {"variant": "two_layer", "seed": 5,
        "model_config": {"vocab_size": 26, "d_model": 32, "n_heads": 4, "n_layers": 2,
                         "seq_len": 24}}


def _assert_same_nonzero_spectrum(full, low_rank, k, rtol=1e-5):
    """The k largest eigenvalues of ``full`` match the k of ``low_rank``, as multisets."""
    scale = np.abs(full).max()
    top_full = list(full[np.argsort(-np.abs(full))[:k]])
    top_low = low_rank[np.argsort(-np.abs(low_rank))[:k]]
    # The remaining V - k eigenvalues of the full form are zero up to rounding.
    assert np.abs(full[np.argsort(-np.abs(full))[k:]]).max() < rtol * scale
    assert np.abs(low_rank[np.argsort(-np.abs(low_rank))[k:]]).max() == 0
    # Greedy nearest matching: robust to conjugate pairs listed in either order.
    for lam in top_low:
        j = int(np.argmin([abs(lam - mu) for mu in top_full]))
        assert abs(lam - top_full[j]) < rtol * scale, (lam, top_full[j])
        top_full.pop(j)


# ------------------------------------------------------------------ positivity


def _identity_ov_head(scale=2.5, seed=0):
    """W_E, W_V, W_O, W_U of a head (V=6, D=8, d=6) whose token-space OV is ``scale * I``.

    Tokens embed as orthonormal directions of R^8; W_V reads token t into head dim t,
    W_O writes head dim t back onto token t's direction (times ``scale``) and W_U reads
    the same directions.
    """
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    W_E = Q[:6]  # [V=6, D=8], orthonormal rows
    return W_E, W_E.T, scale * W_E, W_E.T  # W_E, W_V [8, 6], W_O [6, 8], W_U [8, 6]


def test_identity_ov_has_positivity_one_and_its_negation_minus_one():
    W_E, W_V, W_O, W_U = _identity_ov_head()
    ov = C.ov_circuit(W_E, W_V, W_O, W_U)
    np.testing.assert_allclose(ov, 2.5 * np.eye(6), atol=1e-12)
    assert _positivity_full(ov) == pytest.approx(1.0)
    assert _positivity_low_rank(C.ov_factors(W_E, W_V, W_O, W_U)) == pytest.approx(1.0)
    assert _positivity_low_rank(C.ov_factors(W_E, W_V, -W_O, W_U)) == pytest.approx(-1.0)


def test_rotation_gives_cos_theta_and_zero_imaginary_part():
    # OV = identity on 4 tokens and a rotation by theta on the other 2: eigenvalues
    # 1 (4x) and exp(+-i theta), so positivity = (4 + 2 cos theta) / (4 + 2), imag 0.
    theta = 2.0
    W_E, W_V, W_O, W_U = _identity_ov_head(scale=1.0)
    rot = np.eye(6)
    rot[4:, 4:] = [[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]
    factors = C.ov_factors(W_E, W_V, rot @ W_O, W_U)
    lam = C.eigenvalues_low_rank(*factors)
    assert np.abs(lam.imag).max() == pytest.approx(np.sin(theta))
    z = _positivity_low_rank(factors)
    assert z.real == pytest.approx((4 + 2 * np.cos(theta)) / 6)
    assert z.imag == pytest.approx(0.0, abs=1e-12)
    # The imaginary part is kept: on a spectrum that is not conjugate-symmetric it is not 0.
    z = C.eigen_positivity(np.array([1 + 1j, 2, 0]))
    assert z == pytest.approx((3 + 1j) / (np.sqrt(2) + 2))


def test_zero_spectrum_is_nan_and_bad_input_is_named():
    z = C.eigen_positivity(np.zeros(5))
    assert np.isnan(z.real) and np.isnan(z.imag)
    with pytest.raises(ValueError, match="eigenvalues"):
        C.eigen_positivity(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="W_V"):
        C.ov_circuit(np.zeros((6, 8)), np.zeros((2, 8, 4)), np.zeros((4, 8)), np.zeros((8, 6)))
    with pytest.raises(ValueError, match=r"W_E \(6, 8\) by W_Q \(7, 4\)"):
        C.qk_circuit(np.zeros((6, 8)), np.zeros((7, 4)), np.zeros((8, 4)))
    with pytest.raises(ValueError, match="W_U"):
        C.direct_path(np.zeros((6, 8)), np.zeros((8, 5)))
    with pytest.raises(ValueError, match="right"):
        C.eigenvalues_low_rank(np.zeros((6, 2)), np.zeros((3, 6)))


# ---------------------------------------------------- low-rank vs full forms


def _one_pair(arrays):
    """Float64 matrices of heads h = L1H2 (later) and p = L0H1 (earlier)."""
    a = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    h = {n: a[n][1, 2] for n in ("W_Q", "W_K", "W_V", "W_O")}
    p = {n: a[n][0, 1] for n in ("W_Q", "W_K", "W_V", "W_O")}
    return a["W_E"], a["W_U"], h, p


def _all_forms(arrays):
    """(name, factors, V x V matrix) of every kind of circuit, on one choice of heads."""
    W_E, W_U, h, p = _one_pair(arrays)
    hp = (W_E, h["W_Q"], h["W_K"], p["W_V"], p["W_O"])
    v = (W_E, h["W_V"], h["W_O"], p["W_V"], p["W_O"], W_U)
    return [
        ("ov", C.ov_factors(W_E, h["W_V"], h["W_O"], W_U), C.ov_circuit(W_E, h["W_V"], h["W_O"], W_U)),
        ("qk", C.qk_factors(W_E, h["W_Q"], h["W_K"]), C.qk_circuit(W_E, h["W_Q"], h["W_K"])),
        ("k", C.k_composition_factors(*hp), C.k_composition_term(*hp)),
        ("q", C.q_composition_factors(*hp), C.q_composition_term(*hp)),
        ("v", C.v_composition_factors(*v), C.v_composition_term(*v)),
    ]


@pytest.mark.parametrize("name", ["ov", "qk", "k", "q", "v"])
def test_low_rank_and_full_forms_agree(name):
    forms = {n: (f, M) for n, f, M in _all_forms(random_arrays(seed=1))}
    (left, right), M = forms[name]
    assert left.shape == (26, 8) and right.shape == (8, 26)
    full, low = eigenvalues_full(M), C.eigenvalues_low_rank(left, right)
    assert full.shape == low.shape == (26,)
    _assert_same_nonzero_spectrum(full, low, k=8)
    z_full, z_low = C.eigen_positivity(full), C.eigen_positivity(low)
    assert z_low.real == pytest.approx(z_full.real, rel=1e-5, abs=1e-9)
    assert z_low.imag == pytest.approx(z_full.imag, abs=1e-9)


def test_formulas_match_the_written_definitions():
    W_E, W_U, h, p = _one_pair(random_arrays(seed=2))
    written = W_E @ p["W_V"] @ p["W_O"]
    forms = {n: M for n, _f, M in _all_forms(random_arrays(seed=2))}
    np.testing.assert_allclose(forms["ov"], W_E @ h["W_V"] @ h["W_O"] @ W_U)
    np.testing.assert_allclose(forms["qk"], W_E @ h["W_Q"] @ h["W_K"].T @ W_E.T)
    np.testing.assert_allclose(forms["k"], W_E @ h["W_Q"] @ h["W_K"].T @ written.T)
    np.testing.assert_allclose(forms["q"], written @ h["W_Q"] @ h["W_K"].T @ W_E.T)
    np.testing.assert_allclose(forms["v"], written @ h["W_V"] @ h["W_O"] @ W_U)
    np.testing.assert_allclose(C.direct_path(W_E, W_U), W_E @ W_U)


def test_layer_ov_sum_is_the_sum_of_head_ov_circuits():
    a = {k: np.asarray(v, dtype=np.float64) for k, v in random_arrays(seed=3).items()}
    heads = sum(C.ov_circuit(a["W_E"], a["W_V"][1, h], a["W_O"][1, h], a["W_U"]) for h in range(4))
    np.testing.assert_allclose(C.layer_ov_sum(a["W_E"], a["W_V"][1], a["W_O"][1], a["W_U"]), heads)
    # k = H d = 32 >= V = 26: the low-rank function falls back to the V x V matrix.
    assert C.eigenvalues_low_rank(*C.layer_ov_sum_factors(a["W_E"], a["W_V"][1], a["W_O"][1],
                                                         a["W_U"])).shape == (26,)


def test_transposed_convention_gives_the_same_positivity():
    # The write-up's code uses nn.Linear weights, the transposes of these matrices.
    W_E, W_U, h, p = _one_pair(random_arrays(seed=4))
    ov = _positivity_full(W_U.T @ h["W_O"].T @ h["W_V"].T @ W_E.T)
    assert ov == pytest.approx(_positivity_low_rank(C.ov_factors(W_E, h["W_V"], h["W_O"], W_U)))
    kcomp_t = W_E @ p["W_V"] @ p["W_O"] @ h["W_K"] @ h["W_Q"].T @ W_E.T
    assert _positivity_full(kcomp_t) == pytest.approx(
        _positivity_low_rank(C.k_composition_factors(W_E, h["W_Q"], h["W_K"], p["W_V"], p["W_O"])))


# --------------------------------------------------------- induction circuit


def induction_arrays(seed=0):
    """A 2-layer model (V=8, D=32, 4 heads of d=8) with one hand-built induction pair.

    Tokens embed one-hot into dims 0..7. Previous-token head p = L0H1 copies dims 0..7
    into dims 8..15 (its OV is a shift). Induction head h = L1H2 queries with the
    token (W_Q reads dims 0..7) and keys with what p wrote (W_K reads dims 8..15), so
    its K-composition term with p is the identity. Every other head is random.
    """
    arrays = random_arrays(n_layers=2, n_heads=4, V=8, D=32, seed=seed)
    arrays = {k: v.astype(np.float64) * 0.1 for k, v in arrays.items()}
    eye = np.eye(8)
    W_E = np.zeros((8, 32))
    W_E[:, 0:8] = eye
    arrays["W_E"] = W_E
    arrays["W_U"] = W_E.T.copy()
    W_V, W_O = np.zeros((32, 8)), np.zeros((8, 32))
    W_V[0:8], W_O[:, 8:16] = eye, eye
    arrays["W_V"][0, 1], arrays["W_O"][0, 1] = W_V, W_O
    W_Q, W_K = np.zeros((32, 8)), np.zeros((32, 8))
    W_Q[0:8], W_K[8:16] = eye, eye
    arrays["W_Q"][1, 2], arrays["W_K"][1, 2] = W_Q, W_K
    return arrays


def test_hand_built_induction_head_is_found():
    arrays = induction_arrays()
    W_E = arrays["W_E"]
    h = {n: arrays[n][1, 2] for n in ("W_Q", "W_K", "W_V", "W_O")}
    p = {n: arrays[n][0, 1] for n in ("W_V", "W_O")}
    np.testing.assert_allclose(
        C.k_composition_term(W_E, h["W_Q"], h["W_K"], p["W_V"], p["W_O"]), np.eye(8), atol=1e-12)

    comp = C.composition_table(arrays, META)
    k = comp[comp.kind == "K"].set_index(["head", "src_head"])
    assert k.loc[(2, 1), "positivity_real"] == pytest.approx(1.0, abs=1e-9)
    # Both D x D factors are rank-8 partial identities that line up: score = 1/sqrt(8).
    score = k.loc[(2, 1), "score"]
    assert score == pytest.approx(1 / np.sqrt(8))
    mean, std = C.composition_baseline(32, 8)
    assert score > mean + 5 * std
    assert k.loc[(2, 1), "score_minus_baseline"] == pytest.approx(score - mean)
    # Pairs of random heads score like the baseline.
    random_pairs = k.drop(index=[(2, p) for p in range(4)] + [(h, 1) for h in range(4)],
                          errors="ignore")
    assert len(random_pairs) == 9
    assert abs(random_pairs["score"].mean() - mean) < 3 * std
    assert (random_pairs["score"] < score - 0.05).all()
    assert (random_pairs["positivity_real"].abs() < 0.9).all()


# --------------------------------------------------------------------- baseline


def test_baseline_is_computed_from_random_heads():
    mean, std = C.composition_baseline(32, 8, n_samples=2000, seed=0)
    assert 0.1 < mean < 0.3 and 0 < std < 0.1
    # The same quantity sampled independently, one head pair at a time.
    rng = np.random.default_rng(12345)
    g = rng.standard_normal
    scores = [C.composition_score(C.ov_matrix(g((32, 8)), g((8, 32))),
                                  C.composition_reader("K", g((32, 8)), g((32, 8)),
                                                       g((32, 8)), g((8, 32))))
              for _ in range(1000)]
    assert abs(np.mean(scores) - mean) < 5 * std / np.sqrt(1000)
    for seed in (1, 2):
        assert C.composition_baseline(32, 8, 2000, seed)[0] == pytest.approx(mean, abs=0.005)
    for kind in ("Q", "V"):  # same factor shapes, same distribution
        assert C.composition_baseline(32, 8, 2000, 0, kind)[0] == pytest.approx(mean, abs=0.005)
    assert C.composition_baseline(32, 8, 50, 7) == C.composition_baseline(32, 8, 50, 7)
    # Wider heads overlap more.
    assert C.composition_baseline(32, 16, 500, 0)[0] > mean


def test_composition_score_conventions():
    rng = np.random.default_rng(0)
    Q, K, Vh, Oh = (rng.standard_normal(s) for s in ((32, 8), (32, 8), (32, 8), (8, 32)))
    np.testing.assert_allclose(C.composition_reader("K", Q, K, Vh, Oh), K @ Q.T)
    np.testing.assert_allclose(C.composition_reader("Q", Q, K, Vh, Oh), Q @ K.T)
    np.testing.assert_allclose(C.composition_reader("V", Q, K, Vh, Oh), Vh @ Oh)
    L = rng.standard_normal((32, 32))
    R = rng.standard_normal((32, 32))
    assert C.composition_score(L, R) == pytest.approx(
        np.linalg.norm(L @ R) / (np.linalg.norm(L) * np.linalg.norm(R)))
    assert C.composition_score(3 * L, 0.5 * R) == pytest.approx(C.composition_score(L, R))
    with pytest.raises(ValueError, match="kind"):
        C.composition_reader("X", Q, K, Vh, Oh)


# ----------------------------------------------------------------------- tables


def test_tables_have_one_row_per_circuit():
    arrays = random_arrays(n_layers=2, n_heads=4)
    circ = C.circuit_table(arrays, META)
    assert list(circ.columns) == C.CIRCUIT_COLUMNS
    assert len(circ) == 1 + 2 * 4 + 2 + 2 * 4
    assert circ.circuit.value_counts().to_dict() == {"direct": 1, "ov": 8, "ov_sum": 2, "qk": 8}
    assert (circ.variant == "two_layer").all() and (circ.seed == 5).all()
    direct = circ[circ.circuit == "direct"].iloc[0]
    assert (direct["layer"], direct["head"]) == (-1, -1)
    assert (circ.loc[circ.circuit == "ov_sum", "head"] == -1).all()
    assert circ.positivity_real.between(-1, 1).all()
    assert circ.positivity_imag.abs().max() < 1e-9
    ov = circ[(circ.circuit == "ov") & (circ.layer == 1) & (circ["head"] == 3)].iloc[0]
    a = {k: v.astype(np.float64) for k, v in arrays.items()}
    M = C.ov_circuit(a["W_E"], a["W_V"][1, 3], a["W_O"][1, 3], a["W_U"])
    assert ov.positivity_real == pytest.approx(_positivity_full(M).real, rel=1e-6)
    assert ov.frobenius_norm == pytest.approx(np.linalg.norm(M))

    comp = C.composition_table(arrays, META)
    assert list(comp.columns) == C.COMPOSITION_COLUMNS
    assert len(comp) == 3 * 4 * 4
    assert set(comp.kind) == {"K", "Q", "V"}
    assert (comp.layer == 1).all() and (comp.src_layer == 0).all()
    np.testing.assert_allclose(comp.score_minus_baseline, comp.score - comp.baseline)

    spec = C.spectra(arrays)
    assert len(spec) == len(circ) + len(comp)
    assert {"direct", "ov_L0H2", "ov_sum_L0", "qk_L1H0", "kcomp_L1H0_L0H1", "qcomp_L1H3_L0H0",
            "vcomp_L1H1_L0H2"} <= set(spec)
    assert all(v.shape == (26,) and np.iscomplexobj(v) for v in spec.values())
    assert np.all(np.diff(np.abs(spec["ov_L0H2"])) <= 1e-12)  # decreasing magnitude
    assert C.eigen_positivity(spec["ov_L1H3"]).real == pytest.approx(ov.positivity_real)


def test_three_layer_model_has_every_earlier_pair():
    comp = C.composition_table(random_arrays(n_layers=3, n_heads=2), META)
    assert len(comp) == 3 * 2 * 2 * (1 + 2)
    pairs = set(zip(comp.layer, comp.src_layer))
    assert pairs == {(1, 0), (2, 0), (2, 1)}


def test_one_layer_model_has_an_empty_composition_table():
    arrays = random_arrays(n_layers=1)
    comp = C.composition_table(arrays, META)
    assert comp.empty and list(comp.columns) == C.COMPOSITION_COLUMNS
    assert len(C.circuit_table(arrays, META)) == 1 + 4 + 1 + 4
    assert not any("comp" in key for key in C.spectra(arrays))
    report = C.format_circuits_report(arrays, META)
    assert "OV circuits" in report and "composition" not in report


def test_report_labels_heads():
    arrays = induction_arrays()
    report = C.format_circuits_report(arrays, META)
    assert "Direct path" in report and "L0H2" in report and "L1H3" in report
    for kind in "KQV":
        assert f"{kind}-composition score minus random baseline" in report
    k_grid = report.split("K-composition positivity")[1].split("\n\n")[0]
    row = next(line for line in k_grid.splitlines() if line.startswith("L0H1"))
    assert row.split()[3] == "+1.0000+0.0000i"  # column L1H2


# ------------------------------------------------------------------------ files


def _spec(cfg):
    return spec_document("two_layer", 0, cfg.to_dict())


def test_write_circuits_round_trip(tmp_path):
    cfg = ModelConfig(n_layers=2)
    save_weights(tmp_path / "weights.npz", build_model(cfg, 0), _spec(cfg))
    out = [tmp_path / "out" / n for n in ("circuits.csv", "composition.csv", "eigenvalues.npz")]
    write_circuits(tmp_path / "weights.npz", *out)
    circ, comp = pd.read_csv(out[0]), pd.read_csv(out[1])
    assert list(circ.columns) == C.CIRCUIT_COLUMNS and len(circ) == 1 + 8 + 2 + 8
    assert list(comp.columns) == C.COMPOSITION_COLUMNS and len(comp) == 48
    assert (circ.variant == "two_layer").all()
    with np.load(out[2], allow_pickle=False) as f:
        assert len(f.files) == len(circ) + len(comp)
        assert f["kcomp_L1H0_L0H1"].shape == (26,)
    written = [p.name for p in (tmp_path / "out").iterdir() if not p.name.endswith(".sha256")]
    assert sorted(written) == sorted(p.name for p in out)


def test_missing_array_is_named(tmp_path):
    cfg = ModelConfig(n_layers=2)
    save_weights(tmp_path / "w.npz", build_model(cfg, 0), _spec(cfg))
    with np.load(tmp_path / "w.npz") as f:
        arrays = {k: f[k] for k in f.files if k != "W_O"}
    np.savez(tmp_path / "broken.npz", **arrays)
    out = [tmp_path / n for n in ("c.csv", "k.csv", "e.npz")]
    with pytest.raises(ValueError, match="'W_O' is missing"):
        write_circuits(tmp_path / "broken.npz", *out)
    assert not any(p.exists() for p in out)
    with pytest.raises(ValueError, match="'W_V' is missing"):
        C.circuit_table({k: v for k, v in random_arrays().items() if k != "W_V"}, META)


def test_import_does_not_load_torch():
    code = "import sys, inductionlab.stages.circuits.circuits; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_imaginary_share_tells_a_rotation_from_a_scaling():
    from inductionlab.stages.circuits.circuits import eigen_positivity, imaginary_share

    rotation = np.linalg.eigvals(np.array([[0.0, -1.0], [1.0, 0.0]]))  # eigenvalues ±i
    assert imaginary_share(rotation) == pytest.approx(1.0)
    assert abs(eigen_positivity(rotation).imag) < 1e-12  # the pair cancels in the positivity
    assert imaginary_share(np.linalg.eigvals(-2.0 * np.eye(3))) == 0.0
    assert np.isnan(imaginary_share(np.zeros(3)))
