import copy
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, SCHEMA
from inductionlab.config import ConfigError, load_config, validate_config
from inductionlab.spec import make_spec, model_config

GOOD = {"variants": {"a": {"n_layers": 2}}}


def _check(config):
    return validate_config(copy.deepcopy(config), SCHEMA)


def test_defaults_are_filled():
    config = _check(GOOD)
    assert config["seeds"] == [0, 1, 2, 3, 4]
    assert config["task"] == {"vocab_size": 26, "block_len": 6, "n_blocks": 4}
    assert config["train"]["steps"] == 10000 and config["train"]["batch_size"] == 256
    assert config["variants"]["a"] == {"n_layers": 2, "d_model": 32, "n_heads": 4,
                                       "pos_encoding": "original", "smear_layers": [],
                                       "smear_form": "per_position"}


def test_default_config_is_the_write_ups_three_models():
    config = load_config(ROOT / "config.yaml", SCHEMA)
    assert list(config["variants"]) == ["one_layer", "one_layer_smeared", "two_layer"]
    assert config["seeds"] == [0, 1, 2, 3, 4] and config["train"]["steps"] == 10000
    cfg = model_config(make_spec(config, "one_layer_smeared", 0))
    assert cfg.smear_layers == (0,) and cfg.n_layers == 1 and cfg.seq_len == 24


@pytest.mark.parametrize("change,key", [
    ({"bogus": 1}, "bogus"),
    ({"train": {"steps": -5}}, "train.steps"),
    ({"train": {"lr": "fast"}}, "train.lr"),
    ({"train": {"stepz": 10}}, "train.stepz"),
    ({"variants": {"a": {"n_heads": 3}}}, "variants.a.d_model"),
    ({"variants": {"a": {"n_layer": 2}}}, "variants.a.n_layer"),
    ({"variants": {"a": {"pos_encoding": "rotary"}}}, "variants.a.pos_encoding"),
    ({"variants": {"a": {"smear_layers": [1]}}}, "variants.a.smear_layers"),
    ({"seeds": [0, "one"]}, "seeds.1"),
    ({"seeds": []}, "seeds"),
    ({"variants": {}}, "variants"),
])
def test_bad_config_names_the_key(change, key):
    config = {**copy.deepcopy(GOOD), **change}
    with pytest.raises(ConfigError) as err:
        _check(config)
    assert key in str(err.value)


def test_make_spec_rejects_unknown_variant():
    with pytest.raises(KeyError, match="nope"):
        make_spec(_check(GOOD), "nope", 0)


def test_snakemake_stops_on_bad_config_before_any_job(tmp_path):
    bad = {"variants": {"a": {"n_heads": 3}}, "train": {"steps": 0}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--configfile",
         "bad.yaml", "--cores", "1", "-d", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "train.steps" in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- extra rule files

def test_extra_rule_files_are_found_in_the_working_directory_then_beside_the_workflow(tmp_path):
    from inductionlab.config import extra_rule_files

    work, workflow = tmp_path / "work", tmp_path / "workflow"
    for folder, name in ((work, "local.smk"), (workflow, "shipped.smk"), (work, "both.smk"),
                         (workflow, "both.smk")):
        folder.mkdir(exist_ok=True)
        (folder / name).write_text("")
    absolute = tmp_path / "elsewhere.smk"
    absolute.write_text("")
    found = extra_rule_files(["local.smk", "shipped.smk", "both.smk", str(absolute)], workflow, cwd=work)
    assert found == [str(work / "local.smk"), str(workflow / "shipped.smk"), str(work / "both.smk"),
                     str(absolute)]
    assert extra_rule_files([], workflow, cwd=work) == []


def test_an_extra_rule_file_found_nowhere_names_the_entry(tmp_path):
    from inductionlab.config import extra_rule_files

    (tmp_path / "ok.smk").write_text("")
    with pytest.raises(ConfigError) as err:
        extra_rule_files(["ok.smk", "rules/missing.smk"], tmp_path / "workflow", cwd=tmp_path)
    assert "extra_rules.1" in str(err.value) and "rules/missing.smk" in str(err.value)
    assert "extra_rules.0" not in str(err.value)


def test_experiment_settings_are_free_form_by_name_in_the_main_schema():
    config = _check({**GOOD, "experiments": {"positional_shortcut": {"prompt_len": 12}}})
    assert config["experiments"] == {"positional_shortcut": {"prompt_len": 12}}
    assert _check(GOOD)["experiments"] == {}
    with pytest.raises(ConfigError, match="experiments"):
        _check({**GOOD, "experiments": {"positional_shortcut": [1, 2]}})
