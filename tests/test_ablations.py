import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import SCHEMA, stage_settings, tiny_spec
from handbuilt import InductionCircuitModel
from inductionlab.core.ablation_plan import (BASELINE, KINDS, Ablation, check_fits, expand_entries,
                                        expand_entry)
from inductionlab.stages.ablations.ablations import (ABLATIONS, AblatedModel, HeadAblation, StreamChoice,
                                                    ablation_table, head_means)
from inductionlab.stages.behaviour.behaviour import evaluation_samples
from inductionlab.cli import main
from inductionlab.config import ConfigError, validate_config
from inductionlab.core.data import TaskConfig, control_sample
from inductionlab.core.task_kinds import TaskSample
from inductionlab.core.metrics import task_metrics
from inductionlab.core.model import AttentionOnlyTransformer, ModelConfig, build_model
from inductionlab.core.loading import save_model

MODELS = {
    "one_layer": ModelConfig(n_layers=1),
    "one_layer_smeared": ModelConfig(n_layers=1, smear_layers=(0,)),
    "two_layer": ModelConfig(n_layers=2),
}
ALL_KINDS = [{"kind": k} for k in KINDS]


def _tokens(n=6, seed=0, vocab=26):
    return torch.randint(0, vocab, (n, 24), generator=torch.Generator().manual_seed(seed))


def _by_name(ablations):
    return {a.name: a for a in ablations}


# ---------------------------------------------------------------- exactness

@pytest.mark.parametrize("name", MODELS)
def test_no_ablation_is_the_model_exactly(name):
    model = build_model(MODELS[name], 1)
    tokens = _tokens()
    with torch.no_grad():
        assert torch.equal(AblatedModel(model)(tokens), model(tokens))
        logits, cache = AblatedModel(model, BASELINE).run_with_cache(tokens)
        clean_logits, clean = model.run_with_cache(tokens)
    assert torch.equal(logits, clean_logits)
    assert all(torch.equal(a, b) for a, b in zip(cache.pattern, clean.pattern))


def test_both_streams_from_the_residual_is_the_model_exactly():
    model = build_model(MODELS["two_layer"], 2)
    tokens = _tokens()
    qk_full = _by_name(expand_entry({"kind": "composition_table"}, model.cfg))["qk_full_L1"]
    with torch.no_grad():
        assert torch.equal(AblatedModel(model, qk_full)(tokens), model(tokens))


@pytest.mark.parametrize("name", ["one_layer", "one_layer_smeared"])
def test_zero_ablating_every_head_of_a_one_layer_model_leaves_the_direct_path(name):
    model = build_model(MODELS[name], 3)
    tokens = _tokens()
    every_head = HeadAblation([(0, h) for h in range(model.cfg.n_heads)])
    with torch.no_grad():
        assert torch.equal(model(tokens, every_head), model.W_E[tokens] @ model.W_U)


# ---------------------------------------------------------------- the hand-built circuit

@pytest.fixture(scope="module")
def circuit_table():
    """Every ablation of the hand-built induction circuit, on blocks of distinct letters."""
    torch.set_num_threads(1)
    model = InductionCircuitModel()
    task = TaskConfig(vocab_size=8)
    sample, distinct = evaluation_samples(task, 128, 0)
    ablations = expand_entries(ALL_KINDS, model.cfg)
    frame, arrays = ablation_table(model, ablations, task, TaskSample(distinct, sample.sources), distinct,
                                   ["ABCDEFABCDEF", "BADCFEBADCFE"], local_window=3)
    return frame.set_index("ablation"), arrays


def test_handbuilt_circuit_is_an_induction_circuit(circuit_table):
    frame, _ = circuit_table
    clean = frame.loc["baseline"]
    # A content-only induction head attends to every key after an earlier copy of the
    # current token: prefix matching ~1, and on random blocks most of its attention is on
    # the target's copies (a block with a repeated letter adds keys that are not copies).
    assert clean["prefix_matching_L1H0"] > 0.99
    assert clean["induction_L1H0"] > 0.8
    assert clean["induction_chance_L1"] == pytest.approx(0.12664, abs=1e-4)
    # every prediction after the first occurrence of its predecessor: 17 of 18
    assert clean["acc_pred"] == pytest.approx(17 / 18, abs=1e-6)
    assert clean["suite_acc"] == 1.0


