import math

import pytest
import torch

from inductionlab.core.model import (AttentionOnlyTransformer, Intervention, ModelConfig,
                                build_model, sinusoidal_table, smear_keys)

VARIANTS = {
    "one_layer": ModelConfig(n_layers=1),
    "one_layer_smeared": ModelConfig(n_layers=1, smear_layers=(0,)),
    "two_layer": ModelConfig(n_layers=2),
    "two_layer_smeared_per_head": ModelConfig(n_layers=2, smear_layers=(1,), smear_form="per_head"),
}


@pytest.mark.parametrize("name,count", [("one_layer", 5760), ("one_layer_smeared", 5852),
                                        ("two_layer", 9856)])
def test_parameter_counts(name, count):
    assert build_model(VARIANTS[name], 0).n_params() == count


def test_parameter_shapes_follow_transformerlens():
    m = build_model(ModelConfig(n_layers=2), 0)
    assert m.W_E.shape == (26, 32) and m.W_U.shape == (32, 26)
    assert m.W_Q.shape == m.W_K.shape == m.W_V.shape == (2, 4, 32, 8)
    assert m.W_O.shape == (2, 4, 8, 32)


def test_initialisation_is_nn_linear_default():
    m = build_model(ModelConfig(n_layers=1), 0)
    assert m.W_E.abs().max() <= 1 / math.sqrt(26) and m.W_E.abs().max() > 0.9 / math.sqrt(26)
    assert m.W_Q.abs().max() <= 1 / math.sqrt(32) and m.W_Q.abs().max() > 0.9 / math.sqrt(32)
    assert torch.equal(m.W_Q, build_model(ModelConfig(n_layers=1), 0).W_Q)
    assert not torch.equal(m.W_Q, build_model(ModelConfig(n_layers=1), 1).W_Q)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_causality(name):
    torch.manual_seed(0)
    m = build_model(VARIANTS[name], 3)
    tokens = torch.randint(0, 26, (4, 24))
    base = m(tokens)
    for j in (1, 7, 23):
        changed = tokens.clone()
        changed[:, j] = (changed[:, j] + 1) % 26
        out = m(changed)
        assert torch.allclose(out[:, :j], base[:, :j], atol=0, rtol=0)
        assert not torch.allclose(out[:, j], base[:, j])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_residual_stream_never_carries_position(name):
    """With one repeated token every value vector is the same, so if no position
    enters the residual stream, every position's residual is the same."""
    m = build_model(VARIANTS[name], 5)
    tokens = torch.full((1, 24), 7)
    _, cache = m.run_with_cache(tokens)
    assert torch.equal(cache.resid[0], m.W_E[tokens])
    for resid in cache.resid:
        assert torch.allclose(resid, resid[:, :1].expand_as(resid), atol=1e-6)
    # ...while the attention patterns do depend on position
    assert not torch.allclose(cache.pattern[0][0, 0, 5, :6], torch.full((6,), 1 / 6))


def test_smearing_with_sigma_one_equals_no_smearing():
    plain = build_model(ModelConfig(n_layers=2), 0)
    smeared = AttentionOnlyTransformer(ModelConfig(n_layers=2, smear_layers=(0, 1)))
    state = dict(plain.state_dict())
    state.update({"smear_alpha.0": torch.full((4, 23), 100.0),
                  "smear_alpha.1": torch.full((4, 23), 100.0)})
    smeared.load_state_dict(state)
    tokens = torch.randint(0, 26, (3, 24), generator=torch.Generator().manual_seed(0))
    assert torch.equal(torch.sigmoid(torch.tensor(100.0)), torch.tensor(1.0))
    assert torch.allclose(smeared(tokens), plain(tokens), atol=1e-6)
    # and the smear intervention switch does the same on a model with ordinary alphas
    smeared.load_state_dict({**state, "smear_alpha.0": torch.ones(4, 23),
                             "smear_alpha.1": torch.ones(4, 23)})

    class NoSmear(Intervention):
        def use_smear(self, layer):
            return False

    assert torch.allclose(smeared(tokens, NoSmear()), plain(tokens), atol=1e-6)
    assert (smeared(tokens) - plain(tokens)).abs().max() > 1e-4  # the smear does act


def test_smeared_keys_hand_computed():
    k = torch.tensor([1.0, 2.0, 4.0]).view(1, 1, 3, 1)
    alpha = torch.tensor([[math.log(3.0), 0.0]])  # sigmoid: 0.75, 0.5
    out = smear_keys(k, alpha).flatten().tolist()
    assert out == pytest.approx([1.0, 0.75 * 2 + 0.25 * 1, 0.5 * 4 + 0.5 * 2])
    per_head = smear_keys(k, torch.tensor([[0.0]])).flatten().tolist()
    assert per_head == pytest.approx([1.0, 1.5, 3.0])


def test_smear_alpha_initialised_to_one_with_the_right_shape():
    assert torch.equal(build_model(VARIANTS["one_layer_smeared"], 0).smear_alpha["0"],
                       torch.ones(4, 23))
    assert build_model(VARIANTS["two_layer_smeared_per_head"], 0).smear_alpha["1"].shape == (4, 1)


