"""The positional-shortcut experiment's module, on models whose behaviour is known exactly."""
import json
import math

import pandas as pd
import pytest
import torch

from helpers import SCHEMA
from handbuilt import PositionalShiftModel, ShiftCopyModel
from inductionlab.stages.behaviour.behaviour import evaluation_samples
from inductionlab.config import ConfigError, load_config, validate_experiment
from inductionlab.core.data import TaskConfig, validation_set
from inductionlab.core.model import ModelConfig, build_model, sinusoidal_table
from inductionlab.experiments.positional_shortcut.analysis import (
    attention_summary, offset_table, position_scores, position_summary, position_table,
    row_argmax_offsets, shortcut_metrics, shortcut_tables)
from inductionlab.experiments.positional_shortcut.commands import write_shortcut
from inductionlab.experiments.positional_shortcut.tables import metric_names
from inductionlab.formatting.figure_registry import write_figure
from inductionlab.experiments.positional_shortcut.settings import check_settings
from inductionlab.core.spec import Spec
from inductionlab.core.loading import save_model

from helpers import ROOT, spec_document

TASK = TaskConfig()
EXPERIMENT_SCHEMA = ROOT / "src" / "inductionlab" / "experiments" / "positional_shortcut" / "schema.yaml"
SETTINGS = {"eval_seed": 2024, "n_sequences": 128, "n_random_prompts": 40, "prompt_len": 12,
            "prompts": ["ABCDEFABCDEF", "AAABBBAAABBB", "ABCDEFXYZRST"]}


def _metrics(model):
    val = validation_set(256, TASK, 12345)
    sample, _ = evaluation_samples(TASK, 128, 2024)
    return shortcut_metrics(model.eval(), TASK, val, sample, 40, 12, 2024)


def _spec(variant="one_layer_learned", seed=3, pos_encoding="learned"):
    spec = spec_document(variant, seed, {"n_layers": 1, "pos_encoding": pos_encoding},
                         {"vocab_size": 26, "block_len": 6, "n_blocks": 4})
    spec["train"].update(val_size=256, val_seed=12345)
    return spec


# ---------------------------------------------------------------- the positional term

def test_position_scores_are_the_term_the_model_adds_to_its_scores():
    model = build_model(ModelConfig(pos_encoding="learned"), 0)
    with torch.no_grad():
        model.W_Q.zero_()
        model.W_K.zero_()
        model.pos.add_(torch.randn(24, 8, generator=torch.Generator().manual_seed(1)))
    scores = position_scores(model.pos)
    assert torch.allclose(scores, model.pos.double() @ model.pos.double().T / math.sqrt(8))
    # with no content term, the pattern is the causal softmax of the positional term
    _, cache = model.run_with_cache(torch.zeros(1, 24, dtype=torch.long))
    expected = torch.softmax(scores.masked_fill(torch.ones(24, 24).triu(1).bool(), float("-inf")), -1)
    assert torch.allclose(cache.pattern[0][0, 0].double(), expected, atol=1e-5)


def test_row_argmax_and_summary_on_a_known_matrix():
    T = 10
    scores = torch.eye(T, dtype=torch.float64)  # every row peaks on itself ...
    for i in range(3, T):
        scores[i, i - 3] = 2.0  # ... until a key 3 back exists, which beats it by 1
    assert row_argmax_offsets(scores).tolist() == [0, 0, 0] + [3] * (T - 3)
    summary = position_summary(scores, 3)
    assert summary == {"pos_argmax_offset3_share": 1.0, "pos_offset3_margin": pytest.approx(1.0)}
    # the part above the diagonal (future keys) is never read
    scores[0, 5] = scores[4, 9] = 100.0
    assert position_summary(scores, 3) == summary
    assert position_summary(torch.eye(T, dtype=torch.float64), 3)["pos_argmax_offset3_share"] == 0.0
    with pytest.raises(ValueError, match="offset"):
        position_summary(scores, T)