@pytest.mark.parametrize("name", ["qk_from_embedding_L1", "plus_q_L1", "remove_L0H0_from_keys_L1",
                                  "zero_L0H0", "mean_L0H0"])
def test_removing_k_composition_destroys_the_circuit(circuit_table, name):
    frame, _ = circuit_table
    row = frame.loc[name]
    assert row["status"] == "ok"
    assert row["prefix_matching_L1H0"] < 0.3 and row["induction_L1H0"] < 0.3
    assert row["acc_pred"] < 0.2 and row["suite_acc"] < 0.5
    assert row["delta_acc_pred"] < -0.7
    # the loss rise with its paired bootstrap interval over sequences, far from zero
    assert 0 < row["delta_loss_all_low"] <= row["delta_loss_all"] <= row["delta_loss_all_high"]


def test_the_baseline_loss_rise_is_zero_with_no_spread(circuit_table):
    frame, _ = circuit_table
    base = frame.loc["baseline"]
    assert (base["delta_loss_all"], base["delta_loss_all_low"], base["delta_loss_all_high"]) == (0, 0, 0)


@pytest.mark.parametrize("name", ["plus_k_L1", "qk_full_L1", "remove_L0H1_from_keys_L1",
                                  "remove_L0H0_from_queries_L1", "values_from_embedding_L1",
                                  "zero_L0H1", "mean_L0H1", "zero_L1H1",
                                  "zero_frozen_patterns_L0H0"])
def test_removing_an_unrelated_path_leaves_the_circuit(circuit_table, name):
    # the queries and values of the induction head read only the token, head L0H1 writes
    # where nothing reads, and with patterns frozen the previous-token head (which acts
    # only through the induction head's keys) has nothing left to remove
    frame, arrays = circuit_table
    row, clean = frame.loc[name], frame.loc["baseline"]
    for col in ("loss_all", "acc_pred", "suite_acc", "induction_L1H0", "prefix_matching_L1H0"):
        assert row[col] == pytest.approx(clean[col], abs=1e-5), col
    assert np.allclose(arrays[name][1], arrays["baseline"][1], atol=1e-5)


def test_frozen_patterns_remove_only_the_ov_part(circuit_table):
    frame, arrays = circuit_table
    row = frame.loc["zero_frozen_patterns_L1H0"]
    assert row["acc_pred"] == 0  # the copying is gone: the direct path predicts the current token
    assert row["induction_L1H0"] == pytest.approx(frame.loc["baseline", "induction_L1H0"])
    assert np.array_equal(arrays["zero_frozen_patterns_L1H0"], arrays["baseline"])


def test_stripes_are_saved_present_and_gone(circuit_table):
    _, arrays = circuit_table
    offset = lambda p: np.diagonal(p, offset=-5, axis1=-2, axis2=-1)[..., 1:].mean(-1)  # noqa: E731
    assert arrays["baseline"].shape == (2, 2, 24, 24)
    assert offset(arrays["baseline"][1, 0]) > 0.55
    assert offset(arrays["qk_from_embedding_L1"][1, 0]) < 0.2
    assert "smear_off" not in arrays  # skipped: nothing ran, nothing saved


# ---------------------------------------------------------------- the content part left

LEFT = "induction_content_left_L1H0"


@pytest.fixture(scope="module")
def circuit_content():
    """The hand-built circuit's K-composition ablations with the positional control."""
    torch.set_num_threads(1)
    model = InductionCircuitModel()
    task = TaskConfig(vocab_size=8)
    n = 256
    sample, distinct = evaluation_samples(task, n, 0)
    ablations = expand_entries([{"kind": "composition_table"}, {"kind": "remove_head_from_keys"},
                                {"kind": "smear_off"}], model.cfg)
    frame, _ = ablation_table(model, ablations, task, TaskSample(distinct, sample.sources), distinct,
                              ["ABCDEFABCDEF"], local_window=3, control=control_sample(n, task, 0),
                              seed=0)
    return frame.set_index("ablation")


def _left(row):
    return row[LEFT], row[f"{LEFT}_low"], row[f"{LEFT}_high"]


