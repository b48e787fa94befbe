"""The context length and the initialisation as model settings: what they make, what they
refuse, and that a model which does not set them is the model it always was."""
import copy
import hashlib
import json
import math
from types import SimpleNamespace

import pytest
import torch

from helpers import ROOT, SCHEMA, stage_settings
from inductionlab.config import ConfigError, read_yaml, validate_config
from inductionlab.core.data import TaskConfig
from inductionlab.core.loading import load_model
from inductionlab.core.model import ModelConfig, build_model
from inductionlab.core.seeding import generator
from inductionlab.core.spec import DerivedModel, Spec, make_spec, write_spec
from inductionlab.core.tasks import out_of_context, task_from_dict
from inductionlab.core.train import train
from inductionlab.records import spec_identity
from inductionlab.stages.behaviour.behaviour import behaviour_results

ROOT_CONFIG = read_yaml(ROOT / "config.yaml")

# the spec digests of the default config's models, computed before these settings existed
DIGESTS = {
    "one_layer": "f45fef187f6de5ae40043e52b75d905f6a110a1d5cb72e254dc7ac52614b0f68",
    "one_layer_smeared": "3364b2016e805d6bb1d93b09df29d90e25349e409866c54e8902aa611274db83",
    "two_layer": "40843bc99a761c7e08baa62a70a9453c456058b235009c92faa57552a1b5a1b6",
}
DERIVED_DIGESTS = {  # (name, base, changes): digest
    ("two_layer_vp", "two_layer", (("task", "variable_period"),)):
        "2066f370d4d8574a0a6e6be077c6a34cbbb8f831a809734ce6bbf74e4dcdd260",
    ("one_layer_learned", "one_layer", (("pos_encoding", "learned"),)):
        "90b94712d15c89d60d40500594d46b5dcecc4a4e5f6cfac3834b6d93fbcb246b",
}
# the initial weights of seed 3, hashed, from the same code
INIT_DIGESTS = {(2, ()): "f9e6ed7da5e18044", (1, (0,)): "857754df9f1e7b01"}


def config_with(**variants) -> dict:
    """The default config with ``variants`` added, validated."""
    config = copy.deepcopy(ROOT_CONFIG)
    config["variants"].update(variants)
    return validate_config(config, SCHEMA)


def problems_of(**variants) -> list[str]:
    with pytest.raises(ConfigError) as err:
        config_with(**variants)
    return str(err.value).split("\n  - ")[1:]


