"""Interventions during training: clamps of the induction circuit's parts A, B, C to a
reference's activations, and layer 0 frozen at its initialisation."""
import re

import pandas as pd
import pytest
import torch

from handbuilt import InductionCircuitModel
from helpers import tiny_spec
from inductionlab.core.clamping import (COPY_GAIN, UNCLAMPED, TrainingIntervention, clamp_for,
                                        copying_directions, copying_values_out, induction_pattern,
                                        previous_token_pattern, values_out, with_intervention)
from inductionlab.core.loading import save_model
from inductionlab.core.model import ModelConfig, build_model, choose_attention
from inductionlab.core.spec import DerivedModel, Spec, make_spec, write_spec
from inductionlab.core.stacked import train_stacked
from inductionlab.core.train import train

from test_resume import _Killed, _killed_at, _state, assert_same_outputs

# the models a clamp applies to: two layers, one smeared layer, two layers smeared at the last
MODELS = {
    "two_layer": ModelConfig(vocab_size=26, d_model=32, n_heads=4, n_layers=2, seq_len=24),
    "one_layer_smeared": ModelConfig(vocab_size=26, d_model=32, n_heads=4, n_layers=1,
                                     seq_len=24, smear_layers=(0,)),
    "two_layer_smeared": ModelConfig(vocab_size=26, d_model=32, n_heads=4, n_layers=2,
                                     seq_len=24, smear_layers=(1,)),
}


def _clamp(part, reference="trained"):
    return TrainingIntervention("clamp", part, reference)


def _tokens(n=16, T=24, V=26, seed=0):
    return torch.randint(0, V, (n, T), generator=torch.Generator().manual_seed(seed))


def _scaled(model, factor=4.0):
    """``model`` with its weights scaled up, so that its patterns are far from uniform."""
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(factor)
    return model


# ---------------------------------------------------------------- known answers of the clamps

@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("part", "ABC")
@pytest.mark.parametrize("scale, dtype", [(1.0, torch.float32), (4.0, torch.float64)])
def test_a_clamp_to_the_models_own_activations_changes_no_logit(name, part, scale, dtype):
    """As initialised, in float32 against the pass training takes; with weights scaled up
    (patterns far from uniform, logits of tens) in float64, where float32's rounding of
    two summation orders (about 1e-4 on such logits) is out of the way."""
    torch.set_num_threads(1)
    cfg = MODELS[name]
    model = _scaled(build_model(cfg, 0), scale).to(dtype).eval()
    if dtype == torch.float32:
        choose_attention(model, torch.device("cpu"))  # the plain pass as training runs it
    other = _scaled(build_model(cfg, 1)).to(dtype).eval()
    with torch.no_grad():  # every model starts with the same smear: another one
        for alpha in other.smear_alpha.values():
            alpha.copy_(torch.randn(alpha.shape, generator=torch.Generator().manual_seed(1)))
    tokens = _tokens()
    clamp = clamp_for(_clamp(part), cfg, reference=model)
    with torch.no_grad():
        plain = model(tokens)
        clamp.hold(model, tokens)
        assert (model(tokens, clamp) - plain).abs().max() <= 1e-6
        # the same clamp to another model's activations does change them: it acts
        clamp = clamp_for(_clamp(part), cfg, reference=other)
        clamp.hold(model, tokens)
        assert (model(tokens, clamp) - plain).abs().max() > 1e-4