def test_the_induction_head_has_a_content_part_to_lose(circuit_content):
    base = circuit_content.loc["baseline"]
    # score − control: about chance on random letters, so well below the score itself
    assert 0.5 < base["induction_content_L1H0"] < base["induction_L1H0"] - 0.05
    assert {"induction_content_L1H1", f"{LEFT}_low", f"{LEFT}_high",
            "induction_content_left_L1H1"} <= set(circuit_content.columns)
    # layer 0 reads no earlier head: nothing to take out of its keys
    assert not any(c.startswith("induction_content") and "_L0" in c for c in circuit_content.columns)


def test_removing_the_previous_token_head_from_the_keys_leaves_no_content(circuit_content):
    share, low, high = _left(circuit_content.loc["remove_L0H0_from_keys_L1"])
    assert share == pytest.approx(0.0, abs=0.05)
    assert low <= share <= high <= 0.5


def test_removing_an_idle_head_from_the_keys_leaves_all_the_content(circuit_content):
    share, low, high = _left(circuit_content.loc["remove_L0H1_from_keys_L1"])
    assert share == pytest.approx(1.0, abs=1e-4)
    assert 0.5 < low <= share <= high


def test_keys_from_the_embedding_leave_at_most_half_the_content(circuit_content):
    for name in ("plus_q_L1", "qk_from_embedding_L1"):
        share, low, high = _left(circuit_content.loc[name])
        assert low <= share <= high <= 0.5, name
    share, low, high = _left(circuit_content.loc["plus_k_L1"])  # keys keep the composition
    assert 0.5 < low <= share <= high


def test_the_share_left_is_paired_with_the_baseline(circuit_content):
    # the baseline and an ablation that changes nothing resample the same sequences: their
    # shares are 1 in every replicate, where independent resamples would spread
    assert _left(circuit_content.loc["baseline"]) == (1.0, 1.0, 1.0)
    assert _left(circuit_content.loc["qk_full_L1"]) == (1.0, 1.0, 1.0)


def test_a_skipped_ablation_leaves_no_share(circuit_content):
    row = circuit_content.loc["smear_off"]
    assert row["status"].startswith("skipped") and all(np.isnan(_left(row)))
    assert np.isnan(row["induction_content_L1H0"])


def test_without_the_control_there_is_no_content_part(circuit_table):
    frame, _ = circuit_table
    assert not any(c.startswith("induction_content") for c in frame.columns)


# ---------------------------------------------------------------- each mechanism

def test_frozen_patterns_freeze_every_layer_and_zero_the_head():
    model = build_model(MODELS["two_layer"], 4)
    tokens = _tokens()
    ablated = AblatedModel(model, Ablation("z", "zero_heads_frozen_patterns", layer=0, head=2))
    with torch.no_grad():
        logits, cache = ablated.run_with_cache(tokens)
        clean_logits, clean = model.run_with_cache(tokens)
    assert all(torch.equal(a, b) for a, b in zip(cache.pattern, clean.pattern))
    assert (cache.head_out[0][:, 2] == 0).all()
    assert not torch.allclose(logits, clean_logits)
    # unfrozen, zeroing the same head changes the layer-1 patterns
    with torch.no_grad():
        _, zeroed = AblatedModel(model, Ablation("z", "zero_heads", layer=0, head=2)).run_with_cache(tokens)
    assert not torch.allclose(zeroed.pattern[1], clean.pattern[1])


def test_ablations_sharing_a_store_of_clean_patterns_give_what_each_gives_alone():
    model = build_model(MODELS["two_layer"], 4)
    tokens, other = _tokens(), _tokens(7)
    store: dict = {}
    with torch.no_grad():
        for head in (1, 2):
            ablation = Ablation("z", "zero_heads_frozen_patterns", layer=0, head=head)
            shared = AblatedModel(model, ablation, clean=store)(tokens)
            assert torch.equal(shared, AblatedModel(model, ablation)(tokens))
        assert len(store) == 1  # one pass for the second ablation's patterns: none
        frozen = AblatedModel(model, ablation, clean=store)(other)  # other tokens: their own
        assert len(store) == 2 and torch.equal(frozen, AblatedModel(model, ablation)(other))


