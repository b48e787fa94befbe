"""Offset attribution: the terms sum to the logits, and hand-built heads give the profiles
their construction implies."""
import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.stages.offsets.offset_attribution import (
    FIRST_OCCURRENCE, component_groups, copy_sources, first_occurrence_feature, fit_scale,
    matching_algorithms, path_names, path_terms, profile_rows, program_logits, program_scores,
    self_effects, written_program)
from inductionlab.core.model import Intervention, ModelConfig, build_model

V, T = 26, 24


@pytest.mark.parametrize("config", [dict(n_layers=1), dict(n_layers=2), dict(n_layers=3),
                                    dict(n_layers=1, smear_layers=(0,)),
                                    dict(n_layers=2, smear_layers=(1,))])
def test_terms_sum_to_the_logits(config):
    model = build_model(ModelConfig(**config), seed=3)
    tokens = torch.randint(0, V, (6, T), generator=torch.Generator().manual_seed(0))
    terms = path_terms(model, tokens)
    assert len(terms) == (1 + model.cfg.n_heads) ** model.cfg.n_layers
    total = sum(t.sum(dim=2) for t in terms.values()) @ model.W_U
    assert torch.allclose(total, model(tokens), atol=1e-5)
    # nothing flows from a source after the query
    later = torch.ones(T, T, dtype=torch.bool).triu(1)
    assert all(t[:, later].abs().max() == 0 for t in terms.values())


def test_a_composed_term_is_its_definition_written_out():
    """L0H1>L1H2 of query i and source m: Σ_j A1[i, j] A0[j, m] · e_{x_m} W_OV^0 W_OV^1,
    computed here in the long way, per query, key and source."""
    model = build_model(ModelConfig(n_layers=2), seed=5)
    tokens = torch.randint(0, V, (3, T), generator=torch.Generator().manual_seed(1))
    _, cache = model.run_with_cache(tokens)
    a0, a1 = cache.pattern[0][:, 1], cache.pattern[1][:, 2]
    ov0 = model.W_V[0, 1] @ model.W_O[0, 1]
    ov1 = model.W_V[1, 2] @ model.W_O[1, 2]
    sent = model.W_E[tokens] @ ov0 @ ov1  # [B, T(source), D]
    expected = torch.einsum("bij,bjm,bmD->bimD", a1, a0, sent)
    term = path_terms(model, tokens)["L0H1>L1H2"]
    assert torch.allclose(term, expected, atol=1e-6)
    assert term.abs().max() > 1e-3  # not trivially zero


def test_path_names_read_earlier_layers_only():
    names = path_names(2, 2)
    assert names == [(), ("L0H0",), ("L0H1",), ("L1H0",), ("L0H0", "L1H0"), ("L0H1", "L1H0"),
                     ("L1H1",), ("L0H0", "L1H1"), ("L0H1", "L1H1")]


class FixedPatterns(Intervention):
    """Every head of layer l attends exactly ``offsets[l]`` back (queries too early for it
    attend to position 0)."""

    def __init__(self, offsets):
        self.offsets = offsets

    def pattern(self, layer, pattern):
        k = self.offsets[layer]
        fixed = torch.zeros_like(pattern)
        for i in range(pattern.shape[-1]):
            fixed[..., i, i - k if i >= k else 0] = 1.0
        return fixed


def _hand_built(n_layers, ov_sign=1.0, direct_sign=1.0):
    """Letters embedded one-hot in the first V dimensions, W_U = direct_sign · W_Eᵀ. A head
    has only d = 8 value dimensions, so each head of a layer carries 8 of the letters
    (identity V, ``ov_sign`` · identity O): together a layer's heads are one head with
    OV = ``ov_sign`` · identity on the letters (copying for +1)."""
    model = build_model(ModelConfig(n_layers=n_layers), seed=0)
    D, H, d = model.cfg.d_model, model.cfg.n_heads, model.cfg.d_head
    with torch.no_grad():
        model.W_E.zero_()
        model.W_E[:, :V] = torch.eye(V)
        model.W_U.copy_(direct_sign * model.W_E.T)
        model.W_V.zero_()
        model.W_O.zero_()
        for l in range(n_layers):
            for h in range(H):
                dims = list(range(h * d, min((h + 1) * d, V)))
                for j, dim in enumerate(dims):
                    model.W_V[l, h, dim, j] = 1.0
                    model.W_O[l, h, j, dim] = ov_sign
    return model