def weights_digest(model) -> str:
    h = hashlib.sha256()
    for name, value in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(value.detach().numpy().tobytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- existing models unchanged

def test_the_default_configs_specs_keep_their_digests():
    config = config_with()
    for name, digest in DIGESTS.items():
        assert spec_identity(make_spec(config, name, 0)).spec == digest, name
    for (name, base, changes), digest in DERIVED_DIGESTS.items():
        derived = DerivedModel.of(config, name, base, dict(changes))
        assert spec_identity(make_spec(config, name, 0, derived)).spec == digest, name


def test_settings_at_their_defaults_change_no_spec_and_no_weight():
    config = config_with(same=dict(n_layers=2, embedding_init="uniform", context=24),
                         same_smeared=dict(n_layers=1, smear_layers=[0], smear_init=1))
    plain = {k: v for k, v in make_spec(config, "two_layer", 0).items() if k != "variant"}
    assert {k: v for k, v in make_spec(config, "same", 0).items() if k != "variant"} == plain
    assert "smear_init" not in make_spec(config, "same_smeared", 0)["model"]
    for (layers, smeared), digest in INIT_DIGESTS.items():
        cfg = ModelConfig(n_layers=layers, smear_layers=smeared)
        assert weights_digest(build_model(cfg, 3)) == digest
        assert set(cfg.to_dict()) == {"vocab_size", "d_model", "n_heads", "n_layers", "seq_len",
                                      "pos_encoding", "smear_layers", "smear_form"}


# ---------------------------------------------------------------- the context length

def test_a_context_of_48_trains_a_model_of_48_positions_on_48_token_sequences(tmp_path):
    config = config_with(long=dict(n_layers=2, task="variable_period", context=48))
    config["train"].update(steps=4, batch_size=8, eval_every=2, val_size=16, n_checkpoints=2,
                           compile="never")
    document = make_spec(config, "long", 0)
    assert document["task"] == {"name": "variable_period", "kind": "variable_period",
                                "vocab_size": 26, "seq_len": 48, "min_period": 3, "max_period": 8}
    assert "context" not in document["model"]
    write_spec(tmp_path / "spec.json", document)
    assert json.loads((tmp_path / "spec.json").read_text())["task"]["seq_len"] == 48
    spec = Spec.from_dict(document)
    assert spec.model.seq_len == 48 and spec.task.seq_len == 48

    sample = spec.task.sample(200, generator(1, "test"))
    assert sample.tokens.shape == (200, 48)
    # every sequence repeats with a period of 3..8: its first source is that period back
    first_copy = sample.sources[:, :48].any(-1).float().argmax(-1)
    assert first_copy.min() >= 3 and first_copy.max() <= 8
    assert {int(p) for p in first_copy} == set(range(3, 9))
    for tokens, period in zip(sample.tokens, first_copy):
        assert torch.equal(tokens[period:], tokens[:-period])

    train(document, tmp_path / "run")
    model, trained = load_model(tmp_path / "run" / "model.pt")
    assert model.cfg.seq_len == 48 and model.pos.shape[0] == 48
    assert trained.task.seq_len == 48
    assert model(sample.tokens[:4]).shape == (4, 48, 26)


def test_the_context_reaches_a_registered_model_and_the_memory_estimate():
    from inductionlab.core import bounds

    config = config_with()
    derived = DerivedModel.of(config, "two_layer_vp48", "two_layer",
                              {"task": "variable_period", "context": 48})
    assert Spec.from_dict(make_spec(config, "two_layer_vp48", 0, derived)).model.seq_len == 48
    variant = config["variants"]["two_layer"]
    assert bounds._shape({**variant, "context": 48}, config["task"])[0] == 48
    assert bounds._shape(variant, config["task"])[0] == 24


@pytest.mark.parametrize("variant,key,words", [
    (dict(task="variable_period", context=True), "context", "is not of type 'integer'"),
    (dict(task="variable_period", context=48.5), "context", "48.5 is not an integer"),
    (dict(task="variable_period", context="48"), "context", "is not of type 'integer'"),
    (dict(task="variable_period", context=15), "context",
     "15 tokens do not hold two copies of the longest period of task kind 'variable_period'; "
     "allowed: 16 to 8192"),
    (dict(task="variable_period", context=9000), "context", "greater than the maximum of 8192"),
    (dict(context=48), "context", "task kind 'repeated_block' fixes its sequence length"),
    (dict(embedding_init="gaussian"), "embedding_init", "'gaussian' is not one of"),
    (dict(smear_layers=[0], smear_init=50), "smear_init", "greater than the maximum of 20"),
    (dict(smear_layers=[0], smear_init=False), "smear_init", "is not of type 'number'"),
    (dict(smear_init=0), "smear_init", "smear_layers is empty"),
])
def test_a_bad_setting_is_one_line_naming_its_key(variant, key, words):
    problems = problems_of(bad={"n_layers": 1, **variant})
    assert len(problems) == 1 and "\n" not in problems[0], problems
    assert problems[0].startswith(f"variants.bad.{key}: ") and words in problems[0], problems


def test_a_bad_setting_of_a_registered_model_is_one_line():
    config = config_with()
    for changes, words in [({"context": 48}, "context: 48 tokens: task kind 'repeated_block'"),
                           ({"task": "variable_period", "context": 12}, "context: 12 tokens do not"),
                           ({"task": "variable_period", "context": True}, "context: true is a boolean"),
                           ({"embedding_init": "xavier"}, "embedding_init='xavier'; allowed: uniform, normal"),
                           ({"smear_init": 1e9}, "smear_init=1000000000.0; allowed")]:
        with pytest.raises(ValueError) as err:
            DerivedModel.of(config, "derived", "one_layer_smeared", changes)
        assert words in str(err.value) and "\n" not in str(err.value)


def test_a_shorter_context_than_a_tasks_sequences_is_said():
    write_up = TaskConfig()
    assert out_of_context(24, write_up) is None and out_of_context(48, write_up) is None
    assert out_of_context(16, write_up) == ("not measured: the model's context of 16 tokens is "
                                            "shorter than the 24-token sequences of task write_up")


def test_a_model_of_a_short_context_is_measured_on_its_own_task_only():
    task = task_from_dict({"kind": "variable_period", "seq_len": 12, "max_period": 6})
    model = build_model(ModelConfig(n_layers=1, seq_len=12), 0).eval()
    spec = SimpleNamespace(task=task, task_name="short", name="short seed 0", variant="short", seed=0)
    settings = stage_settings("behaviour", behaviour={
        "eval_seed": 5, "n_sequences": 32, "n_random_prompts": 8, "failure_samples": 2,
        "prompts": [{"prompt": "ABCDEFABCDEF"}]})
    tables, arrays = behaviour_results(model, spec, settings)
    metrics = set(tables["behaviour"]["metric"])
    assert {"loss_pred", "acc_pred", "floor_loss_pred", "loss_pos10"} <= metrics
    assert "loss_pos11" not in metrics  # 11 predictions in 12 tokens
    assert not [m for m in metrics if m.startswith(("write_up_", "random_", "period", "ood_"))]
    assert set(tables["behaviour"]["task"]) == {"short"}
    assert tables["completions"].empty and tables["failure_modes"].empty
    assert list(tables["completions"].columns[:2]) == ["variant", "seed"]
    assert list(arrays["prompts"]) == ["ABCDEFABCDEF"]
    assert str(arrays["prompts_not_measured"]).startswith("not measured: the model's context of 12")
    assert arrays["mean_pattern_L0"].shape == (4, 12, 12)


def test_the_positional_shortcut_study_refuses_a_model_too_short_for_its_prompts():
    from inductionlab.experiments.positional_shortcut.settings import check_settings

    config = config_with(v16=dict(n_layers=1, task="variable_period", context=16),
                         v48=dict(n_layers=1, task="variable_period", context=48))
    settings = {"base_variant": "v16", "compare": ["one_layer", "v16", "v48"],
                "prompts": ["ABCDEFABCDEF"], "prompt_len": 12}
    problems = check_settings(settings, config)
    assert [p.split(":")[0] for p in problems] == ["experiments.positional_shortcut.base_variant",
                                                   "experiments.positional_shortcut.compare"]
    assert all("variant 'v16' has a context of 16 tokens, shorter than the write-up's 24" in p
               for p in problems)
    assert check_settings({**settings, "base_variant": "v48", "compare": ["v48"]}, config) == []


def test_the_formation_study_says_why_a_short_context_model_has_no_write_up_values():
    import pandas as pd

    from inductionlab.experiments.formation.analysis import PERIOD_TEST, _behaviour_rows

    def behaviour(metrics: dict, task: str) -> pd.DataFrame:
        return pd.DataFrame([{"metric": m, "value": v, "low": v, "high": v,
                              "task": "write_up" if m.startswith(("write_up_", "period")) else task}
                             for m, v in metrics.items()])

    short = {row["metric"]: row for row in _behaviour_rows(behaviour(
        {"loss_pred": 0.5, "acc_pred": 0.8}, "variable_period"))}
    for metric in ("write_up_loss_pred", "write_up_acc_pred", PERIOD_TEST):
        assert math.isnan(short[metric]["value"])
        assert short[metric]["note"].startswith("its context is shorter than the write-up's")
    # a model measured on the write-up's task keeps its values; one trained on it reads its own
    long = {row["metric"]: row for row in _behaviour_rows(behaviour(
        {"loss_pred": 0.5, "acc_pred": 0.8, "write_up_loss_pred": 1.5, "write_up_acc_pred": 0.4,
         "period4_acc": 0.9}, "variable_period"))}
    assert long["write_up_loss_pred"]["value"] == 1.5 and PERIOD_TEST not in long
    own = {row["metric"]: row for row in _behaviour_rows(behaviour(
        {"loss_pred": 0.5, "acc_pred": 0.8, "period4_acc": 0.9}, "write_up"))}
    assert own["write_up_acc_pred"]["value"] == 0.8 and PERIOD_TEST not in own


# ---------------------------------------------------------------- the initialisation

def test_the_embedding_starts_uniform_within_one_over_root_v_or_normal_with_std_one():
    bound = 1 / math.sqrt(26)
    uniform = build_model(ModelConfig(), 0).W_E.detach()
    assert uniform.abs().max() <= bound and uniform.abs().max() > 0.95 * bound
    assert uniform.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1)  # U(-b, b): b/√3
    normal = build_model(ModelConfig(embedding_init="normal"), 0).W_E.detach()
    assert normal.std().item() == pytest.approx(1.0, abs=0.1)  # 832 draws: std's error ≈ 0.025
    assert normal.mean().item() == pytest.approx(0.0, abs=0.1)
    assert normal.abs().max() > 2.0  # no uniform draw within ±1/√26 reaches this
    # only the embedding changes: every other weight is drawn as before
    a, b = build_model(ModelConfig(), 0), build_model(ModelConfig(embedding_init="normal"), 0)
    assert not torch.equal(a.W_E, b.W_E) and a.W_U.shape == b.W_U.shape