def test_mean_ablation_uses_each_heads_mean_per_position():
    model = build_model(MODELS["two_layer"], 5)
    tokens = _tokens(32)
    means = head_means(model, tokens, batch_size=10)
    with torch.no_grad():
        _, clean = model.run_with_cache(tokens)
        assert torch.allclose(means, torch.stack(clean.head_out).mean(1), atol=1e-6)
        _, cache = AblatedModel(model, Ablation("m", "mean_heads", layer=1, head=3),
                                means).run_with_cache(tokens[:4])
    assert torch.equal(cache.head_out[1][:, 3], means[1, 3].expand(4, -1, -1))
    assert torch.equal(cache.head_out[1][:, :3], clean.head_out[1][:4, :3])


def test_removing_the_only_writing_head_from_keys_is_keys_from_embedding():
    model = build_model(MODELS["two_layer"], 6)
    with torch.no_grad():
        model.W_O[0, [0, 1, 3]] = 0.0  # only head 2 of layer 0 writes to the residual stream
        model.W_O[0, 2] *= 10.0  # and it writes enough to matter
    tokens = _tokens()
    table = _by_name(expand_entries([{"kind": "composition_table"},
                                     {"kind": "remove_head_from_keys"},
                                     {"kind": "remove_head_from_queries"}], model.cfg))
    with torch.no_grad():
        run = lambda name: AblatedModel(model, table[name])(tokens)  # noqa: E731
        assert torch.allclose(run("remove_L0H2_from_keys_L1"), run("plus_q_L1"), atol=1e-5)
        assert torch.allclose(run("remove_L0H2_from_queries_L1"), run("plus_k_L1"), atol=1e-5)
        assert torch.allclose(run("remove_L0H0_from_keys_L1"), model(tokens), atol=1e-5)
        assert (run("plus_q_L1") - model(tokens)).abs().max() > 1e-3


def test_values_from_embedding_keeps_the_patterns_and_changes_the_output():
    model = build_model(MODELS["two_layer"], 7)
    tokens = _tokens()
    ablated = AblatedModel(model, expand_entry({"kind": "values_from_embedding"}, model.cfg)[0])
    with torch.no_grad():
        logits, cache = ablated.run_with_cache(tokens)
        clean_logits, clean = model.run_with_cache(tokens)
        # by hand: layer 1 heads applied to values of the embedding
        v = torch.einsum("btD,hDd->bhtd", clean.resid[0], model.W_V[1])
        head_out = torch.einsum("bhtd,hdD->bhtD", clean.pattern[1] @ v, model.W_O[1])
    assert all(torch.equal(a, b) for a, b in zip(cache.pattern, clean.pattern))
    assert torch.allclose(logits, (clean.resid[1] + head_out.sum(1)) @ model.W_U, atol=1e-5)
    assert not torch.allclose(logits, clean_logits, atol=1e-3)


def test_smear_off_is_the_model_with_raw_keys():
    smeared = build_model(MODELS["one_layer_smeared"], 8)
    raw = AttentionOnlyTransformer(ModelConfig(n_layers=1))
    raw.load_state_dict({k: v for k, v in smeared.state_dict().items() if "smear" not in k})
    tokens = _tokens()
    ablation = expand_entry({"kind": "smear_off"}, smeared.cfg)[0]
    assert ablation.name == "smear_off_L0"
    with torch.no_grad():
        assert torch.equal(AblatedModel(smeared, ablation)(tokens), raw(tokens))
        assert not torch.allclose(smeared(tokens), raw(tokens))


# ---------------------------------------------------------------- config entries

