"""OV and QK circuit heatmaps of hand-built and random weights."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from figurecheck import legibility_problems
from handbuilt import ShiftCopyModel
from inductionlab.formatting import plots
from inductionlab.stages.circuits import circuits
from inductionlab.stages.circuits import plots as cp
from inductionlab.cli import main
from inductionlab.core.model import ModelConfig, build_model
from inductionlab.core.weights import load_weights, save_weights

from helpers import spec_document


def spec(variant="hand", seed=0):
    return spec_document(variant, seed, {})


def legible(fig):
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert min(sizes) >= 7
    w, h = fig.get_size_inches()
    assert w <= 7.0 and h <= 9.0
    return legibility_problems(fig)


def copying_weights(path, gain):
    """One head that copies (gain > 0) or anti-copies (gain < 0) the attended token:
    OV circuit = gain · I; QK circuit = 3 · I (attends to its own token)."""
    model = ShiftCopyModel(shift=5, gain=gain)
    with torch.no_grad():
        model.W_Q.copy_(3 * torch.eye(26)[None, None])
        model.W_K.copy_(torch.eye(26)[None, None])
    save_weights(path, model, spec())
    return load_weights(path)


@pytest.mark.parametrize("gain, text", [(2.0, "+1.00"), (-2.0, "−1.00")])  # a true minus sign
def test_copying_head_is_titled_with_its_positivity(tmp_path, gain, text):
    arrays, meta = copying_weights(tmp_path / "weights.npz", gain)
    for kind, expected in (("ov", text), ("qk", "+1.00")):
        fig = cp.circuit_figure(cp.head_circuits(arrays, kind), cp.positivities(arrays, meta, kind),
                                kind, "hand seed 0:")
        ax = fig.axes[0]
        assert ax.get_title().startswith(f"L0H0 {kind.upper()}, positivity {expected}")
        # the panel is the circuit itself (scaled by its largest |entry|): ±identity
        image = np.asarray(ax.images[0].get_array())
        np.testing.assert_allclose(image, np.sign(gain if kind == "ov" else 1) * np.eye(26), atol=1e-6)
        assert [t.get_text() for t in ax.get_xticklabels()] == list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        assert legible(fig) == []
        plt.close(fig)


def test_panels_are_the_circuits_of_circuits_py(tmp_path):
    model = build_model(ModelConfig(n_layers=2), 1)
    save_weights(tmp_path / "w.npz", model, spec("two_layer", 1))
    arrays, meta = load_weights(tmp_path / "w.npz")
    ov = cp.head_circuits(arrays, "ov")
    qk = cp.head_circuits(arrays, "qk")
    assert sorted(ov) == [(l, h) for l in range(2) for h in range(4)]
    np.testing.assert_allclose(ov[1, 2], circuits.ov_circuit(arrays["W_E"], arrays["W_V"][1, 2],
                                                             arrays["W_O"][1, 2], arrays["W_U"]), atol=1e-7)
    np.testing.assert_allclose(qk[0, 3], circuits.qk_circuit(arrays["W_E"], arrays["W_Q"][0, 3],
                                                             arrays["W_K"][0, 3]), atol=1e-7)
    table = circuits.circuit_table(arrays, meta)
    row = table[(table["circuit"] == "ov") & (table["layer"] == 1) & (table["head"] == 2)].iloc[0]
    assert cp.positivities(arrays, meta, "ov")[1, 2] == pytest.approx(row["positivity_real"])


@pytest.mark.slow
@pytest.mark.parametrize("n_layers", [1, 2])
def test_circuit_figures_are_legible(tmp_path, n_layers):
    model = build_model(ModelConfig(n_layers=n_layers), 0)
    save_weights(tmp_path / "w.npz", model, spec("m", 0))
    arrays, meta = load_weights(tmp_path / "w.npz")
    for kind in ("ov", "qk"):
        fig = cp.circuit_figure(cp.head_circuits(arrays, kind), cp.positivities(arrays, meta, kind),
                                kind, "m seed 0:")
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert len(titles) == 4 * n_layers
        assert all(", positivity " in t for t in titles)
        colorbars = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
        assert len(colorbars) == 1 and colorbars[0].get_ylabel()
        assert legible(fig) == []
        plt.close(fig)


def test_cli_writes_ov_and_qk(tmp_path):
    model = build_model(ModelConfig(n_layers=1), 0)
    save_weights(tmp_path / "w.npz", model, spec("m", 0))
    assert main(["circuit-figures", "--weights", str(tmp_path / "w.npz"), "--out-dir", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["ov.png", "qk.png"]
    for name in ("ov.png", "qk.png"):
        width, height, dpi = plots.png_size(tmp_path / "out" / name)
        assert dpi and width <= 7.0 and height <= 9.0