def test_position_table_lists_the_causal_pairs_with_one_argmax_per_row():
    table = position_table(position_scores(sinusoidal_table(24, 8, "standard")))
    assert len(table) == 24 * 25 // 2
    assert (table["offset"] == table["query"] - table["key"]).all() and (table["offset"] >= 0).all()
    assert table.groupby("query")["is_row_argmax"].sum().eq(1.0).all()
    # a fixed sinusoid has equal-norm rows: each row's largest term is the diagonal
    assert table.loc[table["is_row_argmax"] == 1.0, "offset"].eq(0).all()


# ---------------------------------------------------------------- hand-built models

def test_a_table_that_points_5_back_solves_the_task_in_one_layer():
    model = PositionalShiftModel(shift=5)
    metrics = _metrics(model)
    assert metrics["pos_argmax_offset5_share"] == 1.0 and metrics["pos_offset5_margin"] > 0
    assert metrics["nearest_copy_max"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["induction_max"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["induction_chance"] == pytest.approx(0.1266, abs=1e-4)
    assert metrics["acc_pred"] == 1.0 and metrics["loss_pred"] < 0.01
    assert metrics["random_len12_acc_mean"] == 1.0 and metrics["random_len12_exact"] == 1.0
    offsets = offset_table(model, evaluation_samples(TASK, 64, 0)[0].tokens)
    by_offset = offsets.set_index("offset")["attention"]
    assert by_offset.idxmax() == 5 and by_offset[5] == pytest.approx(1.0, abs=1e-4)


def test_the_same_model_with_a_fixed_table_does_not():
    metrics = _metrics(PositionalShiftModel(shift=5, learned=False))
    assert metrics["pos_argmax_offset5_share"] < 0.5 and metrics["pos_offset5_margin"] < 0
    assert metrics["nearest_copy_max"] < 0.5 and metrics["induction_max"] < 0.5
    assert metrics["acc_pred"] < 0.5 and metrics["random_len12_exact"] == 0.0


def test_offset_table_reads_the_attention_not_the_table():
    """A head fixed to attend 5 back shows offset 5 whatever its positional table says."""
    offsets = offset_table(ShiftCopyModel(shift=5), evaluation_samples(TASK, 32, 0)[0].tokens)
    assert list(offsets.columns) == ["layer", "head", "offset", "attention"]
    assert len(offsets) == 24
    attention = offsets.set_index("offset")["attention"]
    # queries i < 5 attend to position 0: one query in 24 - k at offsets k = 1..4
    assert attention[5] == pytest.approx(1.0) and attention.drop(5).max() < 0.1


def test_attention_summary_counts_every_copy_of_the_target():
    sample = evaluation_samples(TASK, 64, 0)[0]
    # a head that attends 11 back copies the target too, but never looks 5 back: queries
    # 12..23 hold a copy 11 back (query 11's is key 0, left out), queries 6..10 attend key 0
    eleven = attention_summary(ShiftCopyModel(shift=11), sample)
    assert eleven["induction_max"] == pytest.approx(12 / 18)
    assert eleven["nearest_copy_max"] == pytest.approx(0.0)
    five = attention_summary(ShiftCopyModel(shift=5), sample)
    assert five == {"nearest_copy_max": pytest.approx(1.0), "nearest_copy_chance": pytest.approx(0.0737, abs=1e-4),
                    "induction_max": pytest.approx(1.0), "induction_chance": pytest.approx(0.1266, abs=1e-4)}


def test_every_table_names_its_model():
    tables = shortcut_tables(PositionalShiftModel(shift=5), Spec.from_dict(_spec()), SETTINGS)
    assert set(tables) == {"metrics", "offsets", "completions", "positions"}
    for name, frame in tables.items():
        assert list(frame.columns[:2]) == ["variant", "seed"], name
        assert (frame["variant"] == "one_layer_learned").all() and (frame["seed"] == 3).all(), name
    names = metric_names(TASK, 12)
    assert tables["metrics"]["metric"].tolist() == names["task"] + names["mechanism"]
    completions = tables["completions"].set_index("prompt")
    assert completions.loc["ABCDEFABCDEF", "completion"] == "ABCDEFABCDEF"
    assert completions.loc["AAABBBAAABBB", "accuracy"] == 1.0
    assert not completions.loc["ABCDEFXYZRST", "in_distribution"]


def test_write_shortcut_and_figures(tmp_path):
    out = {}
    for spec, model in ((_spec(), PositionalShiftModel(shift=5)),
                        (_spec("one_layer", pos_encoding="original"),
                         PositionalShiftModel(shift=5, learned=False))):
        save_model(tmp_path / f"{spec['variant']}.pt", model, spec)
        settings = tmp_path / "settings.json"
        settings.write_text(json.dumps({**SETTINGS, "task": spec["task"]}))
        paths = {name: tmp_path / spec["variant"] / f"{name}.csv"
                 for name in ("metrics", "offsets", "completions", "positions")}
        write_shortcut(tmp_path / f"{spec['variant']}.pt", settings, *paths.values())
        for name, path in paths.items():
            out.setdefault(name, []).append(pd.read_csv(path))
    metrics = pd.concat(out["metrics"]).set_index(["variant", "metric"])["value"]
    assert metrics["one_layer_learned", "acc_pred"] == 1.0 > metrics["one_layer", "acc_pred"]
    for name in ("offsets", "positions"):
        pd.concat(out[name]).to_csv(tmp_path / f"{name}.csv", index=False)
    for name in ("offsets", "positions"):  # the study figures the experiment registers
        write_figure(f"positional_shortcut_{name}", "study",
                     {name: tmp_path / f"{name}.csv", "settings": settings}, tmp_path / f"{name}.png")
    for name in ("offsets.png", "positions.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")
    assert not list(tmp_path.glob("**/.tmp-*"))  # everything written atomically


# ---------------------------------------------------------------- settings and spec

def test_experiment_settings_get_their_defaults_and_errors_name_the_key():
    config = load_config(ROOT / "tests" / "config.tiny.yaml", SCHEMA)
    config["experiments"] = {}
    settings = validate_experiment(config, "positional_shortcut", EXPERIMENT_SCHEMA, check_settings)
    assert settings["base_variant"] == "one_layer" and settings["prompt_len"] == 12
    assert config["experiments"]["positional_shortcut"] is settings

    config["experiments"] = {"positional_shortcut": {"prompt_lenght": 12}}
    with pytest.raises(ConfigError, match=r"experiments\.positional_shortcut\.prompt_lenght"):
        validate_experiment(config, "positional_shortcut", EXPERIMENT_SCHEMA, check_settings)
    config["experiments"] = {"positional_shortcut": {"n_random_prompts": 1}}
    with pytest.raises(ConfigError, match=r"experiments\.positional_shortcut\.n_random_prompts"):
        validate_experiment(config, "positional_shortcut", EXPERIMENT_SCHEMA, check_settings)
    config["experiments"] = {"positional_shortcut": {"base_variant": "nope", "prompts": ["AB1"],
                                                     "prompt_len": 30}}
    with pytest.raises(ConfigError) as err:
        validate_experiment(config, "positional_shortcut", EXPERIMENT_SCHEMA, check_settings)
    for key in ("base_variant", "prompts.0", "prompt_len"):
        assert f"experiments.positional_shortcut.{key}" in str(err.value)


def test_compared_variants_missing_from_the_config_are_not_errors():
    config = load_config(ROOT / "tests" / "config.tiny.yaml", SCHEMA)
    config["experiments"] = {"positional_shortcut": {"compare": ["one_layer", "no_such_variant"]}}
    settings = validate_experiment(config, "positional_shortcut", EXPERIMENT_SCHEMA, check_settings)
    assert settings["compare"] == ["one_layer", "no_such_variant"]