@pytest.mark.parametrize("entry,cfg,names", [
    ({"kind": "composition_table"}, ModelConfig(n_layers=2),
     ["qk_from_embedding_L1", "plus_k_L1", "plus_q_L1", "qk_full_L1"]),
    ({"kind": "composition_table"}, ModelConfig(n_layers=3),
     [f"{r}_L{l}" for l in (1, 2) for r in ("qk_from_embedding", "plus_k", "plus_q", "qk_full")]),
    ({"kind": "remove_head_from_keys", "target": 2}, ModelConfig(n_layers=3),
     [f"remove_L{l}H{h}_from_keys_L2" for l in (0, 1) for h in range(4)]),
    ({"kind": "remove_head_from_queries"}, ModelConfig(n_layers=2),
     [f"remove_L0H{h}_from_queries_L1" for h in range(4)]),
    ({"kind": "values_from_embedding"}, ModelConfig(n_layers=2), ["values_from_embedding_L1"]),
    ({"kind": "zero_heads"}, ModelConfig(n_layers=2), [f"zero_L{l}H{h}" for l in (0, 1) for h in range(4)]),
    ({"kind": "mean_heads", "target": [[1, 3], [0, 0]]}, ModelConfig(n_layers=2), ["mean_L1H3", "mean_L0H0"]),
    ({"kind": "zero_heads_frozen_patterns", "target": [[0, 1]]}, ModelConfig(),
     ["zero_frozen_patterns_L0H1"]),
    ({"kind": "smear_off"}, ModelConfig(n_layers=2, smear_layers=(0, 1)), ["smear_off_L0", "smear_off_L1"]),
    ({"kind": "smear_off", "target": 1}, ModelConfig(n_layers=2, smear_layers=(0, 1)), ["smear_off_L1"]),
])
def test_entries_expand_into_named_ablations(entry, cfg, names):
    ablations = expand_entry(entry, cfg)
    assert [a.name for a in ablations] == names
    assert all(a.kind == entry["kind"] and a.status == "ok" for a in ablations)
    for a in ablations:
        check_fits(a, cfg)


def test_composition_rows_choose_the_streams():
    rows = _by_name(expand_entry({"kind": "composition_table"}, ModelConfig(n_layers=2)))
    assert [(rows[n].queries_from, rows[n].keys_from, rows[n].values_from)
            for n in ("qk_from_embedding_L1", "plus_k_L1", "plus_q_L1", "qk_full_L1")] == [
        ("embedding", "embedding", "residual"), ("embedding", "residual", "residual"),
        ("residual", "embedding", "residual"), ("residual", "residual", "residual")]
    keys = expand_entry({"kind": "remove_head_from_keys"}, ModelConfig(n_layers=2))[3]
    assert (keys.layer, keys.source_layer, keys.source_head, keys.keys_from, keys.queries_from) == (
        1, 0, 3, "residual_minus_head", "residual")


@pytest.mark.parametrize("entry,cfg,why", [
    ({"kind": "composition_table"}, ModelConfig(n_layers=1), "skipped: model has 1 layer"),
    ({"kind": "remove_head_from_keys", "target": 1}, ModelConfig(n_layers=1), "skipped: model has 1 layer"),
    ({"kind": "values_from_embedding"}, ModelConfig(n_layers=1, smear_layers=(0,)),
     "skipped: model has 1 layer"),
    ({"kind": "smear_off"}, ModelConfig(n_layers=2), "skipped: model has no smeared layer"),
])
def test_what_a_model_cannot_have_is_a_recorded_skip(entry, cfg, why):
    (ablation,) = expand_entry(entry, cfg)
    assert ablation.skipped and ablation.status.startswith(why)
    with pytest.raises(ValueError, match="skipped"):
        AblatedModel(build_model(cfg, 0), ablation)


@pytest.mark.parametrize("entry,cfg,match", [
    ({"kind": "composition_table", "target": 0}, ModelConfig(n_layers=2), "layer 0 reads only"),
    ({"kind": "composition_table", "target": 2}, ModelConfig(n_layers=2), "target layer 2 does not exist"),
    ({"kind": "remove_head_from_keys", "target": 5}, ModelConfig(n_layers=3), "target layer 5"),
    ({"kind": "composition_table", "target": [[0, 1]]}, ModelConfig(n_layers=2), "allowed: 'all' or a layer"),
    ({"kind": "zero_heads", "target": [[0, 4]]}, ModelConfig(n_layers=2), r"head index 4 is out of range"),
    ({"kind": "mean_heads", "target": [[2, 0]]}, ModelConfig(n_layers=2), r"layer 2 does not exist"),
    ({"kind": "zero_heads", "target": 1}, ModelConfig(n_layers=2), "list of \\[layer, head\\] pairs"),
    ({"kind": "smear_off", "target": 1}, ModelConfig(n_layers=2, smear_layers=(0,)), "layer 1 is not smeared"),
    ({"kind": "ablate_everything"}, ModelConfig(), "kind 'ablate_everything'"),
])
def test_impossible_targets_are_errors_naming_them(entry, cfg, match):
    with pytest.raises(ValueError, match=match):
        expand_entry(entry, cfg)