def _profile(model, tokens, offsets, component):
    effects = self_effects(model, tokens, FixedPatterns(offsets))
    rows = pd.DataFrame(profile_rows(effects, tokens, "task", {}, seed=0))
    mine = rows[(rows["component"] == component) & (rows["source"] == "offset")]
    return mine.sort_values("offset")["value"].to_numpy()


def _tokens(n=16):
    return torch.randint(0, V, (n, T), generator=torch.Generator().manual_seed(1))


def test_a_copying_head_attending_5_back_copies_at_offset_5():
    model = _hand_built(1)
    profile = _profile(model, _tokens(), {0: 5}, "L0")  # the layer's heads together
    assert profile[5] == pytest.approx(1 - 1 / V, abs=1e-6)
    assert np.argmax(profile) == 5
    assert np.allclose(profile[6:], 0.0)
    # before offset 5 only the queries too early to look 5 back (they look at position 0)
    assert np.all(profile[1:5] < 0.1 * profile[5])


def test_a_negative_direct_path_suppresses_the_current_letter_only():
    model = _hand_built(1, direct_sign=-1.0)
    direct = _profile(model, _tokens(), {0: 5}, "direct")
    assert direct[0] == pytest.approx(-(1 - 1 / V), abs=1e-6)
    assert np.allclose(direct[1:], 0.0)
    # the heads' terms are read through the same W_U: an anti-copying profile at 5
    assert _profile(model, _tokens(), {0: 5}, "L0")[5] < 0


def test_v_composition_adds_the_offsets():
    model = _hand_built(2)
    composed = _profile(model, _tokens(), {0: 1, 1: 2}, "L1:composed")
    assert np.argmax(composed) == 3 and composed[3] == pytest.approx(1 - 1 / V, abs=1e-6)
    embedding = _profile(model, _tokens(), {0: 1, 1: 2}, "L1:embedding")
    assert np.argmax(embedding) == 2


def test_groups_and_roles():
    names = ["direct", "L0H0", "L0H1", "L1H0", "L0H0>L1H0", "L0H1>L1H0"]
    groups = component_groups(names, {(0, 0): "previous_token+anti_copying", (1, 0): "copying"})
    assert groups["heads"] == names[1:]
    assert groups["L1:composed"] == ["L0H0>L1H0", "L0H1>L1H0"]
    assert groups["L1:embedding"] == ["L1H0"]
    assert groups["role:anti_copying"] == ["L0H0"]
    assert groups["role:copying"] == ["L1H0", "L0H0>L1H0", "L0H1>L1H0"]
    assert groups["role:anti_copying+direct"] == ["direct", "L0H0"]
    assert "role:anti_copying+direct" not in component_groups(names, {(1, 0): "copying"})


def test_copy_sources_find_the_first_and_the_nearest_copy():
    # A B A B A: at query 3 (B) the next letter A occurred at 0 and 2
    tokens = torch.tensor([[0, 1, 0, 1, 0]])
    sources = copy_sources(tokens)
    b, i, m = sources["first_copy_of_next"]
    assert list(zip(i, m)) == [(3, 0)]
    assert list(sources["nearest_copy_of_next"][2]) == [2]