def test_positional_tables():
    orig = sinusoidal_table(24, 8, "original")
    assert torch.equal(orig[0], torch.zeros(8))
    pos, j = 5, 3  # odd j: cos with the raw index in the exponent
    assert orig[pos, j].item() == pytest.approx(math.cos(pos / 10000 ** (2 * j / 8)), abs=1e-6)
    assert orig[pos, 2].item() == pytest.approx(math.sin(pos / 10000 ** (2 * 2 / 8)), abs=1e-6)
    std = sinusoidal_table(24, 8, "standard")
    assert std[0].tolist() == [0.0, 1.0] * 4
    assert std[pos, 3].item() == pytest.approx(math.cos(pos / 10000 ** (2 * 1 / 8)), abs=1e-6)
    assert std[pos, 2].item() == pytest.approx(math.sin(pos / 10000 ** (2 * 1 / 8)), abs=1e-6)
    assert torch.equal(build_model(ModelConfig(pos_encoding="standard"), 0).pos, std)


def test_learned_table_is_trained_and_fixed_tables_are_not():
    tokens = torch.randint(0, 26, (4, 24), generator=torch.Generator().manual_seed(0))
    learned = build_model(ModelConfig(pos_encoding="learned"), 0)
    assert torch.equal(learned.pos.detach(), sinusoidal_table(24, 8, "standard"))
    learned(tokens).square().mean().backward()
    assert learned.pos.grad is not None and learned.pos.grad.abs().sum() > 0
    assert learned.n_params() == 5760 + 24 * 8
    fixed = build_model(ModelConfig(), 0)
    assert "pos" not in dict(fixed.named_parameters()) and "pos" in fixed.state_dict()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_per_head_and_summed_paths_agree(name):
    m = build_model(VARIANTS[name], 1)
    tokens = torch.randint(0, 26, (5, 24), generator=torch.Generator().manual_seed(1))
    logits, cache = m.run_with_cache(tokens)
    assert torch.allclose(m(tokens), logits, atol=1e-5)
    assert torch.allclose(cache.resid[-1] @ m.W_U, logits)
    for l in range(m.cfg.n_layers):
        assert cache.pattern[l].shape == (5, 4, 24, 24)
        assert torch.allclose(cache.pattern[l].sum(-1), torch.ones(5, 4, 24), atol=1e-5)
        assert torch.allclose(cache.resid[l] + cache.head_out[l].sum(1), cache.resid[l + 1])


def test_layer_inputs_choose_the_streams_for_queries_keys_values():
    m = build_model(ModelConfig(n_layers=2), 2)
    tokens = torch.randint(0, 26, (2, 24), generator=torch.Generator().manual_seed(2))

    class KeysFromEmbedding(Intervention):
        def layer_inputs(self, layer, cache):
            x = cache.resid[layer]
            return (x, cache.embed, x) if layer == 1 else (x, x, x)

    class Identity(Intervention):
        def layer_inputs(self, layer, cache):
            return super().layer_inputs(layer, cache)

    assert torch.equal(m(tokens, Identity()), m(tokens))
    _, clean = m.run_with_cache(tokens)
    _, ablated = m.run_with_cache(tokens, KeysFromEmbedding())
    assert torch.equal(clean.pattern[0], ablated.pattern[0])
    assert not torch.allclose(clean.pattern[1], ablated.pattern[1])


def test_bad_model_configs_are_rejected():
    with pytest.raises(ValueError, match="not divisible"):
        ModelConfig(d_model=32, n_heads=3)
    with pytest.raises(ValueError, match="smear_layers"):
        ModelConfig(n_layers=1, smear_layers=(1,))
    with pytest.raises(ValueError, match="unknown model field"):
        ModelConfig.from_dict({"n_layer": 2})
    with pytest.raises(ValueError, match="exceeds"):
        build_model(ModelConfig(), 0)(torch.zeros(1, 25, dtype=torch.long))


def test_an_intervention_reading_head_outputs_gets_them_in_a_plain_forward():
    m = build_model(ModelConfig(n_layers=2), 6)
    tokens = torch.randint(0, 26, (2, 24), generator=torch.Generator().manual_seed(6))

    class KeysWithoutHead0(Intervention):
        needs_head_out = True

        def layer_inputs(self, layer, cache):
            x = cache.resid[layer]
            return (x, x - cache.head_out[0][:, 0], x) if layer == 1 else (x, x, x)

    logits, ablated = m.run_with_cache(tokens, KeysWithoutHead0())
    assert torch.allclose(m(tokens, KeysWithoutHead0()), logits, atol=1e-6)
    _, clean = m.run_with_cache(tokens)
    assert (ablated.pattern[1] - clean.pattern[1]).abs().max() > 1e-5  # the keys did change


def test_fused_attention_kernel_gives_the_explicit_result():
    tokens = torch.randint(0, 26, (6, 24), generator=torch.Generator().manual_seed(2))
    for cfg in (ModelConfig(n_layers=2), ModelConfig(smear_layers=(0,))):
        explicit, fused = build_model(cfg, 4), build_model(cfg, 4)
        fused.attention_form = "sdpa"
        out_e, out_f = explicit(tokens), fused(tokens)  # with gradients: the fused path
        assert torch.allclose(out_f, out_e, atol=1e-5)
        out_e.square().sum().backward()
        out_f.square().sum().backward()
        assert torch.allclose(fused.W_Q.grad, explicit.W_Q.grad, atol=1e-4)