@pytest.mark.parametrize("ablation,match", [
    (Ablation("x", "zero_heads", layer=0, head=4), "head index 4"),
    (Ablation("x", "zero_heads", layer=2, head=0), "layer 2 does not exist"),
    (Ablation("x", "composition_table", layer=0, keys_from="embedding"), "layer 0 reads only"),
    (Ablation("x", "remove_head_from_keys", layer=1, source_layer=1, source_head=0,
              keys_from="residual_minus_head"), "source head"),
    (Ablation("x", "smear_off", layer=0), "not smeared"),
])
def test_a_hand_made_ablation_the_model_cannot_have_is_refused(ablation, match):
    with pytest.raises(ValueError, match=match):
        AblatedModel(build_model(MODELS["two_layer"], 0), ablation)


def test_mean_ablation_needs_the_means_and_streams_are_checked():
    model = build_model(MODELS["two_layer"], 0)
    with pytest.raises(ValueError, match="mean outputs"):
        AblatedModel(model, Ablation("m", "mean_heads", layer=0, head=0))
    with pytest.raises(ValueError, match="stream"):
        StreamChoice(1, keys="nowhere")


def test_an_ablation_listed_twice_is_an_error():
    with pytest.raises(ValueError, match="zero_L0H1"):
        expand_entries([{"kind": "zero_heads"}, {"kind": "zero_heads", "target": [[0, 1]]}],
                       ModelConfig(n_layers=2))


def _config(entries=None):
    config = {"variants": {"one_layer": {"n_layers": 1},
                           "smeared": {"n_layers": 1, "smear_layers": [0]},
                           "two_layer": {"n_layers": 2}}}
    if entries is not None:
        config["ablations"] = {"entries": entries}
    return validate_config(copy.deepcopy(config), SCHEMA)


def test_default_ablations_are_every_kind():
    entries = _config()["ablations"]["entries"]
    assert [e["kind"] for e in entries] == list(KINDS)
    assert all(e["target"] == "all" for e in entries)