def test_programs():
    tokens = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    w = np.zeros(8)
    w[5] = 1.0
    logits = program_logits(w, tokens, 10)
    assert logits[0, 5].argmax() == 3 and logits[0, 7].argmax() == 4
    assert logits[0, :5].abs().sum() == 0
    # the letter after the first earlier occurrence of the current one
    first = first_occurrence_feature(tokens, 10)
    assert first[0, 3].argmax() == 4 and first[0, 3].sum() == 1 and first[0, 2].sum() == 0
    weights, weak = written_program(
        [{"sign": 1, "offsets": [1, 2], "weights": [1.0, 0.5]}, {"sign": -1, "offsets": [0]},
         {"sign": 1, "weight": 0.5, "feature": FIRST_OCCURRENCE}], 8)
    assert list(weights[:3]) == [-1.0, 1.0, 0.5] and weak == 0.5


def test_program_scores_of_the_model_itself_and_of_uniform():
    tokens = _tokens(8)
    model_logits = torch.randn(8, T, V, generator=torch.Generator().manual_seed(2)) * 3
    mask = torch.ones(T - 1, dtype=torch.bool)
    same = program_scores(model_logits, model_logits.double(), tokens, mask, 0, "t")
    assert same["agreement"][0] == 1.0 and same["kl"][0] == pytest.approx(0.0, abs=1e-12)
    assert same["kl_explained"][0] == pytest.approx(1.0)
    flat = program_scores(model_logits, torch.zeros(8, T, V, dtype=torch.float64), tokens, mask, 0, "t")
    assert flat["kl_explained"][0] == pytest.approx(0.0, abs=1e-12)
    for value, low, high in same.values():
        assert low <= value + 1e-12 and value <= high + 1e-12


def test_fit_scale_recovers_a_known_scale():
    unscaled = torch.randn(4, 10, V, generator=torch.Generator().manual_seed(4)).double()
    model_logp = torch.log_softmax(2.5 * unscaled, dim=-1)
    assert fit_scale(model_logp, unscaled) == pytest.approx(2.5, rel=1e-3)


def test_algorithms_match_by_architecture():
    algorithms = {"a1": {"applies_to": {"n_layers": 1, "smeared": False}},
                  "a2": {"applies_to": {"n_layers": 1, "smeared": True}},
                  "a3": {"applies_to": {"n_layers": 2, "smeared": False}}}
    assert list(matching_algorithms(algorithms, {"n_layers": 1, "smear_layers": [0]})) == ["a2"]
    assert list(matching_algorithms(algorithms, {"n_layers": 1, "smear_layers": []})) == ["a1"]
    assert not matching_algorithms(algorithms, {"n_layers": 3, "smear_layers": []})
    twice = {**algorithms, "a4": {"applies_to": {"n_layers": 2, "smeared": False}}}
    with pytest.raises(ValueError, match="a3, a4"):
        matching_algorithms(twice, {"n_layers": 2, "smear_layers": []})


@pytest.mark.parametrize("part, reference", [("A", "trained"), ("C", "trained"), ("C", "handbuilt"),
                                             ("A", "handbuilt"), ("B", "handbuilt")])
def test_terms_of_a_model_under_its_training_clamp_sum_to_its_logits(part, reference):
    """A clamp that holds heads' outputs: each held head's output is split by the key its
    held vector sits at, and the terms still sum to the clamped model's logits."""
    from inductionlab.core.clamping import TrainingIntervention, clamp_for

    cfg = ModelConfig(n_layers=2)
    model, other = build_model(cfg, seed=3), build_model(cfg, seed=4)
    model.clamp = clamp_for(TrainingIntervention("clamp", part, reference), cfg,
                            other if reference == "trained" else None)
    tokens = torch.randint(0, V, (6, T), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        terms = path_terms(model, tokens)
        total = sum(t.sum(dim=2) for t in terms.values()) @ model.W_U
        assert torch.allclose(total, model(tokens), atol=1e-5)
        model.clamp = None
        assert not torch.allclose(total, model(tokens), atol=1e-3)  # the clamp is seen