@pytest.mark.parametrize("part, constant, learning", [
    ("A", ["W_Q.0", "W_K.0", "W_V.0", "W_O.0"], ["W_Q.1", "W_K.1", "W_V.1", "W_O.1", "W_E"]),
    ("B", ["W_Q.1", "W_K.1"], ["W_V.1", "W_O.1", "W_Q.0", "W_V.0", "W_E"]),
    ("C", ["W_V.1", "W_O.1"], ["W_Q.1", "W_K.1", "W_V.0", "W_E"]),
])
def test_clamped_activations_are_constants_and_the_rest_learns(part, constant, learning):
    cfg = MODELS["two_layer"]
    model, reference = build_model(cfg, 0), build_model(cfg, 1)
    tokens = _tokens()
    clamp = clamp_for(_clamp(part), cfg, reference=reference)
    clamp.hold(model, tokens)
    logits = model(tokens, clamp)
    logits.logsumexp(-1).sum().backward()

    def grad(name):
        weight, _, layer = name.partition(".")
        g = getattr(model, weight).grad
        return g[int(layer)] if layer else g

    for name in constant:
        assert grad(name) is None or torch.count_nonzero(grad(name)) == 0, name
    for name in learning:
        assert torch.count_nonzero(grad(name)) > 0, name


def test_the_copy_clamp_is_the_models_pattern_times_the_references_vectors():
    cfg = MODELS["two_layer"]
    model, reference = build_model(cfg, 0), build_model(cfg, 1)
    tokens = _tokens(n=4)
    clamp = clamp_for(_clamp("C"), cfg, reference=reference)
    clamp.hold(model, tokens)
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, clamp)
        _, own = model.run_with_cache(tokens)
        _, ref = reference.run_with_cache(tokens)
    expected = own.pattern[1] @ values_out(reference, ref, 1)
    torch.testing.assert_close(cache.head_out[1], expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(cache.pattern[1], own.pattern[1], rtol=0, atol=0)


def test_the_smear_clamp_sets_the_gate():
    cfg = MODELS["one_layer_smeared"]
    model = build_model(cfg, 0)
    tokens = _tokens(n=2)
    handbuilt = clamp_for(_clamp("A", "handbuilt"), cfg)
    handbuilt.hold(model, tokens)
    keys = torch.randn(2, 4, 24, 8)
    gate = handbuilt.smear_gate(0, torch.sigmoid(model.smear_alpha["0"]))
    from inductionlab.core.model import mix_keys
    mixed = mix_keys(keys, gate)
    assert torch.equal(mixed[:, :, 1:], keys[:, :, :-1]) and torch.equal(mixed[:, :, 0], keys[:, :, 0])


# ---------------------------------------------------------------- the hand-built references

def test_the_handbuilt_previous_token_pattern_is_one_hot_on_i_minus_1():
    T = 7
    expected = torch.zeros(T, T)
    for i in range(T):
        expected[i, max(i - 1, 0)] = 1.0
    assert torch.equal(previous_token_pattern(T), expected)


def test_the_handbuilt_induction_pattern():
    tokens = torch.tensor([[0, 1, 2, 0, 1, 0]])
    pattern = induction_pattern(tokens)[0]
    # query 3 (token 0): key 1 follows a 0; query 4 (token 1): key 2; query 5 (token 0):
    # keys 1 and 4; queries 0-2 see no earlier copy and attend to themselves
    expected = torch.zeros(6, 6)
    expected[0, 0] = expected[1, 1] = expected[2, 2] = 1.0
    expected[3, 1] = expected[4, 2] = 1.0
    expected[5, 1] = expected[5, 4] = 0.5
    assert torch.equal(pattern, expected)


def test_the_handbuilt_copy_adds_the_gain_to_the_attended_token_only():
    cfg = MODELS["two_layer"]
    model = build_model(cfg, 0)
    u = copying_directions(model.W_U)
    torch.testing.assert_close(u @ model.W_U, torch.eye(26), rtol=0, atol=1e-5)
    tokens = _tokens(n=2)
    out = copying_values_out(model, tokens)  # [B, H, T, D]
    logits = out.sum(1) @ model.W_U.detach()  # all heads on key j
    torch.testing.assert_close(logits, COPY_GAIN * torch.nn.functional.one_hot(tokens, 26).float(),
                               rtol=0, atol=1e-4)


def _distinct_blocks(n=64, V=8, block=6, blocks=4):
    g = torch.Generator().manual_seed(0)
    return torch.stack([torch.randperm(V, generator=g)[:block] for _ in range(n)]).repeat(1, blocks)


def test_a_handbuilt_previous_token_clamp_keeps_the_handbuilt_circuit_solving_the_task():
    model = InductionCircuitModel()
    tokens = _distinct_blocks()
    clamp = clamp_for(_clamp("A", "handbuilt"), model.cfg)
    clamp.hold(model, tokens)

    def accuracy(intervention=None):
        with torch.no_grad():
            logits = model(tokens) if intervention is None else model(tokens, intervention)
        return (logits[:, 6:-1].argmax(-1) == tokens[:, 7:]).float().mean().item()

    assert accuracy() == 1.0  # every token after the first occurrence of its predecessor
    assert accuracy(clamp) == 1.0
    # a layer 0 that attends to the current token instead loses the circuit
    clamp.held = {"pattern": torch.eye(tokens.shape[1])}
    assert accuracy(clamp) < 0.3


@pytest.mark.parametrize("part", ["B", "C"])
def test_a_handbuilt_match_or_copy_keeps_the_handbuilt_circuit_solving_the_task(part):
    model = InductionCircuitModel()
    tokens = _distinct_blocks()
    clamp = clamp_for(_clamp(part, "handbuilt"), model.cfg)
    clamp.hold(model, tokens)
    with torch.no_grad():
        logits = model(tokens, clamp)
    assert torch.equal(logits[:, 6:-1].argmax(-1), tokens[:, 7:])
    # a copy that writes the wrong token (the one before), or a match on the wrong key
    # (the current one), breaks it
    if part == "C":
        clamp.held["values_out"] = clamp.held["values_out"].roll(1, dims=2)
    else:
        clamp.held["pattern"] = torch.eye(tokens.shape[1]).expand_as(clamp.held["pattern"])
    with torch.no_grad():
        logits = model(tokens, clamp)
    assert (logits[:, 6:-1].argmax(-1) == tokens[:, 7:]).float().mean() < 0.3


# ---------------------------------------------------------------- training

@pytest.mark.parametrize("compile", ["never", pytest.param("always", marks=pytest.mark.slow)])
def test_freezing_layer0_keeps_its_initial_weights_bit_for_bit(tmp_path, compile):
    spec = with_intervention(tiny_spec(steps=12, smear_layers=[0]),
                             {"kind": "freeze", "part": "layer0"})
    spec["train"]["compile"] = compile
    assert spec["train"]["weight_decay"] > 0  # decay would move them, were they not kept
    train(spec, tmp_path, log=lambda msg: None)
    initial = build_model(Spec.of(spec).model, 0).state_dict()
    final = _state(tmp_path / "model.pt")
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        assert torch.equal(final[name][0], initial[name][0]), name
        assert not torch.equal(final[name][1], initial[name][1]), name
    assert torch.equal(final["smear_alpha.0"], initial["smear_alpha.0"])
    assert not torch.equal(final["W_E"], initial["W_E"])


def _reference(tmp_path, spec, seed=0, folder=None):
    """A reference model.pt of ``spec``'s model, another model by name (untrained: what
    matters here is its shape), in ``folder`` (with its spec.json, as training writes it)."""
    folder = folder or tmp_path / f"reference{seed}"
    folder.mkdir(parents=True)
    document = {**spec, "seed": seed, "variant": "reference"}
    document["train"] = {k: v for k, v in spec["train"].items() if k != "intervention"}
    write_spec(folder / "spec.json", document)
    save_model(folder / "model.pt", _scaled(build_model(Spec.of(document).model, seed)), document)
    return folder / "model.pt"


def test_a_clamped_run_logs_both_losses_and_resumes_bit_identical(tmp_path):
    spec = with_intervention(tiny_spec(steps=40), {"kind": "clamp", "part": "C",
                                                   "reference": "trained"})
    reference = _reference(tmp_path, spec)
    full, killed = tmp_path / "full", tmp_path / "killed"
    lines = []
    train(spec, full, reference=reference, log=lines.append)
    assert "clamp C to trained" in lines[0] and "compiled" not in lines[0]
    log = pd.read_csv(full / "train_log.csv")
    assert set(UNCLAMPED.values()) <= set(log.columns)
    # the clamped model and its weights alone are two models: their losses differ
    assert (log["val_loss_all"] - log["val_loss_all_unclamped"]).abs().min() > 1e-3
    assert any(re.search(r"unclamped pred \d", line) for line in lines)
    with pytest.raises(_Killed):
        train(spec, killed, reference=reference, log=_killed_at(30))
    lines = []
    train(spec, killed, reference=reference, log=lines.append)
    assert any("resumed from step 20 of 40" in line for line in lines)
    assert_same_outputs(full, killed)


def test_a_run_with_layer0_frozen_resumes_bit_identical(tmp_path):
    spec = with_intervention(tiny_spec(steps=40), {"kind": "freeze", "part": "layer0"})
    train(spec, tmp_path / "full", log=lambda msg: None)
    with pytest.raises(_Killed):
        train(spec, tmp_path / "killed", log=_killed_at(30))
    lines = []
    train(spec, tmp_path / "killed", log=lines.append)
    assert any("resumed from step 20 of 40" in line for line in lines)
    assert_same_outputs(tmp_path / "full", tmp_path / "killed")


def test_a_changed_reference_starts_afresh(tmp_path):
    spec = with_intervention(tiny_spec(steps=40), {"kind": "clamp", "part": "B",
                                                   "reference": "trained"})
    reference = _reference(tmp_path, spec)
    with pytest.raises(_Killed):
        train(spec, tmp_path / "out", reference=reference, log=_killed_at(30))
    save_model(reference, build_model(Spec.of(spec).model, 0),
               {**spec, "train": tiny_spec()["train"]})
    lines = []
    train(spec, tmp_path / "out", reference=reference, log=lines.append)
    assert not any("resumed" in line for line in lines)


def test_an_unclamped_run_logs_no_unclamped_columns(tmp_path):
    train(with_intervention(tiny_spec(steps=4), {"kind": "freeze", "part": "layer0"}), tmp_path,
          log=lambda msg: None)
    assert not set(UNCLAMPED.values()) & set(pd.read_csv(tmp_path / "train_log.csv").columns)


# ---------------------------------------------------------------- the setting

def test_a_spec_without_an_intervention_is_unchanged():
    spec = tiny_spec()
    parsed = Spec.of(spec)
    assert parsed.train.intervention is None and "intervention" not in parsed.to_dict()["train"]
    clamped = Spec.of(with_intervention(spec, {"kind": "clamp", "part": "A", "reference": "handbuilt"}))
    assert clamped.train.intervention == TrainingIntervention("clamp", "A", "handbuilt")
    assert clamped.to_dict()["train"]["intervention"] == {"kind": "clamp", "part": "A",
                                                          "reference": "handbuilt"}
    assert with_intervention(clamped.to_dict(), None) == spec


def test_a_derived_model_carries_its_intervention():
    config = {"variants": {"two_layer": {"n_layers": 2}}, "train": dict(tiny_spec()["train"]),
              "task": tiny_spec()["task"]}
    derived = DerivedModel.of(config, "two_layer_frozen", "two_layer", {},
                              intervention={"kind": "freeze", "part": "layer0"})
    assert make_spec(config, "two_layer_frozen", 3, derived)["train"]["intervention"] == {
        "kind": "freeze", "part": "layer0"}
    assert "intervention" not in make_spec(config, "two_layer", 3)["train"]
    with pytest.raises(ValueError, match=r"^model 'two_layer_c': train\.intervention\.part: 'D'"):
        DerivedModel.of(config, "two_layer_c", "two_layer", {},
                        intervention={"kind": "clamp", "part": "D", "reference": "trained"})


@pytest.mark.parametrize("value, model, message", [
    ({"kind": "clamp", "part": "D", "reference": "trained"}, {},
     r"train\.intervention\.part: 'D'; allowed for clamp: A, B, C"),
    ({"kind": "clamp", "part": "A"}, {},
     r"train\.intervention\.reference: None; allowed for a clamp: trained, handbuilt"),
    ({"kind": "clamp", "part": "A", "reference": "other"}, {},
     r"train\.intervention\.reference: 'other'; allowed"),
    ({"kind": "pin", "part": "A"}, {}, r"train\.intervention\.kind: 'pin'; allowed: clamp, freeze"),
    ({"kind": "freeze", "part": "A"}, {}, r"train\.intervention\.part: 'A'; allowed for freeze: layer0"),
    ({"kind": "freeze", "part": "layer0", "reference": "trained"}, {},
     r"train\.intervention\.reference: 'trained'; a freeze .* takes no reference"),
    ({"kind": "freeze", "part": "layer0", "layer": 1}, {},
     r"train\.intervention: unknown key\(s\) \['layer'\]"),
    ("clamp", {}, r"train\.intervention: 'clamp' is not a mapping"),
    ({"kind": "clamp", "part": "B", "reference": "trained"}, {"n_layers": 1},
     r"train\.intervention\.part: 'B'; a 1-layer model without smeared keys has no induction"),
    ({"kind": "clamp", "part": "A", "reference": "handbuilt"}, {"n_layers": 1},
     r"train\.intervention\.part: 'A'; a 1-layer model without smeared keys"),
    ({"kind": "freeze", "part": "layer0"}, {"n_layers": 1, "smear_layers": [0]},
     r"train\.intervention\.part: 'layer0' of a 1-layer model"),
    ({"kind": "clamp", "part": "C", "reference": "handbuilt"}, {"d_model": 16},
     r"hand-built copy of part C needs d_model >= vocab_size \(here 16 < 26\)"),
])
def test_a_bad_setting_is_refused_in_one_line(value, model, message):
    spec = tiny_spec(**model)
    spec["train"]["intervention"] = value
    with pytest.raises(ValueError, match=message) as err:
        Spec.of(spec)
    assert "\n" not in str(err.value)


def test_a_bad_reference_is_refused_in_one_line(tmp_path):
    spec = with_intervention(tiny_spec(), {"kind": "clamp", "part": "A", "reference": "trained"})
    with pytest.raises(ValueError, match=r"'trained' needs the reference model file \(inductionlab train --reference"):
        train(spec, tmp_path / "out")
    with pytest.raises(ValueError, match=r"--reference .*takes no reference; leave it out"):
        train(tiny_spec(), tmp_path / "out", reference=tmp_path / "model.pt")
    other_seed = _reference(tmp_path, spec, seed=1)
    with pytest.raises(ValueError, match=r"is seed 1, not seed 0; give the reference model\.pt"):
        train(spec, tmp_path / "out", reference=other_seed)
    wider = tmp_path / "wider.pt"
    document = tiny_spec(d_model=64)
    save_model(wider, build_model(Spec.of(document).model, 0), document)
    with pytest.raises(ValueError, match=r"is another model than two_layer seed 0's \(d_model=64 "
                                         r"\(not 32\)\)"):
        train(spec, tmp_path / "out", reference=wider)
    clamped = tmp_path / "clamped.pt"
    save_model(clamped, build_model(Spec.of(spec).model, 0), spec)
    with pytest.raises(ValueError, match=r"was trained with an intervention \(clamp A to trained\)"):
        train(spec, tmp_path / "out", reference=clamped)


def test_stacked_training_refuses_an_intervention(tmp_path):
    specs = [with_intervention(tiny_spec(seed=s), {"kind": "freeze", "part": "layer0"}) for s in (0, 1)]
    with pytest.raises(ValueError, match=r"stacked training does not take; train its seeds one by one"):
        train_stacked(specs, [tmp_path / "a", tmp_path / "b"])


def test_the_train_command_takes_another_models_reference_and_refuses_a_wrong_one(tmp_path, capsys):
    """In the workflow's folders: the reference is another model's file, read on purpose."""
    from inductionlab.cli import main
    from inductionlab.records import read_record

    spec = with_intervention(tiny_spec(variant="clamped", steps=4),
                             {"kind": "clamp", "part": "B", "reference": "trained"})
    out = tmp_path / "results" / "clamped" / "seed0"
    out.mkdir(parents=True)
    write_spec(out / "spec.json", spec)
    other_seed = _reference(tmp_path, spec, seed=1, folder=tmp_path / "results" / "reference" / "seed1")
    command = ["train", "--spec", str(out / "spec.json"), "--out-dir", str(out), "--reference"]
    capsys.readouterr()
    assert main(command + [str(other_seed)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is seed 1, not seed 0" in err and "Traceback" not in err
    reference = _reference(tmp_path, spec, folder=tmp_path / "results" / "reference" / "seed0")
    assert main(command + [str(reference)]) == 0
    assert "clamp B to trained" in capsys.readouterr().err
    record = read_record(out / "model.pt")
    assert (record.identity.model, record.identity.seed) == ("clamped", 0)
    assert str(reference) in record.inputs  # what the clamped model was made from
    assert ("reference", 0) in {(c.model, c.seed) for c in record.covers}


# ---------------------------------------------------------------- a clamped model, analysed

def _logged_validation(folder) -> dict:
    return pd.read_csv(folder / "train_log.csv").iloc[-1].to_dict()


def _validation(spec):
    from inductionlab.core.data import validation_set

    parsed = Spec.of(spec)
    return validation_set(parsed.train.val_size, parsed.task, parsed.train.val_seed)


@pytest.mark.parametrize("part, reference, smeared", [
    ("A", "handbuilt", False), ("B", "handbuilt", False), ("C", "handbuilt", False),
    ("A", "handbuilt", True), ("A", "trained", False), ("B", "trained", False),
    ("C", "trained", False), ("A", "trained", True)])
def test_a_loaded_clamped_model_runs_under_its_clamp_as_it_trained(tmp_path, part, reference, smeared):
    """The training log's validation is the clamped model's: a loaded model gives it
    again, and with ``clamped=False`` the log's unclamped columns (its weights alone)."""
    from inductionlab.core.loading import load_model
    from inductionlab.core.metrics import evaluate

    model = {"n_layers": 1, "smear_layers": [0]} if smeared else {}
    spec = with_intervention(tiny_spec(steps=20, **model),
                             {"kind": "clamp", "part": part, "reference": reference})
    ref = _reference(tmp_path, spec) if reference == "trained" else None
    train(spec, tmp_path / "out", reference=ref, log=lambda msg: None)
    logged, val = _logged_validation(tmp_path / "out"), _validation(spec)
    loaded, _ = load_model(tmp_path / "out" / "model.pt")
    alone, _ = load_model(tmp_path / "out" / "model.pt", clamped=False)
    assert loaded.clamp is not None and alone.clamp is None
    clamped, own = evaluate(loaded, val), evaluate(alone, val)
    for key, column in UNCLAMPED.items():
        assert clamped[key] == pytest.approx(logged[f"val_{key}"], abs=1e-6)
        assert own[key] == pytest.approx(logged[column], abs=1e-6)
    with torch.no_grad():  # two different models
        assert (loaded(val.tokens) - alone(val.tokens)).abs().max() > 1e-4


def test_a_loaded_match_clamp_shows_the_handbuilt_pattern_in_every_chunk(tmp_path):
    """Analyses read the pattern from run_with_cache, which runs in chunks: the clamp is
    held on each chunk's own sequences."""
    from inductionlab.core.bounds import EVAL_CHUNK
    from inductionlab.core.loading import load_model

    spec = with_intervention(tiny_spec(steps=2), {"kind": "clamp", "part": "B",
                                                  "reference": "handbuilt"})
    train(spec, tmp_path, log=lambda msg: None)
    loaded, _ = load_model(tmp_path / "model.pt")
    tokens = _tokens(n=EVAL_CHUNK + 7)
    with torch.no_grad():
        _, cache = loaded.run_with_cache(tokens)
    expected = induction_pattern(tokens)[:, None].expand(-1, 4, -1, -1)
    torch.testing.assert_close(cache.pattern[1], expected, rtol=0, atol=0)
    assert not torch.equal(cache.pattern[0], cache.pattern[0][:1].expand_as(cache.pattern[0]))


def test_another_intervention_on_a_clamped_model_edits_what_the_clamp_leaves():
    """An ablation of a clamped model: the clamp first (it is the model), then the
    ablation; a copy clamp multiplies its vectors by the pattern the heads finally use."""
    from inductionlab.core.model import Intervention

    class UniformLastLayer(Intervention):
        def pattern(self, layer, pattern):
            if layer != 1:
                return pattern
            T = pattern.shape[-1]
            causal = torch.ones(T, T).tril()
            return (causal / causal.sum(-1, keepdim=True)).expand_as(pattern)

    class SilentHead0(Intervention):
        def head_out(self, layer, head_out):
            out = head_out.clone()
            out[:, 0] = 0.0 if layer == 1 else out[:, 0]
            return out

    cfg = MODELS["two_layer"]
    model, tokens = build_model(cfg, 0).eval(), _tokens(n=3)
    model.clamp = clamp_for(_clamp("C", "handbuilt"), cfg)
    with torch.no_grad():
        _, uniform = model.run_with_cache(tokens, UniformLastLayer())
        _, silent = model.run_with_cache(tokens, SilentHead0())
    vectors = copying_values_out(model, tokens)
    torch.testing.assert_close(uniform.head_out[1], uniform.pattern[1] @ vectors, rtol=0, atol=1e-6)
    causal = torch.ones(24, 24).tril()
    torch.testing.assert_close(uniform.pattern[1][0, 0], causal / causal.sum(-1, keepdim=True))
    assert torch.count_nonzero(silent.head_out[1][:, 0]) == 0
    torch.testing.assert_close(silent.head_out[1][:, 1:], (silent.pattern[1] @ vectors)[:, 1:],
                               rtol=0, atol=1e-6)


def test_a_model_clamped_to_a_trained_reference_names_it_and_refuses_another(tmp_path):
    from inductionlab.core.loading import BadInput, load_model

    spec = with_intervention(tiny_spec(steps=4), {"kind": "clamp", "part": "A",
                                                  "reference": "trained"})
    reference = _reference(tmp_path, spec)
    train(spec, tmp_path / "out", reference=reference, log=lambda msg: None)
    payload = torch.load(tmp_path / "out" / "model.pt", weights_only=True)
    assert payload["reference"]["path"] == "../reference0/model.pt"
    load_model(tmp_path / "out" / "model.pt")
    save_model(reference, build_model(Spec.of(spec).model, 3),
               {**spec, "variant": "reference", "train": tiny_spec()["train"]})
    with pytest.raises(BadInput, match=r"its clamp's reference .*reference0/model\.pt is not the "
                                       r"file it trained with \(its SHA-256 differs\)") as err:
        load_model(tmp_path / "out" / "model.pt")
    assert "\n" not in str(err.value) and "retrain" in str(err.value)
    reference.unlink()
    with pytest.raises(BadInput, match=r"its clamp's reference .* is missing"):
        load_model(tmp_path / "out" / "model.pt")
    assert load_model(tmp_path / "out" / "model.pt", clamped=False)[0].clamp is None