@pytest.mark.parametrize("entries,key", [
    ([{"kind": "bogus"}], "ablations.entries.0.kind"),
    ([{"kind": "zero_heads", "heads": "all"}], "ablations.entries.0.heads"),
    ([{"kind": "zero_heads", "target": "some"}], "ablations.entries.0.target"),
    ([{"kind": "zero_heads"}, {"kind": "zero_heads", "target": [[1, 7]]}], "ablations.entries.1"),
    ([{"kind": "composition_table", "target": 3}], "ablations.entries.0"),
])
def test_bad_ablation_entries_name_the_key(entries, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _config(entries)


# ---------------------------------------------------------------- the stage

@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """The console command on an untrained 2-layer and an untrained 1-layer model."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("ablations")
    behaviour = stage_settings("behaviour", behaviour={
        "eval_seed": 3, "n_sequences": 48,
        "prompts": [{"prompt": "ABCDEFABCDEF"}, {"prompt": "ABCDEFXYZRST"}]})
    settings = stage_settings("ablations", ablations={
        "entries": [{"kind": k, "target": "all"} for k in KINDS]})
    (folder / "behaviour.json").write_text(json.dumps(behaviour))
    (folder / "ablations.json").write_text(json.dumps(settings))
    out = {}
    for variant, n_layers in (("two_layer", 2), ("one_layer", 1)):
        spec = tiny_spec(variant=variant, seed=4, n_layers=n_layers)
        model = build_model(ModelConfig(n_layers=n_layers), 4)
        save_model(folder / f"{variant}.pt", model, spec)
        table, npz = folder / f"{variant}.csv", folder / f"{variant}.npz"
        assert main(["ablations", "--model", str(folder / f"{variant}.pt"),
                     "--behaviour-settings", str(folder / "behaviour.json"),
                     "--settings", str(folder / "ablations.json"), "--table", str(table),
                     "--attention", str(npz)]) == 0
        out[variant] = (model, pd.read_csv(table), np.load(npz))
    return out, behaviour


def test_stage_writes_one_tidy_row_per_ablation(stage):
    out, behaviour = stage
    model, frame, arrays = out["two_layer"]
    assert list(frame.columns[:12]) == ["variant", "seed", "ablation", "kind", "layer", "head",
                                        "source_layer", "source_head", "queries_from", "keys_from",
                                        "values_from", "status"]
    assert (frame["variant"] == "two_layer").all() and (frame["seed"] == 4).all()
    assert frame["ablation"].iloc[0] == "baseline" and frame["ablation"].is_unique
    assert len(frame) == 1 + 4 + 4 + 4 + 1 + 8 + 8 + 8 + 1
    for m in ("loss_all", "loss_pred", "acc_pred", "suite_acc"):
        assert frame[f"delta_{m}"].iloc[0] == 0
    for l in (0, 1):
        assert {f"induction_mean_L{l}", f"first_block_max_L{l}", f"induction_chance_L{l}",
                f"prefix_matching_max_L{l}", f"induction_L{l}H3", f"prefix_matching_L{l}H0"} <= set(frame.columns)
    smear = frame.set_index("ablation").loc["smear_off"]
    assert smear["status"] == "skipped: model has no smeared layer" and np.isnan(smear["loss_all"])
    # the baseline row is the behaviour stage's numbers on the same sample
    task = TaskConfig()
    sample, _ = evaluation_samples(task, behaviour["n_sequences"], behaviour["eval_seed"])
    with torch.no_grad():
        metrics = task_metrics(model(sample.tokens), sample.tokens, sample.predictable)
    assert frame["loss_all"].iloc[0] == pytest.approx(metrics["loss_all"], rel=1e-6)
    qk_full = frame.set_index("ablation").loc["qk_full_L1"]
    assert qk_full["loss_all"] == frame["loss_all"].iloc[0]
    # every ablation that ran has its mean patterns [L, H, T, T]
    ran = frame.loc[frame["status"] == "ok", "ablation"].tolist()
    assert sorted(arrays["names"].tolist()) == sorted(ran)
    assert all(arrays[name].shape == (2, 4, 24, 24) for name in ran)
    # every column is declared; the content part's share left is read per head of layer 1
    assert ABLATIONS.require(*frame.columns)
    lefts = [c for c in frame.columns if c.startswith("induction_content_left_")]
    assert lefts == [f"induction_content_left_L1H{h}{end}" for h in range(4)
                     for end in ("", "_low", "_high")]
    assert ABLATIONS.unit("induction_content_left_L1H0") is None
    assert ABLATIONS.unit("induction_content_L1H0") == "share of attention"


def test_stage_records_the_skips_of_a_one_layer_model(stage):
    out, _ = stage
    _, frame, arrays = out["one_layer"]
    skipped = frame[frame["status"] != "ok"].set_index("ablation")["status"]
    assert set(skipped.index) == {"composition_table", "remove_head_from_keys",
                                  "remove_head_from_queries", "values_from_embedding", "smear_off"}
    assert skipped["composition_table"].startswith("skipped: model has 1 layer")
    assert len(frame) == 1 + 5 + 3 * 4
    assert arrays["baseline"].shape == (1, 4, 24, 24)


def test_stage_refuses_a_target_the_model_lacks(stage, tmp_path):
    settings = {**stage_settings("ablations"), "entries": [{"kind": "zero_heads", "target": [[1, 0]]}]}
    (tmp_path / "ablations.json").write_text(json.dumps(settings))
    (tmp_path / "behaviour.json").write_text(json.dumps(
        {**stage_settings("behaviour", behaviour={"eval_seed": 0, "n_sequences": 4}), "prompts": []}))
    spec = tiny_spec(variant="one_layer", n_layers=1)
    save_model(tmp_path / "m.pt", build_model(ModelConfig(n_layers=1), 0), spec)
    assert main(["ablations", "--model", str(tmp_path / "m.pt"),
                 "--behaviour-settings", str(tmp_path / "behaviour.json"),
                 "--settings", str(tmp_path / "ablations.json"), "--table", str(tmp_path / "a.csv"),
                 "--attention", str(tmp_path / "a.npz")]) == 1
    assert not (tmp_path / "a.csv").exists()