def test_the_smear_weights_start_at_the_sigmoid_of_smear_init():
    default = build_model(ModelConfig(smear_layers=(0,)), 0)
    assert torch.equal(default.smear_alpha["0"], torch.ones(4, 23))
    half = build_model(ModelConfig(smear_layers=(0,), smear_init=0), 0)
    assert torch.equal(torch.sigmoid(half.smear_alpha["0"]), torch.full((4, 23), 0.5))
    assert half.cfg.to_dict()["smear_init"] == 0.0
    per_head = build_model(ModelConfig(smear_layers=(0,), smear_form="per_head", smear_init=-2), 0)
    assert torch.equal(per_head.smear_alpha["0"], torch.full((4, 1), -2.0))


def test_the_initialisation_is_recorded_in_the_spec_and_the_saved_model(tmp_path):
    config = config_with(normal=dict(n_layers=1, smear_layers=[0], embedding_init="normal",
                                     smear_init=0))
    config["train"].update(steps=2, batch_size=4, eval_every=1, val_size=8, n_checkpoints=2,
                           compile="never")
    document = make_spec(config, "normal", 0)
    assert document["model"]["embedding_init"] == "normal" and document["model"]["smear_init"] == 0
    train(document, tmp_path)
    model, spec = load_model(tmp_path / "model.pt")
    assert (model.cfg.embedding_init, model.cfg.smear_init) == ("normal", 0.0)
    assert spec.to_dict() == document


def test_page_one_names_no_period_for_a_model_whose_periods_were_not_tested():
    import pandas as pd

    from inductionlab.report.front_page import task_words

    assert task_words(pd.Series({"task": "short", "trained_periods": ""}), 6) == "trained on short"
    assert task_words(pd.Series({"task": "variable_period", "trained_periods": "3 4 5"}), 6) \
        == "trained on variable_period, periods 3–5"
    assert task_words(pd.Series({"task": "write_up", "trained_periods": ""}), 6) \
        == "trained on write_up, period 6"
